"""Which block of a document answers: the order of a document's hits.

A document's chunks come scored by the rankers (BM25 and the embedding, fused as for any entry),
and within one report that score often prefers the wrong block: the one that repeats the
question's words (a scope paragraph that announces "the mooring lines at the exposed berth", a
conclusion that says "the ballast capacity meets ...") over the one that holds what is asked
("moored with eight lines", "two ballast pumps of 250 m3/h"). So, for a document, each block is
scored again with evidence of its own (``order_blocks``):

- **block evidence**: the share of the question's terms the block holds, each weighed by how
  rare it is among the document's blocks (a term in every block, such as the report's title in
  every heading path, tells no block from another and weighs nothing). Terms that name the
  document (in its title or path: a project number) chose the document, not the block, and are
  left out; so is the quantity a question asks for (``capacity`` in "what capacity ...": the
  answer states a number, not the word). A Dutch question counts its English reading's terms
  too, in their first senses (``block_terms``).
- **the asked quantity** (``asked``): a question that asks "how many X" is answered by a block
  that counts X (a number, in digits or words, a few words before X); "how much / how long /
  how often", or "what / which <quantity noun>" (capacity, pressure, design wind, ...), by a block
  that holds a number with a unit. Such a block gets ``QUANTITY_WEIGHT``: a block that cannot
  answer a quantity question comes after one that can.

- **closeness in meaning**: the block's cosine with the question (the embedding's, as the dense
  ranker scores it), for every block of the document, not only those a ranker returned: a clause
  that says `not acknowledged within 2 minutes ... throughout the crew accommodation` answers
  `if nobody on the bridge responds ... all over the ship` in none of its words.

The block's score is its fused score + ``EVIDENCE_WEIGHT`` x its evidence + the quantity
weight + ``CLOSENESS_WEIGHT`` x its cosine. Only document entries (chunks with a citation) are
reordered; notebooks keep ``cellar.retrieval.answer_cell``'s order. (The first two weights set a
priori, not fitted, the closeness weight measured; see the README.)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cellar.retrieval.bilingual import Reading
from cellar.retrieval.quantities import (
    UNITS,
    asked_families,
    families_of_noun,
    stated_families,
    symbol_families,
    unit_word_families,
)
from cellar.retrieval.sources import rows_within

EVIDENCE_WEIGHT = 0.5
QUANTITY_WEIGHT = 1.0
# A cosine differs from block to block of one report by a tenth or two: at 2 it weighs about as
# much as the evidence (measured on three document gold sets: block first the same or better at
# 0.5 to 2, worse on all three from 3 on; see the README).
CLOSENESS_WEIGHT = 2.0
ANNOUNCING_PENALTY = 1.0
# Section titles (first word) of a report's part that announces what it covers rather than states
# a finding; a question that names one of them (or asks what a report covers) asks for it.
ANNOUNCING = frozenset(
    "scope purpose introduction background aim aims objective objectives summary "
    "inleiding doel toepassingsgebied achtergrond samenvatting".split()
)
ASKS_SCOPE = "scope purpose introduction background aim objective cover covers covered inleiding doel omvat".split()

# Nouns that name a quantity (English, and Dutch as the end of a compound: `ontwerpwind`,
# `inschakelvermogen`): "what <noun>" asks for a number with a unit.
QUANTITY_NOUNS = frozenset(
    "capacity capacities volume volumes pressure tension load loads force speed velocity wind flow rate power "
    "current voltage temperature length width height depth draught draft diameter cross-section size weight mass "
    "density area period interval frequency duration distance margin rating amount quantity percentage torque "
    "resistance displacement stress strain".split()
)
DUTCH_QUANTITY_ENDINGS = tuple(
    "capaciteit inhoud volume druk spanning belasting kracht snelheid wind debiet vermogen stroom temperatuur "
    "lengte breedte hoogte diepte diepgang diameter doorsnede grootte gewicht massa dichtheid oppervlakte periode "
    "interval frequentie duur afstand marge waarde koppel weerstand".split()
)
_COUNT = re.compile(r"\b(?:how\s+many|hoeveel)\s+([\w-]+(?:\s+[\w-]+)?)", re.IGNORECASE)
_MEASURE = re.compile(
    r"\b(?:how\s+(?:much|large|big|high|long|often|heavy|fast|far|deep|wide)|hoe\s+(?:groot|hoog|lang|vaak|zwaar|"
    r"snel|ver|diep|breed))\b",
    re.IGNORECASE,
)
_WHAT = re.compile(
    r"\b(?:what|which|welke|welk|wat\s+(?:is|zijn|was|waren)\s+(?:de|het))\s+(?:(?:is|are|was|were)\s+(?:the\s+|an?\s+)?)?"
    r"((?:[\w-]+\s+){0,2}[\w-]+)",
    re.IGNORECASE,
)
# A question that opens with an asking word; one that does not is a noun phrase whose first words
# name what it asks for ("bollard pull of the dredger", "minimum cross-section of the conductor").
_ASKING_START = re.compile(
    r"^\W*(?:what|which|how|where|when|why|who|whom|whose|is|are|was|were|does|do|did|can|could|must|may|shall|should|"
    r"welke|welk|wat|hoe|hoeveel|waar|wanneer|waarom|wie|zijn|moet|moeten|mag|kan|tot|at|in|on|to|from|above|below)\b",
    re.IGNORECASE,
)
NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve twenty hundred "
    "een twee drie vier vijf zes zeven acht negen tien elf twaalf twintig honderd"
).split()
_NUMBER = r"(?:\d+(?:[.,]\d+)?|" + "|".join(NUMBER_WORDS) + r")"
# A number with a unit: 250 m3/h, 2,800 l/h, 25 m/s, 16 mm2, 65 kA, 24 seconds, 35 degrees, 40 %,
# 12 months. A unit is a short symbol (up to three letters, a digit and a `/` part: m, kW, kNm,
# m3/h, MΩ) or a unit word; not a section number before its title (`2.2 Environmental loads`) or
# a number before a short word (`4 of the`, `2 de`).
UNIT_WORDS = (
    "seconds second minutes minute hours hour days day weeks week months month years year degrees degree "
    "percent knots knot tonnes tonne tons litres liters metres meters seconden minuten uur dagen weken maanden "
    "jaar graden procent knopen ton liter meter"
).split()
NOT_UNITS = frozenset(
    "a an and are as at be by for in is it of on or the to was we all any our per ten two one "
    "de en een het in is op te van met of om aan bij die dat".split()
)
# A number's separators bounded (1.234.567,89 has three): unbounded, `1,1,1,...` with no unit
# after it was scanned again from each of its digits (40 KB of it took a question 18 s).
_MEASURED = re.compile(
    r"(?<![\w.-])\d+(?:[.,]\d+){0,6}\s?(%|°\s?C?|(?:"
    + "|".join(UNIT_WORDS)
    + r")\b|[a-zA-Zµ°Ω]{1,3}\d?(?:/[a-zA-Z]{1,3}\d?)?(?![\w/-]))"
)
_WORD = re.compile(r"[\w-]+")


@dataclass(frozen=True)
class Asked:
    """What a question asks of a block: ``count`` (the words of "how many X": a block answers
    with a number a few words before X) or ``measure`` (a number with a unit); ``attribute``:
    the words that name the quantity asked (left out of the block evidence)."""

    count: tuple[str, ...] = ()
    measure: bool = False
    attribute: tuple[str, ...] = ()
    families: tuple[str, ...] = ()


def asked(query: str) -> Asked:
    """What ``query`` asks for (see ``Asked``); ``families``: the unit families of the quantity
    asked, when its kind is known (``cellar.retrieval.quantities``)."""
    count = _COUNT.search(query)
    if count:
        counted = tuple(count.group(1).casefold().split())
        # "how many hours", "hoeveel uur": a unit counted is a measure of its kind
        if unit_word_families(counted[0]):
            return Asked(measure=True, attribute=counted[:1], families=tuple(sorted(unit_word_families(counted[0]))))
        # "hoeveel koelvermogen", "hoeveel druk": Dutch asks how much of a quantity as it counts
        if families_of_noun(counted[0]):
            return Asked(measure=True, attribute=counted[:1], families=families_of_noun(counted[0]))
        return Asked(count=counted)
    named = [word for match in _WHAT.finditer(query) for word in match.group(1).casefold().split()]
    if not _ASKING_START.search(query):
        named += _WORD.findall(query.casefold())[:3]
    attribute = tuple(
        word
        for word in named
        if word in QUANTITY_NOUNS
        or word.endswith(DUTCH_QUANTITY_ENDINGS)
        or families_of_noun(word)
        or symbol_families(word)
    )
    families = asked_families(query, named)
    measure = bool(attribute) or bool(_MEASURE.search(query)) or bool(families)
    return Asked(measure=measure, attribute=attribute, families=families if measure else ())


def holds_quantity(quote: str, question: Asked, analyse: Callable[[str], list[str]]) -> bool:
    """Whether ``quote`` holds what ``question`` asks: a count of its noun, or a measured number."""
    if question.count:
        counted = {term for word in question.count for term in analyse(word)}
        words = _WORD.findall(quote.casefold())
        for i, word in enumerate(words):
            if re.fullmatch(_NUMBER, word) and any(counted & set(analyse(w)) for w in words[i + 1 : i + 4]):
                return True
        return False
    # (in digits only: a number in words, `in less than five hours`, is as often a duration by the
    # way as the quantity asked, and it misled more than it found on the demo's questions)
    if question.families:  # the kind asked: a number whose unit is of that family
        return bool(stated_families(quote) & set(question.families))
    return question.measure and any(unit.casefold() not in NOT_UNITS for unit in _MEASURED.findall(quote))


def block_terms(
    terms: Iterable[str], reading: Reading, question: Asked, analyse: Callable[[str], list[str]]
) -> tuple[str, ...]:
    """The terms a block's evidence counts: the question's, and the English terms of a Dutch
    question's first senses (``reading``: those of ``text`` among ``held_by``'s), but for the
    words that name the quantity asked, in either language. Every sense finds the document; within
    it, a far sense tells blocks apart where it should not: `vrachtschip` (cargo ship) also reads
    as load, and so chose a trial report's `load cell` paragraph over the one that states the
    thruster's power."""
    attribute = {term for word in question.attribute for term in analyse(word)}
    first = set(analyse(reading.text))
    english = [
        term
        for dutch, terms_of in (reading.held_by or {}).items()
        if dutch not in attribute
        for term in terms_of
        if term in first
    ]
    return tuple(dict.fromkeys(term for term in (*terms, *english) if term not in attribute))


def order_blocks(
    chunks: Sequence[tuple[int, float]],
    records: Sequence[Mapping[str, Any]],
    start: int,
    terms: Iterable[str],
    question: Asked,
    analyse: Callable[[str], list[str]],
    naming: str,
    postings: Callable[[str], tuple[np.ndarray, ...] | None],
    closeness: Sequence[float] | np.ndarray = (),
) -> list[tuple[int, float]]:
    """A document's candidate chunks (row, fused score), best first, reordered by block score
    (see the module docstring). ``records``: the document's chunk records (row ``start + i`` is
    ``records[i]``); ``terms``: the question's analysed terms (a Dutch one's English reading's
    too); ``naming``: the document's title and path; ``postings(term)``: the search source's
    (rows ascending first), or None. Which blocks hold a term is read from its postings: the
    index analysed each record's text as ``analyse`` does, and stemming every word of a shown
    document's blocks again took most of a tab's first answer that shows one. A block no ranker
    returned joins when its own evidence, quantity or closeness speaks for it. ``closeness``: each
    record's cosine with the question (none when the dense ranker did not run)."""
    dropped = {term for word in question.attribute for term in analyse(word)} | set(analyse(naming))
    titled = _titled(records)
    asks_scope = bool(set(terms) & {term for word in ASKS_SCOPE for term in analyse(word)})
    wanted = set(terms) - dropped
    n = len(records)
    rows_of = {term: frozenset(rows_within(postings(term), start, start + n).tolist()) for term in wanted}
    held = [{term for term, rows in rows_of.items() if start + i in rows} for i in range(n)]
    frequency = {term: len(rows) for term, rows in rows_of.items()}
    weight = {term: math.log(1 + n / df) for term, df in frequency.items() if 0 < df < n}
    total = sum(weight.values())
    fused = dict(chunks)
    scored = []
    for i, record in enumerate(records):
        evidence = sum(weight[t] for t in held[i] & weight.keys()) / total if total else 0.0
        quantity = holds_quantity(record["quote"], question, analyse) if question.count or question.measure else False
        own = EVIDENCE_WEIGHT * evidence + (QUANTITY_WEIGHT if quantity else 0.0)
        own += CLOSENESS_WEIGHT * float(closeness[i]) if len(closeness) else 0.0
        if not asks_scope and announces(record, titled):
            own -= ANNOUNCING_PENALTY
        row = start + i
        if row in fused or own > 0:
            scored.append((row, fused.get(row, 0.0) + own))
    scored.sort(key=lambda chunk: (-chunk[1], chunk[0]))
    return scored


def announces(record: Mapping[str, Any], titled: bool) -> bool:
    """Whether a report's block announces what the report covers rather than stating what it
    found: the text before its first section (under the title alone, when ``titled``), or a
    section named Scope, Purpose, Introduction, ... (``ANNOUNCING``). Such a block repeats the
    subject of every question about the report (`the plate thickness of the bottom and side
    shell`) and so outranks the block that answers (`the worst plate ... measured 7.6 mm`)."""
    meta = record.get("meta", {})
    if meta.get("source") != "document" or meta.get("block") == "heading":
        return False
    headings = meta.get("headings") or []
    if len(headings) <= (1 if titled else 0):
        return True
    title = re.sub(r"^[\d.]+\s*", "", headings[-1]).casefold().split()
    return bool(title) and title[0] in ANNOUNCING


def _titled(records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every block of a document lies under one title heading, with sections below it."""
    paths = [record.get("meta", {}).get("headings") or [] for record in records]
    return len({tuple(path[:1]) for path in paths}) == 1 and any(len(path) > 1 for path in paths)


# Words that ask rather than name what is asked about (English and Dutch): they tell nothing of
# whether an archive could answer, so the share of known words leaves them out.
ASKING_WORDS = (
    "what which how many much often long must may might where when why who whom whose shall should does do did is "
    "are was were can could would will waar welke welk hoeveel wanneer waarom hoe wie wat moet moeten mag kan"
).split()


def word_terms(words: Iterable[str], analyse: Callable[[str], list[str]]) -> set[str]:
    """The terms of ``words``, as the analyser reads them and as written."""
    return {term for word in words for term in (*analyse(word), word)}


def known_share(
    weighted: Iterable[tuple[float, str]],
    knows: Callable[[str], bool],
    held_by: Mapping[str, Sequence[str]] | None,
    analyse: Callable[[str], list[str]],
) -> float:
    """The refusal's ``known`` evidence: the idf-weighted share of the question's words (asking
    words left out) that the archive knows at all, a Dutch word known when one of its English
    translations is. A question about what no file ever mentions (the `warranty period` of a unit
    a report describes, the `paint system` of its holds) names words the archive never uses,
    however many of its other words a report shares; 1.0 when no word is left."""
    asking = word_terms(ASKING_WORDS, analyse)
    pairs = [(w, t) for w, t in weighted if t not in asking]
    total = sum(w for w, _ in pairs)
    if not total:
        return 1.0
    found = sum(w for w, t in pairs if knows(t) or any(knows(e) for e in (held_by or {}).get(t, ())))
    return round(found / total, 4)


def quantity_share(query: str, holds: Callable[[str], bool], analyse: Callable[[str], list[str]]) -> float:
    """The refusal's ``quantity`` evidence: 0.0 when ``query`` asks for a quantity of a known kind
    (``asked(query).families``) and the best entry ``holds`` no unit of that kind anywhere, else
    1.0. A near miss asks the one value a report does not give (the rudder's `area` of a report
    stating seconds, bar and kNm; a `bollard pull` in tonnes or kN) while sharing its other
    words; a unit of the asked kind is the least a block that answers must hold. (Read from the
    postings: whether the entry's text holds the unit's term, wherever it stands.)"""
    terms = quantity_terms(query, analyse)
    return 1.0 if not terms or any(holds(term) for term in terms) else 0.0


def quantity_terms(query: str, analyse: Callable[[str], list[str]]) -> list[str]:
    """The terms of the units of the kind ``query`` asks for (`bar`, `kpa`, ... for a pressure):
    what ``quantity_share`` looks up, and whose postings a tab must have fetched. Empty when no
    kind is asked, or when a unit of it is one the analyser drops (`%`, `°`, `a`): the postings
    cannot tell then."""
    units = [
        [term for term in analyse(unit)[:1] if not term.isdigit()] for f in asked(query).families for unit in UNITS[f]
    ]
    if not all(units):
        return []
    return list(dict.fromkeys(terms[0] for terms in units))

"""The answer cell first: what a question asks for, and which of a notebook's cells answers it.

A notebook's hits come scored chunk by chunk, and the chunk that matches a question best is often
the markdown that states the problem (a worked example's "Water at 30 °C flows through a 50 mm
pipe ..."), while the answer is the code cell below it and its output. So, within a notebook
shown, the hits are reordered by what the question asks for (``intent``):

- ``explain`` (why, what is, what is meant by, what does X mean, how does, definition,
  difference, Dutch alike; without a number, unless it asks why): the
  chunks in score order. Prose answers these, and the best chunk of each kind put first (an
  `import numpy as np` at a quarter of the best paragraph's score) pushed a paragraph that
  explains out of the five hits (dev cell_strict@5 .923 -> .962, the Dutch dev questions .897 ->
  .923, nothing else on the tuning sets moved). A section's opening paragraph gains as its title
  holds the question's terms (``opening_first``): every chunk of a section carries its headings'
  words, so `Rules of Broadcasting` and `The Bias-Variance Trade-off` met every paragraph under
  them alike, and the one that defines is the one that opens the section;
- ``value`` (a digit in the question, how much / how many / how slow / hoeveel / hoe snel, what
  value ..., or a question that opens on a value's noun: `final RMSE of the tuned forest`,
  `lightship weight of the tug`, `uitkomst van ...`, or on a Dutch compound that ends in one:
  `bevolkingsdichtheid`, `overlevingskans`) and
  ``locate`` (every other question: where is X computed, plotted, fitted; one that opens on a
  diagram, a law or a fit whatever numbers follow: `T-xy diagram at 1 bar`): the **answer cell**
  first: of the notebook's computing cells (a code cell with its outputs), the one whose best
  chunk plus the best markdown that introduces it (the markdown cells between the code cell
  before it and it; not the notebook's first cell, which introduces the whole notebook and so
  tells no cell from another) scores most. For a value question only code cells with an output
  answer, and a code cell without one (imports, inputs) passes the markdown that introduced it on
  to the next, and a cell gains as its chunks hold the words the question opens on
  (``NAMING_WEIGHT``) and as its output states a number of the kind the question asks
  (`rekentijd`, `how slow`: `2.61 s ± 192 ms per loop`; `velocity in ft/min`: `3401.5 foot /
  minute`); where some cell's output does, the answer is one of those cells, not the cell below
  the problem statement that prints an intermediate ratio; the answer cell's
  output comes first (a table, a scalar, a printed stream: the best scored, else the first). For a locate question the answer cell's code or plot comes first;
- ``figure``: a locate question whose opening words name a figure (`GZ curve plotted for the
  stability check`, `T-xy diagram for water and ethanol`, `validation curve of ... versus degree`):
  of the computing cells that draw a plot (all, when none does), the answer cell, its plot first.
  A locate or figure question's numbers name its cell as a value question's opening words do
  (`ternary phase diagram of air at 120 K`: of the cells that draw one, the one that sets 120 K).
  A question that opens on another act is no figure question: `fitting IEC binned power curves`
  asks for the fit, and the code that fits.

The other hits of a value or locate question follow in ``diverse`` order: the best of each kind
first, with a second code, table, scalar, stream or plot chunk when it scores close to that kind's
best (``SECOND_OF_A_KIND``), then the rest; a value question's outputs (tables, scalars, printed
lines) before its code and prose, since a value is read in an output and the neighbourhood
already shows the answer cell's heading and code (tuning sets: the cited cell among the top five
notebooks' hits for 10 more of 315 answerable questions and 3 fewer, questions in a value's words
whose cited cell was a plot or a definition; with dev's thresholds 12 and 4).
(Measured on the dev gold set; see the README's scorecard.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from cellar.records import KINDS
from cellar.retrieval.analysis import STOP_WORDS
from cellar.retrieval.quantities import families_of_noun, stated_families

OUTPUT_KINDS = ("table", "scalar", "stream")
LOCATE_KINDS = ("code", "plot")
# A value question's answer cell gains this share of the notebook's best chunk score for the share
# of the words the question opens on that its chunks hold (``naming_shares``: `average height`
# and `standard deviation` name the cell that prints `Mean height` and `Standard deviation`, not
# the one that shows the data file whose name the question gives). Measured on the tuning sets:
# 0.25 and 0.5 move fewer cells, 1.0 to 3.0 the same ones.
NAMING_WEIGHT = 1.0
# An explanation's section opening gains this share of the notebook's best chunk score for the
# share of the question's terms its title holds (``opening_first``). Measured on the tuning sets:
# 0.25 moved fewer questions, 1.0 lost one cell among the hits.
OPENING_WEIGHT = 0.5
SECOND_OF_A_KIND = 0.9  # a second chunk of a kind leads too when it scores this share of the kind's best
# An output's first characters, read for the kind of number it states: a timing or a printed
# result is a line, and a table names its units in its header (reading whole tables cost 3 ms
# for a notebook of 140 outputs, per value question).
STATED_CHARS = 300
SECOND_KINDS = ("code", "table", "scalar", "stream", "plot")  # not markdown: its windows share a heading
_STOP = STOP_WORDS["english"] | STOP_WORDS["dutch"]
# What a question opens with before the words it asks about: stop words (`how many`, `hoeveel`
# among them), the adjectives of `how large`, `hoe groot`, and the verbs of `where can I find`,
# `waar staat`, `waar vind ik`, `waar zit`, which ask where and name nothing.
_SKIPPED = _STOP | {"large", "big", "high", "low", "groot", "hoog", "laag"} | {
    "find", "see", "located", "staat", "staan", "vind", "vinden", "zie", "zien", "zit", "zitten", "ligt"
}  # fmt: skip

_DIGIT = re.compile(r"\d")
# a word, or a dotted name as one (`np.histogram` names a function, not a histogram)
_WORD = re.compile(r"[^\W\d_][\w-]*(?:\.[^\W\d_][\w-]*)*")
# Dutch value nouns, which also name a value where they end a compound (bevolkingsdichtheid,
# overlevingskans, meetfout, rekentijd): English writes such a compound as two words, each read on
# its own.
DUTCH_VALUE_HEADS = frozenset(
    "nauwkeurigheid fout kans factor afwijking fractie rendement verlies aantal energie kosten prijs "
    "opbrengst waarde totaal grootte dichtheid tijd duur uitkomst".split()
)
# The nouns that name a value (beside the unit families of ``quantities.families_of_noun``): a
# question that opens on one asks for a value even without a number (`final RMSE of the tuned
# forest`, `survival rate of women`, `speedup of the Cython product`).
VALUE_NOUNS = DUTCH_VALUE_HEADS | frozenset(
    "accuracy rmse mse mae error score rate ratio speedup coefficient factor deviation average mean median "
    "fraction efficiency loss losses drop bandwidth number count energy consumption probability share cost "
    "price yield value values tension weight total sum size result results outcome output variance "
    "correlation percentage precision recall density time timing runtime duration memory "
    "coëfficiënt gemiddelde verliezen waarden som uitkomsten resultaat resultaten uitvoer variantie "
    "correlatie precisie rekentijd looptijd geheugen spread spreiding".split()
)
# The nouns that name something to be found, not a value (`T-xy diagram at 1 bar`, `pump affinity laws
# applied when the speed drops from 3500 to 1700 rpm`): such a question locates, whatever numbers it names.
LOCATE_NOUNS = frozenset(
    "diagram diagrams plot plots chart charts graph figure curve curves histogram map fitting fit fits "
    "laws law rating calculation example model function class method code implementation derivation "
    "diagrammen grafiek figuur kromme krommen curves wetten berekening voorbeeld functie plotten "
    "grafieken figuren implementatie afleiding methode klasse".split()
)
# The words that name a figure (among a locate question's opening words: a ``figure`` question).
FIGURE_WORDS = frozenset(
    "plot plots plotted plotting chart charts graph graphs figure figures curve curves histogram histograms "
    "diagram diagrams grafiek grafieken figuur figuren kromme krommen geplot plotten".split()
)
# Words that ask for an explanation, English and Dutch (a question that also names a number asks
# for a value, whatever its first words): `what is meant by`, `wat wordt bedoeld met`, `wat houdt
# X in`, `what does NPSH mean` (not `what does the mean ...`: an average), `what counts as`, `wat
# valt onder`. A question that asks why explains whatever numbers it names (``_WHY``).
_EXPLAIN = re.compile(
    r"(?<![\w-])(?:define|defined|definition|definitie|meaning|means|betekent|betekenis|difference|"
    r"verschil|explain|uitleg|what\s+(?:is|are)|wat\s+(?:is|zijn)|how\s+(?:do|does|can|is|are)|hoe|"
    r"bedoeld|bedoelt|wat\s+houdt|what\s+does\s+(?!(?:the|a|an)\b)[\w-]+(?:\s+[\w-]+){0,3}\s+mean|"
    r"what\s+(?:counts|qualifies)\s+as|wat\s+(?:telt|geldt)\s+als|wat\s+valt\s+onder)\b"
)
_WHY = re.compile(r"\b(?:why|waarom)\b")  # a reason is no value, whatever numbers the question names
_WHERE = re.compile(r"\b(?:where|waar)\b")
_VALUE = re.compile(
    r"\b(?:how\s+(?:much|many|large|big|high|long|fast|slow|often|far|accurate|precise|heavy|hot|warm|cold|"
    r"wide|deep|thick|strong|efficient|old)|hoeveel|"
    r"hoe\s+(?:groot|hoog|lang|zwaar|snel|traag|vaak|ver|nauwkeurig|precies|heet|warm|koud|breed|diep|dik|sterk|"
    r"efficiënt|oud|duur)|"
    r"what\s+(?:value|volume|number|amount)|welke\s+(?:waarde|inhoud|volume)|value\s+of|waarde\s+van)\b"
)


def intent(query: str) -> str:
    """What the question asks for: ``value``, ``locate``, ``figure`` or ``explain`` (see the module
    docstring). A question that opens on a diagram, a law or a fit (``head_words``) locates it
    whatever numbers follow (`T-xy diagram for water and ethanol at 1 bar`), and when those words
    name a figure, the figure; one without a number that opens on a value's noun asks for that
    value (`final RMSE of the tuned forest`)."""
    text = query.casefold()
    # a dotted name (`np.histogram`) names code, not a figure, a place or a value
    head = [part for word in head_words(text) if "." not in word for part in (word, *word.split("-"))]
    where = _WHERE.search(text) is not None
    place = where or any(_names_a_place(word) for word in head)
    acts = bool(head) and head[0].endswith("ing") and head[0] not in FIGURE_WORDS  # fitting, solving
    locate = "figure" if not acts and any(word in FIGURE_WORDS for word in head) else "locate"
    if _WHY.search(text) and not where:
        return "explain"
    if _DIGIT.search(text) or _VALUE.search(text):
        return locate if place else "value"
    if _EXPLAIN.search(text) and not where:
        return "explain"
    return "value" if not place and any(_names_a_value(word) for word in head) else locate


def head_words(text: str) -> list[str]:
    """The words a question opens on, after its asking words: its first run of words that are no
    stop word of either language (`final RMSE` of `final RMSE of the tuned forest`, `drukverlies` of
    `Wat is het drukverlies over de klep`)."""
    words = _WORD.findall(text)
    start = next((i for i, word in enumerate(words) if word not in _SKIPPED), len(words))
    end = next((i for i in range(start, len(words)) if words[i] in _STOP), len(words))
    return words[start:end]


def _names_a_value(word: str) -> bool:
    """A value's noun, a quantity's, or a Dutch compound ending in a value's noun."""
    return (
        word in VALUE_NOUNS
        or bool(families_of_noun(word))
        or any(word.endswith(noun) and len(word) - len(noun) >= 3 for noun in DUTCH_VALUE_HEADS)
    )


def _names_a_place(word: str) -> bool:
    """A locate noun, or a Dutch compound ending in one (affiniteitswetten, vermogenscurves)."""
    return word in LOCATE_NOUNS or any(word.endswith(noun) for noun in LOCATE_NOUNS if len(noun) >= 5)


def order_hits(
    chunks: Sequence[tuple[int, float]],
    records: Sequence[Mapping[str, Any]],
    start: int,
    kinds: Mapping[int, int] | Sequence[int],
    asks: str,
    allowed: Sequence[str] = (),
    naming: Mapping[int, float] | None = None,
    titled: Callable[[str], float] | None = None,
    stating: frozenset[int] = frozenset(),
    further: Sequence[tuple[int, float]] = (),
) -> list[tuple[int, float]]:
    """A notebook's candidate chunks (row, score), best first, in the order the hits show them.

    ``records``: the notebook's chunk records (row ``start + i`` is ``records[i]``); ``kinds``:
    the chunk kind (a ``KINDS`` number) of each candidate row; ``asks``: ``intent``'s verdict.
    The answer cell's chunk may be one that no ranker returned (the code cell below the markdown
    that matched, in other words than the question's): it then scores 0. ``allowed``: the kinds a
    filter lets through (all when empty); no other kind is ever returned. ``naming``: per cell,
    the share of the question's opening words it holds (``naming_shares``; a value question's).
    ``titled``: the share of the question that a section title holds (``title_share``; an
    explanation's sections open with the paragraph that defines, ``opening_first``).
    ``stating``: the cells whose outputs state a number of the kind a value question asks
    (``stating_rows``); when any computing cell is one, the answer cell is. ``further``: the
    notebook's other chunks that BM25 met (row, score) below the rankers' cut: they follow the
    answer cell among the hits, but do not choose it (tried: letting them choose it lost as many
    answer cells as it found)."""
    chunks = list(chunks)
    if asks == "explain" and titled is not None:
        return opening_first(chunks, records, start, titled)
    if asks == "explain" or not chunks:
        return chunks
    first = _answer_chunk(chunks, records, start, asks, tuple(allowed), naming or {}, stating)
    every = sorted([*chunks, *further], key=lambda chunk: (-chunk[1], chunk[0]))
    if first is None:
        return diverse(every, kinds)
    rest = diverse([chunk for chunk in every if chunk[0] != first[0]], kinds)
    if asks == "value":  # a value is read in outputs: the others follow the answer, then code and prose
        outputs = {KINDS.index(kind) for kind in OUTPUT_KINDS}
        rest = sorted(rest, key=lambda chunk: int(kinds[chunk[0]]) not in outputs)
    return [first, *rest]


def _answer_chunk(
    chunks: Sequence[tuple[int, float]],
    records: Sequence[Mapping[str, Any]],
    start: int,
    asks: str,
    allowed: tuple[str, ...],
    naming: Mapping[int, float],
    stating: frozenset[int],
) -> tuple[int, float] | None:
    """The chunk that opens the hits: the answer cell's (see the module docstring), of a kind
    ``allowed`` (any when empty), or None when no computing cell has one."""
    scores = dict(chunks)
    code_cells = {r["cell"] for r in records if r["kind"] == "code"}
    cells = [r["cell"] for r in records if r["cell"] is not None]
    by_cell: dict[int, list[int]] = {}  # a computing cell's chunks of the kinds allowed
    markdown: dict[int, float] = {}  # a markdown cell's best score
    for i, record in enumerate(records):
        cell, kind, score = record["cell"], record["kind"], scores.get(start + i, 0.0)
        if kind == "markdown" and cell is not None:
            markdown[cell] = max(markdown.get(cell, 0.0), score)
        elif cell in code_cells and (not allowed or kind in allowed):
            by_cell.setdefault(cell, []).append(i)
    # The answer cell shows what the question asks for: a value question's an output, a code cell
    # without one (imports, inputs) passing the markdown that introduced it on to the next code
    # cell that has one; a figure question's a plot (any code cell when none draws).
    wanted = {"value": OUTPUT_KINDS, "figure": ("plot",)}.get(asks, LOCATE_KINDS)
    answering = code_cells & {r["cell"] for r in records if r["kind"] in wanted}
    if asks == "figure" and not answering:
        answering = code_cells
    # a value of the kind asked is stated by these cells' outputs; the others still take the
    # markdown above them, so a problem statement does not pass on past its first output
    candidates = answering & stating if asks == "value" and answering & stating else answering
    best: tuple[float, int] | None = None
    bonus = NAMING_WEIGHT * max(scores.values(), default=0.0)
    previous = min(cells, default=0)  # the notebook's first cell introduces the whole notebook
    for cell in sorted(answering - {None}):
        intro = max((markdown.get(c, 0.0) for c in range(previous + 1, cell)), default=0.0)
        previous = cell
        if cell not in by_cell or cell not in candidates:
            continue
        own = max(scores.get(start + i, 0.0) for i in by_cell[cell]) + bonus * naming.get(cell, 0.0)
        if own + intro > 0 and (best is None or own + intro > best[0]):
            best = (own + intro, cell)
    if best is None:
        return None
    chosen = max(by_cell[best[1]], key=lambda i: (records[i]["kind"] in wanted, scores.get(start + i, 0.0), -i))
    return (start + chosen, scores.get(start + chosen, 0.0))


def opening_first(
    chunks: Sequence[tuple[int, float]],
    records: Sequence[Mapping[str, Any]],
    start: int,
    titled: Callable[[str], float],
) -> list[tuple[int, float]]:
    """An explanation's chunks (row, score) by score, each section's opening paragraph
    (``section_openings``) counting ``OPENING_WEIGHT`` times the best score more for the share of
    the question its section's title holds (``titled``); the scores shown stay the rankers'."""
    if not chunks:
        return []
    openings = section_openings(records)
    best = max(score for _, score in chunks)

    def gain(row: int) -> float:
        title = openings.get(row - start)
        return OPENING_WEIGHT * best * titled(title) if title is not None else 0.0

    return sorted(chunks, key=lambda chunk: (-(chunk[1] + gain(chunk[0])), chunk[0]))


def section_openings(records: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """Each section's opening paragraph: the index of the first markdown record of a heading path
    with text below its headings (a cell that is a heading alone opens nothing), and the title of
    its section."""
    openings: dict[int, str] = {}
    opened: set[tuple[str, ...]] = set()
    for i, record in enumerate(records):
        headings = tuple(record.get("meta", {}).get("headings") or ())
        if record["kind"] != "markdown" or not headings or headings in opened:
            continue
        if any(line.strip() and not line.lstrip().startswith("#") for line in record["quote"].splitlines()):
            opened.add(headings)
            openings[i] = headings[-1]
    return openings


def title_share(
    weighted: Sequence[tuple[float, Sequence[str]]], analyse: Callable[[str], list[str]]
) -> Callable[[str], float]:
    """The share of a question that a section title holds: ``weighted`` is each of the question's
    terms as (weight, (the term, its translations...)), a term held when the title's terms
    (``analyse``) hold it or a translation."""
    total = sum(weight for weight, _ in weighted)

    def share(title: str) -> float:
        held = set(analyse(title))
        return sum(weight for weight, terms in weighted if held.intersection(terms)) / total if total else 0.0

    return share


def naming_shares(
    holding: Sequence[Sequence[int]], records: Sequence[Mapping[str, Any]], start: int
) -> dict[int, float]:
    """Each cell's share of the words a question opens on (``head_words``) that its chunks hold;
    ``holding``: per word, the rows of the notebook's chunks that hold it (or a translation)."""
    counts: dict[int, int] = {}
    for rows in holding:
        for cell in {records[row - start]["cell"] for row in rows} - {None}:
            counts[cell] = counts.get(cell, 0) + 1
    return {cell: count / len(holding) for cell, count in counts.items()}


def stating_rows(records: Sequence[Mapping[str, Any]], start: int, families: Sequence[str]) -> np.ndarray:
    """The rows of the outputs that state a number of one of ``families`` (`2.61 s ± 192 ms per
    loop` a time, `dP = 1.2 bar` a pressure): what a value question of that kind names beside its
    opening words (``naming_shares``), as `rekentijd`, `how slow` or `runtime` ask for a time."""
    wanted = set(families)
    rows = [
        i
        for i, r in enumerate(records)
        if r["kind"] in OUTPUT_KINDS and stated_families(r["quote"][:STATED_CHARS]) & wanted
    ]
    return start + np.array(rows, dtype=np.int64)


def diverse(chunks: Sequence[tuple[int, float]], kinds: Mapping[int, int] | Sequence[int]) -> list[tuple[int, float]]:
    """A notebook's chunks (best first) reordered so that the best of each kind comes first, in
    score order, with a second chunk of a kind among ``SECOND_KINDS`` (not markdown) that scores
    at least ``SECOND_OF_A_KIND`` of that kind's best, then the rest: the hits show the markdown,
    code and output that match rather than five windows of one kind (the heading text that every
    chunk under it carries makes same-kind windows crowd the top), yet a second table as good as
    the first is not hidden."""
    best: dict[int, float] = {}
    open_seconds = {KINDS.index(kind) for kind in SECOND_KINDS}
    leaders = []
    for chunk in chunks:
        kind = int(kinds[chunk[0]])
        if kind not in best:
            best[kind] = chunk[1]
            leaders.append(chunk)
        elif kind in open_seconds and 0 < SECOND_OF_A_KIND * best[kind] <= chunk[1]:
            open_seconds.discard(kind)
            leaders.append(chunk)
    return leaders + [chunk for chunk in chunks if chunk not in leaders]

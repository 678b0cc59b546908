"""The refusal's evidence: how much of a question the best notebook (or document) holds.

In: the question, its analysed terms and numbers, the best entry of a search source (its postings
and vectors, ``cellar.retrieval.sources``), a Dutch question's translations (``held_by``, from
``bilingual.Reading``) and the question's vectors. Out: the evidence that
``cellar.retrieval.refusal.refuses`` weighs against the calibrated thresholds, and that the
calibration (``evaluation.calibrate``) fits them on:

- ``coverage``: the idf-weighted share of the question's terms the entry holds (a term the archive
  lacks weighs most), each term also weighed by its word's ``commonness.specificity`` (a missing
  `found` or `jaar` says little, a missing `nitrogen` much);
- ``known_coverage``: the same share over the terms the archive knows (0 when it knows none);
- ``numbers``: the share of the numbers written in the question that the entry holds (``0,815`` is
  one number, found when any of its readings is, its SI spellings among them: `1 bar` by `1e5`);
- ``similarity``: when the dense ranker ran, the best cosine of the entry's chunks;
- ``chunk_coverage``: the largest share of the question's weight that one chunk of the entry
  holds (1.0: one cell, output or block holds every word of it; the coverage counts words
  anywhere in the entry, where `two coats` of a paint schedule and `group sum` of a code cell
  add up to a question neither answers), its asking words left out (`betekent` in `Wat betekent
  de oprichtende arm GZ?`, whose English `mean` a table of means holds, not the cell that
  explains the righting arm);
- ``missing``: the terms it lacks, which a refusal names;
- for a document, its ``source`` (whose thresholds judge it), ``known`` and ``quantity``
  (``cellar.retrieval.blocks``).

The evidence is the entry's as a whole, whatever the filters: they choose which entry is best and
which of its chunks are shown, not whether it answers. So every chunk counts, whatever its kind (a
table that answers a question is rarely as close in meaning to it as the prose above it), and a
term that the entry's year or project holds (the facts a filter selects on: ``2017``,
``17-042``), or a standard's designation (``CVS 210`` of ``volgens CVS 210``), is held by the
entry even when its text never repeats it. Such a term leaves the coverage, which weighs what the
text holds, unless the query has no other: the catalogue answers ``the 2017 vessel`` but vouches
for nothing else a question asks (``bonus 2024`` must not pass on its year). (Measured on the dev
set: coverage by the top hits alone separates worse.) A Dutch term is held where one of its
English translations is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from cellar.retrieval.blocks import ASKING_WORDS, known_share, quantity_share, word_terms
from cellar.retrieval.commonness import term_specificities
from cellar.retrieval.refusal import MEANING_WORDS
from cellar.retrieval.sources import MemorySource, ShardSource, cosines, rows_within

# The entry metadata that holds query terms as its text does: the facts a filter selects on, and
# the standard a clause is of.
CATALOGUE_FIELDS = ("year", "project", "designation")


def gather(
    query: str,
    terms: Sequence[str],
    numbers: Sequence[Sequence[str]],
    source: MemorySource | ShardSource,
    best: int | None,
    analyse: Callable[[str], list[str]],
    vectors: np.ndarray | None = None,
    held_by: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """The evidence (see the module docstring) that entry ``best`` of ``source`` answers ``query``,
    whose analysed ``terms`` and ``numbers`` (each number's readings) are given; ``analyse`` is the
    analyser's ``terms``. With no entry, nothing is held."""
    distinct = list(dict.fromkeys(terms))
    if best is None:
        return {"coverage": 0.0, "known_coverage": 0.0, "numbers": 0.0, "similarity": None, "missing": distinct}
    entry = source.notebooks[best]
    meta = entry["meta"]
    catalogue = {term for key in CATALOGUE_FIELDS if key in meta for term in analyse(str(meta[key]))}
    translations = held_by or {}
    rows = {
        term: rows_holding(source, entry, (term, *translations.get(term, ())))
        for term in {*distinct, *(t for n in numbers for t in n)}
    }
    in_text = {term: len(found) > 0 for term, found in rows.items()}
    held = {term: found or term in catalogue for term, found in in_text.items()}
    judged = [term for term in distinct if in_text[term] or term not in catalogue] or distinct
    specific = term_specificities(query, analyse)  # an everyday word tells little
    weights = [idf(source, term) * specific.get(term, 1.0) for term in judged]
    known = [(w, t) for w, t in zip(weights, judged) if source.postings(t) is not None]
    found = [all_terms for all_terms in numbers if any(held[t] for t in all_terms)]
    # what one chunk must hold: not the words that ask (`blocks.ASKING_WORDS`, a definition's `betekent`)
    asking = word_terms((*ASKING_WORDS, *MEANING_WORDS), analyse)
    naming = [(w, t) for w, t in zip(weights, judged) if t not in asking]
    similarity = None
    if vectors is not None and entry["end"] > entry["start"]:
        similarity = float(np.max(cosines(*source.notebook_vectors(best), vectors)))
    evidence = {
        "coverage": share(zip(weights, judged), held),
        "known_coverage": share(known, held),
        "numbers": round(len(found) / len(numbers), 4) if numbers else 1.0,
        "similarity": round(similarity, 4) if similarity is not None and np.isfinite(similarity) else None,
        "chunk_coverage": chunk_share(naming, rows, entry["start"], catalogue),
        "missing": [term for term in distinct if not held[term]],
    }
    if "source" in meta:  # a document: its source's thresholds judge it (Searcher.thresholds_for)
        evidence["source"] = meta["source"]
        # and a document's prose names what it covers: words no file uses tell (blocks.known_share)
        knows = source.postings  # a term the archive knows has postings
        evidence["known"] = known_share(zip(weights, judged), lambda term: knows(term) is not None, held_by, analyse)
        evidence["quantity"] = quantity_share(query, lambda term: holds(source, entry, term), analyse)
    return evidence


def holds(source: MemorySource | ShardSource, entry: Mapping[str, Any], term: str) -> bool:
    """Whether any chunk of ``entry`` (a notebook's or document's rows) holds ``term``."""
    return len(rows_within(source.postings(term), entry["start"], entry["end"])) > 0


def rows_holding(source: MemorySource | ShardSource, entry: Mapping[str, Any], terms: Sequence[str]) -> np.ndarray:
    """The rows of ``entry`` that hold any of ``terms`` (a term and its translations), ascending."""
    return np.unique(np.concatenate([rows_within(source.postings(t), entry["start"], entry["end"]) for t in terms]))


def chunk_share(
    weighted_terms: Iterable[tuple[float, str]], rows: Mapping[str, np.ndarray], start: int, catalogue: set[str]
) -> float:
    """The largest weight of the terms that one row holds, over the weight of all (``rows``: the
    rows of an entry from ``start`` that hold each term); a term the entry's catalogue holds and
    its text does not counts in every row. 0 for no terms."""
    pairs = list(weighted_terms)
    total = sum(w for w, _ in pairs)
    if not total:
        return 0.0
    everywhere = sum(w for w, t in pairs if t in catalogue and not len(rows[t]))
    per_row = np.zeros(1 + max((int(rows[t][-1]) - start for _, t in pairs if len(rows[t])), default=0))
    for w, t in pairs:
        per_row[rows[t] - start] += w
    return round((float(per_row.max()) + everywhere) / total, 4)


def idf(source: MemorySource | ShardSource, term: str) -> float:
    """Lucene's idf of ``term`` from the archive's statistics (df: its postings' length)."""
    postings = source.postings(term)
    df = 0 if postings is None else len(postings[0])
    return float(np.log1p((source.n_docs - df + 0.5) / (df + 0.5)))


def share(weighted_terms: Iterable[tuple[float, str]], present: Mapping[str, bool]) -> float:
    """The weight of the present terms over the weight of all, 0 for no terms."""
    pairs = list(weighted_terms)
    total = sum(w for w, _ in pairs)
    return round(sum(w for w, t in pairs if present[t]) / total, 4) if total else 0.0

"""Search: BM25 and dense retrieval fused, grouped per notebook, cited, or refused.

The query path runs in a browser worker, so it uses NumPy alone:

1. BM25 top 50 and dense (cosine) top 50 over the chunks that pass the filters;
2. per ranker, a notebook scores its best chunk plus a bounded bonus for corroboration: a tenth
   of the mean best score of up to three other kinds of chunk that also match (so a notebook
   whose markdown, code, table and scalar all match beats one with a single match of the same
   strength, but many weak matches never outweigh one strong one); stale notebooks count half;
3. fusion: a convex combination of the two rankers' notebook scores, BM25 divided by the best
   notebook's, dense min-max scaled over the candidate notebooks, with the dense ranker's weight
   ``DENSE_WEIGHT``: the static model is too weak to move BM25's order (dense weights of .1 and
   more, and reciprocal rank fusion at any k, cost a notebook or two on the dev set), so it breaks
   near-ties only, unless BM25 cannot tell its best notebooks apart (``fusion.flat``: a question
   of common words, `x-as omdraaien zodat hij van 10 naar 0 loopt`); then its share is .6. A
   hybrid search then orders the notebooks among its ten best again (``fusion.rerank``, learned
   weights over the fused score, the share of the question's terms the notebook and its three
   best chunks hold, and its length): the answer's order; the refusal judges the fused best;
4. refusal: the best notebook must hold the query's terms (idf-weighted coverage) and its
   numbers, and, when the dense ranker ran, be close in meaning (its best cosine: a name the
   notebook mentions only in passing, such as a second wind farm in a code comment, passes the
   lexical tests but not this one); three thresholds, calibrated on a gold set and stored in the
   shard (``calibrate``). A word that no chunk of the archive contains weighs most in the
   coverage, since no notebook can answer for it; but when the best notebook holds every query
   term the archive does know, the unknown words are as likely a translation (a Dutch question
   on an English notebook) as a missing name, so the coverage test is passed and the dense
   similarity alone judges them. BM25 alone has no such judge and keeps counting them missing.
   And when one chunk of the best notebook holds every word of the question, the similarity
   test is passed: the static model is weakest where such chunks are common, on Dutch text
   (`Hoeveel trim had de chemicaliëntanker na het laden in Moerdijk?`: .28) and on terse
   service notes (`mechanical seal leakage on the cooling water pump`: .41), while words spread
   over a notebook's cells are still judged by their meaning.
   (Measured on the dev gold set: no rule over coverage, numbers and similarity alone refuses
   fewer than two answerable questions while refusing all out-of-scope ones, as each of the two
   is outscored on all three by an out-of-scope question; this rule answers one of them, the
   other is a Dutch question whose similarity is below an out-of-scope Dutch one's. Letting
   the dense ranker move the notebook order, at any fixed weight or at a weight that grows
   when BM25's two best notebooks are close, gains no notebook on that set.)
   The evidence is the best notebook's as a whole: filters choose which notebook is best and
   which of its chunks are shown, never whether it answers (``cellar.retrieval.evidence``).
5. the answer contract of DESIGN.md, with a neighbourhood per notebook: the heading above the
   first hit, its cell, the next two cells and their outputs; the hits in the order of
   ``answer_cell.order_hits`` (for a value or locate question the answer cell first).

Steps 1-4 read postings, vectors and the notebook table; step 5 reads chunk records, one
container per notebook shown. The source is an in-memory Index (``MemorySource``: every vector,
so the dense ranker is exact) or a format-2 shard (``ShardSource``: the postings partitions of
the query's terms, the clusters its vector probes, whose int8 codes give the candidates' exact
scores, and the containers of the top notebooks, whose vectors give the refusal's similarity).
A BM25 candidate in a cluster the query did not probe has no dense score; it adds nothing to
the dense side of the fusion (probing every cluster, a shard answers as the Index does, to the
byte). ``Searcher.search`` is ``answer(rank(...))``; a browser that fetches files on demand calls
``search`` and, on NeedFiles, fetches the files it names in one round and calls again: first
the partitions and clusters, then the containers.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from cellar.records import KINDS, Answer, Hit, NotebookResult
from cellar.retrieval.analysis import Analyzer
from cellar.retrieval.answer_cell import head_words, intent, naming_shares, order_hits, stating_rows, title_share
from cellar.retrieval.bilingual import Reading, Translator, question_translator, read_in_english
from cellar.retrieval.blocks import Asked, asked, block_terms, order_blocks, quantity_terms
from cellar.retrieval.bm25 import summed_scores
from cellar.retrieval.context import hit_context
from cellar.retrieval.embedding import StaticModel
from cellar.retrieval.evidence import gather, idf
from cellar.retrieval.filters import Filters
from cellar.retrieval.fusion import FLAT_DENSE_WEIGHT, RERANK_DEPTH, RERANK_WEIGHTS, flat, notebook_scores, rerank
from cellar.retrieval.index import Index
from cellar.retrieval.quantities import si_spellings
from cellar.retrieval.refusal import refusal_reason, refuses
from cellar.retrieval.sources import MemorySource, ShardSource, cosines, met_within, rows_within

DEPTH = 50  # chunks taken from each ranker
DENSE_WEIGHT = 0.03  # share of the dense ranker in a hybrid notebook score (see the docstring)
STALE_FACTOR = 0.5
HITS_PER_NOTEBOOK = 5
MODES = ("bm25", "dense", "hybrid")
TRANSLATION_WEIGHT = 0.5  # BM25 weight of a Dutch word's English translations (bilingual.Reading)
# The values calibrated on ../shared/gold/dev.jsonl (52 answerable, 8 out-of-scope questions over
# 221 public notebooks), used until `cellar index --calibrate GOLD` fits them to an archive.
DEFAULT_CALIBRATION = {"min_coverage": 0.3866, "min_numbers": 0.75, "min_similarity": 0.5049}
NUMBER_IN_TEXT = re.compile(r"\d+(?:[.,]\d+)*")
# The most characters of a question that are read. A question is a line, or a pasted paragraph or
# error message; a pasted megabyte of words took 45 s to search (half of it reading each word in
# English), which a tab, at half CPython's speed, would hang for. The answer says it was cut.
MAX_QUERY_CHARS = 4_000


@dataclass(frozen=True)
class Ranking:
    """A search up to the verdict (``Searcher.rank``): what ``Searcher.answer`` turns into the
    answer contract once the fragments of ``needs`` can be read.

    ``notebooks``: the top notebooks as (notebook number, score, candidate chunks as (row, score),
    best first), in the answer's order (``fusion.rerank``); ``judged``: the fused order's best,
    whose evidence the refusal weighs; ``terms``: the query's distinct terms; ``evidence`` and
    ``refused``: the refusal test's input and verdict; ``timings_ms``: the stages so far;
    ``further``: per notebook shown, its other chunks that BM25 met (``met_within``)."""

    query: str
    mode: str
    terms: tuple[str, ...]
    notebooks: tuple[tuple[int, float, list[tuple[int, float]]], ...]
    evidence: dict[str, Any]
    refused: bool
    timings_ms: dict[str, float]
    kinds: tuple[str, ...] = ()  # the kinds the filters let through (all when empty)
    # the question's vectors (``_query_vectors``; None when the dense ranker did not run): the
    # answer orders a document's blocks by their closeness to them
    vectors: np.ndarray | None = field(default=None, compare=False, repr=False)
    judged: tuple[int, float, list[tuple[int, float]]] | None = None
    further: Mapping[int, list[tuple[int, float]]] = field(default_factory=dict, compare=False, repr=False)
    asked_chars: int = 0  # the question's length when it was cut to ``MAX_QUERY_CHARS`` (``query``), else 0

    @property
    def shown(self) -> tuple[tuple[int, float, list[tuple[int, float]]], ...]:
        """The notebooks the answer shows: the top ones, or for a refusal the judged one (the closest)."""
        return ((self.judged,) if self.judged else ()) if self.refused else self.notebooks

    @property
    def needs(self) -> tuple[int, ...]:
        """The notebooks whose chunk records the answer reads (``shown``)."""
        return tuple(n for n, _, _ in self.shown)


class _Fused(NamedTuple):
    terms: list[str]
    numbers: list[list[str]]
    held_by: Mapping[str, Any]
    vectors: np.ndarray | None
    ranked: list[tuple[int, float, list[tuple[int, float]]]]
    answered: list[tuple[int, float, list[tuple[int, float]]]]
    laps: dict[str, float]
    met: tuple[np.ndarray, np.ndarray, float]  # the rows BM25 met that the filters let in, ascending (met_within)


class Searcher:
    """Searches one source (an in-memory Index, or a format-2 Shard: what it fetches on demand)
    with one model. ``fragment(n)`` gives notebook n's chunk records when searching an Index
    (default: the index's own records)."""

    def __init__(
        self,
        index: Index | Any,
        model: StaticModel,
        fragment: Callable[[int], list[dict[str, Any]]] | None = None,
        bilingual: bool = True,
        *,
        nprobe: int | None = None,
    ) -> None:
        source: MemorySource | ShardSource = (
            MemorySource(index, fragment) if isinstance(index, Index) else ShardSource(index, nprobe)
        )
        if (model.id, model.sha256) != (source.model_id, source.model_sha256):
            raise ValueError(
                f"the index was embedded with model {source.model_id} ({source.model_sha256}), not {model.id} ({model.sha256})"
            )
        self.source = source
        self.notebooks = source.notebooks
        self.rerank_weights: Sequence[float] = RERANK_WEIGHTS  # empty: keep the fused order (benchmarks/rerank.py)
        self.model = model
        self.fragment = source.fragment
        self.analyzer = Analyzer(source.analyzer)
        self.calibration = {**DEFAULT_CALIBRATION, **source.calibration.get("thresholds", {})}
        # Each source its own thresholds where the calibration fitted some (``by_source``): a
        # service note's abbreviated words are never as close in meaning to a question as a
        # notebook's prose, so one similarity threshold for both refuses the notes or lets
        # out-of-scope questions through on the notebooks.
        self.by_source = {
            name: {**self.calibration, **thresholds}
            for name, thresholds in source.calibration.get("by_source", {}).items()
        }
        self._allowed_cache: dict[Filters, np.ndarray] = {}
        self._last_fused: tuple[tuple[str, Filters, str], _Fused] | None = None
        self.bilingual = bilingual
        self._translator: Translator | None = None

    @property
    def index(self) -> Index:
        """The in-memory Index searched (a Searcher over a shard has none)."""
        if not isinstance(self.source, MemorySource):
            raise AttributeError("a Searcher over a shard holds no in-memory index")
        return self.source.index

    # -- the query path ---------------------------------------------------------------------

    def search(self, query: str, k: int = 3, filters: Filters | None = None, mode: str = "hybrid") -> Answer:
        """The answer contract for ``query``: up to ``k`` notebooks, or a refusal."""
        return self.answer(self.rank(query, k, filters, mode))

    def rank(self, query: str, k: int = 3, filters: Filters | None = None, mode: str = "hybrid") -> Ranking:
        """The first phase of ``search``: the notebooks, their scores and candidate chunks, and
        the refusal verdict. It reads the postings of the query's terms, the clusters its vector
        probes and the containers of the top ``k`` notebooks (the best one's vectors judge the
        refusal), no chunk record; asked of a source that has not fetched them, it raises
        NeedFiles naming them: first the partitions and clusters, then the containers. Its
        ``needs`` names the notebooks whose records ``answer`` will read."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose from {list(MODES)}")
        if type(k) is not int or k < 1:
            raise ValueError(f"k is the number of notebooks to return, 1 or more, not {k!r}")
        filters = filters or Filters()
        asked_chars = len(query) if len(query) > MAX_QUERY_CHARS else 0
        query = query[:MAX_QUERY_CHARS]
        # A tab asks again once it has fetched the top notebooks' containers (NeedFiles): the
        # fusion of that first round is kept for the second, not computed twice.
        if self._last_fused is None or self._last_fused[0] != (query, filters, mode):
            self._last_fused = ((query, filters, mode), self._fuse(query, filters, mode))
        terms, numbers, held_by, vectors, ranked, answered, laps, met = self._last_fused[1]
        start = time.perf_counter()
        top = list(dict.fromkeys(n for n, _, _ in [*ranked[:1], *answered[:k]]))
        needed = [self.source.container_name(n) for n in top] if vectors is not None else []
        if ranked and "source" in self.notebooks[ranked[0][0]]["meta"]:  # a document's units (quantity evidence)
            needed += self.source.partition_names(quantity_terms(query, self.analyzer.terms))
        self.source.require(needed)
        self._last_fused = None  # the question is answered: a later one, even the same, is fused anew
        best = ranked[0][0] if ranked else None
        evidence = gather(query, terms, numbers, self.source, best, self.analyzer.terms, vectors, held_by)
        if not ranked and filters != Filters() and not self._allowed(filters).any():
            evidence["filtered_out"] = True  # the filters let no notebook in: the reason says so
        refused = self._refuse(evidence, ranked)
        laps = {**laps, "fuse": laps["fuse"] + round((time.perf_counter() - start) * 1000, 3)}
        judged, distinct = (ranked[0] if ranked else None), tuple(dict.fromkeys(terms))
        shown = {n: chunks for n, _, chunks in [*ranked[:1], *answered[:k]]}  # (the judged one is often shown)
        further = {
            n: met_within(met, self.notebooks[n]["start"], self.notebooks[n]["end"], c) for n, c in shown.items()
        }
        return Ranking(
            query,
            mode,
            distinct,
            tuple(answered[:k]),
            evidence,
            refused,
            laps,
            filters.kinds,
            vectors,
            judged,
            further,
            asked_chars,
        )

    def _fuse(self, query: str, filters: Filters, mode: str) -> _Fused:
        """``rank`` up to the containers: the query's terms, numbers and vectors, and the notebooks
        by fused score with their candidate chunks. It reads postings and clusters only."""
        clock = _Clock()
        terms = self.analyzer.query_terms(query)
        si = si_spellings(query, self.analyzer.terms)  # `1 bar` is held where code writes `1e5`
        numbers = [[*self.analyzer.terms(n), *si.get(n, ())] for n in dict.fromkeys(NUMBER_IN_TEXT.findall(query))]
        reading = self._read_in_english(query)
        held_by = reading.held_by or {}
        vectors = self._query_vectors(query, reading) if mode != "bm25" else None
        rank_by = vectors[-1:] if vectors is not None else None  # a Dutch question ranks by its English reading
        clusters = self.source.probe(rank_by) if rank_by is not None else []
        self.source.require(
            [
                *self.source.partition_names(
                    {
                        *terms,
                        *(t for n in numbers for t in n),
                        *reading.terms,
                        *(t for english in held_by.values() for t in english),
                    }
                ),
                *(self.source.cluster_name(c) for c in clusters),
            ]
        )
        allowed = self._allowed(filters)
        wanted = np.zeros(len(KINDS), dtype=bool) if filters.kinds else np.ones(len(KINDS), dtype=bool)
        wanted[[KINDS.index(kind) for kind in filters.kinds]] = True
        clock.lap("analyse")
        # Per chunk of the archive: its BM25 score and its kind where the query met it. Arrays
        # as long as the archive, but one pass each: sorting the postings instead (np.unique) took
        # several times their size at 41,000 notebooks, where a common term has 300,000 rows.
        n_chunks = int(self.source.starts[-1])
        bm25_by_row = np.zeros(n_chunks, np.float32)
        kind_by_row = np.zeros(n_chunks, np.uint8)
        candidates = []
        picked, picked_scores = np.zeros(0, np.int64), np.zeros(0, np.float32)
        if mode != "dense":
            columns = [p for p in map(self.source.postings, terms) if p is not None]
            # the English reading's columns (a Dutch question) and the SI spellings of its numbers
            # (`1 bar`: 1e5), weighted TRANSLATION_WEIGHT: readings of the question, not its words
            readings = [*reading.terms, *(t for spellings in si.values() for t in spellings)]
            translated = [p for p in map(self.source.postings, readings) if p is not None]
            columns += translated
            if columns:
                rows = np.concatenate([c[0] for c in columns])
                bm25_by_row = summed_scores(columns, rows, n_chunks, len(translated), TRANSLATION_WEIGHT)
                kind_by_row[rows] = np.concatenate([c[2] for c in columns])
                # (nonzero on a bool array: on float32 it is five times slower in WebAssembly)
                bm25_rows = np.flatnonzero(bm25_by_row > 0)
                picked = bm25_rows[allowed[bm25_rows] & wanted[kind_by_row[bm25_rows]]]
                picked_scores = bm25_by_row[picked]
                candidates.append(_top_of(picked, picked_scores, DEPTH))
        clock.lap("bm25")
        dense_rows = np.zeros(0, np.int64)
        dense_scores = np.zeros(0, np.float32)
        if rank_by is not None:
            dense_rows, dense_scores, dense_kinds = self.source.dense(rank_by)
            kind_by_row[dense_rows] = dense_kinds
            keep = allowed[dense_rows] & wanted[dense_kinds]
            candidates.append(_top_of(dense_rows[keep], dense_scores[keep], DEPTH))
        clock.lap("dense")
        weight = {"bm25": 0.0, "dense": 1.0, "hybrid": DENSE_WEIGHT}[mode]
        rows = np.unique(np.concatenate(candidates)) if candidates else np.zeros(0, np.int64)
        ranked, bm25_scale = self._rank(
            rows,
            self.source.notebook_of(rows),
            kind_by_row[rows].astype(np.int64),
            bm25_by_row[rows].astype(np.float64) if mode != "dense" else None,
            _lookup(rows, dense_rows, dense_scores, np.nan) if vectors is not None else None,
            weight,
        )
        answered = ranked  # the answer's order; the refusal judges the fused order's best (see ``Ranking``)
        if mode == "hybrid" and self.rerank_weights:
            answered = rerank(
                ranked, *self.rerank_inputs(ranked[:RERANK_DEPTH], terms, reading.terms), self.rerank_weights
            )
        clock.lap("fuse")
        return _Fused(
            terms, numbers, held_by, vectors, ranked, answered, clock.laps, (picked, picked_scores, bm25_scale)
        )

    def answer(self, ranking: Ranking) -> Answer:
        """The second phase of ``search``: the answer contract, reading the records of
        ``ranking.needs`` (and no others)."""
        self.source.require(self.source.container_name(n) for n in ranking.needs)
        start = time.perf_counter()
        refused, evidence = ranking.refused, ranking.evidence
        asks = intent(ranking.query)
        # a document's blocks are ordered by their own evidence (cellar.retrieval.blocks) and by
        # their closeness in meaning, when the dense ranker ran
        question = asked(ranking.query)
        reading = self._read_in_english(ranking.query)
        terms = block_terms(ranking.terms, reading, question, self.analyzer.terms)
        document = (question, terms, ranking.vectors)
        # a value question's opening words, each with its English reading: the answer cell holds
        # them; a locate question's numbers (`at 120 K`): the cell that draws or computes at them
        named = self._opening_terms(ranking, reading) if asks == "value" else []
        if asks in ("locate", "figure"):
            named += [tuple(self.analyzer.terms(n)) for n in dict.fromkeys(NUMBER_IN_TEXT.findall(ranking.query))]
        # an explanation: the share of its terms (or their translations) a section's title holds
        held_by = reading.held_by or {}
        weighted = [(idf(self.source, t), (t, *held_by.get(t, ()))) for t in ranking.terms] if asks == "explain" else []
        titled = title_share(weighted, self.analyzer.terms) if weighted else None
        shown = [
            self._notebook(n, score, chunks, asks, ranking.kinds, document, named, titled, ranking.further.get(n, []))
            for n, score, chunks in ranking.shown
        ]
        timings = {**ranking.timings_ms, "fragments": round((time.perf_counter() - start) * 1000, 3)}
        answer: Answer = {
            "query": ranking.query,
            "refused": refused,
            "refusal_reason": refusal_reason(
                ranking.query, evidence, shown, self.thresholds_for(evidence)["min_similarity"], self.analyzer.terms
            )
            if refused
            else None,
            "notebooks": [] if refused else shown,
            "timings_ms": {**timings, "total": round(sum(timings.values()), 3)},
            "mode": ranking.mode,
            "terms": sorted(ranking.terms),
            "evidence": evidence,
            "warnings": [nb["warning"] for nb in shown if nb.get("warning") and not refused],
        }
        if refused:  # what came nearest, unless the question had no word to come near
            answer["closest"] = shown if ranking.terms else []
        if ranking.asked_chars:  # the question was cut: the page and the command line say so
            answer["cut"] = {"asked_chars": ranking.asked_chars, "read_chars": MAX_QUERY_CHARS}
        return answer

    def _opening_terms(self, ranking: Ranking, reading: Reading) -> list[tuple[str, ...]]:
        """The query's terms among the words it opens on (``answer_cell.head_words``), each with
        the English terms that hold it when the question is Dutch."""
        head = {t for word in head_words(ranking.query.casefold()) for t in self.analyzer.terms(word)}
        return [(t, *(reading.held_by or {}).get(t, ())) for t in ranking.terms if t in head]

    def _read_in_english(self, query: str) -> Reading:
        """A Dutch question's English reading (``bilingual.read_in_english``: by its stop words, or
        by its words when it has none); empty for any other question, and when the searcher was
        made with ``bilingual=False``."""
        if not self.bilingual or self.analyzer.query_language(query) == "english":
            return Reading()
        if self._translator is None:  # read once, at the first question not read as English
            self._translator = question_translator(self.analyzer, self.model.tokenizer.vocab)
        return read_in_english(query, self.analyzer, self._translator)

    def _query_vectors(self, query: str, reading: Reading) -> np.ndarray:
        """The question's vectors, one per row: its own, then a Dutch question's English reading's
        with every sense and with the first senses (``bilingual.Reading``).

        The dense ranker uses the last one: a Dutch question ranks by its English reading (on the
        Dutch dev questions, benchmarks/gold/dev_nl.jsonl, dense alone: notebook hit@1 .000 with
        the Dutch text, .128 with the two blended, .359 with the reading). The refusal's closeness
        in meaning is the best cosine with any (``sources.cosines``): the first senses meet English
        cells, every sense meets a Dutch file's chunks (embedded so), the question's own words
        meet Dutch ones (the demo's Dutch notebooks: similarity .80 with the question, .16 with
        its reading, which refused them)."""
        return self.model.encode([query, reading.every_sense, reading.text] if reading.text else [query])

    def _allowed(self, filters: Filters) -> np.ndarray:
        """Per chunk, whether the filters let its notebook in (``Filters.mask``: its catalogue
        columns, and for a kind filter its kind bitmask). Kept per filters: a page asks many
        questions under the same ones."""
        if filters not in self._allowed_cache:
            if len(self._allowed_cache) > 8:
                self._allowed_cache.clear()
            per_notebook = filters.mask(self.source.table)
            # repeat counts are intp, 32 bits in WebAssembly
            self._allowed_cache[filters] = np.repeat(per_notebook, np.diff(self.source.starts).astype(np.intp))
        return self._allowed_cache[filters]

    def rerank_inputs(
        self, ranked: Sequence[tuple[int, float, Any]], terms: Sequence[str], translated: Sequence[str]
    ) -> tuple[np.ndarray, list[bool], list[np.ndarray], list[float]]:
        """What ``fusion.rerank`` reads of the ``ranked`` entries (their rows, which are documents)
        and of the terms (rows, idf; the English reading's ``translated`` at ``TRANSLATION_WEIGHT``)."""
        weights = {term: idf(self.source, term) for term in dict.fromkeys(terms)}
        for term in dict.fromkeys(translated):
            weights.setdefault(term, TRANSLATION_WEIGHT * idf(self.source, term))
        entries = [self.notebooks[n] for n, _, _ in ranked]
        bounds = np.array([[e["start"], e["end"]] for e in entries], np.int64).reshape(-1, 2)
        rows = [p[0] if p is not None else np.zeros(0, np.int64) for p in map(self.source.postings, weights)]
        return bounds, ["source" in e["meta"] for e in entries], rows, list(weights.values())

    def _rank(
        self,
        rows: np.ndarray,
        owner_array: np.ndarray,
        kind_array: np.ndarray,
        bm25: np.ndarray | None,
        dense: np.ndarray | None,
        weight: float,
    ) -> tuple[list[tuple[int, float, list[tuple[int, float]]]], float]:
        """Notebooks by fused score, each with its candidate chunks by the same fused score, and
        the factor that puts a BM25 score on that scale (0 when BM25 did not count).

        Per ranker a notebook scores ``fusion.notebook_scores`` of its candidate chunks; the fused score
        is ``(1 - weight) * bm25 / best bm25 + weight * (dense - worst) / (best - worst)``, the
        dense scale taken over the candidate notebooks; ``weight`` rises to ``FLAT_DENSE_WEIGHT``
        when BM25's best notebooks score alike (``fusion.flat``). Chunks are scaled the same way, so a hit
        list shows a notebook's chunks in the order that made its score. ``bm25`` and ``dense``
        are the candidates' scores (aligned with ``rows``); a dense score not known (a BM25
        candidate in a cluster the query did not probe: NaN) adds nothing."""
        if not len(rows):
            return [], 0.0
        owners = owner_array.tolist()
        kinds = kind_array.tolist()
        fused_notebooks: dict[int, float] = dict.fromkeys(owners, 0.0)
        fused_chunks = np.zeros(len(rows))
        # per ranker that counts: its scores, which of them are known, and its notebooks' scores
        scored: dict[str, tuple[np.ndarray, np.ndarray, dict[int, float]]] = {}
        for name, values, counts in (("bm25", bm25, weight < 1.0), ("dense", dense, weight > 0.0)):
            if values is None or not counts:
                continue
            known = ~np.isnan(values)
            if known.any():
                picked = np.flatnonzero(known).tolist()
                scores = notebook_scores(
                    [owners[i] for i in picked], [kinds[i] for i in picked], values[known].tolist()
                )
                scored[name] = (values, known, scores)
        if "bm25" in scored and "dense" in scored and flat(scored["bm25"][2].values()):
            weight = max(weight, FLAT_DENSE_WEIGHT)  # BM25 cannot tell its best apart: meaning decides
        bm25_scale = 0.0
        for name, share in (("bm25", 1.0 - weight), ("dense", weight)):
            if name not in scored or share == 0.0:
                continue
            values, known, per_notebook = scored[name]
            if name == "bm25":
                low, span = 0.0, max(per_notebook.values())
            else:
                low = min(per_notebook.values())
                span = max(per_notebook.values()) - low
            span = span if span > 0 else 1.0
            bm25_scale = share / span if name == "bm25" else bm25_scale
            for n, value in per_notebook.items():
                fused_notebooks[n] += share * (value - low) / span
            fused_chunks += share * np.where(known, np.maximum(np.nan_to_num(values) - low, 0.0), 0.0) / span
        per: dict[int, list[tuple[int, float]]] = {}
        for i in np.lexsort((rows, -fused_chunks)).tolist():
            per.setdefault(owners[i], []).append((int(rows[i]), float(fused_chunks[i])))
        ranked = []
        for n, chunks in per.items():
            score = fused_notebooks[n] * (STALE_FACTOR if self.notebooks[n]["status"] == "stale" else 1.0)
            ranked.append((n, score, chunks))
        ranked.sort(key=lambda item: (-item[1], item[0]))
        return ranked, bm25_scale

    def _refuse(self, evidence: Mapping[str, Any], ranked: Sequence[Any]) -> bool:
        return not ranked or refuses(evidence, self.thresholds_for(evidence))

    def thresholds_for(self, evidence: Mapping[str, Any]) -> dict[str, float]:
        """The refusal thresholds of the best entry's source (``evidence["source"]``, absent for
        a notebook): its own when the calibration fitted some, else the archive's."""
        return self.by_source.get(evidence.get("source", "notebook"), self.calibration)

    def _notebook(
        self,
        n: int,
        score: float,
        rows: Sequence[tuple[int, float]],
        asks: str = "locate",
        kinds: Sequence[str] = (),
        document: tuple[Asked, Sequence[str], np.ndarray | None] | None = None,
        named: Sequence[Sequence[str]] = (),
        titled: Callable[[str], float] | None = None,
        further: Sequence[tuple[int, float]] = (),
    ) -> NotebookResult:
        """Notebook ``n``'s entry of the answer; its hits in ``answer_cell.order_hits``'s order for
        a question that ``asks`` for a value, a place or an explanation, of the ``kinds`` a filter
        lets through (all when empty); ``named``: a value question's opening words' terms, each
        with its translations (the answer cell holds them, and in a notebook an output that states
        a number of the kind asked, ``answer_cell.stating_rows``); ``document``: what a document's
        blocks are ordered by (``blocks.order_blocks``), the question's ``Asked``, its block terms
        and its vectors (None: no closeness in meaning); ``titled``: an explanation's share held by a
        section title (``answer_cell.title_share``; a notebook's sections, not a document's);
        ``further``: its other chunks BM25 met (``met_within``), hits after the answer cell."""
        entry = self.notebooks[n]
        records = self.fragment(n)
        start = entry["start"]
        blocks = bool(records) and "citation" in records[0].get("meta", {})  # a document's
        if document is not None and blocks and not kinds:
            naming = f"{entry['title']} {entry['path']}"
            question, terms, vectors = document
            closeness = cosines(*self.source.notebook_vectors(n), vectors) if vectors is not None else ()
            rows = order_blocks(
                rows, records, start, terms, question, self.analyzer.terms, naming, self.source.postings, closeness
            )
        kind_of = {row: KINDS.index(records[row - start]["kind"]) for row, _ in rows}
        hits: list[Hit] = []
        holding = [
            np.concatenate([rows_within(self.source.postings(t), start, entry["end"]) for t in ts]) for ts in named
        ]
        stating: frozenset[int] = frozenset()
        if asks == "value" and document is not None and document[0].families and not blocks:
            # the outputs that state a number of the kind asked count as an opening word held (a
            # cell no ranker returned may answer), and where some cell has one, the answer is one
            # of those cells (`ft/min` asked: not the cell above that prints a ratio)
            rows_stating = stating_rows(records, start, document[0].families)
            holding += [rows_stating] if len(rows_stating) else []
            stating = frozenset(records[row - start]["cell"] for row in rows_stating)
        shares = naming_shares(holding, records, start) if holding else None
        further = () if blocks else further  # a document's blocks have their own order
        kind_of.update({row: KINDS.index(records[row - start]["kind"]) for row, _ in further})
        ordered = order_hits(
            rows, records, start, kind_of, asks, kinds, shares, None if blocks else titled, stating, further
        )
        for row, chunk_score in ordered[:HITS_PER_NOTEBOOK]:
            record = records[row - start]
            hit: Hit = {
                "chunk_id": record["id"], "kind": record["kind"], "cell": record["cell"],
                "output": record["output"], "score": round(chunk_score, 6), "quote": record["quote"],
                "start": record["start"], "end": record["end"],
            }  # fmt: skip
            facts = record.get("meta", {})
            if "source" in facts:
                hit["source"] = facts["source"]
            if "citation" in facts:
                hit["citation"] = facts["citation"]
            hits.append(hit)
        result: NotebookResult = {
            "path": entry["path"],
            "revision": entry["revision"],
            "score": round(score, 6),
            "status": entry["status"],
            "title": entry["title"],
            "meta": entry["meta"],
            "hits": hits,
            "neighbourhood": hit_context(records, hits[0]) if hits else [],
        }
        if "entry" in entry:  # a service note: one of the entries of its records file
            result["entry"] = entry["entry"]
        if entry["status"] == "stale":
            why = f" ({entry['reason']})" if entry.get("reason") else ""
            result["warning"] = (
                f"{entry['path']} failed to re-run{why}: these are its saved outputs, which may be out of date"
            )
        elif entry["status"] == "drifted":
            result["note"] = (
                "re-run in the sandbox, some outputs came out different from the saved ones: "
                "these are the fresh outputs"
            )
        return result


def _top_of(rows: np.ndarray, scores: np.ndarray, depth: int) -> np.ndarray:
    """The rows of the ``depth`` best ``scores``, best first; of rows that tie, the lower first,
    also at the cut. Which of tied values an argpartition keeps depends on the platform (NumPy's
    SIMD selection on x86, a plain one in WebAssembly), and an archive of near-copies has many
    ties: everything that ties with the ``depth``-th best goes to the sort."""
    candidates = np.arange(len(rows))
    if len(candidates) > depth:
        kth = -np.partition(-scores, depth - 1)[depth - 1]
        candidates = candidates[scores >= kth]
    picked = rows[candidates]
    return picked[np.lexsort((picked, -scores[candidates]))][:depth]


def _lookup(rows: np.ndarray, keys: np.ndarray, values: np.ndarray, missing: float) -> np.ndarray:
    """``values`` at ``rows`` by the ascending ``keys``; ``missing`` where a row is not a key."""
    out = np.full(len(rows), missing, dtype=np.float64)
    if len(keys):
        at = np.minimum(np.searchsorted(keys, rows), len(keys) - 1)
        hit = keys[at] == rows
        out[hit] = values[at[hit]]
    return out


class _Clock:
    """Milliseconds per stage: each ``lap`` times the stage since the previous one."""

    def __init__(self) -> None:
        self.last = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round((now - self.last) * 1000, 3)
        self.last = now

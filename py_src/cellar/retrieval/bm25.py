"""BM25 as a precomputed sparse score matrix, the way bm25s does it, on NumPy alone.

At build time every (document, term) pair gets its final BM25 contribution

    idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl)),   idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))

(bm25s's ``method="lucene"``: Lucene's idf, and Lucene's term-frequency part since Lucene 8, which
dropped the constant factor ``k1 + 1``: it scales every score alike and changes no ranking). The
contributions are stored column by column (CSC: one column per term, rows are documents), so a
query is the sum of its terms' columns: a handful of NumPy slices, no scipy, fast in a browser.

A query term that occurs twice adds its column twice, as in bm25s (whose ``get_scores`` keeps
duplicates); terms missing from the vocabulary are ignored.

A document's term may be marked as a reading of its text rather than a word of it (``reading``:
a Dutch chunk's English translations, ``cellar.retrieval.incremental.chunk_terms``): such an
occurrence counts ``READING_WEIGHT`` of one, in its term's frequency and in the document's
length, as BM25F weighs a field (Robertson et al., 2004). A translation is less sure than the
word it translates; a query reads a Dutch question's translations at the same weight.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

READING = "\x01"  # marks a document's term as a reading of its text (``reading``)
READING_WEIGHT = 0.5  # what such an occurrence counts


def reading(term: str) -> str:
    """``term`` marked as a reading of a document's text (see the module docstring)."""
    return READING + term


@dataclass(eq=False)
class BM25:
    """A BM25 score matrix: ``terms[j]`` is column ``j``; column ``j`` holds
    ``data[indptr[j]:indptr[j + 1]]`` for the documents ``indices[indptr[j]:indptr[j + 1]]``.

    ``terms`` is sorted, so the vocabulary needs no separate mapping on disk.
    """

    terms: list[str]
    data: np.ndarray  # float32, one BM25 contribution per (term, document) pair
    indices: np.ndarray  # int32 document numbers, ascending within a column
    indptr: np.ndarray  # int64, len(terms) + 1 column starts
    n_docs: int
    k1: float = 1.2
    b: float = 0.75
    avgdl: float = 0.0  # the mean document length in terms (a statistic the scores already hold)
    _columns: dict[str, int] = field(init=False, repr=False)
    _starts: list[int] = field(init=False, repr=False)  # indptr as Python ints: cheaper to slice with

    def __post_init__(self) -> None:
        self._columns = {term: j for j, term in enumerate(self.terms)}
        self._starts = self.indptr.tolist()

    @classmethod
    def build(cls, docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> BM25:
        """The score matrix of ``docs`` (one list of terms per document, with repeats; a term
        marked by ``reading`` counts ``READING_WEIGHT``)."""
        n_docs = len(docs)
        if n_docs == 0:
            raise ValueError("BM25 needs at least one document")
        names = set().union(*docs)
        terms = sorted({name.removeprefix(READING) for name in names})
        column = {term: j for j, term in enumerate(terms)}
        # A marked term's occurrences get a column of their own past the vocabulary's, folded
        # into its term's column once counted.
        column.update(
            {name: len(terms) + column[name.removeprefix(READING)] for name in names if name.startswith(READING)}
        )
        # np.repeat and np.bincount want native (intp) integers, and Pyodide (wasm32) is 32-bit.
        lengths = np.fromiter(map(len, docs), dtype=np.intp, count=n_docs)
        # Every occurrence as one int64 key col * N + row, sorted: CSC order, with a term's repeats
        # in a document side by side (their run length is its frequency). At millions of chunks
        # these arrays are an index build's peak memory, so they are made and reduced in place.
        # map over the chained terms with the dict's own lookup: no Python frame per occurrence
        # (tens of millions at 41,000 notebooks)
        occurrences = map(column.__getitem__, chain.from_iterable(docs))
        keys = np.fromiter(occurrences, dtype=np.int64, count=int(lengths.sum()))
        keys *= n_docs
        keys += np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
        keys.sort()
        runs = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if len(keys) else keys[:0]
        tf = np.diff(np.append(runs, len(keys))).astype(np.float64)
        keys = keys[runs]
        del runs
        marked = keys >= len(terms) * n_docs
        if marked.any():  # fold the readings into their terms' columns, at their weight
            tf[marked] *= READING_WEIGHT
            keys[marked] -= len(terms) * n_docs
            order = np.argsort(keys, kind="stable")
            keys, tf = keys[order], tf[order]
            starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
            tf, keys = np.add.reduceat(tf, starts), keys[starts]
        indptr = np.searchsorted(keys, np.arange(len(terms) + 1, dtype=np.int64) * n_docs).astype(np.int64)
        pair_rows = (keys % n_docs).astype(np.int32)
        del keys
        weighted = np.bincount(pair_rows, tf, minlength=n_docs)  # the lengths, a reading at its weight
        df = np.diff(indptr)
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        avgdl = weighted.mean() or 1.0  # every document empty: no pairs, any positive value will do
        norm = k1 * (1 - b + b * weighted / avgdl)
        denominator = norm[pair_rows]
        denominator += tf
        data = np.repeat(idf, df.astype(np.intp))  # idf of each pair's column (the columns ascend)
        data *= tf
        data /= denominator
        matrix = cls(terms, data.astype(np.float32), pair_rows, indptr, n_docs, k1, b)
        matrix.avgdl = float(avgdl)
        return matrix

    def __contains__(self, term: str) -> bool:
        return term in self._columns

    def idf(self, term: str) -> float:
        """Lucene's idf of ``term``; a term in no document gets the idf of ``df = 0``."""
        j = self._columns.get(term)
        df = 0 if j is None else self._starts[j + 1] - self._starts[j]
        return float(np.log1p((self.n_docs - df + 0.5) / (df + 0.5)))

    def documents(self, term: str) -> np.ndarray:
        """The documents that contain ``term`` (ascending; empty for an unknown term)."""
        j = self._columns.get(term)
        if j is None:
            return self.indices[:0]
        return self.indices[self._starts[j] : self._starts[j + 1]]

    def columns(self, query_terms: Iterable[str]) -> list[int]:
        """Columns of the query's terms, repeats kept, unknown terms left out."""
        lookup = self._columns.get
        return [j for j in map(lookup, query_terms) if j is not None]

    def score(self, query_terms: Iterable[str]) -> np.ndarray:
        """BM25 score of every document (float32, length ``n_docs``) for the query's terms."""
        starts = self._starts
        spans = [(starts[j], starts[j + 1]) for j in self.columns(query_terms)]
        if not spans:
            return np.zeros(self.n_docs, dtype=np.float32)
        # One bincount over the gathered columns beats a NumPy call per column (bm25s's np.add.at
        # loop) about twofold on short queries; it sums in float64, then rounds once.
        rows = np.concatenate([self.indices[s:e] for s, e in spans])
        weights = np.concatenate([self.data[s:e] for s, e in spans])
        return np.bincount(rows, weights, minlength=self.n_docs).astype(np.float32)

    def top_k(self, query_terms: Iterable[str], k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best documents with a positive score: (document numbers, scores), best first,
        ties broken by document number so every runtime returns the same order."""
        if k < 1:
            raise ValueError(f"top_k needs k >= 1, not {k}")
        scores = self.score(query_terms)
        hits = np.flatnonzero(scores > 0)
        if len(hits) > k:
            # Keep everything that ties with the k-th best, so the tie-break below sees all of it.
            kth = -np.partition(-scores[hits], k - 1)[k - 1]
            hits = hits[scores[hits] >= kth]
        best = hits[np.lexsort((hits, -scores[hits]))][:k]
        return best, scores[best]

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays for ``.npy`` files; the vocabulary as UTF-8 bytes plus offsets."""
        encoded = [term.encode("utf-8") for term in self.terms]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return {
            "data": self.data,
            "indices": self.indices,
            "indptr": self.indptr,
            "terms_utf8": np.frombuffer(b"".join(encoded), dtype=np.uint8),
            "terms_offsets": offsets,
            "shape": np.array([self.n_docs, len(self.terms)], dtype=np.int64),
            "params": np.array([self.k1, self.b], dtype=np.float64),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> BM25:
        """Inverse of ``to_arrays``; checks that the arrays fit together."""
        missing = {"data", "indices", "indptr", "terms_utf8", "terms_offsets", "shape", "params"} - set(arrays)
        if missing:
            raise ValueError(f"BM25 arrays missing: {sorted(missing)}")
        n_docs, n_terms = (int(v) for v in arrays["shape"])
        blob = arrays["terms_utf8"].tobytes()
        offsets = arrays["terms_offsets"].tolist()
        indptr = np.asarray(arrays["indptr"], dtype=np.int64)
        if len(offsets) != n_terms + 1 or len(indptr) != n_terms + 1 or offsets[-1] != len(blob):
            raise ValueError(f"BM25 arrays disagree: {n_terms} terms, {len(offsets)} offsets, {len(indptr)} indptr")
        if not len(arrays["data"]) == len(arrays["indices"]) == indptr[-1]:
            raise ValueError(f"BM25 arrays disagree: {len(arrays['data'])} scores, {indptr[-1]} expected")
        terms = [blob[s:e].decode("utf-8") for s, e in zip(offsets[:-1], offsets[1:])]
        k1, b = (float(v) for v in arrays["params"])
        return cls(terms, arrays["data"], arrays["indices"], indptr, n_docs, k1, b)


def summed_scores(
    columns: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
    rows: np.ndarray,
    n: int,
    translated: int,
    weight: float,
) -> np.ndarray:
    """BM25 per document (``n`` of them; ``rows``: each gathered posting's document) from a query's
    columns (rows, scores, ...), plus ``weight`` times that of the last ``translated`` ones (a
    Dutch question's English reading). Per side one bincount in float64, rounded once (as
    ``BM25.score``), the sides summed in float32: the scores of the full matrix, to the bit."""
    split = sum(len(c[0]) for c in columns[: len(columns) - translated])
    scores_of = np.concatenate([c[1] for c in columns])
    scores = np.bincount(rows[:split], scores_of[:split], minlength=n).astype(np.float32)
    if translated:
        english = np.bincount(rows[split:], scores_of[split:], minlength=n).astype(np.float32)
        scores = scores + np.float32(weight) * english
    return scores

"""Where a search reads from: an in-memory Index (``MemorySource``: every postings list and every
vector, so the dense ranker is exact) or a format-2 shard (``ShardSource``: what the query needs,
read on demand; see cellar.retrieval.shard). Both give the Searcher (cellar.retrieval.search) the
same things: postings per term, candidate rows with their cosines and kinds, a notebook's
vectors and records, and the names of the files a tab must fetch first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from cellar.retrieval.index import Index
from cellar.retrieval.table import NotebookTable


def cosines(codes: np.ndarray, scales: np.ndarray, query_vectors: np.ndarray) -> np.ndarray:
    """Each row's best cosine with the query's vectors (rows of `query_vectors`; a Dutch question
    has two, its own and its English reading's). A row is its int8 codes times its scale (the
    index's quantised unit vectors), so its dot products are taken on the codes, in float64 row
    by row, and scaled once: no float32 copy of the vectors is made (at 41,000 notebooks a
    question scores a few dozen clusters of a thousand rows), and a row has the same value
    whether it is scored with all rows (in memory) or with its cluster (a shard), which a float32
    matrix product does not promise (its blocking depends on the rows). Rounded to float32: NumPy
    sums in another order in WebAssembly than on x86 (no SIMD loops), and the last bits of
    float64 must not reorder near-copies between the tab and CPython."""
    queries = np.atleast_2d(query_vectors).astype(np.float64)
    dots = np.einsum("ij,kj->ik", codes, queries, dtype=np.float64, optimize=False)
    return (np.max(dots, axis=1) * scales).astype(np.float32)


def rows_within(postings: tuple[np.ndarray, ...] | None, start: int, end: int) -> np.ndarray:
    """The rows in ``[start, end)`` (a notebook's or a document's chunks) of a term's postings
    (rows ascending first, as both sources give them; None: the term is nowhere)."""
    if postings is None:
        return np.zeros(0, np.int64)
    rows = postings[0]
    return rows[np.searchsorted(rows, start) : np.searchsorted(rows, end)]


def met_within(
    met: tuple[np.ndarray, np.ndarray, float], start: int, end: int, candidates: Iterable[tuple[int, float]]
) -> list[tuple[int, float]]:
    """The chunks of rows ``start`` to ``end`` (a notebook's) that BM25 met, best first, on the
    fused scale, less its ``candidates``: ``met`` is every row BM25 met, ascending, its BM25 score
    and the factor that puts one on the fused scale (only a shown notebook's rows are scaled).
    The rankers' top chunks over the whole archive (``search.DEPTH``) choose the notebooks; within
    a notebook shown, an output that holds the question's words may have missed that cut
    (`Median: 182.0` under a dozen chunks that hold `height` and `presidents`) and still be worth
    a hit."""
    rows, scores, scale = met
    low, high = np.searchsorted(rows, [start, end])
    seen = {row for row, _ in candidates}
    within = [
        (int(r), float(s) * scale) for r, s in zip(rows[low:high].tolist(), scores[low:high].tolist()) if r not in seen
    ]
    return sorted(within, key=lambda chunk: (-chunk[1], chunk[0]))


class MemorySource:
    """An in-memory Index as a search source: every postings list and every vector at hand, so
    the dense ranker is exact (the reference the shard's clustered search is measured against)."""

    def __init__(self, index: Index, fragment: Callable[[int], list[dict[str, Any]]] | None = None) -> None:
        self.index = index
        self.notebooks = index.notebooks
        self.table = NotebookTable.of(index.notebooks)  # what filters read
        self.analyzer = index.analyzer
        self.model_id, self.model_sha256 = index.model_id, index.model_sha256
        self.calibration = index.calibration
        self.n_docs = index.bm25.n_docs
        self.fragment = fragment or index.notebook_chunks
        self.starts = np.array([nb["start"] for nb in index.notebooks] + [index.n_chunks], dtype=np.int64)

    def require(self, names: Iterable[str]) -> None:
        pass

    def partition_names(self, terms: Iterable[str]) -> list[str]:
        return []

    def probe(self, query_vectors: np.ndarray) -> list[int]:
        return []

    def cluster_name(self, c: int) -> str:
        raise KeyError(c)

    def container_name(self, n: int) -> str:
        return f"notebook {n}"

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        bm25 = self.index.bm25
        j = bm25.columns([term])
        if not j:
            return None
        s, e = int(bm25.indptr[j[0]]), int(bm25.indptr[j[0] + 1])
        rows = bm25.indices[s:e]
        return rows, bm25.data[s:e], self.index.chunk_kind[rows]

    def dense(self, query_vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = np.arange(self.index.n_chunks)
        return rows, cosines(self.index.vectors, self.index.scales, query_vectors), self.index.chunk_kind

    def notebook_vectors(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        entry = self.notebooks[n]
        span = slice(entry["start"], entry["end"])
        return self.index.vectors[span], self.index.scales[span]

    def notebook_of(self, rows: np.ndarray) -> np.ndarray:
        return self.index.chunk_notebook[rows]


class ShardSource:
    """A format-2 shard (cellar.retrieval.shard.Shard) as a search source: the postings of the
    query's terms, the clusters its vector probes, the containers of the top notebooks; each
    read when first needed (in a browser worker: NeedFiles names what to fetch first)."""

    def __init__(self, shard: Any, nprobe: int | None = None) -> None:
        self.shard = shard
        self.notebooks = self.table = shard.notebooks
        self.analyzer = shard.analyzer
        self.model_id, self.model_sha256 = shard.model_id, shard.model_sha256
        self.calibration = shard.calibration
        self.n_docs = shard.n_docs
        self.nprobe = nprobe or shard.nprobe
        self.starts = shard.starts
        self.fragment = shard.fragment

    def require(self, names: Iterable[str]) -> None:
        self.shard.require(names)

    def partition_names(self, terms: Iterable[str]) -> list[str]:
        return self.shard.partition_names(terms)

    def probe(self, query_vectors: np.ndarray) -> list[int]:
        """The clusters each query vector probes, the first vector's first (no cluster twice)."""
        probed = (c for vector in np.atleast_2d(query_vectors) for c in self.shard.probe(vector, self.nprobe))
        return list(dict.fromkeys(probed))

    def cluster_name(self, c: int) -> str:
        return self.shard.cluster_name(c)

    def container_name(self, n: int) -> str:
        return self.shard.container_name(n)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        return self.shard.postings(term)

    def dense(self, query_vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        parts = []
        for c in self.probe(query_vectors):
            rows, kinds, codes, scales = self.shard.cluster(c)
            parts.append((rows, kinds, cosines(codes, scales, query_vectors)))
        rows = np.concatenate([p[0] for p in parts]).astype(np.int64)
        kinds = np.concatenate([p[1] for p in parts])
        cosine = np.concatenate([p[2] for p in parts])
        order = np.argsort(rows, kind="stable")
        return rows[order], cosine[order], kinds[order]

    def notebook_vectors(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        return self.shard.container(n)[1:]

    def notebook_of(self, rows: np.ndarray) -> np.ndarray:
        return self.shard.notebook_of(rows)

"""IVF for the shard's dense search: spherical k-means in NumPy, each chunk's nearest centroid,
and the number of clusters to probe for a recall@50 target (cellar.retrieval.shard uses them at
build; the tab only ranks centroids)."""

from __future__ import annotations

import math

import numpy as np

DEPTH = 50  # the dense ranker's candidates (cellar.retrieval.search.DEPTH)
RECALL_TARGET = 0.95  # recall@50 of the clustered dense search against exact search, on questions
# ... reached at build on pseudo-questions (cellar.retrieval.index.pseudo_questions: six-word
# windows of chunks, embedded as questions are), with a margin: on the 41,000-notebook synthetic
# archive they asked for 29 clusters where the dev questions needed 26 for 0.975.
PSEUDO_TARGET = 0.975


def kmeans(x: np.ndarray, k: int, iterations: int = 15, seed: int = 0, sample: int = 60_000) -> np.ndarray:
    """Spherical k-means of the unit rows of ``x`` in NumPy: ``k`` unit centroids (float32).
    Trained on at most ``sample`` rows; an emptied cluster takes the row worst served."""
    rng = np.random.default_rng(seed)
    train = x if len(x) <= sample else x[np.sort(rng.choice(len(x), sample, replace=False))]
    centroids = train[np.sort(rng.choice(len(train), k, replace=False))].copy()
    for _ in range(iterations):
        similarity = train @ centroids.T
        assign = similarity.argmax(axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, train)
        counts = np.bincount(assign, minlength=k)
        for empty in np.flatnonzero(counts == 0):
            worst = int(similarity.max(axis=1).argmin())
            sums[empty] = train[worst]
            similarity[worst] = np.inf
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centroids = (sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return centroids


def nearest_centroid(x: np.ndarray, centroids: np.ndarray, batch: int = 65_536) -> np.ndarray:
    """The cluster of each row of ``x`` (in batches: a whole archive's similarity matrix with
    every centroid would not fit in memory)."""
    return (
        np.concatenate([(x[first : first + batch] @ centroids.T).argmax(axis=1) for first in range(0, len(x), batch)])
        if len(x)
        else np.zeros(0, dtype=np.int64)
    )


def cluster_count(n_chunks: int) -> int:
    """About the square root of the chunks: a cluster and the centroid table grow alike."""
    return max(1, min(n_chunks, round(math.sqrt(n_chunks))))


def probe_ranks(
    dense: np.ndarray, centroids: np.ndarray, assign: np.ndarray, queries: np.ndarray, depth: int = DEPTH
) -> np.ndarray:
    """For each query and each of its ``depth`` exact nearest rows, the rank (0: probed first) of
    the row's cluster among the clusters the query would probe. Probing ``nprobe`` clusters finds
    exactly the rows whose rank is below ``nprobe`` (any other row it finds scores lower than
    them), so recall@depth at every nprobe follows from one exact search per query."""
    depth = min(depth, len(dense))
    ranks = []
    for first in range(0, len(queries), 16):  # 16 queries at a time: one column each
        group = queries[first : first + 16].astype(np.float32)
        cosine = dense @ group.T
        for column, q in enumerate(group):
            exact = np.argpartition(-cosine[:, column], depth - 1)[:depth]
            order = np.argsort(-(centroids @ q), kind="stable")
            rank = np.empty(len(centroids), dtype=np.int64)
            rank[order] = np.arange(len(centroids))
            ranks.append(rank[assign[exact]])
    return np.concatenate(ranks) if ranks else np.zeros(0, dtype=np.int64)


def choose_nprobe(
    dense: np.ndarray, centroids: np.ndarray, assign: np.ndarray, queries: np.ndarray
) -> tuple[int, float]:
    """The fewest clusters to probe for ``PSEUDO_TARGET`` recall@50 on ``queries`` (question-like
    vectors), and that recall."""
    ranks = np.sort(probe_ranks(dense, centroids, assign, queries))
    if not len(ranks):
        return 1, 1.0
    needed = math.ceil(PSEUDO_TARGET * len(ranks))
    nprobe = int(ranks[needed - 1]) + 1
    return nprobe, round(float(np.mean(ranks < nprobe)), 4)

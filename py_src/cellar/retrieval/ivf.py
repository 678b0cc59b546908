"""IVF for the shard's dense search: spherical k-means in NumPy, each chunk's nearest centroid,
and the number of clusters to probe for a recall@50 target (cellar.retrieval.shard uses them at
build; the tab only ranks centroids)."""

from __future__ import annotations

import math

import numpy as np

DEPTH = 50  # the dense ranker's candidates (cellar.retrieval.search.DEPTH)
RECALL_TARGET = 0.95  # recall@50 of the clustered dense search against exact search, on questions
# ... reached at build on pseudo-questions (cellar.retrieval.index.pseudo_questions: six-word
# windows of files' chunks, embedded as questions are), with a margin: on two 41,000-notebook
# synthetic archives they asked for 17 and 21 clusters of some 4,600, where the dev and held-out
# questions had .956 to .981 (README, "Dense recall@50").
PSEUDO_TARGET = 0.975
CLUSTERS_PER_ROOT = 4  # clusters per square root of the chunks (cluster_count)
MIN_ROWS = 128  # the fewest rows a cluster is given (cluster_count)
TRAIN_ROWS = 40  # k-means rows per centroid: fewer fit the sample's noise; at 41,000 notebooks 64
# ... took twice as long for recall@50 within .02


def kmeans(x: np.ndarray, k: int, iterations: int = 15, seed: int = 0) -> np.ndarray:
    """Spherical k-means of the unit rows of ``x`` in NumPy: ``k`` unit centroids (float32).
    Trained on at most ``TRAIN_ROWS`` per centroid; an emptied cluster takes the row worst served."""
    rng = np.random.default_rng(seed)
    sample = TRAIN_ROWS * k
    train = x if len(x) <= sample else x[np.sort(rng.choice(len(x), sample, replace=False))]
    centroids = train[np.sort(rng.choice(len(train), k, replace=False))].copy()
    for _ in range(iterations):
        assign, best = nearest_centroid(train, centroids)
        counts = np.bincount(assign, minlength=k)
        sums = np.zeros_like(centroids)
        filled = np.flatnonzero(counts)
        # each cluster's rows summed as one run of the rows sorted by cluster: np.add.at, row
        # by row, took three quarters of the fit at 41,000 notebooks
        runs = np.cumsum(counts)[filled] - counts[filled]
        sums[filled] = np.add.reduceat(train[np.argsort(assign, kind="stable")], runs)
        for empty in np.flatnonzero(counts == 0):
            worst = int(best.argmin())
            sums[empty] = train[worst]
            best[worst] = np.inf
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centroids = (sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return centroids


def nearest_centroid(x: np.ndarray, centroids: np.ndarray, batch: int = 16_384) -> tuple[np.ndarray, np.ndarray]:
    """The cluster of each row of ``x`` and its cosine with it, in batches: a whole archive's
    similarity matrix with every centroid would not fit in memory (41,000 notebooks' 1.3 million
    rows by 4,631 centroids: 25 GB)."""
    if not len(x):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    assign, best = [], []
    for first in range(0, len(x), batch):
        similarity = x[first : first + batch] @ centroids.T
        assign.append(similarity.argmax(axis=1))
        best.append(np.take_along_axis(similarity, assign[-1][:, None], axis=1)[:, 0])
    return np.concatenate(assign), np.concatenate(best)


def cluster_count(n_chunks: int) -> int:
    """About four times the square root of the chunks, and no cluster under ``MIN_ROWS`` rows.

    A cold question reads ``nprobe`` clusters of ``n / k`` rows and the boot reads ``k``
    centroids: the two balance at ``k = sqrt(nprobe * n)``, two to five square roots at the
    6-25 clusters questions probe. Small clusters also keep an archive's families of near-copies
    apart: at 41,000 synthetic notebooks, one square root (1,158 clusters of 1,157 rows) mixed
    several families in a cluster, its centroid far from each of them, and the dev questions'
    recall@50 was .910 at the 12 clusters probed; four square roots (4,631 of 289 rows) met the
    target (README, "Dense recall@50"). A cluster of fewer rows costs more in its request than in
    its bytes: the 215 notebooks of ../shared/corpus, which hold no near-copies, in 491 clusters
    of 32 rows asked for 76 of them per question."""
    return max(1, min(round(CLUSTERS_PER_ROOT * math.sqrt(n_chunks)), n_chunks // MIN_ROWS))


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

"""cellar.retrieval.ivf: the clustered dense search's fit, on the fixture notebooks' own vectors.
Recall at every probe count follows from one exact search per question, the probe count chosen is
the fewest that reaches the target, and the number of clusters grows with the archive while no
cluster is left too small to be worth its request."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cellar.retrieval import ivf
from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.index import build_index_from_directory

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def fitted():
    """The fixtures' chunk vectors in 8 clusters, and their pseudo-questions."""
    index = build_index_from_directory(FIXTURES, load_model(default_model_dir())).index
    dense = index.dense()
    centroids = ivf.kmeans(dense, 8)
    return dense, centroids, ivf.nearest_centroid(dense, centroids)[0], index.pseudo_questions


def searched_in_probed_clusters(dense, centroids, assign, query, nprobe):
    """The top rows of a search that reads only the ``nprobe`` clusters nearest the query."""
    probed = np.argsort(-(centroids @ query), kind="stable")[:nprobe]
    rows = np.flatnonzero(np.isin(assign, probed))
    return set(rows[np.argsort(-(dense[rows] @ query), kind="stable")[: ivf.DEPTH]].tolist())


def test_recall_at_every_probe_count_follows_from_one_exact_search(fitted):
    dense, centroids, assign, questions = fitted
    ranks = ivf.probe_ranks(dense, centroids, assign, questions[:20]).reshape(20, -1)
    for query, rank in zip(questions[:20], ranks):
        exact = set(np.argsort(-(dense @ query), kind="stable")[: ivf.DEPTH].tolist())
        for nprobe in (1, 2, 4, 8):
            found = searched_in_probed_clusters(dense, centroids, assign, query, nprobe)
            assert len(exact & found) == int(np.sum(rank < nprobe))


def test_the_probe_count_chosen_is_the_fewest_that_reaches_the_target(fitted):
    dense, centroids, assign, questions = fitted
    nprobe, recall = ivf.choose_nprobe(dense, centroids, assign, questions)
    ranks = ivf.probe_ranks(dense, centroids, assign, questions)
    assert recall == round(float(np.mean(ranks < nprobe)), 4) >= ivf.PSEUDO_TARGET
    assert nprobe == 1 or np.mean(ranks < nprobe - 1) < ivf.PSEUDO_TARGET


def test_kmeans_gives_unit_centroids_each_serving_rows(fitted):
    dense, centroids, assign, _ = fitted
    assert centroids.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(centroids, axis=1), 1.0, rtol=1e-5)
    assert set(assign.tolist()) == set(range(len(centroids)))
    np.testing.assert_array_equal(ivf.kmeans(dense, 8), centroids)  # the same archive, the same fit


@pytest.mark.parametrize("n_chunks", [1, 127, 128, 256, 15_713, 1_340_152])
def test_clusters_grow_with_the_square_root_and_none_is_too_small(n_chunks):
    k = ivf.cluster_count(n_chunks)
    assert 1 <= k <= round(ivf.CLUSTERS_PER_ROOT * np.sqrt(n_chunks))
    assert k == 1 or n_chunks / k >= ivf.MIN_ROWS
    assert ivf.cluster_count(4 * n_chunks) >= k

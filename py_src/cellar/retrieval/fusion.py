"""Fusion: several rankers' scores of the same items in, one order out.

- ``notebook_scores``: a notebook's score from its chunks' scores under one ranker, its best chunk
  plus a bounded bonus for corroborating chunks of other kinds; the search mixes the two rankers'
  notebook scores (``cellar.retrieval.search`` says how and why), the dense ranker's share rising
  when BM25 cannot tell its best notebooks apart (``flat``).
- ``notebook_features`` and ``rerank``: the hybrid search's candidate notebooks ordered again by
  learned weights over four features: the fused score, the idf-weighted share of the question's
  terms the notebook holds anywhere and the share its three best chunks hold, and its length
  (a long notebook holds many words by chance). The best chunk alone prefers a notebook with
  one cell full of the question's commonest words; the whole notebook's share alone prefers the
  longest notebooks. The weights are fitted by ``benchmarks/rerank.py`` (pairwise logistic
  regression over the tuning gold sets, each judged with weights fitted on the others).
- ``reciprocal_rank_fusion``: each item scores the sum of 1 / (k + rank) over the rankings that
  hold it (Cormack, Clarke and Buettcher, 2009). The embedding lab shows it beside the two
  rankings it fuses; the search fuses notebook scores instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

import numpy as np

CORROBORATION = 0.1  # bonus per notebook: this share of the mean best score of other kinds
CORROBORATING_KINDS = 3  # other kinds that may add to the bonus
# When BM25 cannot tell its best notebooks apart (its FLAT_RANK-th within FLAT_GAP of its best: a
# question of common words, `x-as omdraaien zodat hij van 10 naar 0 loopt`), the dense ranker's share.
FLAT_RANK, FLAT_GAP, FLAT_DENSE_WEIGHT = 5, 0.05, 0.6


# The learned weights of the rerank (``rerank``): fused score, share of the question's terms the
# notebook holds, share its three best chunks hold, log(1 + its chunks); fitted on the tuning sets
# by benchmarks/rerank.py and scaled so that the fused score weighs 1.
RERANK_WEIGHTS = (1.0, 0.551, 0.390, -0.080)
RERANK_DEPTH = 10  # the notebooks ordered again: those the weights were fitted on
TOP_CHUNKS = 3  # the best chunks whose share of the terms is the third feature
Chunks = TypeVar("Chunks", bound=Sequence[tuple[int, float]])  # a notebook's (row, score) candidates


def notebook_features(
    ranked: Sequence[tuple[int, float, Sequence[tuple[int, float]]]],
    bounds: np.ndarray,
    postings_rows: Sequence[np.ndarray],
    term_weights: Sequence[float],
) -> np.ndarray:
    """One row of ``rerank``'s features per ``ranked`` entry (notebook, fused score, its chunks
    as (row, score), best first): its fused score over the best one's, the weighted share of the
    terms it holds anywhere (``bounds``: its rows as [start, end)), the weighted share its
    ``TOP_CHUNKS`` best chunks hold, and log(1 + its number of chunks). ``postings_rows``: each
    term's rows, ascending (empty for a term nowhere); ``term_weights``: its weight (idf)."""
    fused = np.array([score for _, score, _ in ranked], dtype=np.float64)
    weights = np.asarray(term_weights, dtype=np.float64)
    total = weights.sum() or 1.0
    held = np.zeros((len(ranked), len(weights)), dtype=bool)
    held_top = np.zeros_like(held)
    tops = np.array([row for _, _, chunks in ranked for row, _ in chunks[:TOP_CHUNKS]], dtype=np.int64)
    owners = np.repeat(np.arange(len(ranked)), [min(len(chunks), TOP_CHUNKS) for _, _, chunks in ranked])
    for j, rows in enumerate(postings_rows):
        if len(rows):  # (rows ascending: one binary search per notebook bound and per top chunk)
            held[:, j] = np.searchsorted(rows, bounds[:, 1]) > np.searchsorted(rows, bounds[:, 0])
            found = rows[np.minimum(np.searchsorted(rows, tops), len(rows) - 1)] == tops
            held_top[:, j] = np.bincount(owners[found], minlength=len(ranked)) > 0
    best = fused.max() if len(fused) and fused.max() > 0 else 1.0
    return np.column_stack(
        [fused / best, held @ weights / total, held_top @ weights / total, np.log1p(bounds[:, 1] - bounds[:, 0])]
    )


def rerank(
    ranked: Sequence[tuple[int, float, Chunks]],
    bounds: np.ndarray,
    documents: Sequence[bool],
    postings_rows: Sequence[np.ndarray],
    term_weights: Sequence[float],
    weights: Sequence[float] = RERANK_WEIGHTS,
) -> list[tuple[int, float, Chunks]]:
    """``ranked`` with the notebooks among its first ``len(bounds)`` entries in the order of the
    weighted sum of their ``notebook_features``, each taking the place and the score of the one
    it passes (so the scores still fall); a document (``documents``) keeps its place: the
    weights were learned on notebooks."""
    places = [i for i, document in enumerate(documents) if not document]
    if len(places) < 2:
        return list(ranked)
    features = notebook_features([ranked[i] for i in places], bounds[places], postings_rows, term_weights)
    scores = features @ np.asarray(weights, dtype=np.float64)
    order = sorted(range(len(places)), key=lambda j: (-scores[j], places[j]))
    result = list(ranked)
    for place, j in zip(places, order):
        n, _, chunks = ranked[places[j]]
        result[place] = (n, ranked[place][1], chunks)
    return result


def notebook_scores(owners: Sequence[int], kinds: Sequence[int], scores: Sequence[float]) -> dict[int, float]:
    """Each notebook's score from its chunks' scores: its best chunk, plus ``CORROBORATION``
    times the mean best score of up to ``CORROBORATING_KINDS`` other kinds (each no better than
    the best chunk, so the bonus is bounded by that share of it)."""
    best: dict[int, dict[int, float]] = {}
    for n, kind, score in zip(owners, kinds, scores):
        per_kind = best.setdefault(n, {})
        if score > per_kind.get(kind, float("-inf")):
            per_kind[kind] = score
    result = {}
    for n, per_kind in best.items():
        top, *others = sorted(per_kind.values(), reverse=True)
        others = [max(score, 0.0) for score in others[:CORROBORATING_KINDS]]
        result[n] = top + (CORROBORATION * sum(others) / len(others) if others else 0.0)
    return result


def flat(scores: Iterable[float]) -> bool:
    """Whether BM25's notebook ``scores`` cannot tell the best notebooks apart: the
    ``FLAT_RANK``-th best within ``FLAT_GAP`` of the best (a question of common words: `x`, `10`,
    `0` and a word every notebook shares), so that the dense ranker should decide their order."""
    best = sorted(scores, reverse=True)[:FLAT_RANK]
    return len(best) == FLAT_RANK and best[0] > 0 and best[-1] >= (1.0 - FLAT_GAP) * best[0]


def reciprocal_rank_fusion(rankings: Iterable[Sequence[int]], k: int = 60) -> list[tuple[int, float]]:
    """(item, fused score) pairs, best first; equal scores keep the order items were first seen."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda pair: -pair[1])

"""Fusion: several rankers' scores of the same items in, one order out.

- ``notebook_scores``: a notebook's score from its chunks' scores under one ranker, its best chunk
  plus a bounded bonus for corroborating chunks of other kinds; the search mixes the two rankers'
  notebook scores (``cellar.retrieval.search`` says how and why), the dense ranker's share rising
  when BM25 cannot tell its best notebooks apart (``flat``).
- ``reciprocal_rank_fusion``: each item scores the sum of 1 / (k + rank) over the rankings that
  hold it (Cormack, Clarke and Buettcher, 2009). The embedding lab shows it beside the two
  rankings it fuses; the search fuses notebook scores instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

CORROBORATION = 0.1  # bonus per notebook: this share of the mean best score of other kinds
CORROBORATING_KINDS = 3  # other kinds that may add to the bonus
# When BM25 cannot tell its best notebooks apart (its FLAT_RANK-th within FLAT_GAP of its best: a
# question of common words, `x-as omdraaien zodat hij van 10 naar 0 loopt`), the dense ranker's share.
FLAT_RANK, FLAT_GAP, FLAT_DENSE_WEIGHT = 5, 0.05, 0.6


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

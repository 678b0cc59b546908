"""Reciprocal rank fusion: several rankings of the same items in, one fused ranking out.

Each item scores the sum of 1 / (k + rank) over the rankings that hold it (Cormack, Clarke and
Buettcher, 2009). The embedding lab shows it beside the two rankings it fuses; the search itself
fuses notebook scores instead (cellar.retrieval.search says why).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def reciprocal_rank_fusion(rankings: Iterable[Sequence[int]], k: int = 60) -> list[tuple[int, float]]:
    """(item, fused score) pairs, best first; equal scores keep the order items were first seen."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda pair: -pair[1])

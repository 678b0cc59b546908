"""Refusal: whether the evidence that the best notebook answers a question (``Searcher._evidence``)
clears the calibrated thresholds (``evaluation.calibrate``). The rule alone, pure, shared by the
search and by the calibration that fits its thresholds; why it is this rule is in
``cellar.retrieval.search``'s docstring (step 4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def refuses(evidence: Mapping[str, Any], thresholds: Mapping[str, float]) -> bool:
    """Whether ``evidence`` (``Searcher._evidence``) falls below any calibrated threshold; the
    similarity only counts when the dense ranker ran, and then a notebook that holds every
    query term the archive knows passes the coverage test (see the docstring of cellar.retrieval.search)."""
    similarity = evidence.get("similarity")
    return (
        (evidence["coverage"] < thresholds["min_coverage"] and not unknown_words_left_to_meaning(evidence))
        or evidence["numbers"] < thresholds["min_numbers"]
        or evidence.get("known", 1.0) < thresholds.get("min_known", 0.0)
        or evidence.get("quantity", 1.0) < thresholds.get("min_quantity", 0.0)
        or (similarity is not None and similarity < thresholds["min_similarity"])
    )


def unknown_words_left_to_meaning(evidence: Mapping[str, Any]) -> bool:
    """Whether the coverage test is waived: the dense ranker ran and the best notebook holds
    every query term the archive knows (and it knows at least one)."""
    return evidence.get("similarity") is not None and evidence.get("known_coverage", 0.0) >= 1.0

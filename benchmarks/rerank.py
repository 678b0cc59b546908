"""Fit the notebook rerank's weights (``cellar.retrieval.fusion.RERANK_WEIGHTS``) and score them out of sample.

    .venv/bin/cellar index ../shared/corpus --out /tmp/corpus-shard
    .venv/bin/cellar index demo/archive --out /tmp/demo-shard
    .venv/bin/python benchmarks/rerank.py /tmp/corpus-shard /tmp/demo-shard

For every answerable question of the tuning gold sets, the hybrid search's ten best notebooks
in the fused order, each with ``fusion.notebook_features``. A pairwise logistic regression (the
right notebook against each other one, L2 1.0, Newton steps) learns the weights; each set is
then judged with weights fitted on the other sets (dev and its Dutch translations, and the demo
and the English questions over it, leave together), so no set scores weights it helped fit.
Prints, per set, the right notebook first in the fused order and after the rerank (refusal
aside: the rerank never changes a verdict), then the weights fitted on all of them, scaled so
that the fused score weighs 1. The held-out sets are never read here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from cellar.cli.search import open_searcher
from cellar.retrieval.embedding import default_model_dir
from cellar.retrieval.evaluation import read_gold
from cellar.retrieval.filters import Filters
from cellar.retrieval.fusion import RERANK_DEPTH, notebook_features
from cellar.retrieval.search import Searcher

ROOT = Path(__file__).resolve().parents[1]
# set: (which shard, gold file, the group it leaves out with)
SETS = {
    "dev": ("corpus", ROOT.parent / "shared/gold/dev.jsonl", "dev"),
    "dev_nl": ("corpus", ROOT / "benchmarks/gold/dev_nl.jsonl", "dev"),
    "course_dev": ("corpus", ROOT / "benchmarks/gold/course_dev.jsonl", "course_dev"),
    "course_dev_b": ("corpus", ROOT / "benchmarks/gold/course_dev_b.jsonl", "course_dev_b"),
    "dutch_dev_b": ("corpus", ROOT / "benchmarks/gold/dutch_dev_b.jsonl", "dutch_dev_b"),
    "english_dev_b": ("corpus", ROOT / "benchmarks/gold/english_dev_b.jsonl", "english_dev_b"),
    "near_miss": ("corpus", ROOT / "benchmarks/gold/near_miss.jsonl", "near_miss"),
    "demo": ("demo", ROOT / "demo/gold.jsonl", "demo"),
    "english_over_dutch": ("demo", ROOT / "benchmarks/gold/english_over_dutch.jsonl", "demo"),
}
L2 = 1.0


def candidates(searcher: Searcher, query: str, expected: set[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """The features of the fused order's ten best notebooks (documents left out, as the rerank
    leaves them in place) and which of them answer; None when none of them does."""
    fused = searcher._fuse(query, Filters(), "hybrid")
    top = fused.ranked[:RERANK_DEPTH]
    bounds, documents, rows, weights = searcher.rerank_inputs(top, fused.terms, searcher._read_in_english(query).terms)
    places = [i for i, document in enumerate(documents) if not document]
    ranked = [top[i] for i in places]
    right = np.array([searcher.notebooks[n]["path"] in expected for n, _, _ in ranked], dtype=bool)
    return (notebook_features(ranked, bounds[places], rows, weights), right) if right.any() else None


def pairs(questions: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Per question, the right notebook's features minus each wrong one's."""
    return np.array([f[right][0] - row for f, right in questions for row in f[~right]])


def fit(differences: np.ndarray) -> np.ndarray:
    """Pairwise logistic regression without intercept (each pair both ways), by Newton's method."""
    x = np.vstack([differences, -differences])
    y = np.r_[np.ones(len(differences)), np.zeros(len(differences))]
    w = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ w))
        gradient = (x.T @ (p - y) + L2 * w) / len(y)
        hessian = ((x.T * (p * (1 - p))) @ x + L2 * np.eye(len(w))) / len(y)
        w -= np.linalg.solve(hessian, gradient)
    return w / w[0]


def first_right(questions: list[tuple[np.ndarray, np.ndarray] | None], weights: np.ndarray | None) -> int:
    """How many questions have a right notebook first: in the fused order, or by ``weights``."""
    return sum(
        q is not None and bool(q[1][0 if weights is None else int(np.argmax(q[0] @ weights))]) for q in questions
    )


def main(corpus_shard: str, demo_shard: str) -> None:
    searchers = {
        name: open_searcher(path, str(default_model_dir()))
        for name, path in (("corpus", corpus_shard), ("demo", demo_shard))
    }
    data: dict[str, list[tuple[np.ndarray, np.ndarray] | None]] = {}
    for name, (shard, gold, _) in SETS.items():
        if not gold.exists():
            print(f"{name}: {gold} is not here; skipped")
            continue
        rows = [row for row in read_gold(gold.read_text().splitlines(), str(gold)) if row["expect"]]
        data[name] = [candidates(searchers[shard], row["query"], {e["path"] for e in row["expect"]}) for row in rows]
    print(
        f"{'gold set':20} {'n':>4} {'fused':>6} {'rerank':>7}   (right notebook first; weights fitted without the set)"
    )
    totals = [0, 0, 0]
    for name, questions in data.items():
        group = SETS[name][2]
        train = [q for other, qs in data.items() if SETS[other][2] != group for q in qs if q is not None]
        weights = fit(pairs(train))
        before, after = first_right(questions, None), first_right(questions, weights)
        totals = [totals[0] + len(questions), totals[1] + before, totals[2] + after]
        print(f"{name:20} {len(questions):4} {before / len(questions):6.3f} {after / len(questions):7.3f}")
    print(f"{'all':20} {totals[0]:4} {totals[1]:6} {totals[2]:7}")
    weights = fit(pairs([q for qs in data.values() for q in qs if q is not None]))
    print("weights (fused, coverage, top-chunk coverage, log chunks):", ", ".join(f"{w:.3f}" for w in weights))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

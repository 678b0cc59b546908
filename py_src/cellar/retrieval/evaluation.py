"""Evaluation: gold questions in, a scorecard and refusal calibration out.

A gold set (shared/gold/README.md) is JSON lines of questions with the notebooks and cells that
answer them (none for an out-of-scope question). ``evaluate`` runs every question through a
``Searcher`` and scores the answers (``judge``, ``scorecard``); ``calibrate`` fits the three
refusal thresholds that ``cellar index --calibrate`` stores in the shard.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from cellar.retrieval.search import Searcher, refuses, unknown_words_left_to_meaning


def read_gold(lines: Iterable[str], where: str = "gold") -> list[dict[str, Any]]:
    """Gold questions from JSON lines (see shared/gold/README.md); blank lines are skipped."""
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row["query"], str) or not isinstance(row["expect"], list):
                raise TypeError("query must be a string and expect a list")
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{where}:{number}: not a gold question ({error})") from None
        rows.append(row)
    return rows


def judge(row: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """How one answer scores against one gold question: notebook rank, cell hit, refusal."""
    paths = [nb["path"] for nb in answer["notebooks"]]
    expected = {e["path"] for e in row["expect"]}
    rank = next((i for i, path in enumerate(paths, 1) if path in expected), None)
    cells = {(e["path"], e["cell"]) for e in row["expect"]}
    shown = {
        (nb["path"], item["cell"]) for nb in answer["notebooks"][:5] for item in (*nb["hits"], *nb["neighbourhood"])
    }
    return {
        "answerable": bool(row["expect"]),
        "rank": rank,
        "cell_hit": bool(cells & shown),
        "refused": answer["refused"],
    }


def scorecard(judged: Sequence[Mapping[str, Any]], latencies: Sequence[float]) -> dict[str, Any]:
    """The figures of gold/README.md over judged answers (``judge``) and latencies in ms."""
    answerable = [j for j in judged if j["answerable"]]
    unanswerable = [j for j in judged if not j["answerable"]]

    def share(items: Sequence[Any], test: Callable[[Any], bool]) -> float | None:
        return round(sum(map(test, items)) / len(items), 4) if items else None

    def ranked_within(at: int) -> Callable[[Any], bool]:
        return lambda j: j["rank"] is not None and j["rank"] <= at

    figures: dict[str, Any] = {"n": len(judged)}
    for at in (1, 3, 5):
        figures[f"notebook_hit@{at}"] = share(answerable, ranked_within(at))
    figures["cell_hit@5"] = share(answerable, lambda j: j["cell_hit"])
    figures["mrr"] = (
        round(sum(1 / j["rank"] for j in answerable if j["rank"]) / len(answerable), 4) if answerable else None
    )
    figures["refusal_recall"] = share(unanswerable, lambda j: j["refused"])
    figures["false_refusal_rate"] = share(answerable, lambda j: j["refused"])
    if latencies:
        ordered = sorted(latencies)
        figures["latency_ms"] = {
            "p50": round(float(np.percentile(ordered, 50)), 3),
            "p95": round(float(np.percentile(ordered, 95)), 3),
        }
    return figures


def evaluate(searcher: Searcher, gold: Sequence[Mapping[str, Any]], mode: str = "hybrid") -> dict[str, Any]:
    """The scorecard of ``searcher`` on ``gold``: overall, ``by_kind`` and ``by_lang``, with
    latency p50/p95 of a whole search and per stage."""
    judged: list[dict[str, Any]] = []
    latencies: list[float] = []
    stages: dict[str, list[float]] = {}
    for row in gold:
        answer = searcher.search(row["query"], k=5, mode=mode)
        judged.append({**judge(row, answer), "kind": row.get("kind"), "lang": row.get("lang")})
        latencies.append(answer["timings_ms"]["total"])
        for stage, ms in answer["timings_ms"].items():
            stages.setdefault(stage, []).append(ms)
    card = scorecard(judged, latencies)
    card["latency_ms"] = {**card.get("latency_ms", {}), "stages": {
        stage: {"p50": round(float(np.percentile(v, 50)), 3), "p95": round(float(np.percentile(v, 95)), 3)}
        for stage, v in stages.items() if stage != "total"
    }}  # fmt: skip
    for group in ("kind", "lang"):
        values = sorted({j[group] for j in judged if j[group] is not None})
        card[f"by_{group}"] = {
            value: {key: figure for key, figure in scorecard([j for j in judged if j[group] == value], []).items()}
            for value in values
        }
    return card


def calibrate(searcher: Searcher, gold: Sequence[Mapping[str, Any]], max_false: float = 0.10) -> dict[str, Any]:
    """Refusal thresholds from a gold set, for the evidence of a hybrid search.

    Every combination of thresholds (coverage, numbers, similarity) taken from the answerable
    questions' own values (or 0) is tried with ``refuses``'s rule; the one that refuses the most
    out-of-scope questions while refusing at most ``max_false`` of the answerable ones wins (ties:
    fewer answerable refused, then the lower thresholds). Each threshold is then lowered to the middle of the gap
    below it, which refuses the same gold questions but leaves a margin for questions not seen.
    Returns the calibration to store in ``index.calibration``."""
    features = [(bool(row["expect"]), searcher.search(row["query"], k=1)["evidence"]) for row in gold]
    if not any(ok for ok, _ in features):
        raise ValueError("calibration needs answerable questions in the gold set")
    keys = ("coverage", "numbers", "similarity")
    values = np.array([[e[key] if e[key] is not None else np.inf for key in keys] for _, e in features])
    answerable = np.array([ok for ok, _ in features])
    grids = [np.unique(np.concatenate([[0.0], column[answerable & np.isfinite(column)]])) for column in values.T]
    mesh = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1).reshape(-1, len(keys))
    under = values[None, :, :] < mesh[:, None, :]  # (combinations, questions, thresholds)
    under[:, :, 0] &= ~np.array(  # no coverage test where the unknown words are left to meaning
        [unknown_words_left_to_meaning(e) for _, e in features]
    )
    refused = under.any(axis=2)
    false = refused[:, answerable].sum(axis=1)
    caught = refused[:, ~answerable].sum(axis=1)
    allowed = np.flatnonzero(false <= max_false * answerable.sum())
    order = np.lexsort((*(mesh[allowed, i] for i in reversed(range(len(keys)))), false[allowed], -caught[allowed]))
    chosen = allowed[order[0]]
    thresholds = {}
    for i, key in enumerate(keys):
        below = values[:, i][values[:, i] < mesh[chosen, i]]
        thresholds[f"min_{key}"] = round(float((mesh[chosen, i] + below.max()) / 2) if len(below) else 0.0, 4)
    check = [refuses(e, thresholds) for _, e in features]
    return {
        "thresholds": thresholds,
        "gold": {"questions": len(features), "answerable": int(answerable.sum()), "max_false": max_false},
        "refused": {
            "out_of_scope": sum(r for r, ok in zip(check, answerable) if not ok),
            "answerable": sum(r for r, ok in zip(check, answerable) if ok),
        },
    }

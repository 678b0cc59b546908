"""The refusal rule's ceiling on a gold set: the best it could do there with thresholds chosen by
an oracle that has read the answers.

    .venv/bin/cellar index ../shared/corpus --out /tmp/corpus-shard --calibrate ../shared/gold/dev.jsonl
    .venv/bin/python benchmarks/refusal_ceiling.py /tmp/corpus-shard ../shared/gold/dev.jsonl \
        benchmarks/gold/heldout.jsonl

Issue 14 asks for refusal recall >= .80 at <= .10 false refusals together with the right notebook
in the top 5 for >= .97 of the answerable questions and an MRR >= .90. Thresholds fitted out of
sample can only do worse than thresholds fitted on the very questions they are scored on; so, for
each gold set, every combination of the refusal's thresholds (``refusal.refuses``'s rule, its
waivers included, each threshold at 0 or at one of the set's own evidence values) is scored in
sample, and this prints what the best of them reach: the highest nb@5 and MRR among those that
meet the refusal target, and the highest refusal recall among those that keep nb@5 at its target.
When even these miss a target, no calibration reaches it with this evidence, and what must change
is the evidence (what a question's best notebook holds), not how thresholds are fitted.

Each question is searched once (hybrid, routed as ``cellar eval`` routes it when refusal lets the
routed source answer); its evidence is what ``evaluation.calibrate`` fits on and its rank the one it
has when not refused. Reading a held-out set here is reporting: nothing is fitted to it.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from cellar.cli.search import open_searcher
from cellar.retrieval.embedding import default_model_dir
from cellar.retrieval.evaluation import THRESHOLD_KEYS, evidence_table, judge, read_gold, refused_at
from cellar.retrieval.search import Searcher


def searched(searcher: Searcher, row: dict[str, Any]) -> tuple[bool, dict[str, Any], int | None]:
    """(answerable, the evidence refusal weighs, the right notebook's rank when not refused)."""
    ranking = searcher.rank(row["query"], k=5)
    answer = searcher.answer(replace(ranking, refused=False))
    return bool(row["expect"]), ranking.evidence, judge(row, answer)["rank"]


def refused_by_every_combination(evidence: list[dict[str, Any]]) -> np.ndarray:
    """(combinations, questions): whether each combination of thresholds refuses each question,
    each threshold at 0, at one of the questions' own values or above them all."""
    values = evidence_table(evidence)
    grids = [np.unique(np.concatenate([[0.0], column[np.isfinite(column)], [np.inf]])) for column in values.T]
    mesh = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1).reshape(-1, len(THRESHOLD_KEYS))
    return refused_at(mesh, values, evidence)


def ceiling(questions: list[tuple[bool, dict[str, Any], int | None]], args: argparse.Namespace) -> dict[str, Any]:
    """What the best in-sample thresholds reach on ``questions`` (``searched``'s triples)."""
    answerable = np.array([ok for ok, _, _ in questions])
    rank = np.array([r or np.inf for _, _, r in questions], dtype=float)
    refused = refused_by_every_combination([e for _, e, _ in questions])
    shown = ~refused & answerable
    nb5 = (shown & (rank <= 5)).sum(axis=1) / answerable.sum()
    mrr = np.where(shown, 1 / rank, 0.0).sum(axis=1) / answerable.sum()
    recall = (refused & ~answerable).sum(axis=1) / max((~answerable).sum(), 1)
    false = (refused & answerable).sum(axis=1) / answerable.sum()
    meets = (recall >= args.recall) & (false <= args.false)
    keeps = nb5 >= args.nb5
    return {
        "answerable": int(answerable.sum()),
        "out_of_scope": int((~answerable).sum()),
        "nb5_unrefused": float(nb5[0]),  # the first combination is all zeros: nothing refused
        "mrr_unrefused": float(mrr[0]),
        "nb5_at_refusal_target": float(nb5[meets].max()) if meets.any() else None,
        "mrr_at_refusal_target": float(mrr[meets].max()) if meets.any() else None,
        "recall_at_nb5_target": float(recall[keeps & (false <= args.false)].max()) if keeps.any() else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shard")
    parser.add_argument("gold", nargs="+")
    parser.add_argument("--recall", type=float, default=0.80, help="refusal recall target (default .80)")
    parser.add_argument("--false", type=float, default=0.10, help="most false refusals allowed (default .10)")
    parser.add_argument("--nb5", type=float, default=0.97, help="right notebook in the top 5 target (default .97)")
    args = parser.parse_args()
    searcher = open_searcher(args.shard, str(default_model_dir()))
    print(f"{'gold set':24} {'ans':>4} {'oos':>4}  {'unrefused':>15}  {'at the refusal target':>21}  recall at nb@5")
    print(f"{'':24} {'':>4} {'':>4}  {'nb@5':>7} {'MRR':>7}  {'nb@5':>10} {'MRR':>10}  >= {args.nb5:.2f}")
    for gold in args.gold:
        rows = read_gold(Path(gold).read_text().splitlines(), gold)
        figures = ceiling([searched(searcher, row) for row in rows], args)

        def shown(value: float | None) -> str:
            return "   none" if value is None else f"{value:7.3f}"

        print(
            f"{Path(gold).stem:24} {figures['answerable']:4} {figures['out_of_scope']:4}  "
            f"{shown(figures['nb5_unrefused'])} {shown(figures['mrr_unrefused'])}  "
            f"{shown(figures['nb5_at_refusal_target']):>10} {shown(figures['mrr_at_refusal_target']):>10}  "
            f"{shown(figures['recall_at_nb5_target'])}"
        )


if __name__ == "__main__":
    main()

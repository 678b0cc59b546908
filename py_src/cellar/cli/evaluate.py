"""`cellar eval SHARD GOLD.jsonl [--json] [--questions] [--mode bm25|dense|hybrid|all]
[--calibration out-of-sample|stored] [--folds K] [--route] [--model DIR]`: the scorecard of a shard on a gold set
(shared/gold/README.md): notebook hit@1/3/5, the cells (cell_hit@5: among the hits and
neighbourhood of the top 5 notebooks, as the product shows them; cell_strict@5: among their hits
alone; cell_first: the top notebook's first hit), MRR, refusal recall, false refusal rate, the
same per kind and per language, for document questions block_first (the top answer's first hit
is the gold block) and citation_exact (over answered ones: its citation is the gold's, to the
character), and latency p50/p95 of a whole search and of each stage.
--mode all puts the three modes side by side. --questions adds, per mode, a line per question:
where the right notebook came, whether its cell was the first hit and among the hits, the verdict
on refusal, and what came first (for a refusal, the reason given). --json always holds them
(`questions`).

Refusal is judged out of sample by default: the gold questions are dealt into K folds (5,
stratified by kind, deterministic) and each fold is judged with the thresholds calibrated on the
other folds, so no threshold is scored on a question that set it. --calibration stored judges with
the shard's stored thresholds instead: in sample when the shard was calibrated on this gold set.
Each question is routed as a search routes it (a record's field value named: those notes first);
--route adds the normative rule (cellar.retrieval.routing).
"""

from __future__ import annotations

import argparse
import json
import sys

from cellar.cli.files import text_file
from cellar.cli.search import open_searcher
from cellar.retrieval.embedding import default_model_dir
from cellar.retrieval.evaluation import CALIBRATIONS, FOLDS, read_gold, scorecards
from cellar.retrieval.routing import DEFAULT_RULES, RULES
from cellar.retrieval.search import MODES
from cellar.terminal import shown
from cellar.text import shortened

QUESTION_CHARS = 60  # of a question, in its line of --questions
COLUMNS = (
    "notebook_hit@1",
    "notebook_hit@3",
    "notebook_hit@5",
    "cell_hit@5",
    "cell_strict@5",
    "cell_first",
    "mrr",
    "refusal_recall",
    "false_refusal_rate",
    "block_first",
    "citation_exact",
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="score a shard on a gold set",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("shard", metavar="SHARD")
    parser.add_argument("gold", metavar="GOLD.jsonl")
    parser.add_argument("--json", action="store_true", help="print the scorecard as one JSON object")
    parser.add_argument(
        "--questions", action="store_true", help="a line per question under the scorecard: which fail, and how"
    )
    parser.add_argument("--mode", choices=(*MODES, "all"), default="hybrid")
    parser.add_argument(
        "--calibration",
        choices=CALIBRATIONS,
        default="out-of-sample",
        help="refusal thresholds: fitted per fold on the other folds (default), or the shard's stored ones (in sample)",
    )
    parser.add_argument(
        "--folds",
        type=int,
        default=FOLDS,
        metavar="K",
        help=f"folds of the out-of-sample calibration (default {FOLDS})",
    )
    parser.add_argument(
        "--route",
        action="store_true",
        help="route a normative question to the clauses first too (every question naming a record's field value goes to those notes first: cellar.retrieval.routing)",
    )
    parser.add_argument(
        "--model",
        default=str(default_model_dir()),
        metavar="DIR",
        help="embedding model folder (default: the packaged model)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        searcher = open_searcher(args.shard, args.model)
        gold = read_gold(text_file(args.gold).splitlines(), args.gold)
    except (OSError, ValueError) as error:
        print(f"cellar eval: {error}", file=sys.stderr)
        return 2
    modes = MODES if args.mode == "all" else (args.mode,)
    try:
        cards = scorecards(searcher, gold, modes, args.calibration, args.folds, RULES if args.route else DEFAULT_RULES)
    except ValueError as error:
        print(f"cellar eval: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(cards if args.mode == "all" else cards[args.mode], indent=1))
    else:
        print(table(cards))
        if args.questions:
            for mode, card in cards.items():
                # a gold file's text, printed: its control characters as escapes, line by line
                rows = "\n".join(map(shown, question_table(card["questions"]).splitlines()))
                print(f"\n{mode}, question by question:\n\n{rows}")
    return 0


def table(cards: dict) -> str:
    """A Markdown table: one row per mode, and how refusal was calibrated."""
    head = ["mode", *COLUMNS, "p50 ms", "p95 ms"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for mode, card in cards.items():
        cells = [f"{card[c]:.3f}" if card.get(c) is not None else "n/a" for c in COLUMNS]
        latency = card["latency_ms"]
        rows.append("| " + " | ".join([mode, *cells, f"{latency['p50']:.1f}", f"{latency['p95']:.1f}"]) + " |")
    how = next(iter(cards.values()))["calibration"]
    rows.append(f"\nrefusal thresholds: {how['method']}")
    return "\n".join(rows)


def question_table(questions: list[dict]) -> str:
    """A Markdown table of the questions' verdicts (``evaluation.question_verdict``): the right
    notebook's rank (- when it was not shown), the cell figures, whether the refusal was right, and
    what came first."""
    rows = [
        "| id | question | lang | kind | rank | cell first | cell in hits | refusal | first shown |",
        "|" + "---|" * 9,
    ]
    for q in questions:
        if q["answerable"]:
            refusal = "refused: wrong" if q["refused"] else "answered"
        else:
            refusal = "refused" if q["refused"] else "answered: should refuse"
        top = q["top"]
        where = ""
        if top:
            place = top["citation"] or (f"cell {top['cell']}" if top["cell"] is not None else "")
            where = f"{top['path']}" + (f", {place}" if place else "")
        if q["refused"]:
            where = q.get("reason", where)
        asked = shortened(q["query"], QUESTION_CHARS)
        cells = [
            str(q["id"] if q["id"] is not None else ""),
            _cell(asked),
            q["lang"] or "",
            q["kind"] or "",
            str(q["rank"] or "-") if q["answerable"] else "",
            ("yes" if q["cell_first"] else "no") if q["answerable"] else "",
            ("yes" if q["cell_strict"] else "no") if q["answerable"] else "",
            refusal,
            _cell(where),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _cell(text: str) -> str:
    """``text`` as one cell of a Markdown table row."""
    return " ".join(text.split()).replace("|", "\\|")

"""Whether a question's spelling matters: each English question of a gold set that holds a word
spelled differently in British and American English, asked in either spelling, against one shard
with its stored thresholds (the site's).

    PYTHONPATH=py_src .venv/bin/python benchmarks/spelling.py SHARD GOLD [GOLD ...]

A question is respelled word by word with the pairs of ``models/en-spelling/british-american.tsv``
(read here as a file, so that the script also measures code from before the analyser read them).
Prints, per gold set, how many questions respell and the scorecard of each spelling on them: the
two should not differ, whoever wrote the archive and whoever asks.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from cellar.cli.search import open_searcher
from cellar.retrieval.embedding import default_model_dir
from cellar.retrieval.evaluation import evaluate, read_gold

PAIRS = Path(__file__).parent.parent / "py_src/cellar/retrieval/models/en-spelling/british-american.tsv"
FIGURES = (
    "notebook_hit@1",
    "notebook_hit@5",
    "mrr",
    "cell_strict@5",
    "cell_first",
    "refusal_recall",
    "false_refusal_rate",
)
_WORD = re.compile(r"[A-Za-z]+")


def respelled(query: str, spelling: dict[str, str]) -> str:
    """``query`` with every word ``spelling`` holds (lower-cased) replaced, its first capital kept."""

    def swap(match: re.Match[str]) -> str:
        word = match.group()
        other = spelling.get(word.lower())
        if other is None:
            return word
        return other.capitalize() if word[0].isupper() else other

    return _WORD.sub(swap, query)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shard")
    parser.add_argument("gold", nargs="+", type=Path)
    args = parser.parse_args()
    american = dict(line.split("\t") for line in PAIRS.read_text(encoding="utf-8").splitlines())
    british = {us: gb for gb, us in american.items()}
    searcher = open_searcher(args.shard, str(default_model_dir()))
    print(f"{'':34}", " ".join(f"{name[:13]:>13}" for name in FIGURES))
    for path in args.gold:
        rows = [r for r in read_gold(path.read_text(encoding="utf-8").splitlines(), str(path)) if r.get("lang") != "nl"]
        rows = [r for r in rows if respelled(r["query"], american) != respelled(r["query"], british)]
        print(f"{path.name}: {len(rows)} English questions respell")
        for name, spelling in (("British", british), ("American", american)):
            card = evaluate(searcher, [{**r, "query": respelled(r["query"], spelling)} for r in rows])
            print(f"  {name + ' spelling':32}", " ".join(f"{_figure(card.get(key)):>13}" for key in FIGURES))


def _figure(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "-"


if __name__ == "__main__":
    main()

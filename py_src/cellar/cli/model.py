"""`cellar model distill --out DIR`: distil the static embedding model (needs the `distill` extra).
`cellar model bilingual --dict INDEX --out DIR`: the Dutch -> English term table from a FreeDict
dictd dictionary (Debian's dict-freedict-nld-eng), cut to the model's vocabulary."""

from __future__ import annotations

import argparse
import sys

from cellar.retrieval.bilingual import make_table
from cellar.retrieval.distill import DistillError, distill_model
from cellar.retrieval.embedding import default_model_dir


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("model", help="make the embedding model")
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    distill = actions.add_parser(
        "distill",
        help="distil the static model from all-MiniLM-L6-v2 (needs torch: the `distill` extra)",
        description="Distil a Model2Vec static model from all-MiniLM-L6-v2 and write it, with its "
        "SHA-256, licence and attribution, as a directory that cellar.retrieval.embedding loads.",
    )
    distill.add_argument("--out", required=True, metavar="DIR", help="output directory")
    distill.add_argument("--pca-dims", type=int, default=256, metavar="N", help="dimensions (default 256)")
    distill.set_defaults(func=run_distill)
    bilingual = actions.add_parser(
        "bilingual",
        help="the Dutch -> English term table from FreeDict (apt-get install dict-freedict-nld-eng)",
        description="Read a FreeDict dictd dictionary (INDEX beside its .dict.dz), keep the single-word "
        "headwords whose translations are whole words of the embedding model's vocabulary, and write "
        "DIR/nld-eng.tsv (GPL-2+, as the dictionary: ship it with its LICENSE and README).",
    )
    bilingual.add_argument(
        "--dict",
        default="/usr/share/dictd/freedict-nld-eng.index",
        metavar="INDEX",
        help="the dictd index (default: Debian's freedict-nld-eng)",
    )
    bilingual.add_argument("--out", required=True, metavar="DIR", help="output directory")
    bilingual.add_argument("--model", default=str(default_model_dir()), metavar="DIR", help="embedding model folder")
    bilingual.set_defaults(func=run_bilingual)


def run_distill(args: argparse.Namespace) -> int:
    try:
        manifest = distill_model(args.out, pca_dims=args.pca_dims)
    except DistillError as error:
        print(f"cellar model distill: {error}", file=sys.stderr)
        return 1
    size = sum(entry["bytes"] for entry in manifest["files"].values())
    print(
        f"{args.out}: {manifest['id']}, {manifest['vocab_size']} tokens x {manifest['dims']} dims, {size / 1e6:.1f} MB"
    )
    return 0


def run_bilingual(args: argparse.Namespace) -> int:
    from pathlib import Path

    try:
        vocabulary = (Path(args.model) / "vocab.txt").read_text(encoding="utf-8").splitlines()
        made = make_table(args.dict, args.out, vocabulary)
    except (OSError, ValueError) as error:
        print(f"cellar model bilingual: {error}", file=sys.stderr)
        return 1
    print(
        f"{args.out}: {made['headwords']} of {made['source_headwords']} headwords, {made['bytes'] / 1e3:.0f} kB, sha256 {made['sha256']}"
    )
    return 0

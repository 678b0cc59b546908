"""`cellar model distill --out DIR`: distil the static embedding model (needs the `distill` extra)."""

from __future__ import annotations

import argparse
import sys

from cellar.retrieval.distill import DistillError, distill_model


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

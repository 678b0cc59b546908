"""`cellar revision FILE...`: print the SHA-256 revision of each file, as `sha256sum` does."""

from __future__ import annotations

import argparse
import sys

from cellar.ingest.provenance import file_revision
from cellar.terminal import shown


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("revision", help="print the SHA-256 revision of files")
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    status = 0
    for name in args.files:
        try:
            print(shown(f"{file_revision(name)}  {name}"))
        except OSError as error:
            print(shown(f"{name}: {error.strerror or error}"), file=sys.stderr)
            status = 1
    return status

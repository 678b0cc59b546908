"""The `cellar` command line. Each command lives in its own module of this package, which
adds its sub-parser and calls into the library; the CLI holds no logic of its own.

A command module has `add_parser(subparsers)`, which registers the command and sets
`func(args) -> int` (the exit status) as its default.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cellar import __version__
from cellar.cli import blobs, chunk, evaluate, index, lesson, model, rerender, revision, search, serve, synth

COMMANDS = (revision, serve, blobs, lesson, model, chunk, index, search, evaluate, rerender, synth)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cellar",
        description="Search and re-run an archive of Jupyter notebooks, without a server.",
    )
    parser.add_argument("--version", action="version", version=f"cellar {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.func(args)
    except BrokenPipeError:  # `cellar chunk ... | head` is a normal use
        return 0
    except KeyboardInterrupt:
        print("cellar: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())

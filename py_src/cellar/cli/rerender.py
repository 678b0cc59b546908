"""`cellar rerender ARCHIVE --out DIR [--workers N] [--site SITE_DIR]`: re-run every notebook of an
archive in Pyodide workers, write the fresh notebooks and a report, print the summary table.

Exit status 0 when the archive was re-rendered (stale notebooks are a result, listed in the report),
2 on bad input (no such archive, not a built site, a bad requirements or rerender.json file).
"""

from __future__ import annotations

import argparse
import sys

from cellar.rerender.batch import rerender
from cellar.rerender.environment import RequirementsError
from cellar.rerender.report import summary
from cellar.rerender.vfs import VfsError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rerender", help="re-run an archive's notebooks in a Pyodide sandbox and compare the outputs"
    )
    parser.add_argument("archive", metavar="ARCHIVE", help="the archive folder (notebooks, pathmap.json, blobs/)")
    parser.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="where the fresh notebooks and report.json go (never the archive itself)",
    )
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="Pyodide workers (default 1)")
    parser.add_argument(
        "--site",
        default="site",
        metavar="SITE_DIR",
        help="the built site whose Pyodide runtime and cellar wheel run the notebooks",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.workers < 1:
        print("cellar rerender: --workers must be at least 1", file=sys.stderr)
        return 2
    try:
        report = rerender(args.archive, args.out, workers=args.workers, site=args.site)
    except (FileNotFoundError, ValueError, RequirementsError, VfsError) as error:
        print(f"cellar rerender: {error}", file=sys.stderr)
        return 2
    print(summary(report))
    return 0

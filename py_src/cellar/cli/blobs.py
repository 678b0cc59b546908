r"""`cellar blobs add|check ARCHIVE ...`: put input files into an archive's blob store and path map,
and check that every mapped blob is there and intact.

    cellar blobs add ARCHIVE tanks.csv --as '\\srv-calc-01\projects\2017\17-042\inputs\tanks.csv'
    cellar blobs add ARCHIVE a.csv b.csv --as 'P:\2017\17-042\'      (a folder: ends in \ or /)
    cellar blobs add ARCHIVE --tree '\\srv-calc-01\hull' ./hull-share
    cellar blobs check ARCHIVE [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from cellar.rerender.archive import add_to_archive, check_archive
from cellar.rerender.vfs import PathMapError, VfsError, logical_path
from cellar.terminal import shown


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("blobs", help="add input files to an archive's blob store, check it")
    commands = parser.add_subparsers(title="blobs commands", metavar="ACTION", required=True)

    add = commands.add_parser("add", help="store files as blobs and map their logical paths")
    add.add_argument("archive", metavar="ARCHIVE", help="the archive folder (holds pathmap.json and blobs/)")
    add.add_argument("files", nargs="*", metavar="FILE", help="local files to add")
    add.add_argument(
        "--as",
        dest="as_path",
        metavar="LOGICAL_PATH",
        help="the path notebooks use for FILE; a folder (ending in \\ or /) for several files",
    )
    add.add_argument(
        "--tree",
        nargs=2,
        action="append",
        default=[],
        metavar=("PREFIX", "DIR"),
        help="add every file below DIR under the logical folder PREFIX (repeatable)",
    )
    add.set_defaults(func=run_add)

    check = commands.add_parser("check", help="check every mapped blob; list orphans")
    check.add_argument("archive", metavar="ARCHIVE")
    check.add_argument("--json", action="store_true", help="print the report as one JSON object")
    check.set_defaults(func=run_check)


def run_add(args: argparse.Namespace) -> int:
    if not args.files and not args.tree:
        print("cellar blobs add: nothing to add: give FILE... --as LOGICAL_PATH or --tree PREFIX DIR", file=sys.stderr)
        return 2
    if args.files and not args.as_path:
        print("cellar blobs add: FILE needs --as LOGICAL_PATH", file=sys.stderr)
        return 2
    folder = bool(args.as_path) and args.as_path.endswith(("\\", "/"))
    if len(args.files) > 1 and not folder:
        print("cellar blobs add: several files need --as to be a folder ending in \\ or /", file=sys.stderr)
        return 2
    try:
        files = [
            (str(logical_path(os.path.basename(name), args.as_path)) if folder else args.as_path, name)
            for name in args.files
        ]
        report = add_to_archive(args.archive, files, [tuple(pair) for pair in args.tree])
    except (OSError, VfsError) as error:
        print(f"cellar blobs add: {error}", file=sys.stderr)
        return 2
    for path, blob in report.added:
        print(f"{blob}  {path}")
    for message in report.errors:
        print(message, file=sys.stderr)
    return 1 if report.errors else 0


def run_check(args: argparse.Namespace) -> int:
    try:
        report = check_archive(args.archive)
    except (OSError, PathMapError) as error:
        print(f"cellar blobs check: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, sort_keys=True, ensure_ascii=False))
    else:
        for label, found in (("missing", report.missing), ("corrupt", report.corrupt)):
            for blob, paths in found.items():
                why = f"  ({report.problems[blob]})" if blob in report.problems else ""
                print(shown(f"{label}  {blob}  {', '.join(paths)}{why}"))
        for blob in report.orphans:
            print(f"orphan  {blob}")
        print(
            f"{report.blobs} blobs for {report.paths} paths: {len(report.missing)} missing, "
            f"{len(report.corrupt)} corrupt, {len(report.orphans)} orphans"
        )
    return 0 if report.ok else 1

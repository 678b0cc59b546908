"""`cellar lesson check DIR...` validates lessons; `cellar lesson list` lists the shipped ones."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys

from cellar.lessons.lesson import LessonError, catalog, validate_lesson

# How long one lesson's check may run: it runs the lesson's code (examples, solution, starter,
# checks), and a loop without end there hung the command (found by a hostile-input sweep).
CHECK_TIMEOUT = 120.0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("lesson", help="check and list the lesson workbench's lessons")
    commands = parser.add_subparsers(title="lesson commands", metavar="COMMAND", required=True)
    check = commands.add_parser(
        "check",
        help="validate lesson folders: files, front matter, checks, solution and starter",
    )
    check.add_argument("dirs", nargs="+", metavar="DIR")
    check.add_argument(
        "--timeout",
        type=float,
        default=CHECK_TIMEOUT,
        metavar="SECONDS",
        help=f"stop a lesson whose check runs longer (default {CHECK_TIMEOUT:g})",
    )
    check.set_defaults(func=run_check)
    listing = commands.add_parser("list", help="list the lessons in a folder")
    listing.add_argument(
        "--root", default="lessons", help="the folder that holds the lesson folders (default: lessons)"
    )
    listing.add_argument(
        "--json", action="store_true", help="print the lesson index as JSON (metadata, checkpoints, files)"
    )
    listing.set_defaults(func=run_list)


def run_check(args: argparse.Namespace) -> int:
    status = 0
    for folder in args.dirs:
        problems = _validated(folder, args.timeout)
        for problem in problems:
            print(f"{folder}: {problem}")
        if problems:
            status = 1
        else:
            print(f"{folder}: ok")
    return status


def _validated(folder: str, timeout: float) -> list[str]:
    """``validate_lesson`` in a process of its own, ended after ``timeout`` seconds."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:  # leaving it ends the process
        result = pool.apply_async(validate_lesson, (folder,))
        try:
            return result.get(timeout)
        except multiprocessing.TimeoutError:
            return [f"its code ran for more than {timeout:g} s (a loop without end?) and was stopped"]


def run_list(args: argparse.Namespace) -> int:
    try:
        entries, problems = catalog(args.root)
    except LessonError as error:
        print(error, file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(entries, ensure_ascii=False, indent=2))
    else:
        for entry in entries:
            print(
                f"{entry['number']:02d}  {entry['id']:<16} {entry['minutes']:>3} min  "
                f"{len(entry['checkpoints'])} checkpoints  {entry['title']['en']}"
            )
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0

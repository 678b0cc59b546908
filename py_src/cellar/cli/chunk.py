"""`cellar chunk PATH_OR_DIR... --jsonl [--stats] [--rules RULES.json] [--root DIR]`: chunk
notebooks and documents (.md, .txt, .html, .pdf, .docx, *.clauses.xml/json, *.records.csv/jsonl)
into chunk records, one JSON object per line on stdout.

A folder is searched for documents and is the root that record paths are relative to (unless
--root says otherwise); a file's root is its own folder. Problems go to stderr as `path: reason`
and the batch goes on; a summary ends stderr. Only regular files inside the folder are read: a
FIFO, socket or device, a link out of the folder, a file over 100 MB, a name that is not UTF-8 are
rejected unread, and a text over 2,000,000 characters is cut with a warning (README.md, "What an
archive may hold"). Exit status 0 when every file was read, 1 when some were rejected (the others
are still written), 2 for unusable arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections import Counter

from cellar.cli.files import json_file
from cellar.ingest.chunking import chunk_file, coverage, naming
from cellar.ingest.discovery import find_documents, printable, relative_path
from cellar.ingest.metadata import parse_rules
from cellar.ingest.windows import Coverage, combine
from cellar.records import KINDS
from cellar.terminal import shown


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "chunk",
        help="chunk notebooks and documents into chunk records",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH_OR_DIR", help="files, or folders to search")
    parser.add_argument("--jsonl", action="store_true", help="write one chunk record per line on stdout")
    parser.add_argument(
        "--stats", action="store_true", help="add the coverage and duplication of the windowed text to the summary"
    )
    parser.add_argument(
        "--rules", metavar="RULES.json", help='per-corpus metadata rules: [{"pattern": REGEX, "meta": {...}}, ...]'
    )
    parser.add_argument("--root", metavar="DIR", help="make record paths relative to DIR")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        rules = parse_rules(json_file(args.rules)) if args.rules else ()
    except (OSError, ValueError) as error:
        print(f"cellar chunk: --rules: {error}", file=sys.stderr)
        return 2
    files = []
    rejected = 0
    for name in args.paths:
        if os.path.isdir(name):
            files += [(path, args.root or name) for path in find_documents(name)]
        elif os.path.exists(name):
            files.append((name, args.root or os.path.dirname(name) or "."))
        else:
            print(f"{name}: no such file or folder", file=sys.stderr)
            rejected += 1
    read = 0
    kinds: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    parts: list[Coverage] = []
    progress = sys.stderr.isatty() and len(files) > 1
    for number, (path, root) in enumerate(files, 1):
        if progress:
            print(f"\r\x1b[K[{number}/{len(files)}] {shown(path)}", end="", file=sys.stderr, flush=True)
        try:
            name = printable(relative_path(path, root))
        except ValueError as error:  # a file outside --root
            _report(f"{error}: --root must hold every file named", progress)
            rejected += 1
            continue
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                chunked = chunk_file(path, root, rules)
        except ValueError as error:  # NotebookError too
            _report(naming(name, error), progress)
            rejected += 1
            continue
        for warning in caught:
            _report(str(warning.message), progress)
        read += 1
        if args.jsonl:
            lines = (json.dumps(chunk.record(), ensure_ascii=False) + "\n" for chunk in chunked.chunks)
            sys.stdout.write("".join(lines))
        kinds.update(chunk.kind for chunk in chunked.chunks)
        skipped.update(chunked.skipped)
        if args.stats:
            parts.append(coverage(chunked))
    if progress:
        print("\r\x1b[K", end="", file=sys.stderr)
    sys.stdout.flush()
    print(_summary(read, rejected, kinds, skipped), file=sys.stderr)
    if args.stats:
        print(_coverage_line(combine(parts)), file=sys.stderr)
    return 1 if rejected else 0


def _report(message: str, progress: bool) -> None:
    print(("\r\x1b[K" if progress else "") + shown(message), file=sys.stderr)


def _summary(read: int, rejected: int, kinds: Counter[str], skipped: Counter[str]) -> str:
    counts = ", ".join(f"{kind} {kinds[kind]}" for kind in KINDS if kinds[kind])
    lines = [
        f"cellar chunk: {read} file{'s' * (read != 1)} read, {rejected} rejected",
        f"chunks: {sum(kinds.values())}" + (f" ({counts})" if counts else ""),
        # parts of the files read that make no chunk (a widget view, an unknown cell type), not files
        f"parts not chunked: {sum(skipped.values())}"
        + (f" ({', '.join(f'{reason} {n}' for reason, n in skipped.most_common())})" if skipped else ""),
    ]
    return "\n".join(lines)


def _coverage_line(total: Coverage) -> str:
    share = "n/a" if total.coverage is None else f"{total.coverage:.2%}"
    duplication = "n/a" if total.duplication is None else f"{total.duplication:.3f}"
    return (
        f"windowed text: {total.total_words} words, {total.covered_words} covered ({share}), "
        f"{total.occurrences} stored, duplication {duplication}"
    )

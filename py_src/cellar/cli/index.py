"""`cellar index CORPUS_DIR --out SHARD_DIR [--rerendered DIR] [--model DIR] [--rules RULES.json]
[--glossary GLOSSARY.json] [--calibrate GOLD.jsonl]`: chunk, analyse and embed every notebook and
.md/.txt document below CORPUS_DIR and write the search shard.

With --rerendered (the --out folder of `cellar rerender CORPUS_DIR`), notebooks that re-rendered
clean or drifted are indexed with their fresh outputs and stale ones with their saved outputs,
ranked lower and shown with a warning; every hit still cites the archive file's revision. Without
it, the saved outputs are indexed as they are and every notebook's status is `unchecked`.

Bad files are reported on stderr as `path: reason` and skipped: anything but a regular file, a
link out of the archive, a file over 100 MB, a name that is not UTF-8, a notebook that does not
parse (README.md, "What an archive may hold"). With --calibrate, the refusal thresholds are fitted
on a gold set (shared/gold/README.md) and stored in the shard manifest.

The shard is written beside SHARD_DIR (.NAME.versions/), checked, and SHARD_DIR, a symbolic link,
is switched to it in one step: a run that is killed or fails leaves the previous shard whole. A
second `cellar index` into the same SHARD_DIR while one runs is refused (lock .NAME.lock).

Exit status: 0 every file was read; 1 some files were skipped and reported (the shard is still
written); 2 nothing written: unusable arguments, another writer holds the lock, the shard could
not be written or failed its check (the previous shard is kept).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from cellar.ingest.metadata import parse_rules
from cellar.retrieval.embedding import ModelError, StaticModel, default_model_dir, load_model
from cellar.retrieval.evaluation import calibrate, read_gold
from cellar.retrieval.index import build_index_from_directory
from cellar.retrieval.search import Searcher
from cellar.retrieval.shard import ShardBusy, ShardError, shard_lock, write_shard


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "index",
        help="build a search shard from a folder of notebooks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("corpus", metavar="CORPUS_DIR", help="folder of notebooks and documents")
    parser.add_argument("--out", required=True, metavar="SHARD_DIR", help="where to write the shard")
    parser.add_argument(
        "--rerendered",
        metavar="DIR",
        help="the output folder of `cellar rerender` for this corpus: index fresh outputs",
    )
    parser.add_argument(
        "--model",
        default=str(default_model_dir()),
        metavar="DIR",
        help="embedding model folder (default: the packaged model)",
    )
    parser.add_argument("--rules", metavar="RULES.json", help='metadata rules: [{"pattern": REGEX, "meta": {...}}]')
    parser.add_argument("--glossary", metavar="GLOSSARY.json", help='abbreviations: {"kk vk": "kortsluiting ..."}')
    parser.add_argument("--calibrate", metavar="GOLD.jsonl", help="fit the refusal thresholds on this gold set")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        rules = parse_rules(_json(args.rules)) if args.rules else ()
        glossary = _json(args.glossary) if args.glossary else None
        if glossary is not None and not isinstance(glossary, dict):
            raise ValueError("the glossary must be a JSON object of abbreviation -> expansion")
        gold = (
            read_gold(Path(args.calibrate).read_text(encoding="utf-8").splitlines(), args.calibrate)
            if args.calibrate
            else None
        )
        model = load_model(args.model)
    except (OSError, ValueError, ModelError) as error:
        print(f"cellar index: {error}", file=sys.stderr)
        return 2
    try:
        with shard_lock(args.out):  # held from the start: a second writer is refused at once
            return _index(args, model, rules, glossary, gold)
    except ShardBusy as error:
        print(f"cellar index: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"cellar index: {args.out}: cannot write the shard: {error}", file=sys.stderr)
        return 2


def _index(args: argparse.Namespace, model: StaticModel, rules: Any, glossary: Any, gold: Any) -> int:
    started = time.perf_counter()
    bar = _bar if sys.stderr.isatty() else None
    try:
        built = build_index_from_directory(
            args.corpus, model, rules=rules, glossary=glossary, rerendered=args.rerendered, progress=bar
        )
    except ValueError as error:
        print(f"\ncellar index: {error}", file=sys.stderr)
        return 2
    if bar:
        print("\r\x1b[K", end="", file=sys.stderr)
    for problem in built.problems:
        print(problem, file=sys.stderr)
    index = built.index
    if gold is not None:
        index.calibration = calibrate(Searcher(index, model), gold)
    try:
        sizes = write_shard(index, args.out, model, lock=False)
    except ShardError as error:
        print(f"cellar index: {error}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started
    print(
        f"cellar index: {built.files} files read, {built.skipped} skipped, {len(built.problems)} problem(s) reported; "
        f"{len(index.notebooks)} documents, {index.n_chunks} chunks, {len(index.bm25.terms)} terms; "
        f"shard {args.out}: {sum(sizes.values()) / 1e6:.1f} MB in {len(sizes)} files; {seconds:.1f} s",
        file=sys.stderr,
    )
    statuses = Counter(entry["status"] for entry in index.notebooks)
    print("statuses: " + ", ".join(f"{n} {status}" for status, n in sorted(statuses.items())), file=sys.stderr)
    if gold is not None:
        cal = index.calibration
        print(
            f"calibration: {json.dumps(cal['thresholds'])}, refuses {cal['refused']['out_of_scope']} of "
            f"{cal['gold']['questions'] - cal['gold']['answerable']} out-of-scope and "
            f"{cal['refused']['answerable']} of {cal['gold']['answerable']} answerable questions",
            file=sys.stderr,
        )
    return 1 if built.skipped else 0


def _json(name: str) -> object:
    with open(name, encoding="utf-8") as handle:
        return json.load(handle)


def _bar(done: int, total: int, what: str) -> None:
    width = 30
    filled = width * done // max(total, 1)
    print(
        f"\r\x1b[K[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {what[:60]}",
        end="",
        file=sys.stderr,
        flush=True,
    )

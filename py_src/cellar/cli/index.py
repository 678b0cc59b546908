"""`cellar index CORPUS_DIR --out SHARD_DIR [--rerendered DIR] [--model DIR] [--rules RULES.json]
[--glossary GLOSSARY.json] [--calibrate GOLD.jsonl ...] [--cache DIR | --no-cache]
[--scheduler local|dask|tcp://HOST:PORT] [--workers N]`: chunk, analyse and embed every notebook
and document (.md, .txt, .html, .pdf, .docx, *.clauses.xml/json, *.records.csv/jsonl: README.md,
"Documents beside notebooks") below CORPUS_DIR and write the search shard.

Incremental: each file's chunks, terms and embeddings are kept in a cache (default .NAME.cache
beside SHARD_DIR) under the SHA-256 of its bytes and of the pipeline (cellar's chunking and
analysis code, the model, the analyser settings and glossary, the rules; with --rerendered, its
report entry and fresh notebook). A file whose key is there is not chunked or embedded again; a
file moved to another path is chunked again but keeps its embeddings; the command says how many
it reused, moved, redid and removed. --no-cache builds cold (and writes no cache). The shard is
the same, byte for byte, either way.

The per-file work runs on a local process pool (--scheduler local, the default; --workers N,
default the machine's cores), a Dask LocalCluster (--scheduler dask) or an existing Dask
scheduler (--scheduler tcp://HOST:PORT, whose workers must import cellar and read the model at
the same path); Dask is the optional extra `cellar[dask]`. Progress (files done/total, rate, time
left) is redrawn on a terminal and printed every 5 s otherwise.

With --rerendered (the --out folder of `cellar rerender CORPUS_DIR`), notebooks that re-rendered
clean or drifted are indexed with their fresh outputs and stale ones with their saved outputs,
ranked lower and shown with a warning; every hit still cites the archive file's revision. Without
it, the saved outputs are indexed as they are and every notebook's status is `unchecked`.

Bad files are reported on stderr as `path: reason` and skipped: anything but a regular file, a
link out of the archive, a file over 100 MB, a name that is not UTF-8, a notebook that does not
parse (README.md, "What an archive may hold"). With --calibrate, the refusal thresholds are fitted
on a gold set (shared/gold/README.md) and stored in the shard manifest; given more than once
(a set of notebook questions, one of document questions), on their questions together, each
source's thresholds on the questions that came closest to it. Without --glossary, an
archive's own glossary.json at its root is used (the demo archive's expands its service notes'
abbreviations).

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
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from cellar.cli.files import json_file, json_text, text_file
from cellar.cli.progress import Progress
from cellar.ingest.discovery import read_document
from cellar.ingest.metadata import parse_rules
from cellar.ingest.scheduler import check_scheduler
from cellar.retrieval.analysis import Analyzer, AnalyzerSettings
from cellar.retrieval.embedding import ModelError, StaticModel, default_model_dir, load_model
from cellar.retrieval.evaluation import calibrate, read_gold
from cellar.retrieval.index import build_index_from_directory
from cellar.retrieval.publish import shard_lock, write_shard
from cellar.retrieval.search import Searcher
from cellar.retrieval.shard import ShardError
from cellar.terminal import shown

GLOSSARY_FILE = "glossary.json"  # an archive's own glossary, at its root


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
    parser.add_argument(
        "--glossary",
        metavar="GLOSSARY.json",
        help='abbreviations: {"kk vk": "kortsluiting ..."} (default: CORPUS_DIR/glossary.json when there is one)',
    )
    parser.add_argument(
        "--calibrate",
        metavar="GOLD.jsonl",
        action="append",
        help="fit the refusal thresholds on this gold set (repeatable: on the sets' questions together)",
    )
    parser.add_argument(
        "--cache",
        metavar="DIR",
        help="the per-notebook cache (default: .NAME.cache beside SHARD_DIR); unchanged notebooks are not redone",
    )
    parser.add_argument("--no-cache", action="store_true", help="a cold build: read no cache (and write none)")
    parser.add_argument(
        "--scheduler",
        default="local",
        metavar="local|dask|tcp://HOST:PORT",
        help="where the per-notebook work runs: a local process pool (default), a Dask LocalCluster, "
        "or an existing Dask scheduler (Dask: pip install 'cellar[dask]')",
    )
    parser.add_argument("--workers", type=int, metavar="N", help="worker processes (default: the machine's cores)")
    parser.set_defaults(func=run)


def calibration_gold(name: str) -> list[dict[str, Any]]:
    """The questions of the gold set `name` to calibrate on, read before any file is indexed: one
    without an answerable question cannot set a threshold (it failed after the whole index was
    built, without naming the file)."""
    gold = read_gold(text_file(name).splitlines(), name)
    if not any(row["expect"] for row in gold):
        raise ValueError(f"{name}: no answerable question to calibrate on (each has an empty expect)")
    return gold


def run(args: argparse.Namespace) -> int:
    try:
        rules = parse_rules(json_file(args.rules)) if args.rules else ()
        if args.glossary:
            glossary = checked_glossary(json_file(args.glossary), args.glossary)
        elif own := archive_glossary(args.corpus):
            glossary = checked_glossary(json_text(read_document(own, args.corpus), own), own)
        else:
            glossary = None
        gold = [row for name in args.calibrate for row in calibration_gold(name)] if args.calibrate else None
        model = load_model(args.model)
        check_scheduler(args.scheduler)
        if args.workers is not None and args.workers < 1:
            raise ValueError("--workers must be at least 1")
        check_places(args.corpus, args.out, None if args.no_cache else args.cache)
    except (OSError, ValueError, ModelError) as error:
        print(f"cellar index: {error}", file=sys.stderr)
        return 2
    try:
        with shard_lock(args.out):  # held from the start: a second writer is refused at once
            return _index(args, model, rules, glossary, gold)
    except ShardError as error:  # another writer holds it (ShardBusy), or it is no place for a shard
        print(f"cellar index: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"cellar index: {args.out}: cannot write the shard: {error}", file=sys.stderr)
        return 2


def _index(args: argparse.Namespace, model: StaticModel, rules: Any, glossary: Any, gold: Any) -> int:
    started = time.perf_counter()
    progress = Progress("cellar index")
    cache = None if args.no_cache else (args.cache or default_cache(args.out))
    try:
        built = build_index_from_directory(
            args.corpus,
            args.model,
            rules=rules,
            glossary=glossary,
            rerendered=args.rerendered,
            progress=progress,
            cache=cache,
            scheduler=args.scheduler,
            workers=args.workers,
        )
    except ValueError as error:
        progress.close()
        print(f"\ncellar index: {error}", file=sys.stderr)
        return 2
    progress.close()
    for problem in built.problems:
        print(shown(problem), file=sys.stderr)
    index = built.index
    if gold is not None:
        index.calibration = calibrate(Searcher(index, model), gold)
    try:
        sizes = write_shard(index, args.out, model, lock=False, state=cache)
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
    print(
        f"cache {cache or '(none: --no-cache)'}: {len(built.reused)} reused, {len(built.moved)} moved "
        f"(chunked again, embeddings reused), {len(built.redone)} redone, {len(built.removed)} removed",
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


def check_places(corpus: str, out: str, cache: str | None) -> None:
    """A ValueError when the shard would be written inside the archive (the next build read its
    link as a file of the archive, skipped it and exited 1, for ever) or the cache is the shard."""
    shard = Path(out).resolve()
    if shard.is_relative_to(Path(corpus).resolve()):
        raise ValueError(f"{out}: inside the archive {corpus}: the shard is written outside what it indexes")
    if cache is not None and Path(cache).resolve() == shard:
        raise ValueError(f"{cache}: --cache is the shard itself: give the cache a folder of its own")


def checked_glossary(value: object, name: str) -> dict[str, str]:
    """The glossary read from the file `name`, checked as the analyser will use it; a ValueError
    naming the file when it is not one."""
    if not isinstance(value, dict):
        raise ValueError(f"{name}: the glossary must be a JSON object of abbreviation -> expansion")
    try:
        Analyzer(AnalyzerSettings(glossary=tuple(value.items())))
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    return value


def archive_glossary(corpus: str) -> str | None:
    """The archive's own glossary, ``glossary.json`` at its root (the abbreviations its service
    notes use), when --glossary names none; None when the archive has none. Read as the archive's
    other files are (``read_document``): never through a link out of the archive, nor past the
    size limit; one that is there but no file (a FIFO, a folder, a dangling link) is refused
    there too, not taken for none."""
    path = Path(corpus) / GLOSSARY_FILE
    return str(path) if os.path.lexists(path) else None


def default_cache(out: str) -> str:
    """The cache beside the shard: build/shard -> build/.shard.cache."""
    path = Path(out).absolute()
    return str(path.with_name(f".{path.name}.cache"))

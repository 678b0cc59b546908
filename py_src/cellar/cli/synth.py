"""`cellar synth --notebooks N --out DIR [--seed S] [--templates DIR]`: write a synthetic archive
of N notebooks (default 41,000) varied from real ones; `cellar synth --mutate FRACTION DIR`: the
nightly change set, in place; `cellar synth --check DIR`: verify an archive byte for byte against
its manifest (synth.json).

Templates: the demo archive's notebooks always; with --templates, also the notebooks of that
corpus folder (e.g. ../shared/corpus) whose licence in its manifest.tsv allows derivatives (MIT,
Apache-2.0, BSD-3-Clause, CC-BY): never jakevdp/PythonDataScienceHandbook (CC-BY-NC-ND text), never
its edge/ notebooks. The archive is for benchmarks and tests: generate it under build/, never
commit it.

Exit status: 0 done (or --check found the archive intact); 1 --check found differences; 2 unusable
arguments.
"""

from __future__ import annotations

import argparse
import sys
import time

from cellar.ingest.synth import DEFAULT_NOTEBOOKS, check_archive, generate_archive, mutate_archive


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "synth",
        help="write, mutate or check a synthetic archive",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", metavar="DIR", help="write a new archive into DIR")
    what.add_argument("--mutate", type=float, metavar="FRACTION", help="change/add/delete this share of DIR in place")
    what.add_argument("--check", action="store_true", help="verify DIR against its manifest")
    parser.add_argument("archive", nargs="?", metavar="DIR", help="the archive (with --mutate or --check)")
    parser.add_argument("--notebooks", type=int, default=DEFAULT_NOTEBOOKS, metavar="N")
    parser.add_argument("--seed", type=int, default=0, metavar="S")
    parser.add_argument("--templates", metavar="DIR", help="a corpus folder with a manifest.tsv of licences")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    try:
        if args.out:
            if args.notebooks < 1:
                raise ValueError("--notebooks must be at least 1")
            progress = (
                (lambda done, total: print(f"{done}/{total} notebooks", file=sys.stderr))
                if args.notebooks >= 5000
                else None
            )
            manifest = generate_archive(args.out, args.notebooks, args.seed, args.templates, progress)
            seconds = time.perf_counter() - started
            print(
                f"cellar synth: {len(manifest['notebooks'])} notebooks from {len(manifest['templates'])} templates "
                f"into {args.out} in {seconds:.1f} s ({len(manifest['notebooks']) / max(seconds, 1e-9) * 60:,.0f}/min)",
                file=sys.stderr,
            )
            return 0
        if not args.archive:
            raise ValueError("name the archive: cellar synth --mutate FRACTION DIR / --check DIR")
        if args.mutate is not None:
            change = mutate_archive(args.archive, args.mutate)
            print(
                f"cellar synth: {len(change.changed)} changed, {len(change.added)} added, "
                f"{len(change.deleted)} deleted in {args.archive}",
                file=sys.stderr,
            )
            return 0
        problems = check_archive(args.archive)
        for problem in problems:
            print(problem)
        print(
            f"cellar synth: {args.archive}: {'intact' if not problems else f'{len(problems)} difference(s)'}",
            file=sys.stderr,
        )
        return 1 if problems else 0
    except (ValueError, OSError) as error:  # OSError: an --out that is a file, a folder not writable
        print(f"cellar synth: {error}", file=sys.stderr)
        return 2

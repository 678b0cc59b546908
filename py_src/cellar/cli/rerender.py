"""`cellar rerender ARCHIVE --out DIR [--workers N] [--site SITE_DIR] [--scheduler local|dask|tcp://HOST:PORT]
[--isolate]`: re-run every notebook of an archive in Pyodide workers, write the fresh notebooks and a
report, print the summary table.

A worker runs notebook after notebook (its start costs 10-20 s, a notebook a tenth of a second);
what one notebook leaves behind is cleared by Python, which a hostile notebook can defeat to
change a later one's outputs or verdict. --isolate starts a fresh worker for every notebook.

Incremental: a notebook whose bytes, path, inputs (the path-map entries its code names or that
lie under its folder, with their blob hashes) and environment (site, requirements, limits,
sandbox code) are unchanged since the previous run into the same DIR keeps that run's report
entry and fresh notebook (keys in report.json); fresh notebooks of deleted notebooks are removed.
The command says how many it reused, redid and removed; --no-cache runs everything.

Exit status:
  0  every notebook was re-rendered (stale notebooks are a result, listed in the report with their
     reason; so is a file that cannot be read: not a regular file, a link out of the archive,
     over 100 MB, not a notebook);
  1  the report was written, but the Pyodide worker (a Node process) died under some notebooks:
     they are stale with the reason "the Pyodide worker died (...)", each on a fresh worker;
  2  bad input: no such archive, not a built site, a bad requirements or rerender.json file;
  3  the batch stopped: a Pyodide worker could not be started (again); no report was written.
"""

from __future__ import annotations

import argparse
import sys

from cellar.rerender.batch import WORKER_DIED, RerenderStopped, rerender
from cellar.rerender.environment import RequirementsError
from cellar.rerender.report import summary
from cellar.rerender.vfs import VfsError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rerender",
        help="re-run an archive's notebooks in a Pyodide sandbox and compare the outputs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    parser.add_argument(
        "--scheduler",
        default="local",
        metavar="local|dask|tcp://HOST:PORT",
        help="where the notebooks run: the worker threads of this process (default), a Dask LocalCluster of "
        "N workers, or an existing Dask scheduler whose workers read the site and archive at the same paths; "
        "a Dask worker keeps its Pyodide warm across notebooks (Dask: pip install 'cellar[dask]')",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="run every notebook (default: keep the previous result in DIR of each notebook whose bytes, "
        "inputs and environment are unchanged)",
    )
    parser.add_argument(
        "--isolate",
        action="store_true",
        help="a fresh Pyodide worker for every notebook, so that no notebook can change another's outputs "
        "or verdict (default: a worker runs notebook after notebook; each start costs 10-20 s)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.workers < 1:
        print("cellar rerender: --workers must be at least 1", file=sys.stderr)
        return 2
    try:
        report = rerender(
            args.archive,
            args.out,
            workers=args.workers,
            site=args.site,
            reuse_previous=not args.no_cache,
            scheduler=args.scheduler,
            isolate=args.isolate,
        )
    except RerenderStopped as error:
        print(f"cellar rerender: {error}; no report written", file=sys.stderr)
        return 3
    except (FileNotFoundError, ValueError, RequirementsError, VfsError) as error:
        print(f"cellar rerender: {error}", file=sys.stderr)
        return 2
    print(summary(report))
    reuse = report["reuse"]
    print(
        f"cellar rerender: {reuse['reused']} reused from the previous run in {args.out}, {reuse['redone']} redone, "
        f"{len(reuse['removed'])} removed",
        file=sys.stderr,
    )
    if report["worker_deaths"]:
        print(
            f"cellar rerender: the Pyodide worker died under {report['worker_deaths']} notebook(s) "
            f'(stale, reason "{WORKER_DIED} ..." in {args.out}/report.json)',
            file=sys.stderr,
        )
        return 1
    return 0

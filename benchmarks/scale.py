"""Archive scale: a synthetic archive, a cold index build, the incremental build after the nightly
1% change, peak memory, and Dask against the local process pool.

    nice .venv/bin/python benchmarks/scale.py [--notebooks N] [--templates DIR] [--workers N] [--no-dask]
        [--rerender N] [--no-index] [--no-cold]

Defaults: 2,000 notebooks (the issue's target is 41,000: pass --notebooks 41000), templates the
demo archive plus ../shared/corpus when it is there, the machine's cores. Everything is written
under build/bench-scale/N/ (removed first). Every build is a `cellar index` process of its own
(saved outputs, as `--no-rerender`), so its time includes starting Python and loading the model,
and its peak memory is that of the largest process (ru_maxrss of the children, which only grows:
the first build, cold, is the largest).

Steps: `cellar synth`; a cold build (--no-cache); the same build filling the cache; `cellar synth
--mutate 0.01`; the incremental build from the cache; a cold build of the mutated archive, whose
shard must equal the incremental one byte for byte and give the same answers to the demo gold
questions; the cold build on a Dask LocalCluster of as many workers (unless --no-dask), whose shard
must equal the local one. With --rerender N, first: a cold `cellar rerender` of a synthetic
archive of N notebooks with the site's Pyodide (as many workers), then the re-render after `synth
--mutate 0.01` (what it reused and redid); --no-index stops there. Prints a table of figures and
ratios.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.search import Searcher
from cellar.retrieval.shard import open_shard

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
GOLD = ROOT / "demo" / "gold.jsonl"


def cellar(*args: str) -> tuple[float, str]:
    """Run `cellar ARGS` in a process of its own: (seconds, its stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "py_src"))
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cellar", *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"cellar {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return seconds, done.stderr


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def same_shard(a: Path, b: Path) -> bool:
    """Every file of two shards equal, byte for byte."""
    names_a = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    names_b = sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
    return names_a == names_b and all(filecmp.cmp(a / name, b / name, shallow=False) for name in names_a)


def answers(shard: Path, queries: list[str]) -> list[list[tuple[str, float]]]:
    model = load_model(default_model_dir())
    searcher = Searcher(open_shard(shard, model), model)
    found = []
    for query in queries:
        answer = searcher.search(query, k=5)
        found.append([(nb["path"], round(nb["score"], 6)) for nb in answer["notebooks"]])
    return found


def line(stderr: str, start: str, holding: str = "") -> str:
    return next((text for text in stderr.splitlines() if text.startswith(start) and holding in text), "")


class Rows(list):
    """The table, printed a row at a time as each figure is measured (a long run shows progress)."""

    def append(self, row: tuple[str, str]) -> None:
        super().append(row)
        print(f"{row[0].ljust(50)}  {row[1]}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notebooks", type=int, default=2000)
    parser.add_argument("--templates", default=str(CORPUS) if (CORPUS / "manifest.tsv").is_file() else None)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rerender", type=int, default=0, metavar="N", help="re-render a synthetic sample of N notebooks"
    )
    parser.add_argument("--no-index", action="store_true", help="skip the index builds (with --rerender)")
    parser.add_argument(
        "--no-cold", action="store_true", help="no --no-cache build: the ratios are to the cache-filling one"
    )
    args = parser.parse_args()
    work = ROOT / "build" / "bench-scale" / str(args.notebooks)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    archive = work / "archive"
    workers = ["--workers", str(args.workers)]
    print(f"benchmarks/scale.py --notebooks {args.notebooks}, {args.workers} workers, templates: "
          f"demo archive{' + ' + args.templates if args.templates else ''}", flush=True)  # fmt: skip
    rows = Rows()

    synth = ["synth", "--notebooks", str(args.notebooks), "--out", str(archive), "--seed", str(args.seed)]
    seconds, _ = cellar(*synth, *(["--templates", args.templates] if args.templates else []))
    size = sum(p.stat().st_size for p in archive.rglob("*.ipynb"))
    rows.append(("synth", f"{args.notebooks:,} notebooks, {size / 1e6:,.0f} MB in {seconds:.1f} s "
                 f"({args.notebooks / seconds * 60:,.0f}/min)"))  # fmt: skip

    if args.rerender:
        rerender_sample(work, args, rows)
    if args.no_index:
        return
    if not args.no_cold:
        cold, err = cellar("index", str(archive), "--out", str(work / "cold" / "shard"), "--no-cache", *workers)
        rows.append(("cold index (local pool)", f"{cold:.1f} s, {args.notebooks / cold:.1f} notebooks/s; "
                     + line(err, "cellar index: ", " files read").split("; ", 1)[-1].split("; shard")[0]))  # fmt: skip
        rows.append(("peak memory (largest process)", f"{peak_mb():,.0f} MB"))

    fill, _ = cellar("index", str(archive), "--out", str(work / "inc" / "shard"), *workers)
    if args.no_cold:  # the cold build that fills the cache is the reference
        cold = fill
        rows.append(("peak memory (largest process)", f"{peak_mb():,.0f} MB"))
    rows.append(("cold index filling the cache", f"{fill:.1f} s ({fill / cold:.2f}x the cold build)"))
    cache = work / "inc" / ".shard.cache"
    cache_mb = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) / 1e6
    rows.append(("cache size", f"{cache_mb:,.0f} MB"))

    seconds, err = cellar("synth", "--mutate", "0.01", str(archive))
    rows.append(("synth --mutate 0.01", err.strip().removeprefix("cellar synth: ")))
    incremental, err = cellar("index", str(archive), "--out", str(work / "inc" / "shard"), *workers)
    rows.append(("incremental index after 1%", f"{incremental:.1f} s = {incremental / cold:.1%} of the cold build; "
                 + line(err, "cache ").split(": ", 1)[-1]))  # fmt: skip
    unchanged, _ = cellar("index", str(archive), "--out", str(work / "inc" / "shard"), *workers)
    rows.append(("index with nothing changed", f"{unchanged:.1f} s = {unchanged / cold:.1%} of the cold build"))

    recold, _ = cellar("index", str(archive), "--out", str(work / "recold" / "shard"), "--no-cache", *workers)
    equal = same_shard((work / "inc" / "shard").resolve(), (work / "recold" / "shard").resolve())
    queries = [json.loads(text)["query"] for text in GOLD.read_text(encoding="utf-8").splitlines() if text.strip()]
    same = answers(work / "inc" / "shard", queries) == answers(work / "recold" / "shard", queries)
    rows.append(("incremental == cold build of the mutated archive",
                 f"shard bytes {'equal' if equal else 'DIFFER'}; answers to {len(queries)} demo gold questions "
                 f"{'the same' if same else 'DIFFER'} (cold: {recold:.1f} s)"))  # fmt: skip

    if not args.no_dask:
        on_dask, _ = cellar(
            "index", str(archive), "--out", str(work / "dask" / "shard"), "--no-cache", "--scheduler", "dask", *workers
        )
        equal = same_shard((work / "dask" / "shard").resolve(), (work / "recold" / "shard").resolve())
        rows.append(("cold index on a Dask LocalCluster", f"{on_dask:.1f} s = {on_dask / recold:.2f}x the local pool "
                     f"({recold:.1f} s), cluster start included; shard {'equal' if equal else 'DIFFERS'}"))  # fmt: skip


def rerender_sample(work: Path, args: argparse.Namespace, rows: Rows) -> None:
    """Cold re-render of a synthetic archive of ``args.rerender`` notebooks with the site's Pyodide
    (``--workers``), then the re-render after ``synth --mutate 0.01``: what it reused and redid."""
    sample = work / "rerender-archive"
    synth = ["synth", "--notebooks", str(args.rerender), "--out", str(sample), "--seed", str(args.seed)]
    cellar(*synth, *(["--templates", args.templates] if args.templates else []))
    out, site = work / "rerendered", str(ROOT / "site")
    workers = ["--workers", str(args.workers), "--site", site]
    cold, err = cellar("rerender", str(sample), "--out", str(out), *workers)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    rows.append((f"cold re-render, {args.rerender:,} notebooks", f"{cold:.1f} s, {args.rerender / cold * 60:.1f} "
                 f"notebooks/min with {args.workers} workers; {report['counts']}"))  # fmt: skip
    cellar("synth", "--mutate", "0.01", str(sample))
    again, err = cellar("rerender", str(sample), "--out", str(out), *workers)
    rows.append(("re-render after --mutate 0.01", f"{again:.1f} s = {again / cold:.1%} of the cold re-render; "
                 + line(err, "cellar rerender: ", "reused").removeprefix("cellar rerender: ")))  # fmt: skip


if __name__ == "__main__":
    main()

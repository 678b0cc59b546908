"""Search latency in CPython and in Pyodide (Node), index build time and shard bytes per chunk.

    .venv/bin/python benchmarks/search.py [CORPUS_DIR] [GOLD.jsonl]

Defaults: ../shared/corpus with ../shared/gold/dev.jsonl, else demo/archive with demo/gold.jsonl.
Builds the index once, writes the shard to a temporary folder, runs every gold query in CPython,
then the same queries in Pyodide (the site's runtime and wheels; run `python3 build.py site`
first), with the shard and model mounted into Pyodide's file system, and prints a table with
the Pyodide / CPython ratio of the p50.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cellar.rerender.pyodide_host import PyodideHost
from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.evaluation import read_gold
from cellar.retrieval.index import build_index_from_directory
from cellar.retrieval.publish import write_shard
from cellar.retrieval.search import Searcher
from cellar.retrieval.shard import open_shard

ROOT = Path(__file__).resolve().parents[1]
MODEL = default_model_dir()
SITE = ROOT / "site"
ROUNDS = 3

PYODIDE_CODE = """
import json, time
import numpy as np
import pyodide_js
from pyodide.ffi import to_js
from js import Object
for target, root in (("/shard", {shard!r}), ("/model", {model!r})):
    pyodide_js.FS.mkdirTree(target)
    pyodide_js.FS.mount(pyodide_js.FS.filesystems.NODEFS, to_js({{"root": root}}, dict_converter=Object.fromEntries), target)
from cellar.retrieval.embedding import load_model
from cellar.retrieval.search import Searcher
from cellar.retrieval.shard import open_shard
model = load_model("/model")
shard = open_shard("/shard", model)
searcher = Searcher(shard, model)
queries = {queries!r}
start = time.perf_counter()
searcher.search(queries[0])  # cold: the analyser's and the refusal's tables read, the first files
first = (time.perf_counter() - start) * 1000
for query in queries:
    searcher.search(query)  # warm: partitions, clusters and containers read
times = []
for _ in range({rounds}):
    for query in queries:
        start = time.perf_counter()
        searcher.search(query)
        times.append((time.perf_counter() - start) * 1000)
[first, times]
"""


def percentiles(times: list[float]) -> tuple[float, float]:
    return float(np.percentile(times, 50)), float(np.percentile(times, 95))


def main() -> int:
    shared = ROOT.parent / "shared"
    if len(sys.argv) > 2:
        corpus, gold_path = Path(sys.argv[1]), Path(sys.argv[2])
    elif (shared / "corpus").is_dir():
        corpus, gold_path = shared / "corpus", shared / "gold" / "dev.jsonl"
    else:
        corpus, gold_path = ROOT / "demo" / "archive", ROOT / "demo" / "gold.jsonl"
    queries = [row["query"] for row in read_gold(gold_path.read_text(encoding="utf-8").splitlines(), str(gold_path))]
    model = load_model(MODEL)
    started = time.perf_counter()
    index = build_index_from_directory(corpus, model).index
    build_seconds = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as temporary:
        folder = str(Path(temporary) / "shard")  # write_shard makes it a link to a version beside it
        sizes = write_shard(index, folder)
        shard = open_shard(folder, model)
        searcher = Searcher(shard, model)
        start = time.perf_counter()
        searcher.search(queries[0])
        cpython_first = (time.perf_counter() - start) * 1000
        for query in queries:
            searcher.search(query)
        cpython = []
        for _ in range(ROUNDS):
            for query in queries:
                start = time.perf_counter()
                searcher.search(query)
                cpython.append((time.perf_counter() - start) * 1000)
        manifest = json.loads((SITE / "build.json").read_text())
        wheels = [SITE / wheel for wheel in manifest["wheels"]]
        resolved = str(Path(folder).resolve())  # the version the link points to
        with PyodideHost(SITE / "pyodide", wheels=wheels, packages=["numpy"], read=[resolved, MODEL]) as host:
            code = PYODIDE_CODE.format(shard=resolved, model=str(MODEL), queries=queries, rounds=ROUNDS)
            pyodide_first, pyodide = host.run(code, timeout=900)
    c50, c95 = percentiles(cpython)
    p50, p95 = percentiles(pyodide)
    total = sum(sizes.values())
    rows = [
        ("corpus", f"{corpus} ({len(index.notebooks)} documents, {index.n_chunks} chunks)"),
        ("queries", f"{len(queries)} x {ROUNDS} rounds"),
        ("index build", f"{build_seconds:.1f} s (chunk, analyse, embed)"),
        ("shard", f"{total / 1e6:.1f} MB in {len(sizes)} files, {total / index.n_chunks:.0f} bytes/chunk"),
        ("CPython search", f"p50 {c50:.1f} ms, p95 {c95:.1f} ms"),
        ("Pyodide search", f"p50 {p50:.1f} ms, p95 {p95:.1f} ms"),
        ("Pyodide / CPython", f"p50 x{p50 / c50:.2f}, p95 x{p95 / c95:.2f} (target p50 <= x3)"),
        ("first question", f"CPython {cpython_first:.0f} ms, Pyodide {pyodide_first:.0f} ms (tables and files read)"),
    ]
    width = max(len(name) for name, _ in rows)
    print("\n".join(f"{name:<{width}}  {value}" for name, value in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

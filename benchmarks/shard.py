"""Shard format 2 against format 1, side by side, in CPython: what a tab fetches and how fast a
query answers, the recall of the clustered dense search, and the scorecard.

    PYTHONPATH=py_src .venv/bin/python benchmarks/shard.py [ARCHIVE GOLD.jsonl ...]

Defaults: demo/archive with demo/gold.jsonl, and ../shared/corpus with ../shared/gold/dev.jsonl
when present. Each archive is indexed once (saved outputs, no re-render, default refusal
thresholds, as `cellar eval` scores a shard), then written in both formats to a temporary folder:
format 2 by this cellar, format 1 by the retired writer (``cellar.retrieval.shard`` as it was on
branch sec-batch, read from git). Figures:

- bytes before the first result: format 1, the manifest and every array (what its page fetched
  at boot) plus the fragments of the first query; format 2, the manifest, the boot files and what
  the first query reads. The runtime and the model (the same for both) are not counted here.
- bytes per cold query (p50, p95): the files a query reads that no query read before it, each
  query on a fresh reader (format 1: the fragments of the notebooks shown; format 2: partitions,
  clusters, containers), as served (format 2's files are gzip; format 1's were not).
- cold and warm query latency (p50, p95, ms): cold, a fresh reader per query, so the files it
  needs are read, checked (SHA-256) and decoded in the timing (format 1: its fragments; its boot,
  which opens every array, is timed apart as "open"); warm, the same query asked again.
- recall@50 of the clustered dense search against exact search (the top 50 chunks of every gold
  question, no filters), at the shard's nprobe and around it.
- the scorecard of `cellar eval --mode all` for both.
"""

from __future__ import annotations

import gzip
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from cellar.retrieval.embedding import default_model
from cellar.retrieval.evaluation import evaluate, read_gold
from cellar.retrieval.index import build_index_from_directory
from cellar.retrieval.search import DEPTH, Searcher
from cellar.retrieval.shard import MANIFEST, Shard
from cellar.retrieval.sharding import shard_files
from cellar.retrieval.sources import cosines

ROOT = Path(__file__).resolve().parents[1]
FORMAT1_REF = "sec-batch"
METRICS = ("notebook_hit@1", "notebook_hit@5", "cell_hit@5", "mrr", "refusal_recall", "false_refusal_rate")


def format1_module() -> Any:
    """The retired format-1 writer and reader, as the module stood on FORMAT1_REF."""
    source = subprocess.run(
        ["git", "show", f"{FORMAT1_REF}:py_src/cellar/retrieval/shard.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "cellar_shard_format1.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("cellar_shard_format1", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def percentiles(values: list[float]) -> str:
    return f"{np.percentile(values, 50):,.0f} / {np.percentile(values, 95):,.0f}"


def ms(values: list[float]) -> str:
    return f"{np.percentile(values, 50):.1f} / {np.percentile(values, 95):.1f}"


def measure(archive: Path, gold_path: Path, format1: Any) -> dict[str, Any]:
    model = default_model()
    index = build_index_from_directory(archive, model).index
    gold = read_gold(gold_path.read_text(encoding="utf-8").splitlines(), str(gold_path))
    queries = [row["query"] for row in gold]
    started = time.perf_counter()
    files2 = shard_files(index)
    write2 = time.perf_counter() - started
    files1 = format1.shard_files(index)
    manifest2 = Shard(files2.__getitem__).manifest
    out: dict[str, Any] = {
        "archive": f"{archive.name} ({len(index.notebooks)} notebooks, {index.n_chunks:,} chunks)",
        "total bytes": (sum(map(len, files1.values())), sum(map(len, files2.values()))),
        "files": (len(files1), len(files2)),
        "write s": (None, write2),
    }
    boot1 = sum(len(data) for name, data in files1.items() if not name.startswith("fragments/"))
    boot2 = len(files2[MANIFEST]) + sum(len(files2[name]) for name in manifest2["boot"])

    # format 1: one reader per query for the cold figures
    cold1, warm1, bytes1, opens1 = [], [], [], []
    for query in queries:
        read: list[str] = []

        def reader1(name: str, read: list[str] = read) -> bytes:
            read.append(name)
            return files1[name]

        t0 = time.perf_counter()
        shard1 = format1.Shard(reader1)
        opens1.append((time.perf_counter() - t0) * 1000)
        read.clear()
        searcher1 = Searcher(shard1.index, model, shard1.fragment)
        t0 = time.perf_counter()
        searcher1.search(query, k=3)
        cold1.append((time.perf_counter() - t0) * 1000)
        bytes1.append(sum(len(files1[name]) for name in set(read)))
        t0 = time.perf_counter()
        searcher1.search(query, k=3)
        warm1.append((time.perf_counter() - t0) * 1000)
    # format 2
    cold2, warm2, bytes2, opens2, decompress = [], [], [], [], []
    roles: dict[str, list[int]] = {"terms": [], "clusters": [], "notebooks": []}
    for query in queries:
        read = []

        def reader2(name: str, read: list[str] = read) -> bytes:
            read.append(name)
            return files2[name]

        t0 = time.perf_counter()
        shard2 = Shard(reader2)
        opens2.append((time.perf_counter() - t0) * 1000)
        read.clear()
        searcher2 = Searcher(shard2, model)
        t0 = time.perf_counter()
        searcher2.search(query, k=3)
        cold2.append((time.perf_counter() - t0) * 1000)
        bytes2.append(sum(len(files2[name]) for name in set(read)))
        for role, sizes in roles.items():
            sizes.append(sum(len(files2[name]) for name in set(read) if name.startswith(f"{role}/")))
        t0 = time.perf_counter()
        for name in set(read):
            gzip.decompress(files2[name])
        decompress.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        searcher2.search(query, k=3)
        warm2.append((time.perf_counter() - t0) * 1000)
    out["bytes before first result"] = (boot1 + bytes1[0], boot2 + bytes2[0])
    out["  of which boot (manifest + boot files)"] = (boot1, boot2)
    out["bytes per cold query p50 / p95"] = (percentiles(bytes1), percentiles(bytes2))
    for role, what in (("terms", "partitions"), ("clusters", "clusters"), ("notebooks", "containers")):
        out[f"  of which {what} p50 / p95"] = ("-" if role != "notebooks" else "(fragments)", percentiles(roles[role]))
    out["open ms p50 / p95"] = (ms(opens1), ms(opens2))
    out["cold query ms p50 / p95"] = (ms(cold1), ms(cold2))
    out["  of which gunzip ms p50 / p95"] = ("-", ms(decompress))
    out["warm query ms p50 / p95"] = (ms(warm1), ms(warm2))

    # recall@50 of the clustered dense search (the shard's nprobe and around it)
    shard = Shard(files2.__getitem__)
    vectors = model.encode(queries)
    k = len(shard.cluster_files)
    for nprobe in sorted({max(1, shard.nprobe // 2), shard.nprobe, min(k, shard.nprobe * 2)}):
        found = 0.0
        for vector in vectors:
            exact = np.argsort(-cosines(index.vectors, index.scales, vector), kind="stable")[:DEPTH]
            rows, cosine, _ = Searcher(shard, model, nprobe=nprobe).source.dense(vector)
            approx = rows[np.argsort(-cosine, kind="stable")[:DEPTH]]
            found += len(np.intersect1d(exact, approx)) / len(exact)
        mark = " (the shard's)" if nprobe == shard.nprobe else ""
        out[f"dense recall@50, nprobe {nprobe} of {k}{mark}"] = ("exact", f"{found / len(vectors):.3f}")

    # the scorecard, both formats, every mode
    exact = Searcher(index, model)
    clustered = Searcher(Shard(files2.__getitem__), model)
    for mode in ("bm25", "dense", "hybrid"):
        one, two = evaluate(exact, gold, mode), evaluate(clustered, gold, mode)
        for metric in METRICS:
            out[f"{mode} {metric}"] = (f"{one[metric]:.3f}", f"{two[metric]:.3f}")
    return out


def main(argv: list[str]) -> int:
    pairs = [(Path(a), Path(b)) for a, b in zip(argv[::2], argv[1::2])] or [
        (ROOT / "demo/archive", ROOT / "demo/gold.jsonl"),
        *(
            [(ROOT.parent / "shared/corpus", ROOT.parent / "shared/gold/dev.jsonl")]
            if (ROOT.parent / "shared/corpus").is_dir()
            else []
        ),
    ]
    format1 = format1_module()
    for archive, gold in pairs:
        figures = measure(archive, gold, format1)
        print(f"\n## {figures.pop('archive')}: format 1 | format 2\n")
        print("| figure | format 1 | format 2 |\n|---|---|---|")
        for name, (one, two) in figures.items():
            show = [
                f"{v:,}" if isinstance(v, int) else f"{v:.1f}" if isinstance(v, float) else v or "-" for v in (one, two)
            ]
            print(f"| {name} | {show[0]} | {show[1]} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

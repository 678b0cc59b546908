"""Chunking speed over the whole shared corpus, in CPython and in Pyodide under Node.

    .venv/bin/python benchmarks/chunking.py [--corpus ../shared/corpus] [--no-pyodide]

The same probe runs in both: it reads every notebook and document of the corpus
(cellar.ingest.discovery.find_documents, cellar.ingest.chunking.chunk_file: read, parse, chunk;
the invalid edge files are rejected on the way)
and prints notebooks/s and MB/s. Reference measured in the same run: json.loads of every notebook
file, the floor any reader pays. `import pandas` (paid once, at the first table) is timed apart.
Pyodide runs the built site's runtime and cellar wheel (run `python3 build.py site` first) and
reads the corpus through Node's file system; its start-up is printed apart too.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from cellar.rerender.pyodide_host import PyodideHost

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"

PROBE = r"""
import json, os, time, warnings
from cellar.ingest.chunking import chunk_file
from cellar.ingest.discovery import find_documents
from cellar.ingest.notebook import NotebookWarning

def measure(corpus):
    started = time.perf_counter()
    import pandas
    pandas_seconds = time.perf_counter() - started
    files = find_documents(corpus)
    size = sum(os.path.getsize(path) for path in files)
    started = time.perf_counter()
    for path in files:
        if path.endswith(".ipynb"):
            with open(path, "rb") as handle:
                json.loads(handle.read())
    json_seconds = time.perf_counter() - started
    notebooks = documents = rejected = chunks = 0
    started, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotebookWarning)
        for path in files:
            try:
                chunked = chunk_file(path, corpus)
            except ValueError:
                rejected += 1
                continue
            chunks += len(chunked.chunks)
            if path.endswith(".ipynb"):
                notebooks += 1
            else:
                documents += 1
    return {
        "seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu,
        "json_seconds": json_seconds, "pandas_seconds": pandas_seconds, "bytes": size,
        "notebooks": notebooks, "documents": documents, "rejected": rejected, "chunks": chunks,
    }
"""


def cpython(corpus: Path) -> dict:
    namespace: dict = {}
    exec(PROBE, namespace)
    return namespace["measure"](str(corpus))


def pyodide(corpus: Path) -> dict:
    manifest = json.loads((SITE / "build.json").read_text())
    wheels = [SITE / wheel for wheel in manifest["wheels"]]
    with PyodideHost(SITE / "pyodide", wheels=wheels, packages=["numpy", "pandas"], read=[corpus]) as host:
        mount = (
            "import os, js, pyodide_js\nfrom pyodide.ffi import to_js\n"
            "os.makedirs('/corpus', exist_ok=True)\n"
            "pyodide_js.FS.mount(pyodide_js.FS.filesystems.NODEFS,"
            f" to_js({{'root': {str(corpus.resolve())!r}}}, dict_converter=js.Object.fromEntries), '/corpus')\n"
            "len(os.listdir('/corpus'))"
        )
        host.run(mount)
        result = host.run(PROBE + "\nmeasure('/corpus')", timeout=1800)
        result["start_seconds"] = host.start_seconds
    return result


def report(name: str, result: dict) -> None:
    megabytes = result["bytes"] / 1e6
    print(
        f"{name:8} {result['notebooks']} notebooks + {result['documents']} documents "
        f"({result['rejected']} rejected, {result['chunks']} chunks, {megabytes:.1f} MB) in "
        f"{result['seconds']:.2f} s" + (f" (CPU {result['cpu_seconds']:.2f} s)" if result["cpu_seconds"] else "") + ": "
        # time.process_time() is always 0 under Emscripten
        f"{result['notebooks'] / result['seconds']:.1f} notebooks/s, "
        f"{megabytes / result['seconds']:.2f} MB/s; "
        f"json.loads alone {result['json_seconds']:.2f} s "
        f"(chunking = {result['seconds'] / result['json_seconds']:.1f}x that); "
        f"import pandas {result['pandas_seconds']:.2f} s"
        + (f"; start-up {result['start_seconds']:.1f} s" if "start_seconds" in result else "")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--no-pyodide", action="store_true", help="measure CPython only")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        print(f"{args.corpus}: no corpus here", file=sys.stderr)
        return 2
    native = cpython(args.corpus)
    report("CPython", native)
    if args.no_pyodide:
        return 0
    if not (SITE / "build.json").is_file() or shutil.which("node") is None:
        print("Pyodide: skipped (needs Node.js and a built site: python3 build.py site)", file=sys.stderr)
        return 0
    wasm = pyodide(args.corpus)
    report("Pyodide", wasm)
    print(f"Pyodide / CPython: {wasm['seconds'] / native['seconds']:.2f}x the time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""cellar.shard and cellar.search in Pyodide: a shard written into Pyodide's file system opens,
and a search answers exactly what CPython answers (timings aside)."""

from __future__ import annotations

import base64
from pathlib import Path

from cellar.embedding import load_model
from cellar.index import build_index
from cellar.search import Filters, Searcher
from cellar.shard import Shard, shard_files

MODEL = Path(__file__).resolve().parents[2] / "models" / "minilm-l6-static-256"
TEXTS = {
    "a/ballast.ipynb": ["# Ballast tanks", "tanks = ballast_tanks(vessel)", "forepeak 412.1 m3\naft 1284.6 m3"],
    "a/stability.ipynb": ["# GZ-kromme", "gz = righting_arm(heel)", "max GZ 0,82 m bij 35 graden"],
    "b/mooring.ipynb": ["# Mooring", "tension = line_tension(load)", "most loaded line 412 kN"],
}
QUERIES = ["forepeak tank volume", "Waar staat de GZ-kromme?", "torsional vibration of the shaft", "412"]


def _records() -> list[dict]:
    kinds = ("markdown", "code", "stream")
    return [
        {"id": f"{path}:{cell}", "kind": kinds[cell], "path": path, "cell": cell, "output": 0 if cell == 2 else None,
         "revision": f"r-{path}", "quote": text, "start": 0, "end": len(text), "text": text,
         "meta": {"headings": ["x"], "year": 2017 + len(path)}}
        for path, texts in TEXTS.items() for cell, text in enumerate(texts)
    ]


def _strip(answer: dict) -> dict:
    return {key: value for key, value in answer.items() if key != "timings_ms"}


def _write(pyodide, files: dict[str, bytes], root: str) -> None:
    for name, data in files.items():
        encoded = base64.b64encode(data).decode("ascii")
        pyodide.run(
            "import base64, os\n"
            f"path = {f'{root}/{name}'!r}\n"
            "os.makedirs(os.path.dirname(path), exist_ok=True)\n"
            f"open(path, 'wb').write(base64.b64decode({encoded!r}))"
        )


def test_pyodide_search_equals_cpython(pyodide):
    model = load_model(MODEL)
    index = build_index(_records(), model)
    files = shard_files(index)
    shard = Shard(files.__getitem__)
    searcher = Searcher(shard.index, model, shard.fragment)
    expected = [_strip(searcher.search(q, k=3)) for q in QUERIES]
    expected.append(_strip(searcher.search(QUERIES[0], k=3, filters=Filters(path_prefix="b/"), mode="bm25")))
    _write(pyodide, files, "/shard")
    _write(pyodide, {p.name: p.read_bytes() for p in MODEL.iterdir() if p.is_file()}, "/model")
    got = pyodide.run(f"""
import json
from cellar.embedding import load_model
from cellar.search import Filters, Searcher
from cellar.shard import open_shard
model = load_model("/model")
shard = open_shard("/shard", model)
searcher = Searcher(shard.index, model, shard.fragment)
def strip(answer):
    return {{key: value for key, value in answer.items() if key != "timings_ms"}}
answers = [strip(searcher.search(q, k=3)) for q in {QUERIES!r}]
answers.append(strip(searcher.search({QUERIES[0]!r}, k=3, filters=Filters(path_prefix="b/"), mode="bm25")))
json.loads(json.dumps(answers))
""")
    assert got == expected

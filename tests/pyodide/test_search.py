"""cellar.retrieval.shard and cellar.retrieval.search in Pyodide: a shard written into Pyodide's file system opens,
a search answers exactly what CPython answers (timings aside), in one phase or two, and the page's
search (cellar.site.bridge) asks for the files it lacks (partitions and clusters, then notebook
containers: gzip files that Python's gzip module decompresses in Pyodide), then answers as
CPython does."""

from __future__ import annotations

import base64
import shutil

from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.index import build_index
from cellar.retrieval.publish import write_shard
from cellar.retrieval.search import Filters, Searcher
from cellar.retrieval.shard import Shard
from cellar.retrieval.sharding import shard_files
from cellar.site import bridge

MODEL = default_model_dir()
TEXTS = {
    "a/ballast.ipynb": ["# Ballast tanks", "tanks = ballast_tanks(vessel)", "forepeak 412.1 m3\naft 1284.6 m3"],
    "a/stability.ipynb": ["# GZ-kromme", "gz = righting_arm(heel)", "max GZ 0,82 m bij 35 graden"],
    "b/mooring.ipynb": ["# Mooring", "tension = line_tension(load)", "most loaded line 412 kN"],
}
QUERIES = ["forepeak tank volume", "Waar staat de GZ-kromme?", "torsional vibration of the shaft", "412"]
FILTERED = [
    (QUERIES[0], {"path_prefix": "b/", "mode": "bm25"}),
    (QUERIES[0], {"kinds": ["stream"]}),
    ("GZ-kromme 2034", {"year_from": 2034, "year_to": 2034}),
]


def _filters(options: dict) -> Filters:
    return Filters(
        path_prefix=options.get("path_prefix"),
        kinds=tuple(options.get("kinds", ())),
        year_from=options.get("year_from"),
        year_to=options.get("year_to"),
    )


def _records() -> list[dict]:
    kinds = ("markdown", "code", "stream")
    return [
        {
            "id": f"{path}:{cell}",
            "kind": kinds[cell],
            "path": path,
            "cell": cell,
            "output": 0 if cell == 2 else None,
            "revision": f"r-{path}",
            "quote": text,
            "start": 0,
            "end": len(text),
            "text": text,
            "meta": {"headings": ["x"], "year": 2017 + len(path)},
        }
        for path, texts in TEXTS.items()
        for cell, text in enumerate(texts)
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
    searcher = Searcher(shard, model)
    expected = [_strip(searcher.search(q, k=3)) for q in QUERIES]
    expected += [
        _strip(searcher.search(q, k=3, filters=_filters(o), mode=o.get("mode", "hybrid"))) for q, o in FILTERED
    ]
    expected.append([list(searcher.rank(q, k=2).needs) for q in QUERIES])
    _write(pyodide, files, "/shard")
    _write(pyodide, {p.name: p.read_bytes() for p in MODEL.iterdir() if p.is_file()}, "/model")
    got = pyodide.run(f"""
import json
from cellar.retrieval.embedding import load_model
from cellar.retrieval.search import Filters, Searcher
from cellar.retrieval.shard import open_shard
model = load_model("/model")
shard = open_shard("/shard", model)
searcher = Searcher(shard, model)
def strip(answer):
    return {{key: value for key, value in answer.items() if key != "timings_ms"}}
def filters(o):
    return Filters(path_prefix=o.get("path_prefix"), kinds=tuple(o.get("kinds", ())),
                   year_from=o.get("year_from"), year_to=o.get("year_to"))
answers = [strip(searcher.search(q, k=3)) for q in {QUERIES!r}]
answers += [strip(searcher.answer(searcher.rank(q, 3, filters(o), o.get("mode", "hybrid")))) for q, o in {FILTERED!r}]
answers.append([list(searcher.rank(q, k=2).needs) for q in {QUERIES!r}])
json.loads(json.dumps(answers))
""")
    assert got == expected


def test_pyodide_page_search_fetches_then_answers_as_cpython(pyodide, tmp_path):
    """cellar.site.bridge.search over a shard of which only the manifest and boot files are there,
    in Pyodide and in CPython: the same files asked for, round by round, then (with those written)
    the same answer, marks and tables included."""
    import json

    model = load_model(MODEL)
    index = build_index(_records(), model)
    write_shard(index, tmp_path / "all")
    boot = ["manifest.json", *json.loads((tmp_path / "all" / "manifest.json").read_text())["boot"]]
    for name in boot:
        (tmp_path / "shard" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / "all" / name, tmp_path / "shard" / name)
    _write(pyodide, {name: (tmp_path / "shard" / name).read_bytes() for name in boot}, "/pageshard")
    expected, got = [], []
    for query, options in [(QUERIES[0], {"k": 2}), *FILTERED]:
        call = f"from cellar.site import bridge\nanswer = bridge.search({query!r}, {options!r}, '/pageshard')\n"
        for _ in range(3):  # partitions and clusters, then containers, then the answer
            expected.append(_strip(bridge.search(query, options, str(tmp_path / "shard"))))
            got.append(pyodide.run(f"{call}{{key: value for key, value in answer.items() if key != 'timings_ms'}}"))
            names = expected[-1].get("fetch", [])
            for name in names:
                (tmp_path / "shard" / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(tmp_path / "all" / name, tmp_path / "shard" / name)
            _write(pyodide, {name: (tmp_path / "all" / name).read_bytes() for name in names}, "/pageshard")
    assert got == expected
    assert "fetch" in expected[0] and "notebooks" in expected[-1]

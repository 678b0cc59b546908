"""`cellar rerender` and the environment it resolves: the demo archive comes out as designed."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from cellar.cli import main
from cellar.ingest.chunking import chunk_file
from cellar.ingest.provenance import revision
from cellar.rerender import environment, vfs
from cellar.rerender.batch import find_notebooks, rerender
from cellar.rerender.report import check_result, notebook_cwd, read_report, reason_key, summary
from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.index import build_index_from_directory
from cellar.retrieval.search import Searcher

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "archive"
MODEL = default_model_dir()
FUEL = "2019/19-063 Fuel/fuel_consumption_19063.ipynb"
DIEPGANG = "2022/22-031 Diepgang/diepgang_meting_22031.ipynb"


def test_requirements_are_read_with_hashes_and_bad_lines_named():
    good = "# pinned\nNumPy==2.0.2\npython_ternary==1.0.8 --hash=sha256:" + "a" * 64 + "\n\nCoolProp\n"
    assert [(r.name, r.version, len(r.hashes)) for r in environment.parse_requirements(good)] == [
        ("numpy", "2.0.2", 0),
        ("python-ternary", "1.0.8", 1),
        ("coolprop", None, 0),
    ]
    with pytest.raises(environment.RequirementsError, match=r"bad.txt:2: not a requirement"):
        environment.parse_requirements("numpy==2.0.2\n-e ../src\n", "bad.txt")


def test_requirements_resolve_to_runtime_builds_cached_wheels_or_a_reason(site, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    wheel = next((site / "wheels").glob("snowballstemmer-*.whl"))
    shutil.copy(wheel, cache)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    requirements = f"numpy==2.0.2\npandas\nscipy==1.0.0\nsnowballstemmer==3.1.1 --hash=sha256:{digest}\n"
    env = environment.resolve_environment(environment.parse_requirements(requirements), site / "pyodide", cache)
    assert env.packages == ["ipython", "matplotlib", "pandas", "numpy"]
    assert [(w.name, w.sha256) for w in env.wheels] == [("snowballstemmer", digest)]
    assert env.unavailable == {"scipy": "pinned 1.0.0, but the Pyodide runtime ships 1.14.1"}
    requirements = f"snowballstemmer==3.1.1 --hash=sha256:{'0' * 64}\n"
    env = environment.resolve_environment(environment.parse_requirements(requirements), site / "pyodide", cache)
    assert "which the requirement's --hash values do not list" in env.unavailable["snowballstemmer"]


def test_notebooks_importing_an_unavailable_requirement_are_blocked_with_the_reason():
    env = environment.Environment(unavailable={"coolprop": "no WebAssembly build: ..."})
    assert environment.blocking_requirement(["%matplotlib inline\nfrom CoolProp.CoolProp import PropsSI"], env) == (
        "requirement coolprop: no WebAssembly build: ..."
    )
    assert environment.blocking_requirement(["import numpy as np\n!pip install CoolProp"], env) is None
    # a library that imports it itself is caught when the run fails
    assert environment.attribute_failure("cell 3: ValueError: CoolProp is not installed", env) == (
        "requirement coolprop: no WebAssembly build: ... (cell 3: ValueError: CoolProp is not installed)"
    )
    assert environment.attribute_failure("cell 3: NameError: name 'x' is not defined", env) == (
        "cell 3: NameError: name 'x' is not defined"
    )


def test_paths_and_reasons():
    assert notebook_cwd("2017/17-042 Ballast/b.ipynb") == "/2017/17-042 Ballast" and notebook_cwd("a.ipynb") == "/"
    assert reason_key("cell 12: NameError: name 'x' is not defined") == "NameError: name 'x' is not defined"
    assert reason_key("requirement coolprop: no build (cell 3: ValueError: x)") == "requirement coolprop: no build"


@pytest.fixture(scope="module")
def demo_fresh(site, tmp_path_factory) -> Path:
    """`cellar rerender` of the demo archive with two workers: its output folder."""
    if not DEMO.is_dir():
        pytest.skip(f"{DEMO} not found: the demo archive is written by demo/make_archive.py")
    before = {path: path.read_bytes() for path in DEMO.rglob("*") if path.is_file()}
    out = tmp_path_factory.mktemp("fresh")
    assert main(["rerender", str(DEMO), "--out", str(out), "--site", str(site), "--workers", "2"]) == 0
    assert {path: path.read_bytes() for path in DEMO.rglob("*") if path.is_file()} == before, (
        "the archive is never written"
    )
    return out


def test_rerender_the_demo_archive_gives_the_designed_statuses(demo_fresh):
    report = json.loads((demo_fresh / "report.json").read_text())
    designed = {
        path.relative_to(DEMO).as_posix(): json.loads(path.read_text())["metadata"]["cellar"]["designed_status"]
        for path in find_notebooks(DEMO)
    }
    assert {entry["path"]: entry["status"] for entry in report["notebooks"]} == designed
    stale = next(entry for entry in report["notebooks"] if entry["status"] == "stale")
    assert "diepgangen_22031.csv" in stale["reason"] and "path map" in stale["reason"]
    for path, status in designed.items():
        fresh = json.loads((demo_fresh / path).read_text())
        assert fresh["metadata"]["cellar_rerender"]["status"] == status
        entry = next(entry for entry in report["notebooks"] if entry["path"] == path)
        assert entry["revision"] == revision((DEMO / path).read_bytes())
    table = summary(report)
    assert "clean" in table and "top stale reasons" in table and "diepgangen_22031.csv" in table
    # which boundary held, in the report and its table (this machine, and CI's, has all of it)
    assert report["sandbox"]["namespaces"] == ["mount", "net", "pid", "uts", "ipc"] and report["sandbox"]["permission"]
    assert report["sandbox"]["summary"] in table and "NOT HELD" not in table


def test_on_a_dask_cluster_the_demo_comes_out_the_same_with_one_warm_worker_per_dask_worker(demo_fresh, site, tmp_path):
    """`--scheduler dask`: a real LocalCluster of two workers, each keeping one Pyodide warm across
    the notebooks it runs, writes the fresh notebooks and the report entries that the local
    threads wrote, byte for byte but for the seconds."""
    pytest.importorskip("distributed")
    out = tmp_path / "fresh"
    args = ["rerender", str(DEMO), "--out", str(out), "--site", str(site), "--workers", "2", "--scheduler", "dask"]
    assert main(args) == 0
    local, on_dask = (json.loads((folder / "report.json").read_text()) for folder in (demo_fresh, out))

    def timeless(entry: dict) -> dict:
        return {key: value for key, value in entry.items() if key != "seconds"}

    assert [timeless(entry) for entry in on_dask["notebooks"]] == [timeless(entry) for entry in local["notebooks"]]
    for entry in local["notebooks"]:
        assert (out / entry["path"]).read_bytes() == (demo_fresh / entry["path"]).read_bytes(), entry["path"]
    assert len(on_dask["notebooks"]) > 2 * len(on_dask["timings"]["worker_start_seconds"]) > 0
    assert on_dask["worker_deaths"] == 0


def test_the_index_holds_fresh_outputs_for_clean_and_drifted_and_saved_ones_for_stale(demo_fresh):
    model = load_model(MODEL)
    index = build_index_from_directory(DEMO, model, rerendered=demo_fresh).index
    entries = {entry["path"]: entry for entry in index.notebooks}
    report = read_report(demo_fresh)
    notebooks = {path: entry["status"] for path, entry in entries.items() if path.endswith(".ipynb")}
    assert notebooks == {path: entry["status"] for path, entry in report.items()}
    # the demo's documents beside them are never re-rendered
    assert {entry["status"] for path, entry in entries.items() if path not in notebooks} == {"unchecked"}
    # The drifted fuel notebook: its fresh total (corrected SFOC input) is what is searched, cited
    # as the archive file's revision, with the fresh notebook's own revision beside it.
    fuel = entries[FUEL]
    assert fuel["revision"] == revision((DEMO / FUEL).read_bytes())
    assert fuel["rendered"] == revision((demo_fresh / FUEL).read_bytes())
    quotes = " ".join(record["quote"] for record in index.notebook_chunks(index.notebooks.index(fuel)))
    saved_total, fresh_total = "HFO for the voyage (main engine): 797 t", "HFO for the voyage (main engine): 772 t"
    assert saved_total in (DEMO / FUEL).read_text() and fresh_total in quotes and saved_total not in quotes
    assert {record["revision"] for record in index.notebook_chunks(index.notebooks.index(fuel))} == {fuel["revision"]}
    answer = Searcher(index, model).search("HFO for the voyage main engine Rotterdam Singapore")
    best = answer["notebooks"][0]
    assert best["path"] == FUEL and best["status"] == "drifted" and "fresh outputs" in best["note"]
    # The stale draught notebook keeps its saved outputs, ranks lower and says why.
    stale = entries[DIEPGANG]
    assert stale["status"] == "stale" and "diepgangen_22031.csv" in stale["reason"]
    saved = [chunk.record()["quote"] for chunk in chunk_file(DEMO / DIEPGANG, DEMO).chunks]
    assert [record["quote"] for record in index.notebook_chunks(index.notebooks.index(stale))] == saved


def test_a_notebook_changed_since_its_rerender_is_indexed_unchecked(demo_fresh, tmp_path):
    archive = tmp_path / "archive"
    shutil.copytree(DEMO, archive)
    edited = json.loads((archive / FUEL).read_text())
    edited["cells"][0]["source"] = "# Fuel consumption, revised\n"
    (archive / FUEL).write_text(json.dumps(edited))
    built = build_index_from_directory(archive, load_model(MODEL), rerendered=demo_fresh)
    entry = next(entry for entry in built.index.notebooks if entry["path"] == FUEL)
    assert entry["status"] == "unchecked" and entry["rendered"] is None
    assert [problem for problem in built.problems if problem.startswith(f"{FUEL}: changed since it was re-rendered")]
    assert "797 t" in " ".join(
        record["quote"] for record in built.index.notebook_chunks(built.index.notebooks.index(entry))
    )
    with pytest.raises(ValueError, match=r"report.json: no re-render report here"):
        build_index_from_directory(archive, load_model(MODEL), rerendered=tmp_path / "nothing")


def test_an_archive_without_requirements_or_path_map_runs_and_a_url_makes_it_stale(site, tmp_path):
    archive = tmp_path / "archive"
    archive.mkdir()
    cells = [
        ("print(6 * 7)", [{"output_type": "stream", "name": "stdout", "text": "42\n"}]),
        ("import pandas as pd\npd.read_csv('https://intranet.example/tanks.csv')", []),
    ]
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 4,
        "metadata": {},
        "cells": [
            {"cell_type": "code", "metadata": {}, "execution_count": n, "source": source, "outputs": outputs}
            for n, (source, outputs) in enumerate(cells, 1)
        ],
    }
    (archive / "plain.ipynb").write_text(json.dumps(notebook))
    report = rerender(archive, tmp_path / "out", site=site, progress=None)
    [entry] = report["notebooks"]
    assert entry["status"] == "stale"
    assert entry["reason"] == (
        "cell 1: URLError: <urlopen error network access is not available in the sandbox: "
        "https://intranet.example/tanks.csv>"
    )
    assert [cell["cell"] for cell in entry["cells"]] == [1], "the first cell printed what it printed then"


def test_the_tab_plans_from_the_sites_lock_and_names_what_it_cannot_provide(site):
    from cellar.site import bridge

    texts = {
        "pathmap": (DEMO / "pathmap.json").read_text(),
        "requirements": "pandas==2.2.3\nfluids==1.3.1\n",
        "settings": '{"cell_timeout": 5}',
    }
    plan = bridge.rerender_plan(texts, str(site / "pyodide" / "pyodide-lock.json"))
    assert plan["packages"] == ["ipython", "matplotlib", "pandas"]
    assert plan["unavailable"] == {
        "fluids": "no WebAssembly build shipped with this site (it is not among the site's Pyodide packages)"
    }
    # every blob the path map names (its files and its trees), by where it lies in the archive
    named = {blob for _, blob in vfs.load_pathmap(DEMO / "pathmap.json").files.values()}
    assert sorted(plan["blobs"]) == sorted(vfs.blob_path(blob) for blob in named)
    assert all((DEMO / blob).is_file() for blob in plan["blobs"])
    assert plan["limits"] == {"cell_timeout": 5, "notebook_timeout": 300.0, "clock": None}


def test_a_bad_rerender_json_is_named():
    from cellar.rerender.report import Settings

    with pytest.raises(ValueError, match=r"^archive/rerender.json: .*cell_limit"):
        Settings.from_json('{"cell_limit": 5}', "archive/rerender.json")
    with pytest.raises(ValueError, match=r"^archive/rerender.json: sanitizer '\(' is not a valid regex"):
        Settings.from_json('{"sanitizers": [["(", ""]]}', "archive/rerender.json")
    # a replacement that names a group the regex lacks fails when the file is read, not mid-batch
    with pytest.raises(ValueError, match=r"replacement '\\\\9' of sanitizer 'GOODSUM' is not valid"):
        Settings.from_json(r'{"sanitizers": [["GOODSUM", "\\9"]]}')
    # less than 1,024 MB leaves a notebook next to nothing; more than 4,096 a 32-bit Python cannot use
    for memory in ('"2G"', "512", "1.5e3", "true", "16384"):
        with pytest.raises(
            ValueError, match=r"^archive/rerender.json: memory_mb is a whole number of MB from 1024 to 4096"
        ):
            Settings.from_json(f'{{"memory_mb": {memory}}}', "archive/rerender.json")
    assert Settings.from_json('{"memory_mb": 4096}').memory_mb == 4096
    # an archive's time limits hold a worker: finite, above 0, at most an hour (json reads
    # Infinity and NaN)
    for limit in ("Infinity", "NaN", "1e6", "0", "-5", '"60"', "true", "null"):
        with pytest.raises(ValueError, match=r"^r.json: notebook_timeout is a number of seconds above 0 and at most"):
            Settings.from_json(f'{{"notebook_timeout": {limit}}}', "r.json")
    assert Settings.from_json('{"cell_timeout": 0.5, "notebook_timeout": 3600}').notebook_timeout == 3600
    with pytest.raises(ValueError, match=r"^r.json: clock is an ISO 8601 time .*'yesterday'"):
        Settings.from_json('{"clock": "yesterday"}', "r.json")


def test_a_notebook_newer_than_cellar_knows_keeps_its_version_and_cell_types():
    from cellar.ingest.notebook import read_notebook
    from cellar.rerender.report import dump_notebook, fresh_notebook

    cells = [
        {"cell_type": "future cell", "metadata": {}, "source": "?"},
        {"cell_type": "code", "metadata": {}, "source": "1", "outputs": [], "execution_count": None},
    ]
    raw = json.dumps({"nbformat": 4, "nbformat_minor": 99, "metadata": {}, "cells": cells}).encode()
    with pytest.warns(UserWarning, match="newer than"):
        saved = read_notebook(raw, "future.ipynb")
    run = [
        {
            "execution_count": 1,
            "outputs": [
                {"output_type": "execute_result", "execution_count": 1, "data": {"text/plain": "1"}, "metadata": {}}
            ],
        }
    ]
    fresh = fresh_notebook(saved, run, {"status": "clean", "reason": None})
    assert (fresh["nbformat"], fresh["nbformat_minor"]) == (4, 99)
    with pytest.warns(UserWarning, match="newer than"):
        again = read_notebook(dump_notebook(fresh), "future.ipynb")
    assert [cell.cell_type for cell in again.cells] == ["future cell", "code"]
    assert again.cells[1].outputs[0].data == {"text/plain": "1"}


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ([], "not an object"),
        ({"stopped": None, "seconds": 1.0}, "its cells are not objects with an execution count and a list of outputs"),
        ({"cells": [{"outputs": []}], "stopped": None, "seconds": 1.0}, "its cells are not objects"),
        ({"cells": [{"execution_count": "1", "outputs": []}], "stopped": None, "seconds": 1.0}, "its cells are not"),
        ({"cells": [{"execution_count": 1, "outputs": ["text"]}], "stopped": None, "seconds": 1.0}, "its cells are"),
        ({"cells": [], "stopped": 3, "seconds": 1.0}, "its reason for stopping is not text"),
        ({"cells": []}, "its time taken is not a number"),
        ({"cells": [], "stopped": None, "seconds": True}, "its time taken is not a number"),
    ],
)
def test_a_sandbox_result_of_another_shape_is_refused_naming_what_is_wrong(result, problem):
    # what a notebook that forges its worker's reply sends (tests/pyodide/test_rerender_worker.py)
    with pytest.raises(ValueError, match="the sandbox's result is malformed") as raised:
        check_result(result)
    assert problem in str(raised.value)


def test_a_sandbox_result_of_the_right_shape_passes():
    check_result(
        {"cells": [{"execution_count": None, "outputs": [{"output_type": "stream"}]}], "stopped": None, "seconds": 0}
    )

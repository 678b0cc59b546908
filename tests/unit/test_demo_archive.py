"""The demo archive (demo/archive/) is well formed: notebooks, metadata, path map, blobs, gold set.

demo/make_archive.py runs the notebooks and writes the archive, which is committed. These tests
check what was committed without running anything, so they need neither a kernel nor ../shared.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

DEMO = Path(__file__).resolve().parents[2] / "demo"
ARCHIVE = DEMO / "archive"
NOTEBOOKS = sorted(ARCHIVE.rglob("*.ipynb"))
STATUSES = {"clean", "drifted", "stale"}
WINDOWS_PATH = re.compile(r"(?:[A-Za-z]:\\|\\\\)[^\s()]+")


def rel(path: Path) -> str:
    return path.relative_to(ARCHIVE).as_posix()


def load(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=nbformat.NO_CONVERT)


def output_texts(cell: nbformat.NotebookNode) -> list[str]:
    """The text of each of a cell's outputs: stream text, text/* data, error name/value/traceback."""
    texts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            texts.append(out.text)
        elif out.output_type == "error":
            texts.append("\n".join([out.ename, out.evalue, *out.traceback]))
        else:
            texts.extend(value for key, value in out.data.items() if key.startswith("text/"))
    return texts


def code_of(path: Path) -> str:
    return "\n".join(cell.source for cell in load(path).cells if cell.cell_type == "code")


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(code_of(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def pathmap() -> dict:
    return json.loads((ARCHIVE / "pathmap.json").read_text(encoding="utf-8"))


def blob_refs(mapping: dict) -> dict[str, str]:
    """Every logical path of the map (trees spelled out with backslashes) -> its blob reference."""
    refs = dict(mapping["files"])
    for prefix, entries in mapping["trees"].items():
        refs.update({prefix + "\\" + sub.replace("/", "\\"): ref for sub, ref in entries.items()})
    return refs


def is_mapped(path: str, mapping: dict) -> bool:
    lowered = path.replace("/", "\\").lower()
    return lowered in {key.replace("/", "\\").lower() for key in blob_refs(mapping)}


def cellar(path: Path) -> dict:
    return load(path).metadata["cellar"]


def make_archive():
    """The generator script as a module (it imports nbclient only when it runs notebooks)."""
    spec = importlib.util.spec_from_file_location("make_archive", DEMO / "make_archive.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_archive"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


# -- notebooks ---------------------------------------------------------------------------------


def test_the_archive_holds_12_to_14_notebooks():
    assert 12 <= len(NOTEBOOKS) <= 14


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_notebook_validates_as_nbformat_4_5_with_unique_cell_ids(path):
    nb = load(path)
    nbformat.validate(nb)
    assert (nb.nbformat, nb.nbformat_minor) == (4, 5)
    ids = [cell.id for cell in nb.cells]
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_execution_counts_run_from_one_in_cell_order(path):
    code = [cell for cell in load(path).cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    for cell in code:
        for out in cell.outputs:
            if out.output_type == "execute_result":
                assert out.execution_count == cell.execution_count


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_metadata_cellar_is_complete_and_matches_the_folder(path):
    meta = cellar(path)
    expected_types = {
        "project": str,
        "author": str,
        "year": int,
        "vessel_class": str,
        "title": str,
        "tags": list,
        "deprecated": bool,
        "designed_status": str,
    }
    for key, kind in expected_types.items():
        assert isinstance(meta.get(key), kind), f"{rel(path)}: metadata.cellar.{key}"
        assert meta[key] or kind is bool, f"{rel(path)}: metadata.cellar.{key} is empty"
    assert re.fullmatch(r"\d{2}-\d{3}", meta["project"])
    assert 2014 <= meta["year"] <= 2024 and meta["project"][:2] == str(meta["year"])[2:]
    assert rel(path).startswith(f"{meta['year']}/{meta['project']} ")
    assert meta["designed_status"] in STATUSES
    assert (meta["designed_reason"] is None) == (meta["designed_status"] == "clean")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_saved_outputs_do_not_leak_the_build_machine(path):
    for cell in load(path).cells:
        for text in output_texts(cell):
            assert not re.search(r"/work/|/home/|/tmp/|site-packages|at 0x[0-9a-f]+", text), text


def test_archive_spans_projects_years_authors_and_vessel_classes():
    metas = [cellar(path) for path in NOTEBOOKS]
    assert len({m["project"] for m in metas}) >= 10
    assert len({m["year"] for m in metas}) >= 8
    assert len({m["author"] for m in metas}) >= 4
    assert len({m["vessel_class"] for m in metas}) >= 6
    assert sum(m["deprecated"] for m in metas) == 1
    assert len({len(load(path).cells) for path in NOTEBOOKS}) >= 3


def test_designed_statuses_are_mostly_clean_with_one_drifted_and_one_stale():
    statuses = [cellar(path)["designed_status"] for path in NOTEBOOKS]
    assert statuses.count("drifted") == 1 and statuses.count("stale") == 1
    assert statuses.count("clean") == len(statuses) - 2


def test_outputs_cover_tables_scalars_streams_plots_and_exactly_one_error():
    kinds: list[str] = []
    for path in NOTEBOOKS:
        for cell in load(path).cells:
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if "image/png" in data:
                    kinds.append("plot")
                elif "text/html" in data:
                    kinds.append("table")
                elif out.output_type == "execute_result":
                    kinds.append("scalar")
                else:
                    kinds.append(out.output_type)
    assert kinds.count("error") == 1
    assert {"plot", "table", "scalar", "stream"} <= set(kinds)


def test_some_notebooks_are_written_in_dutch():
    text = " ".join(cell.source.lower() for path in NOTEBOOKS for cell in load(path).cells)
    for word in ("ballastwater", "stabiliteit", "kortsluiting", "diepgang"):
        assert word in text


def test_ballast_notebook_reads_the_unc_tank_table_and_saves_the_group_volumes():
    path = ARCHIVE / "2017/17-042 Ballast/ballast_tanks_17042.ipynb"
    assert r"\\srv-calc-01\projects\2017\17-042\inputs\tanks_17042c.csv" in code_of(path)
    tables = [
        out.data["text/plain"]
        for cell in load(path).cells
        for out in cell.get("outputs", [])
        if "text/html" in out.get("data", {})
    ]
    assert any(all(v in t for v in ("aft", "1284.6", "forepeak", "412.1", "midship", "2106.3")) for t in tables)
    scalars = [
        out.data["text/plain"]
        for cell in load(path).cells
        for out in cell.get("outputs", [])
        if out.output_type == "execute_result" and "text/html" not in out.data
    ]
    assert scalars == [str(round(1284.6 + 412.1 + 2106.3, 1))]


# -- path map and blobs ------------------------------------------------------------------------


def test_pathmap_has_the_agreed_format():
    mapping = pathmap()
    assert mapping["format"] == 1 and set(mapping) == {"format", "files", "trees"}
    for prefix, entries in mapping["trees"].items():
        assert not prefix.endswith(("\\", "/"))
        assert entries and all("\\" not in sub for sub in entries)


def test_every_mapped_path_resolves_to_a_blob_whose_sha256_is_its_name():
    for logical, ref in blob_refs(pathmap()).items():
        match = re.fullmatch(r"sha256:([0-9a-f]{64})", ref)
        assert match, f"{logical}: bad blob reference {ref!r}"
        digest = match.group(1)
        blob = ARCHIVE / "blobs" / "sha256" / digest[:2] / digest
        assert blob.is_file(), f"{logical}: {blob} is missing"
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == digest


def test_every_blob_is_referenced_and_filed_under_its_prefix():
    referenced = {ref.removeprefix("sha256:") for ref in blob_refs(pathmap()).values()}
    stored = {path.name for path in (ARCHIVE / "blobs").rglob("*") if path.is_file()}
    assert stored == referenced
    for path in (ARCHIVE / "blobs").rglob("*"):
        if path.is_file():
            assert path.parent.name == path.name[:2] and path.parent.parent.name == "sha256"


def test_pathmap_holds_unc_drive_letter_relative_and_tree_paths():
    files = pathmap()["files"]
    assert any(key.startswith("\\\\") for key in files)
    assert any(re.match(r"[A-Za-z]:\\", key) for key in files)
    assert any(key.startswith("/") for key in files)  # a relative path, below a notebook's folder
    assert pathmap()["trees"]


def test_every_mapped_path_is_one_a_notebook_spells():
    mapping = pathmap()
    code = {rel(path): code_of(path) for path in NOTEBOOKS}
    for key in mapping["files"]:
        if key.startswith("/"):  # relative: "/<notebook folder>/<path as written>"
            assert any(
                key.startswith(f"/{Path(nb).parent.as_posix()}/")
                and key.removeprefix(f"/{Path(nb).parent.as_posix()}/") in source
                for nb, source in code.items()
            ), key
        else:
            assert any(key in source for source in code.values()), key
    for prefix, entries in mapping["trees"].items():
        users = [source for source in code.values() if prefix in source]
        assert users, prefix
        for sub in entries:
            assert any(sub.replace("/", "\\") in source for source in users), sub


@pytest.mark.parametrize("status, mapped", [("stale", False), ("drifted", True)])
def test_designed_reason_names_the_input_that_decides_the_status(status, mapped):
    for path in NOTEBOOKS:
        meta = cellar(path)
        if meta["designed_status"] != status:
            continue
        named = WINDOWS_PATH.search(meta["designed_reason"]).group(0)
        assert named in code_of(path)
        assert is_mapped(named, pathmap()) is mapped


def test_cellar_vfs_resolves_what_each_notebook_reads_from_its_own_folder():
    vfs = pytest.importorskip("cellar.rerender.vfs")
    mapping = vfs.load_pathmap(ARCHIVE / "pathmap.json")
    gen = make_archive()
    for spec in gen.NOTEBOOKS:
        cwd = f"/{spec.folder}"  # the archive root is the logical "/"; a notebook starts in its folder
        for item in spec.inputs:
            if item.archived:  # the corrected file, for the notebook designed to drift
                expected = "sha256:" + hashlib.sha256((gen.INPUTS / item.source).read_bytes()).hexdigest()
                assert mapping.resolve(item.written, cwd=cwd) == expected
            else:
                with pytest.raises(OSError):
                    mapping.resolve(item.written, cwd=cwd)


# -- environment, README and generator -----------------------------------------------------------


def test_requirements_pin_exactly_the_third_party_imports():
    lines = (ARCHIVE / "requirements.txt").read_text().split()
    pins = dict(line.split("==") for line in lines)
    assert all(re.fullmatch(r"\d+(\.\d+)+", version) for version in pins.values())
    imported = set().union(*(imported_modules(path) for path in NOTEBOOKS)) - set(sys.stdlib_module_names)
    assert imported == set(pins)


def test_readme_table_records_each_notebooks_designed_status():
    rows = re.findall(r"^\| `([^`]+\.ipynb)` \|.*\| (\w+) \|$", (ARCHIVE / "README.md").read_text(), re.M)
    assert dict(rows) == {rel(path): cellar(path)["designed_status"] for path in NOTEBOOKS}


def test_committed_archive_matches_the_generator_sources():
    """Cell sources, path map and README are what demo/make_archive.py would write today."""
    gen = make_archive()
    assert {nb.path for nb in gen.NOTEBOOKS} == {rel(path) for path in NOTEBOOKS}
    for spec in gen.NOTEBOOKS:
        source = (gen.SOURCES / f"{spec.stem}.py").read_text(encoding="utf-8")
        expected = [(c.cell_type, c.source) for c in gen.parse_percent(source, spec.stem)]
        nb = load(ARCHIVE / spec.path)
        assert [(c.cell_type, c.source) for c in nb.cells] == expected, spec.path
        assert nb.metadata["cellar"] == spec.cellar_metadata()
    mapping, _ = gen.build_pathmap(gen.NOTEBOOKS)
    assert mapping == pathmap()
    assert gen.readme(gen.NOTEBOOKS) == (ARCHIVE / "README.md").read_text(encoding="utf-8")


# -- gold set ----------------------------------------------------------------------------------

GOLD = [json.loads(line) for line in (DEMO / "gold.jsonl").read_text(encoding="utf-8").splitlines()]
EXPECTS = [(q["id"], e) for q in GOLD for e in q["expect"]]


def test_gold_lines_follow_the_gold_format():
    assert 12 <= len(GOLD) <= 20
    assert len({q["id"] for q in GOLD}) == len(GOLD)
    for q in GOLD:
        assert set(q) == {"id", "query", "lang", "kind", "expect", "answer"}
        assert q["lang"] in {"en", "nl"}
        assert q["kind"] in {"locate", "value", "vocabulary", "out_of_scope"}
        assert (q["kind"] == "out_of_scope") == (q["expect"] == [])
    assert {q["lang"] for q in GOLD} == {"en", "nl"}
    assert {q["kind"] for q in GOLD} == {"locate", "value", "vocabulary", "out_of_scope"}


@pytest.mark.parametrize("qid, expect", EXPECTS, ids=[f"{qid}-{e['cell']}" for qid, e in EXPECTS])
def test_gold_evidence_occurs_verbatim_in_the_cited_cell(qid, expect):
    cell = load(ARCHIVE / expect["path"]).cells[expect["cell"]]
    assert any(expect["evidence"] in text for text in [cell.source, *output_texts(cell)])


def test_the_headline_question_cites_the_ballast_table():
    (question,) = [q for q in GOLD if q["query"] == "ballast tank volumes for the 2017 vessel"]
    (expect,) = question["expect"]
    assert expect["path"] == "2017/17-042 Ballast/ballast_tanks_17042.ipynb"
    cell = load(ARCHIVE / expect["path"]).cells[expect["cell"]]
    assert any("text/html" in out.get("data", {}) for out in cell.outputs)

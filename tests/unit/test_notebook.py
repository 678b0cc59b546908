"""cellar.ingest.notebook reads nbformat 3 and 4 as nbformat does, and rejects what nbformat rejects.

The `nbformat` library is the oracle here (it is not used by cellar itself: it needs jsonschema,
which Pyodide lacks).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import warnings
from pathlib import Path

import nbformat
import pytest

from cellar.ingest.notebook import NotebookError, NotebookWarning, load_notebook, read_notebook

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks"
# The one corpus notebook that nbformat.validate calls invalid and that this reader reads on
# purpose: cell ids under nbformat 4.4, which Jupyter itself opens without complaint.
LENIENT = {"jakevdp__PythonDataScienceHandbook/notebooks/01.01-Help-And-Documentation.ipynb"}


def nbformat_verdict(data: bytes) -> bool:
    """Whether nbformat.validate accepts the raw JSON (False for bad JSON too)."""
    try:
        raw = json.loads(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # missing cell ids, duplicate ids: nbformat repairs
            nbformat.validate(copy.deepcopy(raw))
    except (ValueError, nbformat.ValidationError):
        return False
    return True


def nbformat_model(data: bytes) -> nbformat.NotebookNode:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return nbformat.reads(data.decode("utf-8"), as_version=4)


def assert_agrees_with_nbformat(data: bytes, path: str) -> None:
    """Cell count, types and sources; output types, texts and MIME data as nbformat reads them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotebookWarning)
        mine = read_notebook(data, path)
    theirs = nbformat_model(data)
    assert len(mine.cells) == len(theirs.cells), path
    for cell, reference in zip(mine.cells, theirs.cells):
        where = f"{path} cell {cell.index}"
        assert cell.cell_type == reference.cell_type, where
        assert cell.source == reference.get("source", ""), where
        assert len(cell.outputs) == len(reference.get("outputs", [])), where
        for output, expected in zip(cell.outputs, reference.get("outputs", [])):
            assert output.output_type == expected.output_type, where
            assert output.text == expected.get("text"), where
            assert output.name == expected.get("name"), where
            assert output.evalue == expected.get("evalue"), where
            assert list(output.traceback) == expected.get("traceback", []), where
            data_ = expected.get("data", {})
            assert set(output.data) == set(data_), where
            for mime, value in data_.items():
                if isinstance(value, str):
                    assert output.data[mime] == value, f"{where} {mime}"
                else:  # JSON-valued types are kept as JSON text
                    assert json.loads(output.data[mime]) == value, f"{where} {mime}"


# -- the fixtures ---------------------------------------------------------------------------------


def test_v4_notebook_reads_into_the_typed_model():
    data = (FIXTURES / "ballast_v4.ipynb").read_bytes()
    notebook = read_notebook(data, "ballast_v4.ipynb")
    assert notebook.path == "ballast_v4.ipynb"
    assert notebook.revision == hashlib.sha256(data).hexdigest()
    assert notebook.nbformat == (4, 5)
    assert notebook.metadata["cellar"]["project"] == "17-042"
    assert [cell.index for cell in notebook.cells] == list(range(len(notebook.cells)))
    tanks = notebook.cells[2]
    assert tanks.cell_type == "code" and tanks.source.endswith("set_index('tank')\ntanks")
    result = tanks.outputs[0]
    assert (result.index, result.output_type, result.execution_count) == (0, "execute_result", 2)
    assert "<table" in result.data["text/html"] and "forepeak" in result.data["text/plain"]
    error = notebook.cells[9].outputs[0]
    assert (error.ename, error.evalue) == ("NameError", "name 'area' is not defined")
    assert len(error.traceback) == 4
    widget = notebook.cells[10].outputs[0]
    assert json.loads(widget.data["application/vnd.jupyter.widget-view+json"])["model_id"] == "abc"


def test_v3_worksheets_are_flattened_into_v4_shapes():
    notebook = read_notebook((FIXTURES / "stability_v3.ipynb").read_bytes(), "stability_v3.ipynb")
    assert notebook.nbformat == (3, 0)
    assert [cell.cell_type for cell in notebook.cells] == ["markdown", "markdown", "code", "code", "code", "raw"]
    assert notebook.cells[0].source == "# Stability check"  # the heading cell, as nbformat upgrades it
    # Lines written by splitlines() lost their line ends; they are joined with "\n".
    assert notebook.cells[1].source == "Written by splitlines(),\nso the lines carry no line ends."
    assert notebook.cells[2].source == "lightship = 4120.5\nlightship"
    result = notebook.cells[2].outputs[0]
    assert result.output_type == "execute_result" and result.execution_count == 1
    assert result.data == {"text/plain": "4120.5", "text/latex": "$4120.5$"}
    stream, error = notebook.cells[3].outputs
    assert (stream.output_type, stream.name, stream.text) == ("stream", "stdout", "KG 7.9\n")
    assert (error.output_type, error.ename) == ("error", "ZeroDivisionError")
    assert set(notebook.cells[4].outputs[0].data) == {"image/png"}
    assert notebook.cells[4].metadata == {"collapsed": True}


@pytest.mark.parametrize("name", ["ballast_v4.ipynb", "stability_v3.ipynb", "future_4_99.ipynb"])
def test_fixtures_agree_with_nbformat(name):
    data = (FIXTURES / name).read_bytes()
    assert nbformat_verdict(data)
    assert_agrees_with_nbformat(data, name)


def test_sources_as_strings_or_line_lists_read_the_same():
    def notebook(source):
        cell = {"cell_type": "markdown", "metadata": {}, "source": source}
        return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}).encode()

    as_lines = read_notebook(notebook(["# Tanks\n", "\n", "Forepeak 412.1 m3"]), "a.ipynb")
    as_text = read_notebook(notebook("# Tanks\n\nForepeak 412.1 m3"), "b.ipynb")
    assert as_lines.cells[0].source == as_text.cells[0].source == "# Tanks\n\nForepeak 412.1 m3"


def test_a_future_minor_version_is_read_with_a_warning():
    with pytest.warns(NotebookWarning, match=r"future_4_99\.ipynb: nbformat 4\.99 is newer than 4\.5"):
        notebook = read_notebook((FIXTURES / "future_4_99.ipynb").read_bytes(), "future_4_99.ipynb")
    assert [cell.cell_type for cell in notebook.cells] == ["markdown", "hologram", "code"]
    assert [output.output_type for output in notebook.cells[2].outputs] == ["execute_result", "telepathy"]


def test_cell_ids_under_4_4_are_tolerated_but_a_malformed_id_is_not():
    cell = {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": "x"}
    data = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}).encode()
    assert read_notebook(data, "ids.ipynb").cells[0].source == "x"
    bad = data.replace(b'"intro"', b'"not ok!"')
    with pytest.raises(NotebookError, match=r"ids\.ipynb: cells\[0\]\.id 'not ok!' must match"):
        read_notebook(bad, "ids.ipynb")


def test_the_model_is_read_only():
    notebook = read_notebook((FIXTURES / "ballast_v4.ipynb").read_bytes(), "b.ipynb")
    with pytest.raises(dataclasses.FrozenInstanceError):
        notebook.cells[0].source = "changed"  # type: ignore[misc]


def _v3_heading(level):
    cell = {"cell_type": "heading", "level": level, "source": "Stability", "metadata": {}}
    return json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [cell]}]})


def test_a_v3_heading_deeper_than_markdown_has_is_its_deepest_and_level_0_is_refused():
    # nbformat writes `level` hashes: a 150-byte file asking for 10**12 must not ask for a terabyte
    assert read_notebook(_v3_heading(10**12).encode(), "deep.ipynb").cells[0].source == "###### Stability"
    assert read_notebook(_v3_heading(2).encode(), "two.ipynb").cells[0].source == "## Stability"
    with pytest.raises(NotebookError, match=r"zero\.ipynb: .*level must be 1 or more, not 0"):
        read_notebook(_v3_heading(0).encode(), "zero.ipynb")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("bad_json.ipynb", "invalid JSON at line 4, column 2: Expecting ',' delimiter"),
        ("nbformat2.ipynb", "nbformat 2 is not supported (only nbformat 3 and 4)"),
        ("missing_source.ipynb", "cells[0]: missing field 'source'"),
        ("mistyped_outputs.ipynb", "cells[0].outputs must be an array, not an object"),
    ],
)
def test_invalid_fixtures_are_rejected_naming_file_and_problem(name, problem):
    path = f"invalid/{name}"
    data = (FIXTURES / path).read_bytes()
    assert not nbformat_verdict(data)
    with pytest.raises(NotebookError) as raised:
        read_notebook(data, path)
    assert str(raised.value) == f"{path}: {problem}"
    assert (raised.value.path, raised.value.problem) == (path, problem)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "the file is empty"),
        (b"\xff\xfe{}", "not UTF-8 text (byte 0: invalid start byte)"),
        (b"[1, 2]", "the top level must be a JSON object, not an array"),
        (b'{"nbformat": "4"}', "nbformat must be an integer, not a string"),
        (b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}}', "missing field 'cells'"),
        (
            b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [3]}',
            "cells[0] must be an object, not an integer",
        ),
        (
            b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "metadata": {},'
            b' "source": "", "outputs": [], "execution_count": true}]}',
            "cells[0].execution_count must be an integer or null, not a boolean",
        ),
        (
            b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "markdown",'
            b' "metadata": {"tags": "ballast"}, "source": ""}]}',
            "cells[0].metadata.tags must be an array of strings, not a string",
        ),
        (
            b'{"nbformat": 4, "nbformat_minor": 1, "metadata": {}, "cells": [{"cell_type": "slide",'
            b' "metadata": {}, "source": ""}]}',
            "cells[0]: unknown cell_type 'slide'",
        ),
    ],
)
def test_bad_input_is_a_notebook_error(data, problem):
    with pytest.raises(NotebookError) as raised:
        read_notebook(data, "tanks.ipynb")
    assert str(raised.value) == f"tanks.ipynb: {problem}"


def test_load_notebook_gives_a_path_relative_to_the_root(tmp_path):
    folder = tmp_path / "2017" / "17-042"
    folder.mkdir(parents=True)
    (folder / "ballast.ipynb").write_bytes((FIXTURES / "ballast_v4.ipynb").read_bytes())
    notebook = load_notebook(folder / "ballast.ipynb", tmp_path)
    assert notebook.path == "2017/17-042/ballast.ipynb"
    with pytest.raises(NotebookError, match=r"^2017/missing\.ipynb: cannot read the file"):
        load_notebook(tmp_path / "2017" / "missing.ipynb", tmp_path)
    with pytest.raises(ValueError, match="is not inside"):
        load_notebook(FIXTURES / "ballast_v4.ipynb", tmp_path)


# -- the shared corpus ----------------------------------------------------------------------------


def corpus_notebooks(corpus: Path) -> list[Path]:
    return sorted(corpus.rglob("*.ipynb"))


def test_every_edge_file_is_read_or_rejected_as_nbformat_decides(shared_corpus):
    files = corpus_notebooks(shared_corpus / "edge")
    assert len(files) >= 40
    rejected = []
    for file in files:
        path = file.relative_to(shared_corpus).as_posix()
        data = file.read_bytes()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotebookWarning)
            try:
                read_notebook(data, path)
                accepted = True
            except NotebookError as error:
                accepted = False
                assert str(error).startswith(f"{path}: ") and error.problem
                rejected.append(path)
        assert accepted == nbformat_verdict(data), path
    assert len(rejected) >= 5


def test_every_valid_corpus_notebook_agrees_with_nbformat(shared_corpus):
    checked = 0
    for file in corpus_notebooks(shared_corpus):
        path = file.relative_to(shared_corpus).as_posix()
        data = file.read_bytes()
        if nbformat_verdict(data) or path in LENIENT:
            assert_agrees_with_nbformat(data, path)
            checked += 1
    assert checked >= 200

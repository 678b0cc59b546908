"""cellar.ingest.notebook and cellar.ingest.chunking in Pyodide give the very records that CPython gives.

The same probe runs in both: it reads notebooks (and plain documents) from bytes and chunks them;
the chunk records and skip counts must be equal, tables (pandas) and code analysis (`ast`, whose
3.12 tokenizer differs from 3.11's) included.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SAMPLE = [  # every kind of chunk, nbformat 3, 4.0-4.4 and 4.99, HTML and text tables, widgets
    "CalebBell__fluids/docs/Examples/Crane TP 410 Solved Problems/7.24 Laminar Flow.ipynb",
    "CalebBell__fluids/docs/Data/Pipe Schedules.ipynb",
    "fonnesbeck__statistical-analysis-python-tutorial/1. Introduction to Pandas.ipynb",
    "jrjohansson__scientific-python-lectures/Lecture-2-Numpy.ipynb",
    "jakevdp__PythonDataScienceHandbook/notebooks/03.09-Pivot-Tables.ipynb",
    "jakevdp__PythonDataScienceHandbook/notebooks/02.06-Boolean-Arrays-and-Masks.ipynb",
    "edge/jupyter__nbconvert/tests/files/Widget_List.ipynb",
    "edge/jupyter__nbformat/tests/test4plus.ipynb",
]

PROBE = r"""
import base64, json, warnings
from cellar.ingest.chunking import chunk_document, chunk_notebook
from cellar.ingest.notebook import NotebookWarning, read_notebook

def chunk_all(files):
    result = {}
    for path, encoded in files.items():
        data = base64.b64decode(encoded)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotebookWarning)
            chunked = chunk_notebook(read_notebook(data, path)) if path.endswith(".ipynb") else chunk_document(data, path)
        result[path] = {"records": [chunk.record() for chunk in chunked.chunks], "skipped": chunked.skipped}
    return json.loads(json.dumps(result))
"""


def encoded(files: dict[str, bytes]) -> dict[str, str]:
    return {path: base64.b64encode(data).decode("ascii") for path, data in files.items()}


def compare(pyodide, files: dict[str, bytes]) -> dict:
    namespace: dict = {}
    exec(PROBE, namespace)
    expected = namespace["chunk_all"](encoded(files))
    code = (
        'import pyodide_js\nawait pyodide_js.loadPackage("pandas")\n'
        + PROBE
        + f"\nchunk_all(json.loads({json.dumps(json.dumps(encoded(files)))}))"
    )
    assert pyodide.run(code) == expected
    return expected


def test_fixture_notebooks_and_documents_chunk_alike(pyodide):
    files = {path.relative_to(FIXTURES).as_posix(): path.read_bytes()
             for path in sorted(FIXTURES.rglob("*")) if path.suffix in (".ipynb", ".md", ".txt")
             and "invalid" not in path.parts}  # fmt: skip
    result = compare(pyodide, files)
    kinds = {record["kind"] for chunked in result.values() for record in chunked["records"]}
    assert kinds == {"markdown", "code", "table", "scalar", "stream", "plot", "error", "text"}


def test_a_sample_of_corpus_notebooks_chunks_alike(pyodide, shared_corpus):
    result = compare(pyodide, {path: (shared_corpus / path).read_bytes() for path in SAMPLE})
    assert sum(record["kind"] == "table" for record in result[SAMPLE[1]]["records"]) == 86
    assert result[SAMPLE[6]]["skipped"]["widget view"] > 0

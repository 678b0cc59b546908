"""cellar.ingest.provenance in Pyodide computes what it computes in CPython."""

import json

import pytest

from cellar.ingest.provenance import revision, snapshots
from cellar.rerender.pyodide_host import PyodideError

TEXTS = [
    "",
    "abc",
    "Ballast: achterpiek 1284.6 m³, voorpiek 412.1 m³\r\n",
    "tabs\tand  spaces  \n\n",
    "\u00e9 vs e\u0301",
    "emoji \U0001f6a2 and CJK 船",
    "x" * 100_000,
]


def test_pyodide_runs_python_3_12_with_the_cellar_wheel(pyodide):
    version, installed = pyodide.run("import sys, cellar; [sys.version_info[:2], cellar.__file__]")
    assert version == [3, 12]
    assert "site-packages" in installed


def test_revisions_equal_cpython(pyodide):
    code = f"import json, cellar.ingest.provenance as p; [p.revision(t) for t in json.loads({json.dumps(json.dumps(TEXTS))})]"
    assert pyodide.run(code) == [revision(text) for text in TEXTS]


def test_snapshots_equal_cpython(pyodide):
    records = [
        {"id": "tanks", "title": "Tanks 17-042", "text": "  aft 1284.6\n"},
        {"id": "gz-curve", "title": "GZ", "text": "GZ max 0.82 m at 35°"},
    ]
    code = f"import json, cellar.ingest.provenance as p; p.snapshots(json.loads({json.dumps(json.dumps(records))}))"
    assert pyodide.run(code) == snapshots(records)


def test_lone_surrogate_is_a_value_error_in_pyodide_too(pyodide):
    with pytest.raises(PyodideError, match="ValueError: text cannot be encoded as UTF-8"):
        pyodide.run("import cellar.ingest.provenance as p; p.revision('\\ud800')")

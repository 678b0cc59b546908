"""The `pyodide` fixture: one Node process running the site's Pyodide with the cellar wheel.

    def test_same_revision(pyodide):
        assert pyodide.run("import cellar.ingest.provenance as p; p.revision('x')") == revision("x")

`pyodide.run(code)` returns the JSON-decoded value of the code's final expression; a Python
exception inside Pyodide is raised here as cellar.rerender.pyodide_host.PyodideError with its traceback.
Load more of Pyodide's packages from the code itself:
`import pyodide_js; await pyodide_js.loadPackage("pandas")`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cellar.rerender.pyodide_host import PyodideHost
from cellar.retrieval.embedding import default_model_dir


@pytest.fixture(scope="session")
def pyodide(site) -> Iterator[PyodideHost]:
    manifest = json.loads((site / "build.json").read_text())
    wheels = [site / wheel for wheel in manifest["wheels"]]
    # test_embedding mounts the model folder with NODEFS: the confined process may read it
    with PyodideHost(site / "pyodide", wheels=wheels, packages=["numpy"], read=[default_model_dir()]) as host:
        yield host

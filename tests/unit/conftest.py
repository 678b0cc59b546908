"""Fixtures shared by the unit tests: a built site that needs no Pyodide, for `cellar rerender`.

`stand_in_site` puts a stand-in `node` first on PATH that speaks the host protocol of
`cellar.rerender.pyodide_host` (replies, runs no Python): every run comes back "not run by the
stand-in"; a notebook whose code holds DIE_HERE ends the process, so the real host code has to
notice the death; one that holds FORGE_HERE gets a reply that is no JSON text, MALFORMED_HERE a
result that is no object, FORGE_AHEAD writes replies for the ids that follow its own, as a
notebook may, ENDLESS_LINE writes one line that never ends, and FLOOD_OUTPUT writes 4 MB with
terminal escapes to stderr and stray lines to stdout before it replies, DEEP_LINE writes a
reply line nested 200,000 deep before its reply, DEEP_RESULT answers with a result nested
100,000 deep and NESTED_RESULT with a well-formed one whose output nests 500 deep; a `fail`
file beside it makes it fail to start (a file, not a variable: the worker's environment is
scrubbed).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cellar.rerender import batch, environment

FAKE_NODE = """#!{python}
import base64, json, os, sys
MARK = "\\x1ecellar-host "
def reply(message):
    sys.stdout.write(MARK + json.dumps(message) + "\\n")
    sys.stdout.flush()
if os.path.exists({fail_flag!r}):  # a file, not a variable: the worker's environment is scrubbed
    sys.exit(7)
reply({{"id": 0, "ok": True, "value": json.dumps({{"python": "stand-in"}})}})
for line in sys.stdin:
    request = json.loads(line)
    if "read" in request:
        reply({{"id": request["id"], "ok": True, "value": base64.b64encode(b"start files").decode()}})
        continue
    if "DIE_HERE" in request["code"]:
        os._exit(9)  # dies (a signal would not do: in a PID namespace the stand-in is PID 1)
    if "FORGE_HERE" in request["code"]:  # a reply whose value is no JSON text
        reply({{"id": request["id"], "ok": True, "value": 5}})
        continue
    if "ENDLESS_LINE" in request["code"]:  # until the host gives up on it and ends the process
        while True:
            sys.stdout.write("x" * (1 << 20))
    if "FLOOD_OUTPUT" in request["code"]:  # as os.write(1 or 2, ...) in a notebook does
        for _ in range(4):
            sys.stderr.write("\\x1b]0;PWNED\\x07\\x1b[31mFAKE: 0 stale\\x1b[0m" + "y" * (1 << 20) + "\\n")
            sys.stderr.flush()
        sys.stdout.write("\\x1b[2Jstray line\\n")
        forged = json.dumps(json.dumps({{"cells": [], "stopped": "FORGED", "seconds": 0.0}}))
        for guess in range(request["id"] + 1, request["id"] + 20):
            reply({{"id": guess, "ok": True, "value": forged}})
    if "DEEP_LINE" in request["code"]:  # json.loads hits its recursion limit on it
        sys.stdout.write(MARK + "[" * 200000 + "\\n")
    value = None
    if "run_request" in request["code"]:
        result = 5 if "MALFORMED_HERE" in request["code"] else {{"cells": [], "stopped": "not run by the stand-in", "seconds": 0.0}}
        if "NESTED_RESULT" in request["code"]:
            nested = 0
            for _ in range(500):
                nested = [nested]
            output = {{"output_type": "display_data", "data": {{"application/json": nested}}, "metadata": {{}}}}
            result = {{"cells": [{{"execution_count": 1, "outputs": [output]}}], "stopped": None, "seconds": 0.0}}
        value = "[" * 100000 + "]" * 100000 if "DEEP_RESULT" in request["code"] else json.dumps(result)
    reply({{"id": request["id"], "ok": True, "value": json.dumps(value)}})
    if "FORGE_AHEAD" in request["code"]:
        for guess in range(request["id"] + 1, request["id"] + 20):
            reply({{"id": guess, "ok": True, "value": forged}})
"""


def notebook(source: str) -> str:
    cell = {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": 1}
    return json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [cell]})


@pytest.fixture()
def stand_in_site(tmp_path, monkeypatch) -> Path:
    """A site folder whose runtime is the stand-in `node` (its `bin/fail` flag beside it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    node = bin_dir / "node"
    node.write_text(FAKE_NODE.format(python=sys.executable, fail_flag=str(bin_dir / "fail")))
    node.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(batch.Worker, "CACHE", tmp_path / "worker-start")
    site = tmp_path / "site"
    (site / "pyodide").mkdir(parents=True)
    (site / "pyodide" / "pyodide.mjs").write_text("")
    packages = {}
    for name in environment.BASE_PACKAGES:  # what every worker loads, as the runtime's lock lists it
        packages[name] = {"version": "1.0", "file_name": f"{name}-1.0-py3-none-any.whl"}
        (site / "pyodide" / packages[name]["file_name"]).write_text("")
    lock = {"info": {"version": "0.27.7"}, "packages": packages}
    (site / "pyodide" / "pyodide-lock.json").write_text(json.dumps(lock))
    (site / "build.json").write_text(json.dumps({"wheels": []}))
    return site


def demo_documents_writers():
    """demo/make_documents.py as a module: the PDF and DOCX writers and `write_documents`, which
    the document tests use to make real files (it is a script beside the demo, not a package)."""
    import importlib.util

    script = Path(__file__).resolve().parents[2] / "demo" / "make_documents.py"
    spec = importlib.util.spec_from_file_location("make_documents", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_documents"] = module
    spec.loader.exec_module(module)
    return module


@contextmanager
def deadline(seconds: int = 20) -> Iterator[None]:
    """Fail (rather than hang the suite) if the block takes longer than `seconds`: a guard
    against a hostile input's hang, not a measure of speed (that is benchmarks/')."""

    def expired(*_: object) -> None:
        raise TimeoutError(f"took longer than {seconds} s: something blocked")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)

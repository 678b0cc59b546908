"""`cellar rerender` when its Pyodide worker (a Node process) dies: the notebook it was running is
stale with the reason, a fresh worker takes the rest, the report is written and the command exits
1; a worker that cannot start at all stops the batch with exit status 3 and no report.

No built site is needed: a stand-in `node` first on PATH speaks the host protocol of
`cellar.rerender.pyodide_host` (replies, no Python run) and kills itself with SIGKILL when a
notebook's code holds DIE_HERE, so the real host code has to notice the death.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from cellar.cli import main
from cellar.rerender import batch, environment

FAKE_NODE = """#!{python}
import base64, json, os, signal, sys
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
    value = None
    if "run_request" in request["code"]:
        value = json.dumps({{"cells": [], "stopped": "not run by the stand-in", "seconds": 0.0}})
    reply({{"id": request["id"], "ok": True, "value": json.dumps(value)}})
"""


def notebook(source: str) -> str:
    cell = {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": 1}
    return json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [cell]})


@pytest.fixture()
def setting(tmp_path, monkeypatch):
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
    archive = tmp_path / "archive"
    archive.mkdir()
    for name, source in [("a.ipynb", "x = 1"), ("b.ipynb", "DIE_HERE = 1"), ("c.ipynb", "y = 2"), ("d.ipynb", "z")]:
        (archive / name).write_text(notebook(source))
    os.mkfifo(archive / "fifo.ipynb")  # read safely too: a stale entry, not a hang
    return archive, site, tmp_path / "out"


def test_a_worker_that_dies_is_reported_replaced_and_the_exit_status_is_1(setting, capsys):
    archive, site, out = setting
    status = main(["rerender", str(archive), "--out", str(out), "--site", str(site), "--workers", "1"])
    captured = capsys.readouterr()
    assert status == 1, captured.err
    report = json.loads((out / "report.json").read_text())
    reasons = {entry["path"]: entry["reason"] for entry in report["notebooks"]}
    assert sorted(reasons) == ["a.ipynb", "b.ipynb", "c.ipynb", "d.ipynb", "fifo.ipynb"]
    assert reasons["b.ipynb"].startswith(
        "the Pyodide worker died (the Node process running Pyodide exited (exit status 9))"
    )
    assert all(reasons[name] == "not run by the stand-in" for name in ("a.ipynb", "c.ipynb", "d.ipynb"))
    assert reasons["fifo.ipynb"] == "unreadable: a FIFO (named pipe), not a regular file: not opened"
    assert report["worker_deaths"] == 1
    assert "the Pyodide worker died under 1 notebook(s)" in captured.err


def test_a_worker_that_cannot_start_stops_the_batch_with_status_3(setting, capsys):
    archive, site, out = setting
    (archive.parent / "bin" / "fail").touch()
    status = main(["rerender", str(archive), "--out", str(out), "--site", str(site)])
    err = capsys.readouterr().err
    assert status == 3
    assert "cellar rerender: the batch stopped after" in err and "exited (exit status 7)" in err
    assert "no report written" in err and not (out / "report.json").exists()

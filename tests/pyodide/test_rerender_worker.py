"""A `cellar rerender` worker's start: the first worker keeps what preparing wrote (the imported
modules' bytecode, matplotlib's font list) in the cache, and a later worker starts from it with
the same outputs; and the host's file copies in and out of Pyodide that carry it.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest
from tests.unit.conftest import notebook

from cellar.cli import main
from cellar.rerender.batch import Worker, site_runtime
from cellar.rerender.pyodide_host import PyodideError, PyodideHost

PACKAGES = ["ipython", "matplotlib", "numpy", "pandas"]
REQUEST = {
    "cells": [
        "import matplotlib.pyplot as plt\n"
        "plt.plot([0, 10, 20, 30], [0.0, 0.21, 0.38, 0.42])\n"
        "plt.title('GZ curve 16-008'); plt.xlabel('heel [deg]'); plt.ylabel('GZ [m]')",
        "import pandas as pd\npd.DataFrame({'tank': ['forepeak', 'aft peak'], 'volume_m3': [412.1, 288.0]})",
    ],
    "pathmap": {"format": 1, "files": {}},
    "cwd": "/",
    "limits": {},
}
FONT_CACHE = "Matplotlib is building the font cache"
FRAME = "lib/python3.12/site-packages/pandas/core/__pycache__/frame.cpython-312.pyc"
FONT_LIST = "lib/python3.12/site-packages/matplotlib/fontlist.json"


def test_a_later_worker_starts_from_the_first_ones_files_with_the_same_outputs(site, tmp_path, capfd):
    runtime, wheels = site_runtime(site)
    first = Worker(runtime, wheels, PACKAGES, cache=tmp_path)
    try:
        fresh = first.run(REQUEST, {}, timeout=120)
    finally:
        first.close()
    assert FONT_CACHE in capfd.readouterr().err
    with zipfile.ZipFile(first.start_files) as kept:
        assert {FRAME, FONT_LIST} <= set(kept.namelist())
        assert kept.read(FRAME)[4:8] == (0b11).to_bytes(4, "little"), "checked-hash bytecode (PEP 552)"

    second = Worker(runtime, wheels, PACKAGES, cache=tmp_path)
    try:
        again = second.run(REQUEST, {}, timeout=120)
        # this worker writes no bytecode: what is on its disk came from the first one
        writes, header = second.host.run(f"import sys; [sys.dont_write_bytecode, open('/{FRAME}', 'rb').read(8).hex()]")
    finally:
        second.close()
    assert FONT_CACHE not in capfd.readouterr().err
    assert writes and bytes.fromhex(header)[4:8] == (0b11).to_bytes(4, "little")
    plot, table = (cell["outputs"] for cell in fresh["cells"])
    assert "image/png" in plot[-1]["data"] and "forepeak" in table[0]["data"]["text/html"]
    assert again["cells"] == fresh["cells"], "the same outputs, the plot's PNG byte for byte"


def test_files_are_copied_in_at_start_and_read_back_out(site, tmp_path):
    source = tmp_path / "in.bin"
    source.write_bytes(bytes(range(256)) * 4000)
    with PyodideHost(site / "pyodide", packages=[], files={"/tmp/deep/in.bin": source}) as host:
        digest = host.run("import hashlib; hashlib.sha256(open('/tmp/deep/in.bin', 'rb').read()).hexdigest()")
        assert digest == hashlib.sha256(source.read_bytes()).hexdigest()
        host.run("open('/tmp/out.bin', 'wb').write(bytes(range(256))[::-1]); 0")
        assert host.read_file("/tmp/out.bin") == bytes(range(256))[::-1]
        with pytest.raises(PyodideError, match="/tmp/missing.bin: ENOENT"):
            host.read_file("/tmp/missing.bin")
    with pytest.raises(FileNotFoundError, match="missing.bin: no such file to copy into Pyodide"):
        PyodideHost(site / "pyodide", packages=[], files={"/tmp/x": tmp_path / "missing.bin"})


def test_a_wheel_that_cannot_be_installed_stops_the_start_naming_it(site, tmp_path):
    broken = tmp_path / "ballast-1.0-py3-none-any.whl"
    broken.write_bytes(b"not a zip")
    with pytest.raises(PyodideError, match="ballast"):
        PyodideHost(site / "pyodide", packages=[], wheels=[broken])


def test_every_worker_orders_sets_of_strings_alike(site):
    """One string hash seed in every process: a notebook that prints or plots a set of names comes
    out the same in any worker (and in the tab, tests/browser/test_rerender.py)."""
    code = "[hash('cellar'), list({'TB7239175B', 'TB7239175B_data', 'DIPPR101', 'forepeak', 'aft peak'})]"
    answers = []
    for _ in range(2):
        with PyodideHost(site / "pyodide", packages=[]) as host:
            answers.append(host.run(code))
    assert answers[0] == answers[1]


# Lines a notebook writes on the Node process's stdout, where the host reads the worker's replies:
# for the ids a counter would give, a reply the host cannot use, a broken one, and a result that
# is not one.
FORGER = r"""
import js, json
MARK = "\x1ecellar-host "
for request in range(20):
    js.globalThis.process.stdout.write(MARK + "{not json\n")
    js.globalThis.process.stdout.write(MARK + json.dumps({"id": request}) + "\n")
    js.globalThis.process.stdout.write(MARK + json.dumps({"id": request, "ok": True, "value": json.dumps(json.dumps({"cells": []}))}) + "\n")
"""


def test_reply_lines_a_notebook_writes_answer_no_request(site, tmp_path):
    """A request's id is random: the forger's lines answer neither its own request nor the next
    notebook's, in the same worker, and each is judged on its own run."""
    archive, out = tmp_path / "archive", tmp_path / "out"
    archive.mkdir()
    (archive / "forger.ipynb").write_text(notebook(FORGER))
    (archive / "plain.ipynb").write_text(notebook("total = 1 + 1"))
    status = main(["rerender", str(archive), "--out", str(out), "--site", str(site), "--workers", "1"])
    report = {entry["path"]: entry for entry in json.loads((out / "report.json").read_text())["notebooks"]}
    assert status == 0
    assert (report["forger.ipynb"]["status"], report["plain.ipynb"]["status"]) == ("clean", "clean")


def test_a_notebook_that_breaks_the_sandboxs_result_is_stale_and_the_batch_goes_on(site, tmp_path):
    """Patching the sandbox's `json` (a result that is no object) makes the notebook stale with
    the reason, and the worker is replaced: the next notebook runs as it would alone."""
    archive, out = tmp_path / "archive", tmp_path / "out"
    archive.mkdir()
    (archive / "a_breaker.ipynb").write_text(notebook("import json\njson.dumps = lambda *args, **kwargs: '5'"))
    (archive / "b_plain.ipynb").write_text(notebook("total = 1 + 1"))
    status = main(["rerender", str(archive), "--out", str(out), "--site", str(site), "--workers", "1"])
    report = {entry["path"]: entry for entry in json.loads((out / "report.json").read_text())["notebooks"]}
    assert status == 0
    assert report["a_breaker.ipynb"]["reason"].startswith(
        "the worker's reply cannot be trusted: the sandbox's result is malformed (not an object)"
    )
    assert report["b_plain.ipynb"]["status"] == "clean"


# Half a line on the worker's stdout, then a loop that swallows the time limit's KeyboardInterrupt:
# the host must not wait for the line's end. The user change clears the signal that ends Node
# with `unshare` (where the worker runs as root: here and in CI).
STUCK = r"""
import js
try:
    js.globalThis.process.setuid(65534)
except Exception:
    pass
js.globalThis.process.stdout.write("half a line")
while True:
    try:
        while True:
            pass
    except KeyboardInterrupt:
        pass
"""


def _nodes_of(uid):
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:  # ended meanwhile
            continue
        if fields.get("Name", "").strip() == "node" and fields.get("Uid", "").split()[:1] == [str(uid)]:
            found.append(status.parent.name)
    return found


def test_a_stuck_notebook_that_half_writes_a_line_is_stopped_and_leaves_no_process(site, tmp_path):
    archive, out = tmp_path / "archive", tmp_path / "out"
    archive.mkdir()
    (archive / "rerender.json").write_text(json.dumps({"cell_timeout": 2, "notebook_timeout": 3}))
    (archive / "a_stuck.ipynb").write_text(notebook(STUCK))
    (archive / "b_plain.ipynb").write_text(notebook("total = 1 + 1"))
    before = _nodes_of(65534)
    status = main(["rerender", str(archive), "--out", str(out), "--site", str(site), "--workers", "1"])
    report = {entry["path"]: entry for entry in json.loads((out / "report.json").read_text())["notebooks"]}
    assert status == 0
    assert report["a_stuck.ipynb"]["reason"].startswith("the worker did not answer within")
    assert report["b_plain.ipynb"]["status"] == "clean"
    assert _nodes_of(65534) == before, "the stuck worker outlived the batch"


def test_a_notebook_is_not_blamed_for_the_time_an_earlier_ones_timer_takes(site, tmp_path):
    archive, out = tmp_path / "archive", tmp_path / "out"
    archive.mkdir()
    (archive / "rerender.json").write_text(json.dumps({"cell_timeout": 2, "notebook_timeout": 3}))
    timer = "from pyodide.code import run_js\nhandle = run_js('setTimeout(() => { while (true) {} }, 30)')"
    (archive / "a_timer.ipynb").write_text(notebook(timer))
    (archive / "b_plain.ipynb").write_text(notebook("total = 1 + 1"))
    status = main(["rerender", str(archive), "--out", str(out), "--site", str(site), "--workers", "1"])
    report = {entry["path"]: entry for entry in json.loads((out / "report.json").read_text())["notebooks"]}
    assert status == 0
    assert report["a_timer.ipynb"]["status"] == "clean"  # its own cells ran, and it left the loop behind
    assert report["b_plain.ipynb"]["status"] == "clean", report["b_plain.ipynb"]["reason"]


# Left behind for the next notebook: a patched builtin and a JavaScript global.
MEDDLER = "import builtins, js\nbuiltins.sum = lambda *args, **kwargs: 42\njs.globalThis.left = 'behind'"
VICTIM = "import js\nprint(sum([1, 2]), getattr(js.globalThis, 'left', None))"


def test_isolate_runs_every_notebook_in_a_fresh_worker(site, tmp_path):
    archive, out = tmp_path / "archive", tmp_path / "out"
    archive.mkdir()
    (archive / "a_meddler.ipynb").write_text(notebook(MEDDLER))
    victim = json.loads(notebook(VICTIM))
    victim["cells"][0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "3 None\n"}]
    (archive / "b_victim.ipynb").write_text(json.dumps(victim))
    command = ["rerender", str(archive), "--out", str(out), "--site", str(site), "--no-cache", "--isolate"]
    assert main(command) == 0
    report = {entry["path"]: entry for entry in json.loads((out / "report.json").read_text())["notebooks"]}
    assert report["b_victim.ipynb"]["status"] == "clean", report["b_victim.ipynb"]

"""`cellar rerender` when its Pyodide worker (a Node process) dies: the notebook it was running is
stale with the reason, a fresh worker takes the rest, the report is written and the command exits
1; a worker that cannot start at all stops the batch with exit status 3 and no report.

No built site is needed: the stand-in `node` of tests/unit/conftest.py ends itself when a
notebook's code holds DIE_HERE, so the real host code has to notice the death.
"""

from __future__ import annotations

import json
import os

import pytest
from tests.unit.conftest import notebook

from cellar.cli import main
from cellar.rerender.pyodide_host import ECHO_LIMIT


@pytest.fixture()
def setting(tmp_path, stand_in_site):
    site = stand_in_site
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
    (archive.parent / "bin" / "fail").touch()  # the stand-in's flag: it fails to start
    status = main(["rerender", str(archive), "--out", str(out), "--site", str(site)])
    err = capsys.readouterr().err
    assert status == 3
    assert "cellar rerender: the batch stopped after" in err and "exited (exit status 7)" in err
    assert "no report written" in err and not (out / "report.json").exists()


def rerendered(tmp_path, site, sources: dict[str, str]) -> dict:
    """The report of `cellar rerender` (which must exit 0) over notebooks NAME.ipynb of `sources`."""
    archive, out = tmp_path / "archive", tmp_path / "out"
    archive.mkdir()
    for name, source in sources.items():
        (archive / f"{name}.ipynb").write_text(notebook(source))
    assert main(["rerender", str(archive), "--out", str(out), "--site", str(site), "--workers", "1"]) == 0
    return json.loads((out / "report.json").read_text())


def test_a_forged_or_malformed_reply_makes_its_notebook_stale_and_forges_nothing_after_it(tmp_path, stand_in_site):
    """A notebook can write reply lines to its worker's stdout, or patch the sandbox into
    answering anything: a reply that is no JSON text, or a result that is no object, makes that
    notebook stale (once more in a fresh worker when the worker had run others: an earlier one may
    have done it) and replaces the worker; replies written ahead for the ids that would follow
    answer no later request, as a request's id cannot be guessed. The batch goes on and exits 0."""
    sources = {"a": "FORGE_HERE = 1", "b": "FORGE_AHEAD = 1", "c": "x = 1", "d": "MALFORMED_HERE = 1", "e": "y = 2"}
    report = rerendered(tmp_path, stand_in_site, sources)
    reasons = {entry["path"]: entry["reason"] for entry in report["notebooks"]}
    assert reasons["a.ipynb"] == (
        "the worker's reply cannot be trusted: the reply's value is not JSON text: '5'; a fresh worker was started"
    )
    assert reasons["d.ipynb"].startswith(
        "the worker's reply cannot be trusted: the sandbox's result is malformed (not an object)"
    )
    assert [reasons[name] for name in ("b.ipynb", "c.ipynb", "e.ipynb")] == ["not run by the stand-in"] * 3
    assert report["worker_deaths"] == 0


def test_a_reply_or_result_nested_too_deep_makes_its_notebook_stale_not_the_batch_fail(tmp_path, stand_in_site):
    """A notebook can write a reply line, or forge its sandbox's result, nested so deep that
    json stops with a RecursionError (not a ValueError): the line is no reply, the result makes
    that notebook stale, and so does a well-formed result nested deeper than any output is; the
    batch goes on and writes its report."""
    sources = {"a": "x = 1", "b": "DEEP_LINE = 1", "c": "DEEP_RESULT = 1", "d": "NESTED_RESULT = 1", "e": "y = 2"}
    reasons = {entry["path"]: entry["reason"] for entry in rerendered(tmp_path, stand_in_site, sources)["notebooks"]}
    assert [reasons[name] for name in ("a.ipynb", "b.ipynb", "e.ipynb")] == ["not run by the stand-in"] * 3
    assert reasons["c.ipynb"].startswith(
        "the worker's reply cannot be trusted: the sandbox's result is not JSON (maximum recursion depth exceeded"
    )
    assert reasons["d.ipynb"].startswith(
        "the worker's reply cannot be trusted: the sandbox's result is malformed (it nests more than 100 levels deep)"
    )


def test_a_line_without_end_is_cut_off_and_its_notebook_is_stale(tmp_path, stand_in_site):
    """Code run in a worker can write to its stdout without end (or a notebook's outputs can run
    to gigabytes): the host holds no more than MAX_REPLY of a line, ends that worker, and the
    batch goes on in a fresh one."""
    sources = {"a": "x = 1", "b": "ENDLESS_LINE = 1", "c": "y = 2"}
    reasons = {entry["path"]: entry["reason"] for entry in rerendered(tmp_path, stand_in_site, sources)["notebooks"]}
    assert reasons["b.ipynb"] == (
        "the notebook's outputs are too large to read back (the worker wrote a line of more than 256 MB); "
        "a fresh worker was started"
    )
    assert reasons["a.ipynb"] == reasons["c.ipynb"] == "not run by the stand-in"


def test_what_a_worker_writes_besides_its_replies_is_echoed_cut_and_escaped(tmp_path, stand_in_site, capfd):
    """A notebook's os.write(1 or 2, ...) reaches the worker's stderr and stdout: the host echoes
    it on its own stderr with control characters as escapes (no recoloured console, no forged
    status line) and at most ECHO_LIMIT of it per notebook, so a flood fills no CI log."""
    report = rerendered(tmp_path, stand_in_site, {"a": "FLOOD_OUTPUT = 1", "b": "y = 2"})
    err = capfd.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "\\x1b]0;PWNED\\x07\\x1b[31mFAKE: 0 stale" in err  # shown, as escapes
    assert f"wrote more than {ECHO_LIMIT // 1024} KB besides its reply: the rest is not shown" in err
    assert len(err) < 2 * ECHO_LIMIT  # of the 4 MB written
    reasons = {entry["path"]: entry["reason"] for entry in report["notebooks"]}
    assert reasons == {"a.ipynb": "not run by the stand-in", "b.ipynb": "not run by the stand-in"}

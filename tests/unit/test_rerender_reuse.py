"""`cellar rerender` into the folder of a previous run: a notebook whose bytes, inputs and
environment are unchanged keeps its result; one whose input blob changed runs again though its
own bytes did not; a deleted one's fresh notebook goes; --no-cache runs everything.

No built site is needed: the stand-in `node` of tests/unit/conftest.py answers every run.
"""

from __future__ import annotations

import json
import os

import pytest
from tests.unit.conftest import notebook

from cellar.cli import main
from cellar.rerender import batch, reuse
from cellar.rerender.archive import add_to_archive


@pytest.fixture()
def setting(tmp_path, monkeypatch, stand_in_site):
    site = stand_in_site
    archive = tmp_path / "archive"
    (archive / "2017" / "17-042 Ballast").mkdir(parents=True)
    sources = {
        "2017/17-042 Ballast/a.ipynb": 'pd.read_csv(r"\\\\srv\\projects\\17-042\\tanks.csv")',
        "2017/17-042 Ballast/b.ipynb": "y = 2",
        "c.ipynb": "z = 3",
    }
    for name, source in sources.items():
        (archive / name).write_text(notebook(source))
    tanks = tmp_path / "tanks.csv"
    tanks.write_text("tank,volume\nFP,412.1\n")
    assert not add_to_archive(str(archive), files=[("\\\\srv\\projects\\17-042\\tanks.csv", str(tanks))]).errors
    runs: list[str] = []
    real = batch.Worker.run
    monkeypatch.setattr(
        batch.Worker, "run", lambda self, request, *a: runs.append(request["cwd"]) or real(self, request, *a)
    )
    return archive, site, tmp_path / "out", tanks, runs


def rerender(archive, site, out, *extra) -> int:
    return main(["rerender", str(archive), "--out", str(out), "--site", str(site), *extra])


def test_unchanged_notebooks_keep_their_result_and_a_changed_input_runs_again(setting, capsys):
    archive, site, out, tanks, runs = setting
    assert rerender(archive, site, out) == 0
    first = json.loads((out / "report.json").read_text())
    assert len(runs) == 3 and len(first["keys"]) == 3
    runs.clear()
    assert rerender(archive, site, out) == 0
    second = json.loads((out / "report.json").read_text())
    assert runs == [] and second["reuse"] == {"reused": 3, "redone": 0, "removed": []}
    assert second["notebooks"] == first["notebooks"]
    assert "3 reused from the previous run" in capsys.readouterr().err

    (archive / "c.ipynb").write_text(notebook("z = 4"))  # its own bytes
    tanks.write_text("tank,volume\nFP,498.9\n")  # a's input: a new blob under the same logical path
    assert not add_to_archive(str(archive), files=[("\\\\srv\\projects\\17-042\\tanks.csv", str(tanks))]).errors
    assert rerender(archive, site, out) == 0
    third = json.loads((out / "report.json").read_text())
    assert sorted(runs) == ["/", "/2017/17-042 Ballast"]  # c and a ran; b kept its result
    assert third["reuse"]["reused"] == 1

    runs.clear()
    (archive / "2017" / "17-042 Ballast" / "b.ipynb").unlink()
    assert rerender(archive, site, out) == 0
    fourth = json.loads((out / "report.json").read_text())
    assert runs == [] and fourth["reuse"]["removed"] == ["2017/17-042 Ballast/b.ipynb"]
    assert not (out / "2017" / "17-042 Ballast" / "b.ipynb").exists()

    assert rerender(archive, site, out, "--no-cache") == 0
    assert len(runs) == 2


def test_a_notebook_with_no_fresh_copy_this_run_loses_the_one_an_earlier_run_wrote(setting):
    """A notebook that turned unreadable kept its earlier `clean` fresh copy, which the site
    published as its fresh outputs while the report said stale."""
    archive, site, out, _, _ = setting
    assert rerender(archive, site, out) == 0
    assert (out / "c.ipynb").is_file()
    (archive / "c.ipynb").write_text("{ not a notebook")
    assert rerender(archive, site, out) == 0
    entry = {e["path"]: e for e in json.loads((out / "report.json").read_text())["notebooks"]}["c.ipynb"]
    assert entry["status"] == "stale" and not (out / "c.ipynb").exists()


@pytest.mark.parametrize("where", ["a folder of the user's", "inside the archive", "holding the archive", "a file"])
def test_an_output_folder_that_is_no_place_for_fresh_notebooks_is_refused_untouched(setting, capsys, where):
    """Into a folder of the user's, its own report.json was overwritten; inside the archive, the
    fresh copies became notebooks of the archive; holding it, nothing ran."""
    archive, site, out, _, runs = setting
    out = {
        "a folder of the user's": out,
        "inside the archive": archive / "2017" / "fresh",
        "holding the archive": archive.parent,
        "a file": out,
    }[where]
    if where == "a folder of the user's":
        out.mkdir()
        (out / "report.json").write_text('{"user": "config"}')
    elif where == "a file":
        out.write_text("precious")
    before = sorted((path, path.read_bytes()) for path in archive.parent.rglob("*") if path.is_file())
    assert rerender(archive, site, out) == 2
    message = capsys.readouterr().err
    assert message.startswith(f"cellar rerender: {out}: ") and runs == []
    assert sorted((path, path.read_bytes()) for path in archive.parent.rglob("*") if path.is_file()) == before


def test_nothing_is_written_through_a_link_in_the_output_folder(setting, tmp_path):
    """A link at `report.json` had the report written into the file it led to, and a linked
    folder had the fresh notebooks written out of the output folder."""
    archive, site, out, _, _ = setting
    assert rerender(archive, site, out) == 0
    victim = tmp_path / "victim"
    victim.mkdir()
    old_report = '{"archive": "a copy the user keeps", "notebooks": []}'
    (victim / "precious.txt").write_text(old_report)
    (out / "report.json").unlink()
    (out / "report.json").symlink_to(victim / "precious.txt")
    for fresh in (out / "2017").rglob("*"):
        fresh.unlink() if fresh.is_file() else None
    (out / "2017" / "17-042 Ballast").rmdir()
    (out / "2017").rmdir()
    (out / "2017").symlink_to(victim)
    assert rerender(archive, site, out, "--no-cache") == 0
    assert sorted(path.name for path in victim.iterdir()) == ["precious.txt"]
    assert (victim / "precious.txt").read_text() == old_report
    assert not (out / "report.json").is_symlink() and not (out / "2017").is_symlink()
    assert (out / "2017" / "17-042 Ballast" / "a.ipynb").is_file()


def test_what_a_killed_run_left_is_never_taken_for_the_report_s(setting):
    """A run killed after writing a fresh copy, its notebook then changed back: the next run took
    the other run's copy for the one its report recorded, and the index published it under the
    archive file's revision. A fresh copy for a notebook withdrawn since stayed, and was published."""
    archive, site, out, _, runs = setting
    assert rerender(archive, site, out) == 0
    runs.clear()
    (out / "c.ipynb").write_text(notebook("z = 'what a killed run of an edited notebook wrote'"))
    (out / "2025").mkdir()
    (out / "2025" / "withdrawn.ipynb").write_text(notebook("w = 1"))
    (out / ".tmp-x1y2").write_text("half a report")  # what a killed run was writing
    os.utime(out / ".tmp-x1y2", (1, 1))
    assert rerender(archive, site, out) == 0
    assert runs == ["/"]  # c ran again; a and b kept their results
    assert "killed run" not in (out / "c.ipynb").read_text()
    assert not (out / "2025" / "withdrawn.ipynb").exists() and not (out / ".tmp-x1y2").exists()
    report = json.loads((out / "report.json").read_text())
    assert (
        sorted(report["fresh"])
        == sorted(report["keys"])
        == ["2017/17-042 Ballast/a.ipynb", "2017/17-042 Ballast/b.ipynb", "c.ipynb"]
    )


def test_inputs_named_by_code_or_under_the_folder():
    pathmap = {
        "files": {
            "\\\\SRV\\Projects\\17-042\\tanks.csv": "sha256:" + "a" * 64,
            "/2017/17-042 Ballast/inputs/local.csv": "sha256:" + "b" * 64,
            "P:\\other\\x.csv": "sha256:" + "c" * 64,
        },
        "trees": {"\\\\srv\\projects\\2020\\20-004": {"inputs/lines.csv": "sha256:" + "d" * 64}},
    }
    code = [
        't = pd.read_csv("\\\\\\\\srv\\\\projects\\\\17-042\\\\tanks.csv")',
        'root = r"\\\\srv\\projects\\2020\\20-004"',
    ]
    found = reuse.inputs_named(pathmap, "2017/17-042 Ballast", code)
    assert set(found) == {
        "file:\\\\SRV\\Projects\\17-042\\tanks.csv",
        "file:/2017/17-042 Ballast/inputs/local.csv",
        "tree:\\\\srv\\projects\\2020\\20-004",
    }


def test_an_unknown_scheduler_is_refused_before_any_notebook_runs(setting, capsys):
    archive, site, out, _, runs = setting
    assert rerender(archive, site, out, "--scheduler", "yarn") == 2
    assert "unknown scheduler 'yarn'" in capsys.readouterr().err and runs == [] and not out.exists()

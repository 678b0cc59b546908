"""What `cellar rerender` reads of an archive besides its notebooks: its own files (rerender.json,
pathmap.json, requirements.txt) and its blobs, as untrusted as the notebooks, and what it prints of
them. No built site is needed: the stand-in `node` of tests/unit/conftest.py answers for Pyodide.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from tests.unit.conftest import notebook

from cellar.cli import main
from cellar.rerender.report import summary

SECRET = "TOPSECRET-VERSION-42"


@pytest.fixture()
def archive(tmp_path):
    folder = tmp_path / "archive"
    folder.mkdir()
    for name in ("a", "b"):
        (folder / f"{name}.ipynb").write_text(notebook("x = 1"))
    return folder


@pytest.mark.parametrize("name", ["rerender.json", "pathmap.json", "requirements.txt"])
def test_an_archive_file_linked_out_of_the_archive_is_refused_unread(name, archive, tmp_path, stand_in_site, capsys):
    """A link out of the archive is no file of it: `requirements.txt -> ~/.netrc` had its words
    sent to the package index as requirements, a linked pathmap.json had its keys printed."""
    host_file = tmp_path / "host-secret"
    host_file.write_text(f'{{"{SECRET}": 1}}\nnumpy=={SECRET}\n')
    (archive / name).symlink_to(host_file)
    status = main(["rerender", str(archive), "--out", str(tmp_path / "out"), "--site", str(stand_in_site)])
    err = capsys.readouterr().err
    assert status == 2
    assert f"{name}: a symbolic link to {host_file}, outside the archive: not followed" in err
    assert SECRET not in err and not (tmp_path / "out" / "report.json").exists()


def test_a_blob_that_cannot_be_used_is_named_and_the_batch_goes_on(archive, tmp_path, stand_in_site, capsys):
    """A blob reached through a linked folder (`blobs/sha256/ab -> another archive's`) is not
    read, whatever it holds; before, the link was checked on the file's own name only, and a
    notebook printed another archive's data. Nor does the batch stop: the notebooks run, and one
    that reads the blob fails there."""
    data = b"segment,description\nS1,fire pump suction\n"
    digest = hashlib.sha256(data).hexdigest()
    elsewhere = tmp_path / "elsewhere" / digest[:2]
    elsewhere.mkdir(parents=True)
    (elsewhere / digest).write_bytes(data)
    (archive / "blobs" / "sha256").mkdir(parents=True)
    (archive / "blobs" / "sha256" / digest[:2]).symlink_to(elsewhere, target_is_directory=True)
    pathmap = {"format": 1, "files": {"/data/segments.csv": f"sha256:{digest}"}}
    (archive / "pathmap.json").write_text(json.dumps(pathmap))
    out = tmp_path / "out"
    status = main(["rerender", str(archive), "--out", str(out), "--site", str(stand_in_site)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert f"blob sha256:{digest} cannot be used: a folder on its path is a symbolic link out of the archive" in err
    assert "the notebooks that read it fail there" in err
    report = json.loads((out / "report.json").read_text())
    assert sorted(entry["path"] for entry in report["notebooks"] if entry["path"].endswith(".ipynb")) == [
        "a.ipynb",
        "b.ipynb",
    ]


@pytest.mark.parametrize(
    ("setting", "problem"),
    [
        ('{"notebook_timeout": Infinity}', "notebook_timeout is a number of seconds above 0 and at most 3,600"),
        ('{"cell_timeout": 1e6}', "cell_timeout is a number of seconds above 0 and at most 3,600"),
        ('{"memory_mb": 16384}', "memory_mb is a whole number of MB from 1024 to 4096"),
        ('{"sanitizers": [["GOODSUM", "\\\\9"]]}', "the replacement '\\\\9' of sanitizer 'GOODSUM' is not valid"),
    ],
)
def test_limits_an_archive_may_not_set_are_refused_before_anything_runs(
    setting, problem, archive, tmp_path, stand_in_site, capsys
):
    """rerender.json is the archive's: it may not hold a worker for good (`Infinity` is JSON to
    Python), give it the host's memory, or name a group its regex lacks, which failed mid-batch."""
    (archive / "rerender.json").write_text(setting)
    status = main(["rerender", str(archive), "--out", str(tmp_path / "out"), "--site", str(stand_in_site)])
    assert status == 2
    assert f"rerender.json: {problem}" in capsys.readouterr().err


def test_the_summary_prints_what_notebooks_wrote_as_escapes():
    """A stale reason quotes the exception a notebook raised, a requirement its name: neither may
    set the terminal's title, clear it or forge a line of the table."""
    forged = "RuntimeError: \x1b]0;PWNED\x07\x1b[2J\x1b[Hstatus     notebooks\nclean 999"
    report = {
        "counts": {"clean": 0, "drifted": 0, "stale": 1},
        "top_reasons": [{"notebooks": 1, "reason": forged}],
        "environment": {"unavailable": {"evil\x1b[31m": "no build\rclean 5"}},
        "timings": {"total_seconds": 1.0, "workers": 1, "worker_start_seconds": 0.5},
    }
    table = summary(report)
    assert "\x1b" not in table and "\x07" not in table and "\r" not in table
    assert "\\x1b]0;PWNED\\x07" in table and "status     notebooks\\nclean 999" in table
    assert table.count("\n") == summary({**report, "top_reasons": [{"notebooks": 1, "reason": "x"}]}).count("\n")

"""The `cellar` console script: version, help, and the revision command."""

import os
import subprocess
import sys

from tests.unit.conftest import deadline

import cellar
from cellar.cli import main
from cellar.ingest.provenance import revision


def test_version_is_the_package_version():
    result = subprocess.run([sys.executable, "-m", "cellar", "--version"], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == f"cellar {cellar.__version__}"


def test_help_lists_the_commands(capsys):
    try:
        main(["--help"])
    except SystemExit as exit:
        assert exit.code == 0
    assert "revision" in capsys.readouterr().out


def test_revision_prints_sha256_like_sha256sum(tmp_path, capsys):
    path = tmp_path / "note.txt"
    text = "GZ at 30 degrees: 0.82 m\n"
    path.write_text(text)
    assert main(["revision", str(path)]) == 0
    assert capsys.readouterr().out == f"{revision(text)}  {path}\n"


def test_revision_of_a_missing_file_names_it_and_fails(tmp_path, capsys):
    missing = tmp_path / "missing.csv"
    assert main(["revision", str(missing)]) == 1
    assert str(missing) in capsys.readouterr().err


def test_revision_of_a_fifo_or_a_device_names_it_and_goes_on(tmp_path, capsys):
    """Read to their end, /dev/zero never ends and a FIFO waits for a writer: both hung."""
    fifo, note = tmp_path / "pipe.csv", tmp_path / "note.txt"
    os.mkfifo(fifo)
    note.write_text("x")
    with deadline(20):
        assert main(["revision", str(fifo), "/dev/zero", str(note)]) == 1
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"{fifo}: not a regular file (a folder, a FIFO, a socket or a device): not read",
        "/dev/zero: not a regular file (a folder, a FIFO, a socket or a device): not read",
    ]
    assert out == f"{revision('x')}  {note}\n"


def test_revision_writes_a_file_names_control_characters_as_escapes(tmp_path, capsys):
    named = tmp_path / "n\x1b]0;T\x07.txt"
    named.write_text("x")
    assert main(["revision", str(named)]) == 0
    assert "\x1b" not in capsys.readouterr().out

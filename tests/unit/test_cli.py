"""The `cellar` console script: version, help, and the revision command."""

import subprocess
import sys

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

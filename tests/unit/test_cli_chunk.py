"""`cellar chunk`: chunk records on stdout, problems and a summary on stderr, the batch goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cellar.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NOTEBOOKS = FIXTURES / "notebooks"
CONTRACT = ["id", "kind", "path", "cell", "output", "revision", "quote", "start", "end", "text", "meta"]


def records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_a_folder_with_bad_files_writes_the_good_ones_and_exits_1(capsys):
    status = main(["chunk", str(NOTEBOOKS), "--jsonl"])
    out, err = capsys.readouterr()
    assert status == 1
    written = records(out)
    assert {record["path"] for record in written} == {
        "ballast_v4.ipynb", "future_4_99.ipynb", "stability_v3.ipynb",
    }  # fmt: skip
    assert all(list(record) == CONTRACT for record in written)
    problems = err.splitlines()
    assert "invalid/bad_json.ipynb: invalid JSON at line 4, column 2: Expecting ',' delimiter" in problems
    assert "invalid/nbformat2.ipynb: nbformat 2 is not supported (only nbformat 3 and 4)" in problems
    assert any(line.startswith("future_4_99.ipynb: nbformat 4.99 is newer") for line in problems)
    assert "cellar chunk: 3 files read, 4 rejected" in problems
    kinds = {kind: sum(record["kind"] == kind for record in written) for kind in ("code", "scalar", "table")}
    assert f"code {kinds['code']}" in err and f"scalar {kinds['scalar']}" in err
    assert "parts not chunked: 4 (" in err and "widget view 1" in err


def test_valid_files_exit_0_and_paths_are_relative_to_their_folder(capsys):
    status = main(["chunk", str(NOTEBOOKS / "ballast_v4.ipynb"), str(FIXTURES / "documents"), "--jsonl"])
    out, err = capsys.readouterr()
    assert status == 0
    paths = sorted({record["path"] for record in records(out)})
    assert paths == ["ballast_v4.ipynb", "forepeak.txt", "stability_notes.md"]
    assert "cellar chunk: 3 files read, 0 rejected" in err


def test_root_option_and_missing_paths(capsys, tmp_path):
    status = main(["chunk", str(NOTEBOOKS / "stability_v3.ipynb"), str(tmp_path / "nope"), "--jsonl",
                   "--root", str(FIXTURES)])  # fmt: skip
    out, err = capsys.readouterr()
    assert status == 1
    assert {record["path"] for record in records(out)} == {"notebooks/stability_v3.ipynb"}
    assert f"{tmp_path / 'nope'}: no such file or folder" in err.splitlines()


def test_without_jsonl_only_the_summary_is_written(capsys):
    assert main(["chunk", str(NOTEBOOKS / "ballast_v4.ipynb"), "--stats"]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert "windowed text:" in err and "covered (100.00%)" in err and "duplication 1.000" in err


def test_rules_put_metadata_into_every_record(capsys, tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"pattern": r"^(?P<year>\d{4})/", "meta": {"vessel_class": "tug"}}]))
    folder = tmp_path / "archive" / "2016"
    folder.mkdir(parents=True)
    (folder / "tow.ipynb").write_bytes((NOTEBOOKS / "stability_v3.ipynb").read_bytes())
    assert main(["chunk", str(tmp_path / "archive"), "--jsonl", "--rules", str(rules)]) == 0
    written = records(capsys.readouterr().out)
    assert written and all(record["meta"]["year"] == 2016 for record in written)
    assert all(record["meta"]["vessel_class"] == "tug" for record in written)


def test_bad_rules_stop_before_any_file_is_read(capsys, tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text('[{"pattern": "(?P<decade>x)"}]')
    assert main(["chunk", str(NOTEBOOKS), "--jsonl", "--rules", str(rules)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "group 'decade' is not one of" in err


def test_ids_are_identical_across_runs_with_different_hash_seeds():
    def run(seed: str) -> list[str]:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        command = [sys.executable, "-m", "cellar", "chunk", str(NOTEBOOKS), str(FIXTURES / "documents"), "--jsonl"]
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        assert result.returncode == 1  # the invalid fixtures
        return [record["id"] for record in records(result.stdout)]

    first = run("1")
    assert first == run("2")
    assert len(set(first)) == len(first)

"""`cellar synth`: a deterministic synthetic archive, its nightly change set and its check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cellar.cli import main
from cellar.ingest import synth
from cellar.ingest.notebook import load_notebook
from cellar.ingest.synth import check_archive, corpus_templates, generate_archive, mutate_archive, read_manifest
from cellar.rerender.archive import check_archive as check_blobs

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes_and_another_seed_differs(tmp_path):
    generate_archive(tmp_path / "a", 120, seed=7)
    generate_archive(tmp_path / "b", 120, seed=7)
    generate_archive(tmp_path / "c", 120, seed=8)
    a, b, c = _files(tmp_path / "a"), _files(tmp_path / "b"), _files(tmp_path / "c")
    assert a == b
    assert a != c
    assert sum(name.endswith(".ipynb") for name in a) == 120


def test_several_processes_write_the_same_archive(tmp_path, monkeypatch):
    monkeypatch.setattr(synth, "PARALLEL_SPAN", 15)  # spans of 15 notebooks: 7 tasks
    generate_archive(tmp_path / "one", 100, seed=9, workers=1)
    generate_archive(tmp_path / "two", 100, seed=9, workers=2)
    assert _files(tmp_path / "one") == _files(tmp_path / "two")


def test_layout_metadata_and_pathmap(tmp_path):
    manifest = generate_archive(tmp_path / "a", 150, seed=1)
    years = set()
    for path in manifest["notebooks"]:
        year, folder, name = path.split("/")
        code, _, subject = folder.partition(" ")
        assert year.isdigit() and 2005 <= int(year) <= 2025 and code.startswith(year[2:] + "-") and subject
        notebook = load_notebook(tmp_path / "a" / path, tmp_path / "a")  # our reader accepts it
        meta = notebook.metadata["cellar"]
        assert meta["project"] == code and meta["year"] == int(year) and meta["author"] and meta["vessel_class"]
        years.add(int(year))
    assert len(years) > 10
    report = check_blobs(str(tmp_path / "a"))  # the path map and blob store are cellar's own format
    assert not report.missing and not report.corrupt
    pathmap = json.loads((tmp_path / "a" / "pathmap.json").read_text())
    assert pathmap["format"] == 1 and pathmap["files"]


def test_check_finds_a_flipped_byte_a_missing_file_and_an_extra_notebook(tmp_path):
    root = tmp_path / "a"
    manifest = generate_archive(root, 40, seed=2)
    assert check_archive(root) == []
    first, second = sorted(manifest["notebooks"])[:2]
    data = bytearray((root / first).read_bytes())
    data[100] ^= 1
    (root / first).write_bytes(bytes(data))
    (root / second).unlink()
    (root / "2020" / "extra.ipynb").parent.mkdir(exist_ok=True)
    (root / "2020" / "extra.ipynb").write_text("{}")
    problems = check_archive(root)
    assert any(p.startswith(first) and "SHA-256" in p for p in problems)
    assert any(p.startswith(second) and "missing" in p for p in problems)
    assert any(p.startswith("2020/extra.ipynb") for p in problems)
    assert main(["synth", "--check", str(root)]) == 1


def test_mutate_changes_adds_and_deletes_deterministically(tmp_path):
    for name in ("a", "b"):
        generate_archive(tmp_path / name, 200, seed=3)
    before = _files(tmp_path / "a")
    change = mutate_archive(tmp_path / "a", 0.05)
    assert main(["synth", "--mutate", "0.05", str(tmp_path / "b")]) == 0
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert (len(change.changed), len(change.added), len(change.deleted)) == (6, 2, 2)
    after = _files(tmp_path / "a")
    for path in change.changed:
        assert before[path] != after[path]
    assert all(path not in after for path in change.deleted)
    assert all(path not in before and path in after for path in change.added)
    untouched = set(before) - set(change.changed) - set(change.deleted) - {"synth.json", "pathmap.json"}
    assert all(before[path] == after[path] for path in untouched)
    assert check_archive(tmp_path / "a") == []
    assert read_manifest(tmp_path / "a")["generation"] == 1


def test_check_reads_nothing_outside_the_archive_its_manifest_names(tmp_path):
    """A hand-edited manifest named `/etc/hostname` and `../../etc/hostname`, which were read and
    hashed, and `/dev/zero`, read for ever (a hostile-input sweep)."""
    root = tmp_path / "a"
    generate_archive(root, 5, seed=1)
    manifest = json.loads((root / synth.MANIFEST).read_text())
    manifest["files"].update({"/etc/hostname": "0" * 64, "../../etc/hostname": "0" * 64, "/dev/zero": "0" * 64})
    (root / synth.MANIFEST).write_text(json.dumps(manifest))
    problems = check_archive(root)
    for path in ("/etc/hostname", "../../etc/hostname", "/dev/zero"):
        assert f"{path}: outside the archive: not read" in problems


def test_mutate_touches_nothing_outside_the_archive(tmp_path):
    """A hand-edited manifest naming `../victims/precious.ipynb` had it, and its folder, deleted;
    a link placed at a fixed temporary name (`.synth.json.tmp`) had its target overwritten."""
    root = tmp_path / "a"
    generate_archive(root, 20, seed=1)
    victims = tmp_path / "victims"
    victims.mkdir()
    (victims / "precious.ipynb").write_text("precious")
    (root / ".synth.json.tmp").symlink_to(victims / "precious.ipynb")
    assert mutate_archive(root, 0.5).deleted  # the temporary names are fresh: the link is left alone
    assert (victims / "precious.ipynb").read_text() == "precious"
    manifest = json.loads((root / synth.MANIFEST).read_text())
    entry = manifest["notebooks"].pop(sorted(manifest["notebooks"])[0])
    manifest["notebooks"]["../victims/precious.ipynb"] = entry
    (root / synth.MANIFEST).write_text(json.dumps(manifest))
    before = _files(root)
    with pytest.raises(ValueError, match="manifest names ../victims/precious.ipynb, outside the archive: nothing"):
        mutate_archive(root, 1.0)
    assert _files(root) == before and (victims / "precious.ipynb").read_text() == "precious"


def test_cli_names_a_manifest_or_an_out_folder_it_cannot_use(tmp_path, capsys):
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / synth.MANIFEST).write_text("[" * 100_000)
    assert main(["synth", "--check", str(deep)]) == 2
    assert "not a synthetic archive's manifest" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(["synth", "--notebooks", "3", "--out", str(tmp_path / "file")]) == 2
    assert capsys.readouterr().err.startswith("cellar synth: ")


def test_cli_writes_and_checks(tmp_path, capsys):
    assert main(["synth", "--notebooks", "30", "--out", str(tmp_path / "a"), "--seed", "4"]) == 0
    assert main(["synth", "--check", str(tmp_path / "a")]) == 0
    assert main(["synth", "--notebooks", "30", "--out", str(tmp_path / "a")]) == 2  # not empty
    assert "not empty" in capsys.readouterr().err


@pytest.mark.skipif(
    not (CORPUS / "manifest.tsv").is_file(), reason="../shared/corpus is absent (beside the checkout in CI)"
)
def test_corpus_templates_leave_out_no_derivatives(tmp_path):
    chosen = corpus_templates(CORPUS)
    assert chosen and not any("jakevdp" in path for path in chosen)
    assert not any(path.startswith("edge/") for path in chosen)
    manifest = generate_archive(tmp_path / "a", 60, seed=5, templates=CORPUS)
    assert any(source.startswith("corpus/") for source in manifest["templates"])
    assert check_archive(tmp_path / "a") == []

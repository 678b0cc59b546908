"""What an incremental build takes from the last one instead of redoing it: a file's SHA-256 from
its stamp (git's racily-clean rule), the shard files whose raw content is unchanged, the IVF fit
when the rows are the same; and what it must still give: a cold build's shard, byte for byte."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

import cellar.ingest.discovery as discovery
import cellar.retrieval.sharding as sharding
from cellar.cli import main
from cellar.ingest.synth import generate_archive, mutate_archive
from cellar.retrieval import incremental, packing, publish
from cellar.retrieval.analysis import AnalyzerSettings
from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.index import build_index_from_directory
from cellar.retrieval.publish import write_shard
from cellar.retrieval.search import Searcher
from cellar.retrieval.shard import MANIFEST, open_shard
from cellar.retrieval.stamps import RACY_NS, Stamp, clean

MODEL = str(default_model_dir())
NOTEBOOKS = 240
GOLD = Path(__file__).resolve().parents[2] / "demo" / "gold.jsonl"


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("synth") / "archive"
    generate_archive(root, NOTEBOOKS, seed=5)
    return root


def _copy(archive: Path, tmp_path: Path, age_s: float = 60) -> Path:
    """A copy of the archive whose files last changed ``age_s`` seconds ago (safely before any
    build: their stamps are clean)."""
    root = tmp_path / "archive"
    shutil.copytree(archive, root)
    then = time.time_ns() - int(age_s * 1e9)
    for path in root.rglob("*"):
        os.utime(path, ns=(then, then))
    return root


def _build(root: Path, cache: Path):
    return build_index_from_directory(root, MODEL, cache=cache, workers=1)


def _cold(root: Path) -> dict[str, bytes]:
    return sharding.shard_files(build_index_from_directory(root, MODEL, workers=1).index)


def _on_disk(shard: Path) -> dict[str, bytes]:
    shard = shard.resolve()
    return {path.relative_to(shard).as_posix(): path.read_bytes() for path in shard.rglob("*") if path.is_file()}


def _reads(monkeypatch) -> list[str]:
    """The archive files the next builds read (their bytes, not their stamps)."""
    read, real = [], discovery.read_document
    monkeypatch.setattr(discovery, "read_document", lambda path, root, *a: read.append(path) or real(path, root, *a))
    return read


def test_a_stamp_holds_only_for_the_same_file_changed_safely_before_it_was_hashed(tmp_path):
    file = tmp_path / "a.ipynb"
    file.write_bytes(b"{}" * 10)
    then = time.time_ns() - 10 * RACY_NS
    os.utime(file, ns=(then, then))
    info = os.lstat(file)

    def stamp(size=0, mtime=0, ctime=0, inode=0, checked=None):
        at = time.time_ns() if checked is None else checked
        return Stamp(
            info.st_size + size, info.st_mtime_ns + mtime, info.st_ctime_ns + ctime, info.st_ino + inode, "0" * 64, at
        )

    assert clean(stamp(), info)
    assert not clean(stamp(size=1), info)
    assert not clean(stamp(mtime=1), info)
    assert not clean(stamp(ctime=1), info)
    assert not clean(stamp(inode=1), info)
    # hashed less than RACY_NS after its last change: the file could have changed again within
    # the same timestamp tick, so the stamp proves nothing
    assert not clean(stamp(checked=then + RACY_NS - 1), info)
    assert clean(stamp(checked=then + RACY_NS), info)
    assert not clean(None, info)


def test_unchanged_files_are_not_read_and_a_touched_one_is_read_and_reused(archive, tmp_path, monkeypatch):
    root = _copy(archive, tmp_path)
    cache = tmp_path / "cache"
    first = _build(root, cache)
    assert len(first.redone) == NOTEBOOKS
    read = _reads(monkeypatch)
    second = _build(root, cache)
    assert read == [] and len(second.reused) == NOTEBOOKS and not second.redone

    touched = sorted(root.glob("*/*/*.ipynb"))[7]
    then = time.time_ns() - 30 * 10**9  # a new mtime, the same bytes
    os.utime(touched, ns=(then, then))
    third = _build(root, cache)
    name = touched.relative_to(root).as_posix()
    assert [Path(path) for path in read] == [touched]  # read and hashed again ...
    assert name in third.reused and not third.redone  # ... and its part reused: its bytes are the same
    fourth = _build(root, cache)
    assert len(read) == 1 and len(fourth.reused) == NOTEBOOKS  # its new stamp is clean


def test_bytes_changed_with_size_mtime_and_inode_kept_within_the_racy_window_are_hashed_again(
    archive, tmp_path, monkeypatch
):
    root = _copy(archive, tmp_path)
    cache = tmp_path / "cache"
    victim = sorted(root.glob("*/*/*.ipynb"))[3]
    now = time.time_ns()
    os.utime(victim, ns=(now, now))  # changed just before the build: racily clean in its record
    _build(root, cache)
    data = victim.read_bytes()
    at = data.index(b'"cells"')
    at += next(i for i, byte in enumerate(data[at:]) if chr(byte).isdigit())
    changed = data[:at] + (b"7" if data[at : at + 1] != b"7" else b"3") + data[at + 1 :]
    inode = os.lstat(victim).st_ino
    with open(victim, "r+b") as handle:  # in place: the same inode, the same size
        handle.write(changed)
    os.utime(victim, ns=(now, now))  # and the mtime the build recorded
    info = os.lstat(victim)
    assert (info.st_size, info.st_mtime_ns, info.st_ino) == (len(data), now, inode)
    read = _reads(monkeypatch)
    after = _build(root, cache)
    name = victim.relative_to(root).as_posix()
    assert [Path(path) for path in read] == [victim] and after.redone == [name]
    assert sharding.shard_files(after.index) == _cold(root)


def test_bytes_rewritten_in_place_with_size_and_mtime_kept_are_seen_by_the_change_time(archive, tmp_path, monkeypatch):
    """`unzip -o` or `tar -x` of a newer copy whose files all carry one fixed date rewrites a file
    in place (same inode), at the same size and with the same mtime: the shard kept citing the old
    text. The kernel moves the change time, and no one can set it back."""
    root = _copy(archive, tmp_path)
    cache = tmp_path / "cache"
    victim = sorted(root.glob("*/*/*.ipynb"))[5]
    fixed = time.time_ns() - 60 * 10**9  # long before the build: a clean stamp
    os.utime(victim, ns=(fixed, fixed))
    _build(root, cache)
    data = victim.read_bytes()
    at = data.index(b'"cells"')
    at += next(i for i, byte in enumerate(data[at:]) if chr(byte).isdigit())
    with open(victim, "r+b") as handle:
        handle.write(data[:at] + (b"7" if data[at : at + 1] != b"7" else b"3") + data[at + 1 :])
    os.utime(victim, ns=(fixed, fixed))
    read = _reads(monkeypatch)
    after = _build(root, cache)
    assert [Path(path) for path in read] == [victim] and after.redone == [victim.relative_to(root).as_posix()]
    assert sharding.shard_files(after.index) == _cold(root)


def _answers(shard: Path, model) -> list[list[tuple[str, float]]]:
    searcher = Searcher(open_shard(shard, model), model)
    questions = [json.loads(line)["query"] for line in GOLD.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [[(nb["path"], nb["score"]) for nb in searcher.search(q, k=5)["notebooks"]] for q in questions]


def test_nothing_changed_compresses_and_fits_nothing_and_a_change_gives_the_cold_shard(archive, tmp_path, monkeypatch):
    root = _copy(archive, tmp_path)
    out = tmp_path / "build" / "shard"
    assert main(["index", str(root), "--out", str(out), "--workers", "1"]) == 0
    first = out.resolve()
    calls: list[str] = []
    compress, kmeans = sharding.compress, sharding.kmeans
    monkeypatch.setattr(sharding, "compress", lambda raw: calls.append("gzip") or compress(raw))
    monkeypatch.setattr(sharding, "kmeans", lambda *a, **k: calls.append("kmeans") or kmeans(*a, **k))
    assert main(["index", str(root), "--out", str(out), "--workers", "1"]) == 0
    assert calls == [] and out.resolve() == first  # every file as it was, the same version

    mutate_archive(root, 0.02)
    assert main(["index", str(root), "--out", str(out), "--workers", "1"]) == 0
    assert "kmeans" in calls  # other rows: fitted again, as a cold build fits
    cold = _cold(root)
    assert _on_disk(out) == cold
    model = load_model(MODEL)
    cold_out = tmp_path / "cold" / "shard"
    assert main(["index", str(root), "--out", str(cold_out), "--no-cache", "--workers", "1"]) == 0
    assert _answers(out, model) == _answers(cold_out, model)


def test_a_damaged_file_of_the_previous_shard_is_never_reused(archive, tmp_path):
    root = _copy(archive, tmp_path)
    out = tmp_path / "build" / "shard"
    assert main(["index", str(root), "--out", str(out), "--workers", "1"]) == 0
    manifest = json.loads((out / MANIFEST).read_text())
    for name in (manifest["dense"]["files"][0], manifest["lexical"]["files"][0], manifest["table"]):
        damaged = out / name
        data = bytearray(damaged.read_bytes())
        data[len(data) // 2] ^= 0xFF
        damaged.write_bytes(bytes(data))  # in place: the next build would link or reuse it
    assert main(["index", str(root), "--out", str(out), "--workers", "1"]) == 0
    open_shard(out).check_all()
    assert _on_disk(out) == _cold(root)


def test_a_state_left_by_another_version_is_not_used(archive, tmp_path, monkeypatch):
    # A build killed after its switch and before it saved its state leaves the state of the
    # version before: the next build must not take files or the IVF fit from it.
    root = _copy(archive, tmp_path)
    out = tmp_path / "build" / "shard"
    assert main(["index", str(root), "--out", str(out), "--workers", "1"]) == 0
    mutate_archive(root, 0.02)
    write_shard(build_index_from_directory(root, MODEL, workers=1).index, out)  # switched, no state saved
    assert publish._previous(tmp_path / "build" / ".shard.cache", out.resolve()) is None
    calls: list[str] = []
    kmeans = sharding.kmeans
    monkeypatch.setattr(sharding, "kmeans", lambda *a, **k: calls.append("kmeans") or kmeans(*a, **k))
    assert main(["index", str(root), "--out", str(out), "--workers", "1"]) == 0
    assert calls == ["kmeans"] and _on_disk(out) == _cold(root)


def test_a_change_to_the_gzip_code_is_a_new_pipeline_and_a_new_recipe(tmp_path, monkeypatch):
    # Containers (cached per file) and shard files (taken from the previous version by their raw
    # content) are gzip bytes: another level or format in cellar.retrieval.packing must redo
    # them, or an incremental build would keep the old bytes where a cold build writes new ones.
    package = tmp_path / "cellar"
    shutil.copytree(incremental._PACKAGE, package)
    model, settings = load_model(MODEL), AnalyzerSettings()
    monkeypatch.setattr(incremental, "_PACKAGE", package)
    monkeypatch.setattr(packing, "__file__", str(package / "retrieval" / "packing.py"))
    pipeline, recipe = incremental.pipeline_version(model, settings, ()), publish._recipe()

    edited = package / "retrieval" / "packing.py"
    edited.write_text(edited.read_text().replace("COMPRESS_LEVEL = 6", "COMPRESS_LEVEL = 9"))
    assert incremental.pipeline_version(model, settings, ()) != pipeline
    assert publish._recipe() != recipe

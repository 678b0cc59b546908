"""Incremental index builds: a cache keyed by content, and the per-notebook work on a process pool
or a Dask cluster; whatever the route, the shard is the same, byte for byte, as a cold build's."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cellar.retrieval.incremental as incremental
from cellar.cli import main
from cellar.cli.progress import Progress
from cellar.ingest import scheduler
from cellar.ingest.scheduler import SchedulerError, batches
from cellar.ingest.synth import generate_archive, mutate_archive
from cellar.retrieval.embedding import default_model_dir
from cellar.retrieval.index import PSEUDO_CHARS, PSEUDO_QUESTIONS, build_index_from_directory
from cellar.retrieval.sharding import shard_files

MODEL = str(default_model_dir())


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("synth") / "archive"
    generate_archive(root, 120, seed=11)
    return root


_COLD: dict[tuple[Path, bytes], dict[str, bytes]] = {}


def _cold(root: Path) -> dict[str, bytes]:
    """The shard files of a cold, single-process build of ``root`` (remembered per archive state)."""
    state = (root, (root / "synth.json").read_bytes())
    if state not in _COLD:
        _COLD[state] = shard_files(build_index_from_directory(root, MODEL, workers=1).index)
    return _COLD[state]


def _build(root: Path, cache: Path, **kwargs):
    return build_index_from_directory(root, MODEL, cache=cache, workers=1, **kwargs)


def test_second_build_does_no_work_and_changes_redo_only_themselves(archive, tmp_path, monkeypatch):
    root = tmp_path / "archive"
    shutil.copytree(archive, root)
    cache = tmp_path / "cache"
    first = _build(root, cache)
    assert len(first.redone) == 120 and not first.reused
    assert shard_files(first.index) == _cold(root)

    calls = []
    real = incremental.prepare
    monkeypatch.setattr(incremental, "prepare", lambda *a, **k: calls.append(a[0].path) or real(*a, **k))
    second = _build(root, cache)
    assert calls == [] and not second.redone and len(second.reused) == 120
    assert shard_files(second.index) == shard_files(first.index)

    change = mutate_archive(root, 0.05)  # 6 changed, 2 added, 2 deleted
    third = _build(root, cache)
    assert sorted(calls) == third.redone == sorted(change.changed + change.added)
    assert third.removed == change.deleted
    assert shard_files(third.index) == _cold(root)


def test_a_moved_notebook_reuses_its_embeddings(archive, tmp_path, monkeypatch):
    root = tmp_path / "archive"
    shutil.copytree(archive, root)
    cache = tmp_path / "cache"
    _build(root, cache)
    old = sorted(root.glob("*/*/*.ipynb"))[0]
    new = root / "2099" / "99-001 Moved" / old.name
    new.parent.mkdir(parents=True)
    old.rename(new)
    encoded = []
    encode = incremental.StaticModel.encode
    monkeypatch.setattr(
        incremental.StaticModel, "encode", lambda self, texts: encoded.append(texts) or encode(self, texts)
    )
    built = _build(root, cache)
    assert built.moved == [new.relative_to(root).as_posix()]
    assert built.removed == [old.relative_to(root).as_posix()]
    # No chunk embedded again: the one batch embedded is the index's pseudo-questions.
    assert not built.redone and len(encoded) == 1 and len(encoded[0]) == PSEUDO_QUESTIONS
    monkeypatch.undo()
    assert shard_files(built.index) == _cold(root)
    paths = [entry["path"] for entry in built.index.notebooks]
    assert new.relative_to(root).as_posix() in paths and old.relative_to(root).as_posix() not in paths
    again = _build(root, cache)  # the moved part was kept under its new path: it was chunked again on every build
    assert not again.moved and not again.redone and len(again.reused) == 120


def test_copies_of_one_file_each_keep_an_entry_and_are_reused_from_the_next_build(archive, tmp_path):
    """A template copied into every project: under one key the copies took turns, and every copy
    but one was chunked again on every build."""
    root = tmp_path / "archive"
    shutil.copytree(archive, root)
    original = sorted(root.glob("*/*/*.ipynb"))[0]
    copies = [root / "2099" / f"99-00{n} Copy" / original.name for n in (1, 2, 3)]
    for copy in copies:
        copy.parent.mkdir(parents=True)
        shutil.copyfile(original, copy)
    cache = tmp_path / "cache"
    first = _build(root, cache)
    assert len(first.redone) == 123
    second = _build(root, cache)
    assert len(second.reused) == 123 and not second.moved and not second.redone
    original.unlink()  # the first path of those bytes goes: the next copy takes their entry over
    third = _build(root, cache)
    assert third.moved == [copies[0].relative_to(root).as_posix()] and len(third.reused) == 121
    fourth = _build(root, cache)
    assert len(fourth.reused) == 122 and not fourth.moved
    assert shard_files(fourth.index) == shard_files(build_index_from_directory(root, MODEL, workers=1).index)


def test_another_pipeline_redoes_everything(archive, tmp_path):
    cache = tmp_path / "cache"
    _build(archive, cache)
    again = _build(archive, cache, glossary={"wb": "water ballast"})
    assert len(again.redone) == 120 and not again.reused


def test_a_damaged_cache_entry_is_redone(archive, tmp_path):
    cache = tmp_path / "cache"
    _build(archive, cache)
    entry = sorted(cache.glob("*/*.bin"))[0]
    entry.write_bytes(entry.read_bytes()[:-100])  # cut short, as by a copy that did not finish
    again = _build(archive, cache)
    assert len(again.redone) == 1 and len(again.reused) == 119
    assert shard_files(again.index) == _cold(archive)


def test_a_cache_entry_with_a_flipped_bit_is_redone_not_used(archive, tmp_path):
    """Each entry ends with its CRC-32. A bit flipped in a term went into every later shard
    (the file unchanged, the entry was reused for ever), and one in a compressed container stopped
    every later build with zlib's error."""
    cache = tmp_path / "cache"
    _build(archive, cache)
    entries = sorted(cache.glob("*/*.bin"))
    for entry, at in ((entries[0], -10), (entries[1], len(entries[1].read_bytes()) // 2)):
        data = bytearray(entry.read_bytes())
        data[at] ^= 0x01
        entry.write_bytes(bytes(data))
    again = _build(archive, cache)
    assert len(again.redone) == 2 and len(again.reused) == 118
    assert shard_files(again.index) == _cold(archive)


KEY = "ab" + "0" * 62  # an entry's key: 64 hex digits, filed under its first two


def test_a_build_leaves_the_temporary_entries_of_one_writing_beside_it(tmp_path):
    """Two archives indexed at once into one cache: the build that finishes first removes the
    entries it did not use, but not the other's entry being written (its rename then failed and
    the other build stopped with "cannot write the shard"); a temporary left by a dead build goes."""
    cache = incremental.Cache(tmp_path)
    folder = tmp_path / "ab"
    folder.mkdir()
    used, unused = f"{KEY[:-1]}1", f"{KEY[:-1]}2"
    files = [folder / f"{used}.bin", folder / f"{unused}.bin", folder / f".{KEY}.bin.4242.tmp"]
    left = folder / f".{used}.bin.4141.tmp"
    for file in (*files, left):
        file.write_bytes(b"part")
    hours_ago = time.time() - 2 * incremental.STALE_TEMPORARY_SECONDS
    os.utime(left, (hours_ago, hours_ago))
    stamps_left, stamps_writing = tmp_path / ".stamps.json.4141.tmp", tmp_path / ".stamps.json.4242.tmp"
    for file in (stamps_left, stamps_writing):
        file.write_text("{}")
    os.utime(stamps_left, (hours_ago, hours_ago))
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"  # a link is never followed to remove
    elsewhere.mkdir()
    (elsewhere / f"{KEY}.bin").write_bytes(b"not the cache's")
    (tmp_path / "cd").symlink_to(elsewhere)
    assert cache.finish({"a.ipynb": used}) == 1
    assert sorted(file.name for file in folder.iterdir()) == sorted([files[0].name, files[2].name])
    assert (elsewhere / f"{KEY}.bin").read_bytes() == b"not the cache's"
    assert not stamps_left.exists() and stamps_writing.exists()  # a dead build's temporary goes at the top too


def test_a_cache_is_a_tagged_folder_and_a_folder_of_anything_else_is_refused_untouched(tmp_path):
    """A build removes the cache entries it did not use: `--cache` naming a folder of the user's
    had every file of its two-letter folders removed, and naming the archive, its notebooks."""
    made = incremental.Cache(tmp_path / "new" / "cache")
    assert (made.directory / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    mine = tmp_path / "mine"
    (mine / "ab").mkdir(parents=True)
    (mine / "ab" / "notes.txt").write_text("precious")
    with pytest.raises(
        ValueError, match=f"^{mine}: not a cellar cache \\(it holds ab/notes.txt, and no CACHEDIR.TAG\\)"
    ):
        incremental.Cache(mine)
    assert sorted(path.name for path in mine.rglob("*")) == ["ab", "notes.txt"]
    (tmp_path / "file").write_text("precious")
    with pytest.raises(ValueError, match="file: --cache is not a folder"):
        incremental.Cache(tmp_path / "file")
    older = tmp_path / "older"  # a cache an older cellar made, before the tag: taken, and tagged
    (older / "ab").mkdir(parents=True)
    (older / "ab" / f"{KEY}.bin").write_bytes(b"part")
    (older / "stamps.json").write_text("{}")
    incremental.Cache(older)
    assert (older / "CACHEDIR.TAG").is_file()


def test_cli_refuses_a_cache_that_is_not_one_before_any_work(archive, tmp_path, capsys):
    home = tmp_path / "home"
    (home / "js").mkdir(parents=True)
    (home / "js" / "app.js").write_text("code")
    assert main(["index", str(archive), "--out", str(tmp_path / "shard"), "--cache", str(home)]) == 2
    err = capsys.readouterr().err
    assert f"cellar index: {home}: not a cellar cache (it holds js/, and no CACHEDIR.TAG)" in err
    assert "notebooks" not in err and (home / "js" / "app.js").read_text() == "code"


def test_the_process_pool_gives_the_same_shard(archive):
    pooled = build_index_from_directory(archive, MODEL, workers=2)
    assert shard_files(pooled.index) == _cold(archive)


def test_cli_reports_reuse_and_no_cache_is_cold(archive, tmp_path, capsys):
    out = tmp_path / "build" / "shard"
    assert main(["index", str(archive), "--out", str(out), "--workers", "1"]) == 0
    assert (tmp_path / "build" / ".shard.cache" / "last-build.json").is_file()
    assert main(["index", str(archive), "--out", str(out), "--workers", "1"]) == 0
    assert "120 reused, 0 moved (chunked again, embeddings reused), 0 redone, 0 removed" in capsys.readouterr().err
    assert main(["index", str(archive), "--out", str(out), "--no-cache", "--workers", "1"]) == 0
    assert "0 reused, 0 moved (chunked again, embeddings reused), 120 redone" in capsys.readouterr().err
    assert main(["index", str(archive), "--out", str(out), "--scheduler", "yarn"]) == 2
    assert "unknown scheduler 'yarn'" in capsys.readouterr().err


def test_batches_keep_order_and_spread():
    items = list(range(100))
    groups = batches(items, lambda item: 10_000, workers=2)
    assert [item for group in groups for item in group] == items
    assert len(groups) >= 8
    assert all(len(group) <= 64 for group in batches(list(range(1000)), lambda item: 1, workers=1))


def test_progress_lines_off_a_terminal_and_redrawn_on_one():
    plain = io.StringIO()
    progress = Progress("cellar index", plain, every=0, tty=False)
    for done in range(0, 11, 5):
        progress(done, 10, "notebooks")
    lines = plain.getvalue().splitlines()
    assert lines[-1].startswith("cellar index: 10/10 notebooks") and "/s" in lines[-1] and "\r" not in plain.getvalue()
    terminal = io.StringIO()
    progress = Progress("cellar index", terminal, every=0, tty=True)
    progress(0, 10, "notebooks")
    progress(10, 10, "notebooks")
    progress.close()
    assert terminal.getvalue().count("\r\x1b[K") == 3


def test_dask_shard_is_the_local_one(archive):
    pytest.importorskip("distributed", reason="Dask is an optional extra: pip install 'cellar[dask]'")
    on_dask = build_index_from_directory(archive, MODEL, scheduler="dask", workers=2)
    assert shard_files(on_dask.index) == _cold(archive)


def test_an_existing_dask_cluster_gives_the_local_shard(archive, tmp_path):
    """`--scheduler tcp://HOST:PORT`: a scheduler and a worker started as a user would start them
    (`dask scheduler`, `dask worker`, processes of their own), the shard the local one."""
    pytest.importorskip("distributed", reason="Dask is an optional extra: pip install 'cellar[dask]'")
    dask = Path(sys.executable).with_name("dask")
    address = tmp_path / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}  # the worker imports this cellar
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
    scheduler_process = subprocess.Popen(
        [dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", address],
        **quiet,
    )
    worker_process = None
    try:
        deadline = time.monotonic() + 60
        while not address.is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        url = json.loads(address.read_text())["address"]
        worker_process = subprocess.Popen(
            [dask, "worker", url, "--nworkers", "1", "--nthreads", "1", "--no-dashboard"], **quiet
        )
        built = build_index_from_directory(archive, MODEL, scheduler=url, workers=1)
        assert shard_files(built.index) == _cold(archive)
    finally:
        for process in (worker_process, scheduler_process):
            if process is not None:
                process.terminate()
                process.wait(timeout=30)


def test_an_unreachable_dask_scheduler_is_a_clear_error(archive, monkeypatch):
    pytest.importorskip("distributed", reason="Dask is an optional extra: pip install 'cellar[dask]'")
    monkeypatch.setattr(scheduler, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(SchedulerError, match="cannot reach the Dask scheduler"):
        build_index_from_directory(archive, MODEL, scheduler="tcp://127.0.0.1:9", workers=1)


def test_a_new_shard_links_the_files_the_previous_one_holds_and_never_a_damaged_one(archive, tmp_path):
    from cellar.retrieval.embedding import load_model
    from cellar.retrieval.publish import write_shard
    from cellar.retrieval.shard import open_shard

    model = load_model(MODEL)
    index = build_index_from_directory(archive, model).index
    out = tmp_path / "build" / "shard"
    write_shard(index, out, model)
    first = out.resolve()
    damaged = sorted((first / "notebooks").iterdir())[0]  # a notebook's container
    data = bytearray(damaged.read_bytes())
    data[-2] ^= 1
    damaged.write_bytes(bytes(data))
    index.calibration = {"thresholds": {"min_coverage": 0.1}}  # the manifest changes, the containers do not
    write_shard(index, out, model)  # the damaged file is not carried over: it is written again
    second = out.resolve()
    assert second != first
    assert (second / "notebooks" / damaged.name).stat().st_ino != damaged.stat().st_ino
    shard = open_shard(second, model)
    shard.check_all()  # every file checks against the manifest

    index.calibration = {"thresholds": {"min_coverage": 0.2}}
    write_shard(index, out, model)
    third = out.resolve()
    fragments = sorted((third / "notebooks").iterdir())
    assert fragments and all(f.stat().st_ino == (second / "notebooks" / f.name).stat().st_ino for f in fragments)


def test_a_file_whose_reader_fails_unforeseen_is_a_problem_of_that_file_and_the_batch_goes_on(tmp_path, monkeypatch):
    """A reader raises ValueError naming the file for every damage it foresees; a library's own
    error that none foresaw (zipfile's on a damaged DOCX member, before its reader caught them)
    must not stop the batch either: that file is reported with the error, every other is indexed."""
    root = tmp_path / "archive"
    generate_archive(root, 4, seed=5)
    notebooks = sorted(path.relative_to(root).as_posix() for path in root.rglob("*.ipynb"))
    chunk = incremental._chunk

    def failing(task, rules, part):
        if task.path == notebooks[1]:
            raise RuntimeError("File 'word/document.xml' is encrypted, password required for extraction")
        return chunk(task, rules, part)

    monkeypatch.setattr(incremental, "_chunk", failing)
    built = build_index_from_directory(root, MODEL, workers=1)
    assert built.problems == [
        f"{notebooks[1]}: could not be read (RuntimeError: File 'word/document.xml' is encrypted, "
        "password required for extraction)"
    ]
    indexed = {entry["path"] for entry in built.index.notebooks}
    assert indexed == set(notebooks) - {notebooks[1]}


def test_a_chunk_of_one_giant_word_is_asked_about_as_a_question_is_short(tmp_path, monkeypatch):
    """The pseudo-questions that choose how many clusters a query probes are drawn from chunks: a
    chunk that is one word of 200,000 dots, drawn hundreds of times, was embedded whole each time
    (a 2 MB one took 97 s). A question is short: each is cut to PSEUDO_CHARS."""
    root = tmp_path / "archive"
    generate_archive(root, 2, seed=5)
    (root / "dots.md").write_text("." * 200_000 + "\n")
    encoded = []
    encode = incremental.StaticModel.encode
    monkeypatch.setattr(
        incremental.StaticModel, "encode", lambda self, texts: encoded.append(texts) or encode(self, texts)
    )
    build_index_from_directory(root, MODEL, workers=1)
    (questions,) = [texts for texts in encoded if len(texts) == PSEUDO_QUESTIONS]
    assert max(map(len, questions)) == PSEUDO_CHARS  # the dots were drawn, and cut

"""Safe shard writes: a `cellar index` killed anywhere in its write phase leaves the previous shard
whole, a second writer is refused, and a smaller archive leaves no stale fragment behind; a damaged
shard makes `cellar search` name the file and exit 2.

The kill test runs `cellar index` in a subprocess whose file-system calls (open, write, fsync,
close, mkdir, rename, replace, symlink, unlink, rmdir) are counted from the moment `write_shard`
starts; at call number K the process sends itself SIGKILL. A dry run counts the calls; K then
takes KILL_POINTS values spread over all of them, first and last included.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import load_build

from cellar.cli import main
from cellar.ingest.provenance import revision
from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.index import build_index_from_directory
from cellar.retrieval.packing import canonical
from cellar.retrieval.publish import shard_lock, write_shard
from cellar.retrieval.search import Searcher
from cellar.retrieval.shard import MANIFEST, Shard, ShardBusy, ShardError, open_shard
from cellar.retrieval.sharding import shard_files

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "tests" / "fixtures" / "notebooks"
KILL_POINTS = 24

KILLER = """
import os, signal, sys
import cellar.cli.index as command
from cellar.cli import main

target, calls, active = int(os.environ["CELLAR_TEST_KILL_AT"]), 0, False

def counted(function):
    def call(*args, **kwargs):
        global calls
        if active:
            calls += 1
            if calls == target:
                os.kill(os.getpid(), signal.SIGKILL)
        return function(*args, **kwargs)
    return call

for name in ("open", "write", "fsync", "close", "mkdir", "rename", "replace", "symlink", "unlink", "rmdir"):
    setattr(os, name, counted(getattr(os, name)))
real = command.write_shard

def write_shard(*args, **kwargs):
    global active
    active = True
    try:
        return real(*args, **kwargs)
    finally:
        active = False
        print(f"write phase: {calls} calls", file=sys.stderr)

command.write_shard = write_shard
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def model():
    return load_model(default_model_dir())


def corpus(folder: Path, names: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(NOTEBOOKS / name, folder / name)
    return folder


def paths(shard_dir: Path, model) -> list[str]:
    """The notebooks of the shard, after checking it opens, answers and reads every file."""
    shard = open_shard(shard_dir, model)
    answer = Searcher(shard, model).search("ballast tank volume", k=3)
    assert answer["notebooks"] or answer["refused"]
    shard.check_all()
    return [entry["path"] for entry in shard.notebooks]


def killed_index(corpus_dir: Path, out: Path, kill_at: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "CELLAR_TEST_KILL_AT": str(kill_at), "PYTHONPATH": str(ROOT / "py_src")}
    command = [sys.executable, "-c", KILLER, "index", str(corpus_dir), "--out", str(out)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def test_a_shard_is_a_link_to_a_checked_version_and_a_smaller_archive_leaves_nothing_stale(tmp_path, model):
    big = build_index_from_directory(corpus(tmp_path / "big", ["ballast_v4.ipynb", "stability_v3.ipynb"]), model)
    small = build_index_from_directory(corpus(tmp_path / "small", ["ballast_v4.ipynb"]), model)
    out = tmp_path / "build" / "shard"
    write_shard(big.index, out, model)
    assert out.is_symlink() and not os.path.isabs(os.readlink(out))
    first = out.resolve()
    assert paths(out, model) == ["ballast_v4.ipynb", "stability_v3.ipynb"]
    write_shard(small.index, out, model)
    assert paths(out, model) == ["ballast_v4.ipynb"]
    files = {path.relative_to(out).as_posix() for path in out.rglob("*") if path.is_file()}
    assert files == set(open_shard(out).files) | {MANIFEST}  # no stale fragment
    versions = tmp_path / "build" / ".shard.versions"
    assert sorted(versions.iterdir()) == sorted([first, out.resolve()])  # the current and the previous
    write_shard(big.index, out, model)
    write_shard(big.index, out, model)  # the same content again: nothing to switch
    assert len(list(versions.iterdir())) == 2 and paths(out, model) == ["ballast_v4.ipynb", "stability_v3.ipynb"]


def test_an_older_plain_shard_folder_is_replaced_and_another_folder_is_refused(tmp_path, model):
    built = build_index_from_directory(corpus(tmp_path / "c", ["ballast_v4.ipynb"]), model)
    out = tmp_path / "shard"
    out.mkdir()
    (out / MANIFEST).write_text('{"cellar": "0.1.0", "format": 1, "files": {}, "checksum": "9f"}')
    (out / "fragments").mkdir()
    (out / "fragments" / "99.json").write_text("stale")
    write_shard(built.index, out, model)
    assert out.is_symlink() and not (out / "fragments" / "99.json").exists()
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("precious")
    with pytest.raises(ShardError, match="a folder that holds no shard"):
        write_shard(built.index, keep, model)
    assert (keep / "notes.txt").read_text() == "precious"


def test_a_folder_with_a_manifest_json_of_its_own_is_no_shard_and_is_never_replaced(tmp_path, model):
    """A web app's folder (`manifest.json` is every PWA's) was taken for an older shard: moved into
    the versions folder at the switch and removed by the next build that changed anything."""
    built = build_index_from_directory(corpus(tmp_path / "c", ["ballast_v4.ipynb"]), model)
    app = tmp_path / "webapp"
    app.mkdir()
    (app / MANIFEST).write_text('{"name": "My PWA", "start_url": "/"}')
    (app / "index.html").write_text("<h1>app</h1>")
    with pytest.raises(ShardError, match=f"^{app}: a folder that holds no shard .* not replaced$"):
        write_shard(built.index, app, model)
    assert not app.is_symlink() and (app / "index.html").read_text() == "<h1>app</h1>"


def test_what_a_shard_keeps_beside_it_is_never_reached_through_a_link(tmp_path, model):
    """The old versions are removed and the lock written: a link at `.shard.versions` had every
    file of the folder it led to removed, and one at `.shard.lock` had its target overwritten."""
    built = build_index_from_directory(corpus(tmp_path / "c", ["ballast_v4.ipynb"]), model)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "a.txt").write_text("precious")
    for name, target in ((".shard.versions", victim), (".shard.lock", victim / "a.txt")):
        place = tmp_path / name
        place.symlink_to(target)
        with pytest.raises(ShardError, match=f"^{place}: a symbolic link where the shard keeps its own files"):
            write_shard(built.index, tmp_path / "shard", model)
        place.unlink()
    assert [path.name for path in victim.iterdir()] == ["a.txt"] and (victim / "a.txt").read_text() == "precious"


def test_a_version_given_as_the_shard_is_refused(tmp_path, model):
    """`--out "$(realpath shard)"`: written into the version folder, the next build of `shard`
    removed it from under its own link, which then led nowhere."""
    built = build_index_from_directory(corpus(tmp_path / "c", ["ballast_v4.ipynb"]), model)
    out = tmp_path / "shard"
    write_shard(built.index, out, model)
    with pytest.raises(ShardError, match=f"^{out.resolve()}: a version of the shard {out}, not a shard"):
        write_shard(built.index, out.resolve(), model)
    assert paths(out, model) == ["ballast_v4.ipynb"]
    mine = tmp_path / "mine"  # a link of the user's own, to a folder of theirs, is not re-pointed
    mine.mkdir()
    (tmp_path / "link").symlink_to(mine)
    with pytest.raises(ShardError, match=f"^{tmp_path / 'link'}: a symbolic link to {mine}, not to a version"):
        write_shard(built.index, tmp_path / "link", model)
    assert (tmp_path / "link").resolve() == mine


@pytest.mark.parametrize("place", ["a file", "a folder of something else"])
def test_an_output_that_is_no_place_for_a_shard_is_refused_before_the_build(tmp_path, capsys, place):
    source = corpus(tmp_path / "c", ["ballast_v4.ipynb"])
    out = tmp_path / "out"
    if place == "a file":
        out.write_text("precious")
    else:
        out.mkdir()
        (out / "notes.txt").write_text("precious")
    assert main(["index", str(source), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cellar index: {out}: ") and err.rstrip().endswith("not replaced")
    assert "notebooks" not in err  # refused before any notebook was read
    assert sorted(path.name for path in tmp_path.iterdir()) == ["c", "out"]  # no cache, no lock left beside it


def test_a_shard_inside_its_archive_or_a_cache_that_is_the_shard_is_refused_before_the_build(tmp_path, capsys):
    """A shard inside the archive was read by the next build as a link of the archive's, skipped
    and reported, exit 1, on every build after; a cache at the shard's place was refused only
    after all the work."""
    source = corpus(tmp_path / "c", ["ballast_v4.ipynb"])
    assert main(["index", str(source), "--out", str(source / "shard")]) == 2
    assert capsys.readouterr().err == f"cellar index: {source / 'shard'}: inside the archive {source}: " + (
        "the shard is written outside what it indexes\n"
    )
    out = tmp_path / "shard"
    assert main(["index", str(source), "--out", str(out), "--cache", str(out)]) == 2
    assert "--cache is the shard itself" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["c"] and not (source / "shard").exists()


def test_a_second_writer_is_refused_with_status_2(tmp_path, model, capsys):
    source = corpus(tmp_path / "c", ["ballast_v4.ipynb"])
    out = tmp_path / "shard"
    assert main(["index", str(source), "--out", str(out)]) == 0
    before = out.resolve()
    with shard_lock(out):  # this process is the first writer
        with pytest.raises(ShardBusy):
            write_shard(build_index_from_directory(source, model).index, out, model)
        env = {**os.environ, "PYTHONPATH": str(ROOT / "py_src")}
        command = [sys.executable, "-m", "cellar", "index", str(source), "--out", str(out)]
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert f"cellar index: {out}: another writer (process {os.getpid()}) is writing this shard" in result.stderr
    assert out.resolve() == before and paths(out, model) == ["ballast_v4.ipynb"]
    assert main(["index", str(source), "--out", str(out)]) == 0  # the lock went with its holder


def test_a_writer_killed_anywhere_in_its_write_phase_leaves_the_previous_shard(tmp_path, model):
    old = corpus(tmp_path / "old", ["ballast_v4.ipynb"])
    new = corpus(tmp_path / "new", ["ballast_v4.ipynb", "stability_v3.ipynb", "future_4_99.ipynb"])
    snapshot = tmp_path / "snapshot" / "build"  # a previous shard; every kill starts from a copy of it
    assert main(["index", str(old), "--out", str(snapshot / "shard")]) == 0
    shutil.copytree(snapshot, tmp_path / "dry" / "build", symlinks=True)
    dry = killed_index(new, tmp_path / "dry" / "build" / "shard", 0)
    assert dry.returncode == 0, dry.stderr
    total = int(dry.stderr.split("write phase: ")[1].split()[0])
    points = sorted({1 + round(i * (total - 1) / (KILL_POINTS - 1)) for i in range(KILL_POINTS)})
    assert len(points) >= 20
    expected_new = sorted(path.name for path in new.iterdir())
    new_index = build_index_from_directory(new, model).index
    outcomes = {"old": 0, "new": 0}
    for point in points:
        build = tmp_path / f"kill{point}" / "build"
        shutil.copytree(snapshot, build, symlinks=True)
        result = killed_index(new, build / "shard", point)
        assert result.returncode == -9, (point, result.stderr[-2000:])
        found = paths(build / "shard", model)  # opens, answers, every fragment checks
        assert found in (["ballast_v4.ipynb"], expected_new), (point, found)
        outcomes["old" if len(found) == 1 else "new"] += 1
        write_shard(new_index, build / "shard", model)  # the next write tidies what the killed one left
        assert paths(build / "shard", model) == expected_new
        versions = [path.name for path in (build / ".shard.versions").iterdir()]
        assert len(versions) <= 2 and not any(name.startswith(".") for name in versions), (point, versions)
        assert not list(build.glob(".shard.link-*"))
        shutil.rmtree(build.parent)
    print(f"kill points: {len(points)} of {total} write-phase calls; the shard read afterwards: {outcomes}")
    assert outcomes["old"] >= 15 and outcomes["new"] >= 1  # the last points lie after the switch


def _shard_file(shard: Path, role: str) -> str:
    """The file of a role that a search for "ballast tank volume" reads."""
    manifest = json.loads((shard / MANIFEST).read_text())
    if role == "partition":
        return manifest["lexical"]["files"][bisect.bisect_right(manifest["lexical"]["first"], "ballast") - 1]
    return {
        "manifest": MANIFEST,
        "centroids": manifest["dense"]["centroids"],
        "container": open_shard(shard).containers[0],
    }[role]


@pytest.mark.parametrize("role", ["centroids", "partition", "container", "manifest"])
def test_search_on_a_damaged_shard_names_the_file_and_exits_2(tmp_path, role, capsys):
    source = corpus(tmp_path / "c", ["ballast_v4.ipynb"])
    assert main(["index", str(source), "--out", str(tmp_path / "built")]) == 0
    shard = tmp_path / "copy"
    shutil.copytree(tmp_path / "built", shard)
    name = _shard_file(shard, role)
    data = bytearray((shard / name).read_bytes())
    data[len(data) // 2] ^= 0x55
    (shard / name).write_bytes(data)
    capsys.readouterr()
    assert main(["search", str(shard), "ballast tank volume"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"cellar search: {shard}/{name}: damaged") and "Traceback" not in err
    if name != MANIFEST:
        assert "(SHA-256 mismatch: the file has " in err and "not gzip" not in err
    (shard / name).unlink()
    assert main(["search", str(shard), "ballast tank volume"]) == 2
    assert f"{shard}/" in capsys.readouterr().err


def test_a_file_that_is_not_gzip_but_matches_its_hash_is_named_as_such(tmp_path, model):
    built = build_index_from_directory(corpus(tmp_path / "c", ["ballast_v4.ipynb"]), model)
    files = shard_files(built.index)
    manifest = json.loads(files[MANIFEST])
    name = manifest["dense"]["centroids"]
    files[name] = b"not gzip data"
    manifest.pop("checksum")
    manifest["files"][name] = {"bytes": 13, "sha256": revision(b"not gzip data")}
    manifest["checksum"] = revision(canonical(manifest))
    files[MANIFEST] = json.dumps(manifest).encode()
    with pytest.raises(ShardError, match=rf"^shard/{re.escape(name)}: damaged, not gzip data"):
        Shard(files.__getitem__)


def test_build_publishes_the_files_the_shard_link_points_to_and_no_link_out_of_the_archive(tmp_path, model):
    build = load_build()
    archive = corpus(tmp_path / "archive", ["ballast_v4.ipynb"])
    (archive / "passwd.md").symlink_to("/etc/passwd")
    (archive / "etc").symlink_to("/etc")
    (archive / "latest.ipynb").symlink_to("ballast_v4.ipynb")
    os.mkfifo(archive / "fifo.ipynb")
    assert [path.name for path in build.archive_files(archive)] == ["ballast_v4.ipynb", "latest.ipynb"]
    out = tmp_path / "build" / "shard"
    write_shard(build_index_from_directory(archive, model).index, out, model)
    (out / ".cellar-stamp").write_text("digest")  # build.py's stamp lands in the current version
    files = {path.relative_to(out).as_posix() for path in build.archive_files(out)}
    assert files == set(open_shard(out).files) | {MANIFEST}  # what site/shard gets

"""`cellar blobs add|check` and the path map against hostile archives and input folders.

A path map of paths thousands of folders deep builds in time linear in its size; pathmap.json is
read as `cellar rerender` reads it (never a FIFO, a device or a link out of the archive); `--tree`
reads a folder by the archive's rules (regular files only, no link out of it, every skip named);
and no blob is written through a store folder that links out of the archive.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from tests.unit.conftest import deadline

from cellar.cli import main
from cellar.rerender.blob_store import BlobStore
from cellar.rerender.vfs import IsADirectory, NotInPathMap, PathMap, PathMapError, blob_path

BLOB = "sha256:" + "0" * 64
OK = b"station,halfbreadth\n0,0.0\n"
OK_ID = "sha256:" + hashlib.sha256(OK).hexdigest()


def test_a_path_map_of_very_deep_paths_builds_in_linear_time() -> None:
    """2,000 folders deep, inside the 4,096-character limit: every prefix folded and hashed
    again per folder took over 7 s per path; one step per name takes milliseconds."""
    deep = "C:" + "\\a" * 2000
    data = {"format": 1, "files": {f"{deep}\\b{index}\\f.csv": BLOB for index in range(20)}}
    with deadline(20):
        pathmap = PathMap.from_dict(data)
        assert pathmap.resolve(deep.lower() + "\\B7\\F.CSV") == BLOB
        assert pathmap.listdir(deep) == [f"b{index}" for index in sorted(range(20), key=str)]
        assert pathmap.isdir(deep + "\\b3") and not pathmap.isdir(deep + "\\b3\\f.csv")
        with pytest.raises(NotInPathMap):
            pathmap.resolve(deep + "\\b3\\g.csv")
        with pytest.raises(IsADirectory):
            pathmap.resolve(deep)


def test_a_path_map_that_implies_too_many_folders_is_refused_naming_the_entry() -> None:
    """Each implied folder costs memory: 1,000 paths of 250 folders of their own would imply
    250,000, and are refused before all are made (a 6 MB map of such paths had taken 1.1 GB)."""
    data = {"format": 1, "files": {"C:" + f"\\{index:03d}" * 250 + "\\f.csv": BLOB for index in range(1000)}}
    with deadline(20), pytest.raises(PathMapError, match=r"the map implies more than 200,000 folders"):
        PathMap.from_dict(data)


def _hostile_pathmap(archive: Path, kind: str, outside: Path) -> None:
    archive.mkdir()
    mapfile = archive / "pathmap.json"
    if kind == "fifo":
        os.mkfifo(mapfile)
    elif kind == "device":
        mapfile.symlink_to("/dev/zero")  # read to the end, it never ends
    else:
        (outside / "pathmap.json").write_text(json.dumps({"format": 1, "files": {"/x.csv": BLOB}}))
        mapfile.symlink_to(outside / "pathmap.json")


@pytest.mark.parametrize(
    "kind, problem",
    [
        ("fifo", "a FIFO (named pipe), not a regular file"),
        ("device", "a symbolic link to /dev/zero, outside the archive"),
        ("outside", "a symbolic link to "),
    ],
)
def test_blobs_check_and_add_read_pathmap_json_as_rerender_does(tmp_path, capsys, kind, problem) -> None:
    archive, outside = tmp_path / "archive", tmp_path / "outside"
    outside.mkdir()
    _hostile_pathmap(archive, kind, outside)
    (tmp_path / "in.csv").write_bytes(OK)
    with deadline():
        assert main(["blobs", "check", str(archive)]) == 2
        assert f"{archive / 'pathmap.json'}: {problem}" in capsys.readouterr().err
        assert main(["blobs", "add", str(archive), str(tmp_path / "in.csv"), "--as", r"C:\x\in.csv"]) == 2
        assert f"{archive / 'pathmap.json'}: {problem}" in capsys.readouterr().err
    assert not (archive / "blobs").exists()


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_file_named_on_the_command_line_that_is_not_a_regular_file_is_named_not_read(tmp_path, capsys, kind):
    """`blobs add ARCHIVE FILE --as PATH` had opened FILE as it came: a FIFO hung the command and
    /dev/zero would have filled the memory. The other files named are added."""
    archive, named = tmp_path / "archive", tmp_path / "named"
    archive.mkdir()
    os.mkfifo(named) if kind == "fifo" else named.symlink_to("/dev/zero")
    (tmp_path / "in.csv").write_bytes(OK)
    arguments = [str(named), str(tmp_path / "in.csv"), "--as", "C:\\x\\"]  # a folder: both go in it
    with deadline():
        assert main(["blobs", "add", str(archive), *arguments]) == 1
    assert f"{named}: not a regular file (a folder, a FIFO, a socket or a device): not read" in capsys.readouterr().err
    assert BlobStore(archive).ids() == [OK_ID]


def test_a_pathmap_json_linked_inside_the_archive_is_still_read(tmp_path, capsys) -> None:
    archive = tmp_path / "archive"
    (archive / "maps").mkdir(parents=True)
    (archive / "maps" / "current.json").write_text(json.dumps({"format": 1, "files": {"/x.csv": OK_ID}}))
    (archive / "pathmap.json").symlink_to(archive / "maps" / "current.json")
    BlobStore(archive).write(OK)
    assert main(["blobs", "check", str(archive)]) == 0
    assert "1 blobs for 1 paths: 0 missing, 0 corrupt, 0 orphans" in capsys.readouterr().out


def _too_deep_to_list(top: Path) -> Path:
    """A folder below `top` whose path is longer than the system allows (made one name at a time)."""
    name, made = "d" * 200, top
    descriptor = os.open(top, os.O_RDONLY)
    try:
        while len(str(made)) <= 4200:
            os.mkdir(name, dir_fd=descriptor)
            below = os.open(name, os.O_RDONLY, dir_fd=descriptor)
            os.close(descriptor)
            descriptor, made = below, made / name
        with open(os.open("lost.csv", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=descriptor), "wb") as handle:
            handle.write(b"unreachable\n")
    finally:
        os.close(descriptor)
    return made


def test_add_tree_applies_the_archive_rules_and_names_every_skip(tmp_path, capsys) -> None:
    outside, tree, archive = tmp_path / "outside", tmp_path / "share", tmp_path / "archive"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET-OUTSIDE\n")
    (tree / "sub").mkdir(parents=True)
    (tree / "ok.csv").write_bytes(OK)
    (tree / "sub" / "copy.csv").symlink_to(tree / "ok.csv")  # a link inside the folder: followed
    (tree / "innocent.csv").symlink_to(outside / "secret.txt")
    (tree / "linked").symlink_to(outside, target_is_directory=True)
    (tree / "again").symlink_to(tree / "sub", target_is_directory=True)  # inside, but never walked twice
    os.mkfifo(tree / "pipe.csv")
    _too_deep_to_list(tree / "sub")
    with deadline():
        assert main(["blobs", "add", str(archive), "--tree", r"\\srv\share", str(tree)]) == 1
    captured = capsys.readouterr()
    assert f"{OK_ID}  \\\\srv\\share\\ok.csv" in captured.out
    assert f"{OK_ID}  \\\\srv\\share\\sub\\copy.csv" in captured.out
    assert f"{tree / 'innocent.csv'}: a symbolic link to {outside / 'secret.txt'}, outside" in captured.err
    assert f"{tree / 'linked'}: a symbolic link to {outside}, outside" in captured.err
    assert f"{tree / 'again'}: a symbolic link to a folder" in captured.err
    assert f"{tree / 'pipe.csv'}: a FIFO (named pipe)" in captured.err
    assert "longer than this system allows" in captured.err
    written = json.loads((archive / "pathmap.json").read_text())
    assert written["trees"] == {r"\\srv\share": {"ok.csv": OK_ID, "sub/copy.csv": OK_ID}}
    stored = [path for path in (archive / "blobs").rglob("*") if path.is_file()]
    assert [path.read_bytes() for path in stored] == [OK]


@pytest.mark.parametrize("linked", ["blobs", f"blobs/sha256/{OK_ID[7:9]}"])
def test_no_blob_is_written_through_a_store_folder_that_links_out(tmp_path, capsys, linked) -> None:
    archive, outside = tmp_path / "archive", tmp_path / "outside"
    outside.mkdir()
    (archive / linked).parent.mkdir(parents=True)
    (archive / linked).symlink_to(outside, target_is_directory=True)
    (tmp_path / "in.csv").write_bytes(OK)
    assert main(["blobs", "add", str(archive), str(tmp_path / "in.csv"), "--as", "/data/in.csv"]) == 1
    assert f"{archive / linked}: a symbolic link in the blob store: no blob is written there" in capsys.readouterr().err
    assert list(outside.rglob("*")) == [] and not (archive / "pathmap.json").exists()
    with pytest.raises(PermissionError, match="a symbolic link in the blob store"):
        BlobStore(archive).write(OK)
    assert not (archive / blob_path(OK_ID)).exists()


def test_check_says_why_a_blob_cannot_be_used(tmp_path, capsys) -> None:
    """A blob linked out of the archive was listed as `corrupt` alone, though its bytes were right
    (a hostile-input sweep); the line now says what is wrong with it, as `cellar rerender` does."""
    archive, outside = tmp_path / "archive", tmp_path / "outside"
    outside.mkdir()
    (outside / "blob").write_bytes(OK)
    stored = archive / blob_path(OK_ID)
    stored.parent.mkdir(parents=True)
    stored.symlink_to(outside / "blob")
    (archive / "pathmap.json").write_text(json.dumps({"format": 1, "files": {"/data/in.csv": OK_ID}}))
    assert main(["blobs", "check", str(archive)]) == 1
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("corrupt")]
    assert line.startswith(f"corrupt  {OK_ID}  /data/in.csv  (") and "symbolic link" in line

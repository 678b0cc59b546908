"""build.py on a hostile archive or lesson folder: files swapped for links or FIFOs, or removed,
while the site is built; names that are not UTF-8; folders nested past the system's path length;
huge data files; hidden and linked-in lesson files; a site folder inside the archive. Each bad
file is named on stderr (`path: problem`) and the build goes on without it.

build.py's functions are called directly, on folders under tmp_path: `build.py site` itself would
re-render and index with cellar, and write its work folder under the project's build/."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from tests.conftest import load_build
from tests.unit.conftest import deadline

ROOT = Path(__file__).resolve().parents[2]
SECRET = b"SECRET-OUTSIDE-THE-ARCHIVE"


build = load_build()


def notebook(title: str) -> str:
    cell = {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": f"# {title}"}
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]})


@pytest.fixture
def archive(tmp_path) -> Path:
    """An archive of two notebooks (one in a folder) beside a folder `outside` that holds a
    secret under the same names."""
    folder = tmp_path / "archive"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.ipynb").write_text(notebook("a"))
    (folder / "sub" / "c.ipynb").write_text(notebook("c"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.ipynb").write_bytes(SECRET)
    (outside / "c.ipynb").write_bytes(SECRET)
    return folder


def plan_of(corpus: Path, tmp_path: Path) -> dict:
    """What `build.py site` would publish of `corpus` (with no shard and no fresh notebooks)."""
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    return build.content_plan(empty, corpus, empty, None)


def index_digest(monkeypatch, corpus: Path) -> str:
    """The fingerprint the index step of `build.py site` is keyed on (cellar itself is not run)."""
    digests = []
    monkeypatch.setattr(build, "run_cellar_into", lambda out, digest, *rest, **options: digests.append(digest) or out)
    build.step_index(corpus, None, None, corpus.parent / "shard")
    return digests[-1]


def swap_file(path: Path, link_to: Path) -> None:
    """Replace the file `path` by a link in one rename, as someone racing the build would."""
    swapped = path.with_name(path.name + ".swap")
    swapped.symlink_to(link_to)
    os.replace(swapped, path)


def swap_folder(folder: Path, link_to: Path) -> None:
    folder.rename(folder.with_name(folder.name + ".old"))
    folder.symlink_to(link_to, target_is_directory=True)


# --- 1. a file swapped after the listing is never copied from outside ---------------------------


@pytest.mark.parametrize("victim", ["a.ipynb", "sub/c.ipynb", "sub"])
def test_a_file_or_folder_swapped_for_a_link_out_after_the_listing_is_not_copied(archive, tmp_path, victim):
    plan = plan_of(archive, tmp_path)
    if victim == "sub":
        swap_folder(archive / "sub", tmp_path / "outside")
        key = "archive/sub/c.ipynb"
    else:
        swap_file(archive / victim, tmp_path / "outside" / Path(victim).name)
        key = f"archive/{victim}"
    target = tmp_path / "site" / key
    try:
        build.sync_file(plan[key], target)
    except build.Refused as error:
        assert "outside" in str(error)
    assert not target.exists()  # before: the secret, copied through the link


@pytest.mark.parametrize("victim", ["a.ipynb", "sub"])
def test_a_swap_between_resolving_and_opening_is_not_followed(archive, tmp_path, monkeypatch, victim):
    """The file (or its folder) becomes a link out just after build.py resolved its path: the
    open, one name at a time with O_NOFOLLOW, refuses the link rather than following it."""
    plan = plan_of(archive, tmp_path)
    key = "archive/a.ipynb" if victim == "a.ipynb" else "archive/sub/c.ipynb"
    realpath = os.path.realpath

    def realpath_then_swap(path, *args, **options):
        resolved = realpath(path, *args, **options)
        if Path(path) == plan[key].path and not (archive / victim).is_symlink():
            if victim == "sub":
                swap_folder(archive / "sub", tmp_path / "outside")
            else:
                swap_file(archive / victim, tmp_path / "outside" / victim)
        return resolved

    monkeypatch.setattr(os.path, "realpath", realpath_then_swap)
    target = tmp_path / "site" / key
    with pytest.raises(build.Refused, match="became a symbolic link since it was listed"):
        build.sync_file(plan[key], target)
    monkeypatch.undo()
    assert (archive / victim).is_symlink()  # the swap did happen
    assert not target.exists()


def test_a_file_swapped_for_a_fifo_is_refused_without_waiting(archive, tmp_path):
    plan = plan_of(archive, tmp_path)
    (archive / "a.ipynb").unlink()
    os.mkfifo(archive / "a.ipynb")  # opening it for reading would wait for a writer
    with pytest.raises(build.Refused, match="not a regular file"):
        build.sync_file(plan["archive/a.ipynb"], tmp_path / "site" / "a.ipynb")


def test_publishing_reports_a_refused_file_and_goes_on_without_it(archive, tmp_path, capsys):
    plan = plan_of(archive, tmp_path)
    swap_file(archive / "a.ipynb", tmp_path / "outside" / "a.ipynb")
    site = tmp_path / "site"
    build.publish(plan, site)
    assert "archive/a.ipynb" not in plan  # so step_site removes a copy an earlier build left
    assert not (site / "archive" / "a.ipynb").exists()
    assert (site / "archive" / "sub" / "c.ipynb").read_text() == notebook("c")
    assert (site / "index.html").is_file()  # the rest of the site too
    lines = capsys.readouterr().err.splitlines()
    assert f"{archive / 'a.ipynb'}: a symbolic link to {tmp_path / 'outside' / 'a.ipynb'}, outside" in lines[0]
    assert lines[0].endswith(": not published")
    assert len(lines) == 1


# --- 2. names that are not UTF-8 -----------------------------------------------------------------


def test_a_name_that_is_not_utf8_is_fingerprinted_and_reported_not_published(archive, tmp_path, monkeypatch, capsys):
    with open(os.path.join(os.fsencode(archive), b"inputs-\xff.csv"), "w") as data:
        data.write("a,b\n1,2\n")
    with open(os.path.join(os.fsencode(archive), b"nb\xfe.ipynb"), "w") as bad:
        bad.write(notebook("bad"))
    first = index_digest(monkeypatch, archive)  # before: UnicodeEncodeError
    os.utime(os.path.join(os.fsencode(archive), b"inputs-\xff.csv"), ns=(0, 0))
    assert index_digest(monkeypatch, archive) != first  # the data file still counts
    plan = plan_of(archive, tmp_path)
    assert sorted(key for key in plan if key.startswith("archive/")) == ["archive/a.ipynb", "archive/sub/c.ipynb"]
    err = capsys.readouterr().err
    assert f"{archive}/nb\\xfe.ipynb: the file name is not valid UTF-8: not published (rename the file)" in err
    assert "inputs-" not in err  # never published, so nothing to say


# --- 3. folders nested past the system's path length ---------------------------------------------


def nest(folder: Path, depth: int, name: str) -> None:
    """`depth` folders called `name`, one in the other, below `folder`, with a notebook at the
    bottom: made from descriptors, as their paths are longer than the system allows."""
    current = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=current)
        inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=current)
        os.close(current)
        current = inner
    file = os.open("deep.ipynb", os.O_WRONLY | os.O_CREAT, dir_fd=current)
    os.write(file, notebook("deep").encode())
    os.close(file)
    os.close(current)


def test_folders_nested_past_the_path_length_are_reported_and_the_build_goes_on(archive, tmp_path, monkeypatch, capsys):
    name = "d" * 120
    nest(archive, 40, name)
    try:
        assert [path.name for path in build.archive_files(archive)] == ["a.ipynb", "c.ipynb"]  # before: OSError
        index_digest(monkeypatch, archive)
        assert sorted(key for key in plan_of(archive, tmp_path) if key.startswith("archive/")) == [
            "archive/a.ipynb",
            "archive/sub/c.ipynb",
        ]
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1  # reported once, though listed three times
        assert lines[0].startswith(f"{archive}/{name}/")
        assert lines[0].endswith(
            ": cannot list the folder: its path is longer than this system allows (File name too long): "
            "nothing below it is published"
        )
    finally:
        shutil.rmtree(archive / name)  # descriptor-based: it copes with such paths


# --- 4. a file that vanishes during the build ----------------------------------------------------


def test_a_file_that_vanishes_after_the_listing_is_reported_and_the_build_goes_on(archive, tmp_path, capsys):
    plan = plan_of(archive, tmp_path)
    (archive / "a.ipynb").unlink()
    with pytest.raises(build.Refused, match="gone since it was listed"):  # before: FileNotFoundError
        build.sync_file(plan["archive/a.ipynb"], tmp_path / "elsewhere" / "a.ipynb")
    site = tmp_path / "site"
    build.publish(plan, site)
    assert "archive/a.ipynb" not in plan
    assert (site / "archive" / "sub" / "c.ipynb").is_file()
    err = capsys.readouterr().err
    assert f"{archive / 'a.ipynb'}: gone since it was listed (No such file or directory; " in err


def test_a_file_that_vanishes_while_the_fingerprint_is_taken_is_marked_not_fatal(archive, monkeypatch):
    listed = build.archive_files(archive)
    (archive / "a.ipynb").unlink()
    monkeypatch.setattr(build, "archive_files", lambda folder, report_left_out=False: listed)
    gone = index_digest(monkeypatch, archive)  # before: FileNotFoundError
    (archive / "a.ipynb").write_text(notebook("a"))
    assert index_digest(monkeypatch, archive) != gone  # the next build sees it back


# --- 5. the fingerprint reads what cellar reads or the site publishes, nothing else --------------


def test_a_huge_data_file_is_fingerprinted_by_its_stat_not_read(archive, monkeypatch):
    data = archive / "data.bin"
    with open(data, "wb") as handle:
        handle.truncate(16 * 2**30)  # sparse: 16 GB that take no room, but a minute to read
    with deadline(30):  # reading it would take a minute or more
        first = index_digest(monkeypatch, archive)
    assert index_digest(monkeypatch, archive) == first  # nothing changed: nothing to redo
    os.utime(data, ns=(0, 0))
    assert index_digest(monkeypatch, archive) != first  # written (its mtime moved): redo


def test_what_cellar_reads_is_fingerprinted_by_its_bytes(archive, monkeypatch):
    first = index_digest(monkeypatch, archive)
    notes = archive / "a.ipynb"
    info = notes.stat()
    notes.write_text(notebook("A"))  # same size
    os.utime(notes, ns=(info.st_atime_ns, info.st_mtime_ns))  # and the same mtime
    assert index_digest(monkeypatch, archive) != first
    notes.write_text(notebook("a"))  # back to the first bytes, with a new mtime
    assert index_digest(monkeypatch, archive) == first


def test_a_published_file_over_cellars_limit_is_reported_not_copied(archive, tmp_path, capsys):
    with open(archive / "big.ipynb", "wb") as handle:
        handle.truncate(build.MAX_FILE_BYTES + 2**20)  # cellar reads no notebook this large
    plan = plan_of(archive, tmp_path)
    build.publish(plan, tmp_path / "site")
    assert "archive/big.ipynb" not in plan
    assert not (tmp_path / "site" / "archive" / "big.ipynb").exists()
    err = capsys.readouterr().err
    assert f"{archive / 'big.ipynb'}: 101.0 MB, over the 100.0 MB limit for one file: not published" in err


def test_build_py_mirrors_what_cellar_reads_of_an_archive():
    from cellar.cli import index
    from cellar.ingest import discovery
    from cellar.rerender import vfs

    assert build.DOCUMENT_SUFFIXES == discovery.DOCUMENT_SUFFIXES
    assert build.MAX_FILE_BYTES == discovery.MAX_FILE_BYTES
    assert build.MAX_BLOB_BYTES == vfs.MAX_BLOB_BYTES
    assert build.GLOSSARY_FILE == index.GLOSSARY_FILE


# --- 6. lessons: only their own regular, visible files -------------------------------------------


def test_a_lesson_publishes_only_its_own_regular_visible_files(tmp_path, monkeypatch, capsys):
    lessons = tmp_path / "lessons"
    lesson = lessons / "03-x"
    (lesson / "sub" / "__pycache__").mkdir(parents=True)
    for name in ("lesson.en.md", "main.py", "sub/data.csv", ".env", "sub/.main.py.swp", "sub/__pycache__/m.pyc"):
        (lesson / name).write_text("x")
    (lesson / "same.py").symlink_to("main.py")  # a link inside the lesson: its file is published
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    (lesson / "secret.txt").symlink_to(outside / "secret.txt")
    (lesson / "data").symlink_to(outside)
    (lessons / "04-linked").symlink_to(outside)
    with open(os.path.join(os.fsencode(lesson), b"bad\xff.md"), "w") as bad:
        bad.write("x")
    monkeypatch.setattr(build, "LESSONS", lessons)
    assert build.lesson_files() == {"03-x": ["lesson.en.md", "main.py", "same.py", "sub/data.csv"]}
    (tmp_path / "no-archive").mkdir()
    plan = plan_of(tmp_path / "no-archive", tmp_path)
    assert sorted(key for key in plan if key.startswith("lessons/")) == [
        "lessons/03-x/lesson.en.md",
        "lessons/03-x/main.py",
        "lessons/03-x/same.py",
        "lessons/03-x/sub/data.csv",
    ]
    err = capsys.readouterr().err
    assert f"{lesson}/secret.txt: a symbolic link to {outside}/secret.txt, outside {lesson}: not published" in err
    assert f"{lesson}/data: a symbolic link to a folder, not walked: not published" in err
    assert f"{lessons}/04-linked: a symbolic link to a folder, not walked: not published" in err
    assert f"{lesson}/bad\\xff.md: the file name is not valid UTF-8: not published (rename the file)" in err
    assert ".env" not in err and ".swp" not in err  # hidden: left out without a word, as in an archive


# --- 7. a site folder inside the archive ---------------------------------------------------------


@pytest.mark.parametrize("command", ["site", "serve"])
@pytest.mark.parametrize("inside", ["out in corpus", "corpus in out"])
def test_a_site_folder_and_an_archive_one_inside_the_other_are_refused(tmp_path, monkeypatch, capsys, command, inside):
    monkeypatch.setattr(build, "step_site", lambda *args, **options: pytest.fail("the site was built"))
    monkeypatch.setattr(build, "command_serve", lambda *args, **options: pytest.fail("the site was built"))
    corpus, out = (
        (tmp_path / "a", tmp_path / "a" / "site")
        if inside == "out in corpus"
        else (tmp_path / "s" / "a", tmp_path / "s")
    )
    corpus.mkdir(parents=True)
    with pytest.raises(SystemExit) as stopped:
        build.main([command, "--corpus", str(corpus), "--out", str(out)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    what = (
        f"--out {out} is inside --corpus {corpus}"
        if inside == "out in corpus"
        else f"--corpus {corpus} is inside --out {out}"
    )
    assert f"error: {what}: " in err

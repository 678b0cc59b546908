"""Finding the documents of a folder, and reading one safely.

In: a folder. Out: the paths of the notebooks and plain documents below it (`DOCUMENT_SUFFIXES`),
sorted, hidden files and folders left out. `read_document` reads one of them, or refuses it with
a `FileRefused` naming the file and the reason, without ever blocking or reading without bound.

An archive is untrusted input. What is read and what is refused:

- only regular files are read. A FIFO, socket or device (even named `x.ipynb`) is refused from
  its `lstat`, before anything opens it; the open itself is non-blocking and checked again.
- a symbolic link is followed only when it resolves to a regular file inside the archive's root;
  a link that leaves the archive (`-> /etc/passwd`), dangles or loops is refused and not opened,
  and so is a file whose folder is such a link (`blobs/sha256/87 -> /elsewhere`).
  Folders are walked without following links: a linked folder is listed and refused, so it is
  reported rather than silently missed.
- a file over `MAX_FILE_BYTES` is refused unread.
- a file name that is not valid UTF-8 (bytes that `os.fsdecode` keeps as surrogate escapes) is
  refused: record paths are cited, stored as UTF-8 JSON and published as URLs.

A file named on a command line (a gold set, a blob to add, a file to hash) is read wherever it is,
through the links it was named by, but as a regular file alone (`open_regular`, `read_regular`);
a file cellar writes is written whole, never through a link (`write_atomic`).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from os import PathLike
from pathlib import PurePath
from typing import Any, BinaryIO

DOCUMENT_SUFFIXES = (
    ".ipynb",
    ".md",
    ".markdown",
    ".txt",
    ".html",
    ".htm",
    ".pdf",
    ".docx",
    ".clauses.xml",
    ".clauses.json",
    ".records.csv",
    ".records.jsonl",
)  # see ingest.documents.extract
MAX_FILE_BYTES = 100 * 1024 * 1024  # one archive file: larger ones are refused unread

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


class FileRefused(ValueError):
    """An archive file that is not read; the message names the file and the reason."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def find_documents(directory: str | os.PathLike[str], suffixes: tuple[str, ...] = DOCUMENT_SUFFIXES) -> list[str]:
    """The notebooks and plain documents below `directory`, sorted; hidden files and folders
    (`.ipynb_checkpoints`, `.git`) are left out. Every name with a document suffix is listed,
    whatever the file is (`read_document` decides), and so is a link to a folder (never
    followed) and a folder that cannot be listed (no permission, a path longer than the system
    allows), so that each one is either read or reported."""
    found = []
    unlisted: list[OSError] = []
    for folder, folders, files in os.walk(directory, onerror=unlisted.append):
        visible = sorted(name for name in folders if not name.startswith("."))
        linked = [name for name in visible if os.path.islink(os.path.join(folder, name))]
        folders[:] = [name for name in visible if name not in linked]
        names = [name for name in files if name.lower().endswith(suffixes) and not name.startswith(".")]
        found += [os.path.join(folder, name) for name in sorted(names + linked)]
    top = os.path.normpath(directory)
    return found + [error.filename for error in unlisted if error.filename and os.path.normpath(error.filename) != top]


def printable(name: str) -> str:
    """A file name as text that can always be printed and stored: bytes that are not UTF-8
    (kept by `os.fsdecode` as surrogate escapes) shown as `\\xNN`."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def lone_surrogate(raw: Any) -> str | None:
    """What is wrong with decoded JSON `raw` when one of its strings (a key or a value) holds a
    lone surrogate (a `\\udXXX` escape with no pair), else None: it has no UTF-8 form, so no
    chunk, record or shard could hold it. Walked without recursion."""
    stack = [raw]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack += value.keys()
            stack += value.values()
        elif isinstance(value, list):
            stack += value
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as error:
                return f"a string holds a lone surrogate ({value[error.start]!a}), which has no UTF-8 form"
    return None


def relative_path(file_path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """`file_path` relative to `root` with `/` separators; a ValueError if it lies outside."""
    absolute, base = PurePath(os.path.abspath(file_path)), PurePath(os.path.abspath(root))
    try:
        return absolute.relative_to(base).as_posix()
    except ValueError:
        raise ValueError(f"{printable(os.fspath(file_path))} is not inside {printable(os.fspath(root))}") from None


def read_document(file_path: str | os.PathLike[str], root: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of the archive file `file_path` (at most `limit`, default `MAX_FILE_BYTES`),
    or a FileRefused whose path is `file_path` relative to `root`."""
    limit = MAX_FILE_BYTES if limit is None else limit
    path = relative_path(file_path, root)
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise FileRefused(printable(path), "the file name is not valid UTF-8: rename the file") from None
    target = os.fspath(file_path)
    try:
        info = os.lstat(target)
        if stat.S_ISLNK(info.st_mode):
            target = os.path.realpath(target)
            inside = PurePath(target).is_relative_to(os.path.realpath(root))
            if not inside:
                raise FileRefused(path, f"a symbolic link to {printable(target)}, outside the archive: not followed")
            info = os.stat(target)
            what = "a symbolic link to "
        else:
            what = ""
            # a folder on its way may be a link (the open below follows those)
            folder = os.path.realpath(os.path.dirname(os.path.abspath(target)))
            if not PurePath(folder).is_relative_to(os.path.realpath(root)):
                raise FileRefused(
                    path,
                    f"a folder on its path is a symbolic link out of the archive (to {printable(folder)}): not followed",
                )
    except OSError as error:
        raise FileRefused(path, _os_problem(error, "cannot read the file")) from None
    _check(path, info, what, limit)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(target, flags)
    except OSError as error:
        raise FileRefused(path, _os_problem(error, "cannot open the file")) from None
    try:
        opened = os.fstat(descriptor)
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise FileRefused(path, "the file changed while it was being read: not read")
        _check(path, opened, what, limit)
        blocks, left = [], limit + 1
        while left > 0 and (block := os.read(descriptor, min(left, 1 << 20))):
            blocks.append(block)
            left -= len(block)
        data = b"".join(blocks)
    except OSError as error:
        raise FileRefused(path, _os_problem(error, "cannot read the file")) from None
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise FileRefused(path, f"grew past the {_size(limit)} limit for one file while it was read: not read")
    return data


NOT_REGULAR = "not a regular file (a folder, a FIFO, a socket or a device): not read"


def open_regular(path: str | PathLike[str]) -> BinaryIO:
    """The regular file `path`, opened to read bytes; an OSError (EINVAL, ``NOT_REGULAR``) when it
    is anything else, which is then never read: a FIFO waits for a writer for ever and a device
    (`/dev/zero`) never ends, and both hung the commands they were named to. Opened without
    blocking, so a FIFO with no writer is not waited on either."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # checked before `open`, which refuses a folder otherwise
        os.close(descriptor)
        raise OSError(errno.EINVAL, NOT_REGULAR)
    return open(descriptor, "rb")


def read_regular(path: str | PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file `path` (``open_regular``); an OSError (EFBIG) when it holds,
    or grows while it is read to, more than `limit` bytes."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        raise OSError(
            errno.EFBIG, f"{max(size, len(data)):,} bytes, over the limit of {limit:,} for one file: not read"
        )
    return data


TEMPORARY_PREFIX = ".tmp-"  # of the file ``write_atomic`` writes before renaming it


def write_atomic(path: str, data: bytes) -> None:
    """Write a file so that readers see the old bytes or the new ones, never a half-written file;
    a link at ``path`` is replaced, never written through (the temporary's name is fresh, made
    with O_EXCL: a link placed at a fixed one had its target overwritten)."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=TEMPORARY_PREFIX)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide the file from a web server
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _check(path: str, info: os.stat_result, what: str, limit: int) -> None:
    for test, kind in _KINDS:
        if test(info.st_mode):
            if kind == "a folder" and not what:  # listed because it could not be listed itself
                raise FileRefused(path, "a folder that cannot be listed (no permission?): nothing below it is read")
            where = "folders are walked without following links" if kind == "a folder" else "not opened"
            raise FileRefused(path, f"{what}{kind}, not a regular file: {where}")
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused(path, f"{what}not a regular file: not opened")
    if info.st_size > limit:
        raise FileRefused(path, f"{_size(info.st_size)}, over the {_size(limit)} limit for one file: not read")


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MB" if count >= 2**20 else f"{count} bytes"


def _os_problem(error: OSError, doing: str) -> str:
    reason = error.strerror or str(error)
    if error.errno == errno.ELOOP:
        return f"{doing}: a symbolic link loop ({reason})"
    if error.errno == errno.ENAMETOOLONG:
        return f"{doing}: its path is longer than this system allows ({reason}); nothing below it is read"
    if isinstance(error, FileNotFoundError):
        return f"{doing}: a dangling symbolic link or a file that is gone ({reason})"
    return f"{doing}: {reason}"

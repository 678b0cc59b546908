"""File stamps: an archive file's SHA-256 taken from the previous build instead of reading and
hashing the file again, when nothing says it changed.

In: a file's ``os.lstat`` and the record the previous build left in the cache folder
(``stamps.json``). Out: the SHA-256 of its bytes, or None (read and hash it).

A stamp is a file's size, modification and change times (nanoseconds) and inode with the SHA-256
of its bytes and ``checked``, the clock (``time.time_ns``) read *before* the file was stat'ed and
read. It is used only when size, times and inode are the same now and the file is not "racily
clean" (git's rule, ``Documentation/technical/racy-git.txt``): a file changed within ``RACY_NS``
of the moment it was hashed could change again without its mtime moving (timestamps are coarse:
FAT keeps 2 s, ext4 the kernel's tick), so its stamp proves nothing and it is hashed again; the
next build then records it with a later ``checked`` and trusts it from then on. The change time
(ctime) is the kernel's own: no one can set it back, so bytes rewritten in place with the size
kept and the mtime restored are seen (``unzip -o`` or ``tar -x`` of a newer copy whose files all
carry one fixed date did that, and the shard kept citing the old text), as git sees them with
``core.trustctime``. What it cannot see: a file server whose clock is more than ``RACY_NS``
behind the builder's. ``cellar index --no-cache`` (no cache, no stamps) reads and hashes every
file.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

RECORD = "stamps.json"
RACY_NS = 2_000_000_000  # 2 s: the coarsest common mtime (FAT); ext4, NTFS and SMB are finer


@dataclass(frozen=True)
class Stamp:
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    sha256: str
    checked: int  # time.time_ns() before the file was stat'ed and read


def clean(stamp: Stamp | None, info: os.stat_result) -> bool:
    """Whether ``stamp`` still gives the bytes of a file whose ``lstat`` is ``info``: a regular
    file of the same size, times and inode, last changed safely before it was hashed."""
    return (
        stamp is not None
        and stat.S_ISREG(info.st_mode)
        and (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        == (stamp.size, stamp.mtime_ns, stamp.ctime_ns, stamp.inode)
        and info.st_mtime_ns + RACY_NS <= stamp.checked
    )


class Stamps:
    """The stamps of the previous build (read from ``directory``) and of this one (``note``d as
    files are hashed or found clean), saved with ``save``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.previous: dict[str, Stamp] = {}
        self.current: dict[str, Stamp] = {}
        try:
            data = json.loads((self.directory / RECORD).read_text(encoding="utf-8"))
            self.previous = {path: Stamp(*fields) for path, fields in data["files"].items()}
        except (OSError, ValueError, KeyError, TypeError):
            pass  # none, or unreadable: every file is hashed

    def digest(self, path: str, info: os.stat_result) -> str | None:
        """The SHA-256 of ``path`` (relative to the archive) when its stamp is clean (kept for
        the next build), else None."""
        stamp = self.previous.get(path)
        if stamp is None or not clean(stamp, info):
            return None
        self.current[path] = stamp
        return stamp.sha256

    def note(self, path: str, info: os.stat_result, sha256: str, checked: int) -> None:
        """Record the SHA-256 of a file just read: ``info`` its ``lstat`` before the read,
        ``checked`` the clock before that."""
        if stat.S_ISREG(info.st_mode):
            self.current[path] = Stamp(info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, sha256, checked)

    def save(self) -> None:
        """Write this build's stamps (whole or not at all)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        files = {path: list(vars(stamp).values()) for path, stamp in sorted(self.current.items())}
        temporary = self.directory / f".{RECORD}.{os.getpid()}.tmp"
        temporary.write_text(json.dumps({"files": files}, separators=(",", ":")), encoding="utf-8")
        os.replace(temporary, self.directory / RECORD)

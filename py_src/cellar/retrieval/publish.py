"""Publishing a shard on disk: written aside, checked, switched atomically (README, "The shard on
disk").

``write_shard(index, "build/shard")`` never touches the shard it replaces until the new one is
whole: it writes every file (each synced) into a new folder beside it,
``build/.shard.versions/<manifest checksum>`` (a file whose bytes the current version already holds
is hard-linked from it, not written again), opens and checks that folder as a reader would
(every file, the model), and only then switches ``build/shard``, a relative symbolic link, to it
with one ``os.replace`` of a new link. A writer killed at any moment leaves the previous shard
whole and in place; the next write removes what it left. The previous version is kept (a search
that opened it can finish reading its files); older ones are removed, so no stale file outlives a
smaller archive. A lock (``flock`` on ``build/.shard.lock``) refuses a second writer with
ShardBusy. A plain folder at the place (a shard of an older cellar: its manifest has cellar's
keys) is moved into the versions folder at the switch; any other folder that is not empty is
refused, never replaced (one with a web app's `manifest.json` was taken for a shard, moved, and
removed by the build after).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from cellar.retrieval import ivf, packing, sharding
from cellar.retrieval.embedding import StaticModel
from cellar.retrieval.incremental import SHARD_STATE
from cellar.retrieval.index import Index
from cellar.retrieval.packing import pack, unpack
from cellar.retrieval.shard import MANIFEST, ShardBusy, ShardError, open_shard
from cellar.retrieval.sharding import Made, Previous, shard_files
from cellar.retrieval.table import NotebookTable


def _places(directory: Path) -> tuple[Path, Path]:
    """The versions folder and the lock file that belong to the shard at `directory`; a ShardError
    when either is a symbolic link (the old versions are removed and the lock written through it:
    a link there had the files of the folder it led to removed, or a file overwritten), or when
    `directory` is itself a version (the shard's link resolved: written there, the next build left
    the shard's link dangling)."""
    versions = directory.parent / f".{directory.name}.versions"
    lock = directory.parent / f".{directory.name}.lock"
    for place in (versions, lock):
        if place.is_symlink():
            raise ShardError(f"{place}: a symbolic link where the shard keeps its own files: not followed")
    if directory.parent.name.startswith(".") and directory.parent.name.endswith(".versions"):
        shard = directory.parent.parent / directory.parent.name[1 : -len(".versions")]
        raise ShardError(f"{directory}: a version of the shard {shard}, not a shard: give {shard} itself")
    return versions, lock


@contextmanager
def shard_lock(directory: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the write lock of the shard at ``directory`` (``flock`` on ``.<name>.lock`` beside
    it), or raise ShardBusy naming the process that holds it. The kernel drops the lock when its
    holder exits, however it exits, so a killed writer never leaves the shard locked. A place
    that ``write_shard`` would refuse to replace (a file, a folder holding something else) is a
    ShardError at once, before a build spends its minutes."""
    directory = Path(directory)
    versions, lock = _places(directory)
    _current_version(directory, versions)
    try:
        import fcntl
    except ImportError:  # no flock here (Windows): one writer at a time is the user's to keep
        yield
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(lock, flags, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 64, 0).decode("ascii", "replace").strip() or "unknown"
            raise ShardBusy(
                f"{directory}: another writer (process {holder}) is writing this shard; "
                f"try again when it has finished (lock {lock})"
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(descriptor)  # releases the lock; the file stays (removing it would race)


def write_shard(
    index: Index,
    directory: str | os.PathLike[str],
    model: StaticModel | None = None,
    *,
    lock: bool = True,
    state: str | os.PathLike[str] | None = None,
) -> dict[str, int]:
    """Write the shard of ``index`` and switch ``directory`` to it atomically (see the module's
    notes): the previous shard stays whole until the new one has been written, synced and
    checked (against ``model`` too, when given). ``lock=False`` when the caller already holds
    ``shard_lock(directory)``. With ``state`` (a folder: the build's cache), what this build
    leaves for the next (``SHARD_STATE``: the files' raw SHA-256s, the IVF fit) is kept there and what
    the previous one left is used (``cellar.retrieval.sharding.Previous``). Returns each file's
    size in bytes."""
    directory = Path(directory)
    with shard_lock(directory) if lock else nullcontext():
        versions, _ = _places(directory)
        current = _current_version(directory, versions)
        made = Made()
        files = shard_files(index, previous=_previous(state, current), made=made)
        _write_and_switch(directory, files, model)
        if state is not None:
            _keep(Path(state), json.loads(files[MANIFEST])["checksum"], made)
    return {name: len(data) for name, data in files.items()}


def _previous(state: str | os.PathLike[str] | None, current: Path | None) -> Previous | None:
    """What the last build left in ``state``, when it describes ``current``, the version the
    shard points to now (a build killed after its switch, or a shard written without this state,
    leaves none that fits: then nothing is reused)."""
    if state is None or current is None:
        return None
    try:
        manifest = json.loads((current / MANIFEST).read_text(encoding="utf-8"))
        meta, arrays = unpack((Path(state) / SHARD_STATE).read_bytes())
        if meta["version"] != manifest["checksum"] or meta["recipe"] != _recipe():
            return None
        listed = manifest["files"]
        files = {raw: (current / name, listed[name]["sha256"]) for name, raw in meta["raw"].items() if name in listed}
        centroids, assign = arrays["centroids"], arrays["assign"].astype(np.int64)
        return Previous(files, meta["containers"], (centroids, assign, int(meta["nprobe"]), float(meta["recall"])))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def _keep(state: Path, checksum: str, made: Made) -> None:
    """Write what this build leaves for the next (whole or not at all)."""
    assert made.fit is not None
    centroids, assign, nprobe, recall = made.fit
    arrays = {"centroids": centroids.astype(np.float32), "assign": assign.astype(np.int32)}
    meta = {
        "version": checksum,
        "recipe": _recipe(),
        "raw": made.raw,
        "containers": made.containers,
        "nprobe": nprobe,
        "recall": recall,
    }
    state.mkdir(parents=True, exist_ok=True)
    temporary = state / f".{SHARD_STATE}.{os.getpid()}.tmp"
    temporary.write_bytes(pack(arrays, meta))
    os.replace(temporary, state / SHARD_STATE)


def _recipe() -> list[str]:
    """What else decides the IVF fit and a file's gzip besides the content: the code that makes
    them, and NumPy's version (its arithmetic); another recipe fits and compresses again."""
    code = b"".join(Path(str(module.__file__)).read_bytes() for module in (sharding, ivf, packing))
    return [hashlib.sha256(code).hexdigest(), np.__version__]


def _write_and_switch(directory: Path, files: dict[str, bytes], model: StaticModel | None) -> None:
    versions, _ = _places(directory)
    previous = _current_version(directory, versions)
    versions.mkdir(parents=True, exist_ok=True)
    version = json.loads(files[MANIFEST])["checksum"][:16]
    partial = versions / f".partial-{version}-{os.getpid()}"
    earlier = _earlier_files(previous)
    while True:
        if partial.exists():
            shutil.rmtree(partial)
        linked = _fill(partial, files, earlier)
        try:
            _verify(partial, files, model, linked)
            break
        except ShardError as error:
            shutil.rmtree(partial, ignore_errors=True)
            if earlier:  # a damaged file of the previous version was linked: write every file
                earlier = {}
                continue
            raise ShardError(f"{error} (the new shard failed its check; {directory} is unchanged)") from None
    final = versions / version
    if not earlier and previous is not None and final.is_dir():
        # The same content as a kept version, one of whose files failed the check: the whole,
        # checked copy gets a folder of its own and the link moves to it.
        final = versions / f"{version}-{os.getpid()}"
    keep = {final, previous}
    if final.is_dir():  # the same content as a version kept (only checked folders get a version's name)
        shutil.rmtree(partial)
        if final == previous:  # ... as the current one: nothing to switch, nothing more to remove
            keep |= {entry for entry in versions.iterdir() if not entry.name.startswith(".")}
    else:
        os.rename(partial, final)
        _sync_folder(versions)
    if final != previous:
        link = directory.parent / f".{directory.name}.link-{os.getpid()}"
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(os.path.relpath(final, directory.parent), link)
        if directory.is_dir() and not directory.is_symlink():  # an older cellar's plain folder
            previous = versions / f"folder-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
            os.rename(directory, previous)
        os.replace(link, directory)
        _sync_folder(directory.parent)
        keep.add(previous)
    _tidy(directory, versions, keep)


def _current_version(directory: Path, versions: Path) -> Path | None:
    """The version folder ``directory`` links to now (None for none); a place that is neither a
    link, nor a shard folder, nor an empty folder is refused rather than replaced."""
    if directory.is_symlink():
        target = Path(os.path.normpath(directory.parent / os.readlink(directory)))
        if target.parent != versions:  # the user's own link (to a folder of theirs): never re-pointed
            raise ShardError(f"{directory}: a symbolic link to {target}, not to a version of this shard: not replaced")
        return target
    if directory.is_dir():
        if not any(directory.iterdir()) or _older_shard(directory / MANIFEST):
            return None
        raise ShardError(f"{directory}: a folder that holds no shard (no {MANIFEST} of cellar's): not replaced")
    if directory.exists():
        raise ShardError(f"{directory}: not a folder: not replaced")
    return None


# The keys every shard manifest has held since the first: a folder's `manifest.json` without them
# (a web app's, a data package's) is someone else's, and the folder is never moved nor removed.
OLDER_MANIFEST_KEYS = ("cellar", "format", "files", "checksum")


def _older_shard(manifest: Path) -> bool:
    """Whether ``manifest`` is the manifest of a shard an older cellar wrote as a plain folder."""
    try:
        data = json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else None
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and all(key in data for key in OLDER_MANIFEST_KEYS)


def _fill(partial: Path, files: dict[str, bytes], earlier: dict[str, Path]) -> set[str]:
    """Write (or link from ``earlier``) every file of the new version into ``partial``, synced;
    the names of the files linked."""
    folders = sorted({(partial / name).parent for name in files})
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    listed = _listed(json.loads(files[MANIFEST]), files.__getitem__)
    linked = set()
    for name, data in files.items():
        same = earlier.get(listed[name]["sha256"]) if name in listed else None
        if same is not None and _link(same, partial / name):
            linked.add(name)
        else:
            _write_file(partial / name, data)
    for folder in folders:
        _sync_folder(folder)
    return linked


def _earlier_files(previous: Path | None) -> dict[str, Path]:
    """The files of the current version by SHA-256, as its manifest lists them (empty when there
    is none or it cannot be read): an incremental build links the unchanged ones (most fragments)
    rather than writing and syncing them again. The new version is checked whole all the same."""
    if previous is None:
        return {}
    try:
        manifest = json.loads((previous / MANIFEST).read_text(encoding="utf-8"))
        listed = _listed(manifest, lambda name: (previous / name).read_bytes())
        return {entry["sha256"]: previous / name for name, entry in listed.items()}
    except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _listed(manifest: dict[str, Any], read: Callable[[str], bytes]) -> dict[str, dict[str, Any]]:
    """Every file of a shard with its size and SHA-256: the manifest's, and the containers' from
    its notebook table (read with ``read``)."""
    return {**manifest["files"], **NotebookTable(gzip.decompress(read(manifest["table"]))).files()}


def _link(source: Path, target: Path) -> bool:
    """A hard link to a file of the previous version (whose bytes were synced when it was
    written); False where links cannot be made (then the file is written)."""
    try:
        os.link(source, target)
    except OSError:
        return False
    return True


def _write_file(path: Path, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _sync_folder(folder: Path) -> None:
    """Make a folder's entries (new files, a rename) durable; a no-op where folders cannot be opened."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _verify(folder: Path, files: dict[str, bytes], model: StaticModel | None, linked: set[str]) -> None:
    """Open the written folder as a reader would: the manifest, then every file it lists. A file
    linked from the previous version is checked by its bytes and SHA-256 alone: those very bytes
    were decompressed and parsed when that version was checked (at 41,000 notebooks, parsing every
    container again took most of a nothing-changed build's check)."""
    shard = open_shard(folder, model)
    shard.check_all(hashed_only=linked)
    on_disk = {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}
    if on_disk != set(files):
        raise ShardError(f"{folder}: holds {sorted(on_disk ^ set(files))} against its manifest")


def _tidy(directory: Path, versions: Path, keep: set[Path | None]) -> None:
    """Remove every version but the current and the previous one, partial folders that killed
    writers left, and their unused links (the lock is held: no writer is using them)."""
    for entry in versions.iterdir():
        if entry in keep:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    for link in directory.parent.glob(f".{directory.name}.link-*"):
        link.unlink()

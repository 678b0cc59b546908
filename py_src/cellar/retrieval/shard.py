"""The shard: an Index on disk, as a directory of files a static site can serve.

    manifest.json          format, cellar version, model id + SHA-256, analyser settings, BM25
                           parameters, counts, refusal calibration, the notebook table, and every
                           other file with its bytes and SHA-256 (plus a checksum of itself)
    bm25_*.npy             the BM25 score matrix (CSC arrays, see cellar.retrieval.bm25)
    vectors.npy scales.npy int8 chunk embeddings and their per-row scales
    chunk_*.npy            notebook, cell, output and kind of every chunk
    fragments/<n>.json     the chunk records of notebook n: fetched on demand, one per notebook

``open_shard(directory)`` reads from disk; ``Shard(read)`` takes any ``read(name) -> bytes`` (a
browser worker reads what it fetched). Opening checks the format and every array file's SHA-256;
a fragment is checked when it is read. Any mismatch is a ShardError naming the file.

On disk, ``write_shard(index, "build/shard")`` never touches the shard it replaces until the new
one is whole: it writes every file (each synced) into a new folder beside it,
``build/.shard.versions/<manifest checksum>`` (a file whose bytes the current version already holds
is hard-linked from it, not written again), opens and checks that folder as a reader would
(every array, every fragment, the model), and only then switches ``build/shard``, a relative
symbolic link, to it with one ``os.replace`` of a new link. A writer killed at any moment leaves
the previous shard whole and in place; the next write removes what it left. The previous version
is kept (a search that opened it can finish reading its fragments); older ones are removed, so no
stale fragment outlives a smaller archive. A lock (``flock`` on ``build/.shard.lock``) refuses a
second writer with ShardBusy. A plain folder at the place (a shard of an older cellar) is moved
into the versions folder at the switch; a folder that holds no shard is refused, never replaced.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from cellar import __version__
from cellar.ingest.provenance import revision
from cellar.records import KINDS
from cellar.retrieval.analysis import AnalyzerSettings
from cellar.retrieval.bm25 import BM25
from cellar.retrieval.embedding import StaticModel
from cellar.retrieval.index import Index

FORMAT = 1
MANIFEST = "manifest.json"
MANIFEST_KEYS = ("model", "analyzer", "bm25", "counts", "calibration", "notebooks", "files")
ARRAYS = ("vectors", "scales", "chunk_notebook", "chunk_cell", "chunk_output", "chunk_kind")


class ShardError(ValueError):
    """A shard that is missing, damaged or does not fit this cellar or model; names the file."""


class ShardBusy(ShardError):
    """Another process is writing the same shard."""


def _places(directory: Path) -> tuple[Path, Path]:
    """The versions folder and the lock file that belong to the shard at `directory`."""
    return directory.parent / f".{directory.name}.versions", directory.parent / f".{directory.name}.lock"


def fragment_name(n: int) -> str:
    return f"fragments/{n}.json"


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def _canonical(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def shard_files(index: Index) -> dict[str, bytes]:
    """The shard's files by name (manifest last), as bytes: pure, so it can be checked or served."""
    if index.chunks is None:
        raise ValueError("writing a shard needs an index that holds its chunk records")
    files = {f"bm25_{name}.npy": _npy(array) for name, array in index.bm25.to_arrays().items()}
    files.update({f"{name}.npy": _npy(getattr(index, name)) for name in ARRAYS})
    for n, entry in enumerate(index.notebooks):
        chunks = [
            {key: value for key, value in record.items() if key not in ("path", "revision")}
            for record in index.chunks[entry["start"] : entry["end"]]
        ]
        files[fragment_name(n)] = _canonical({"path": entry["path"], "revision": entry["revision"], "chunks": chunks})
    manifest = {
        "format": FORMAT,
        "cellar": __version__,
        "model": {"id": index.model_id, "sha256": index.model_sha256},
        "analyzer": index.analyzer.to_dict(),
        "bm25": {"k1": index.bm25.k1, "b": index.bm25.b},
        "counts": {
            "notebooks": len(index.notebooks),
            "chunks": index.n_chunks,
            "terms": len(index.bm25.terms),
            "dims": int(index.vectors.shape[1]),
        },
        "kinds": list(KINDS),  # the names of chunk_kind.npy's codes
        "calibration": index.calibration,
        "notebooks": index.notebooks,
        "files": {name: {"bytes": len(data), "sha256": revision(data)} for name, data in files.items()},
    }
    manifest["checksum"] = revision(_canonical(manifest))
    files[MANIFEST] = json.dumps(manifest, ensure_ascii=False, indent=1).encode("utf-8")
    return files


@contextmanager
def shard_lock(directory: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the write lock of the shard at ``directory`` (``flock`` on ``.<name>.lock`` beside
    it), or raise ShardBusy naming the process that holds it. The kernel drops the lock when its
    holder exits, however it exits, so a killed writer never leaves the shard locked."""
    try:
        import fcntl
    except ImportError:  # no flock here (Windows): one writer at a time is the user's to keep
        yield
        return
    directory = Path(directory)
    _, lock = _places(directory)
    lock.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
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
    index: Index, directory: str | os.PathLike[str], model: StaticModel | None = None, *, lock: bool = True
) -> dict[str, int]:
    """Write the shard of ``index`` and switch ``directory`` to it atomically (see the module's
    notes): the previous shard stays whole until the new one has been written, synced and
    checked (against ``model`` too, when given). ``lock=False`` when the caller already holds
    ``shard_lock(directory)``. Returns each file's size in bytes."""
    directory = Path(directory)
    files = shard_files(index)
    with shard_lock(directory) if lock else nullcontext():
        _write_and_switch(directory, files, model)
    return {name: len(data) for name, data in files.items()}


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
        _fill(partial, files, earlier)
        try:
            _verify(partial, files, model)
            break
        except ShardError as error:
            shutil.rmtree(partial, ignore_errors=True)
            if earlier:  # a damaged file of the previous version was linked: write every file
                earlier = {}
                continue
            raise ShardError(f"{error} (the new shard failed its check; {directory} is unchanged)") from None
    final = versions / version
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
        return target if target.parent == versions else None
    if directory.is_dir():
        if (directory / MANIFEST).is_file() or not any(directory.iterdir()):
            return None
        raise ShardError(f"{directory}: a folder that holds no shard ({MANIFEST} missing): not replaced")
    if directory.exists():
        raise ShardError(f"{directory}: not a folder: not replaced")
    return None


def _fill(partial: Path, files: dict[str, bytes], earlier: dict[str, Path]) -> None:
    """Write (or link from ``earlier``) every file of the new version into ``partial``, synced."""
    (partial / "fragments").mkdir(parents=True)
    listed = json.loads(files[MANIFEST])["files"]
    for name, data in files.items():
        same = earlier.get(listed[name]["sha256"]) if name in listed else None
        if same is None or not _link(same, partial / name):
            _write_file(partial / name, data)
    _sync_folder(partial / "fragments")
    _sync_folder(partial)


def _earlier_files(previous: Path | None) -> dict[str, Path]:
    """The files of the current version by SHA-256, as its manifest lists them (empty when there
    is none or it cannot be read): an incremental build links the unchanged ones (most fragments)
    rather than writing and syncing them again. The new version is checked whole all the same."""
    if previous is None:
        return {}
    try:
        listed = json.loads((previous / MANIFEST).read_text(encoding="utf-8"))["files"]
        return {entry["sha256"]: previous / name for name, entry in listed.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


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


def _verify(folder: Path, files: dict[str, bytes], model: StaticModel | None) -> None:
    """Open the written folder as a reader would: the manifest, every array, every fragment."""
    shard = open_shard(folder, model)
    for n in range(len(shard.index.notebooks)):
        shard.fragment(n)
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


class Shard:
    """An opened, checked shard. ``index`` has no chunk records: ``fragment(n)`` reads (and
    checks, and keeps) notebook n's records when a search first needs them."""

    def __init__(self, read: Callable[[str], bytes], source: str = "shard") -> None:
        self._read = read
        self.source = source
        self.manifest = self._manifest()
        self._fragments: dict[int, list[dict[str, Any]]] = {}
        arrays = {name: self._array(f"{name}.npy") for name in ARRAYS}
        bm25_names = [name for name in self.manifest["files"] if name.startswith("bm25_")]
        bm25_arrays = {name[5:-4]: self._array(name) for name in bm25_names}
        try:
            bm25 = BM25.from_arrays(bm25_arrays)
            analyzer = AnalyzerSettings.from_dict(self.manifest["analyzer"])
        except (ValueError, KeyError, TypeError) as error:
            raise ShardError(f"{source}: damaged, its arrays do not make an index ({error!r})") from None
        if self.manifest.get("kinds") != list(KINDS):
            raise ShardError(
                f"{source}/{MANIFEST}: chunk kinds {self.manifest.get('kinds')!r}, this cellar knows "
                f"{list(KINDS)}: index the archive again with `cellar index`"
            )
        counts = self.manifest["counts"]
        if arrays["vectors"].shape[0] != counts["chunks"] or bm25.n_docs != counts["chunks"]:
            raise ShardError(
                f"{source}/vectors.npy: {arrays['vectors'].shape[0]} rows, {MANIFEST} counts {counts['chunks']}"
            )
        self.index = Index(
            notebooks=self.manifest["notebooks"],
            bm25=bm25,
            analyzer=analyzer,
            model_id=self.manifest["model"]["id"],
            model_sha256=self.manifest["model"]["sha256"],
            calibration=self.manifest["calibration"],
            vectors=arrays["vectors"],
            scales=arrays["scales"],
            chunk_notebook=arrays["chunk_notebook"],
            chunk_cell=arrays["chunk_cell"],
            chunk_output=arrays["chunk_output"],
            chunk_kind=arrays["chunk_kind"],
        )

    def _manifest(self) -> dict[str, Any]:
        where = f"{self.source}/{MANIFEST}"
        data = self._bytes(MANIFEST)
        try:
            manifest = json.loads(data)
            claimed = manifest.pop("checksum")
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, AttributeError, TypeError) as error:
            raise ShardError(f"{where}: damaged, not a shard manifest ({error})") from None
        if manifest.get("format") != FORMAT:
            raise ShardError(f"{where}: shard format {manifest.get('format')!r}, this cellar reads format {FORMAT}")
        if revision(_canonical(manifest)) != claimed:
            raise ShardError(f"{where}: damaged (its checksum does not match its content)")
        missing = [key for key in MANIFEST_KEYS if not isinstance(manifest.get(key), dict | list)]
        if missing:
            raise ShardError(f"{where}: damaged, not a shard manifest (missing {', '.join(missing)})")
        return manifest

    def _bytes(self, name: str) -> bytes:
        try:
            return self._read(name)
        except OSError as error:
            raise ShardError(f"{self.source}/{name}: cannot read ({error.strerror or error})") from None

    def _checked(self, name: str) -> bytes:
        expected = self.manifest["files"].get(name)
        if expected is None:
            raise ShardError(f"{self.source}/{name}: not listed in {MANIFEST}")
        data = self._bytes(name)
        digest = revision(data)
        if len(data) != expected["bytes"] or digest != expected["sha256"]:
            raise ShardError(
                f"{self.source}/{name}: damaged or replaced (SHA-256 mismatch: the file has {digest}, "
                f"{len(data)} bytes; {MANIFEST} records {expected['sha256']}, {expected['bytes']} bytes)"
            )
        return data

    def _array(self, name: str) -> np.ndarray:
        data = self._checked(name)  # a hash mismatch is "damaged", said by _checked
        try:
            return np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, EOFError, OSError) as error:
            raise ShardError(f"{self.source}/{name}: not a NumPy array file ({error})") from None

    def check_model(self, model: StaticModel) -> None:
        """Refuse a model other than the one the shard was embedded with."""
        expected = self.manifest["model"]
        if (model.id, model.sha256) != (expected["id"], expected["sha256"]):
            raise ShardError(
                f"{self.source}/{MANIFEST}: built with model {expected['id']} (SHA-256 {expected['sha256']}), "
                f"not {model.id} (SHA-256 {model.sha256})"
            )

    def fragment(self, n: int) -> list[dict[str, Any]]:
        """The chunk records of notebook ``n`` (path and revision filled in), checked once."""
        if n not in self._fragments:
            name = fragment_name(n)
            try:
                data = json.loads(self._checked(name))
                path, chunks = data["path"], data["chunks"]
            except (ValueError, KeyError, TypeError) as error:
                if isinstance(error, ShardError):
                    raise
                raise ShardError(f"{self.source}/{name}: damaged, not a fragment ({error!r})") from None
            entry = self.index.notebooks[n]
            if (path, data.get("revision")) != (entry["path"], entry["revision"]):
                raise ShardError(f"{self.source}/{name}: belongs to {data['path']}, not {entry['path']}")
            self._fragments[n] = [{"path": path, "revision": entry["revision"], **chunk} for chunk in chunks]
        return self._fragments[n]


def open_shard(directory: str | os.PathLike[str], model: StaticModel | None = None) -> Shard:
    """The shard in ``directory``, checked; with ``model``, checked against it too."""
    directory = Path(directory)
    if not (directory / MANIFEST).is_file():
        raise ShardError(f"{directory}/{MANIFEST}: missing (not a shard directory)")
    pinned = directory.resolve()  # one version throughout, even if a writer switches the link meanwhile
    shard = Shard(lambda name: (pinned / name).read_bytes(), str(directory))
    if model is not None:
        shard.check_model(model)
    return shard

"""The shard (format 2): an Index on disk as files a static site serves, cut so that a query
fetches only what it needs. What the tab fetches before its first result grows with the number
of notebooks, not of chunks.

    manifest.json                 the one fixed name: format, cellar version, model id + SHA-256,
                                  analyser settings, BM25 statistics (N, avgdl, k1, b), counts,
                                  refusal calibration, the notebook table (with a kind bitmask per
                                  notebook, what filters need), the term ranges of the postings
                                  partitions, the cluster files, the container of every notebook,
                                  and every file with its bytes and SHA-256 (plus its own checksum)
    dense/<hash>.bin.gz           boot: the IVF centroids (float16, one row per cluster)
    terms/<hash>.bin.gz           a postings partition: a contiguous range of the sorted vocabulary
                                  with, per term, its postings (chunk row, kind, and the BM25 score
                                  today's precomputed score matrix holds: the CSC slice of those
                                  columns); df is the length of a term's postings
    clusters/<hash>.bin.gz        an IVF cluster: its chunk rows, kinds, int8 codes and scales
    documents/<hash>.json.gz      a document's published view (its text and blocks): the viewer's
    notebooks/<hash>.bin.gz       a notebook's container: its chunk records, int8 vectors, scales

Every file but the manifest is gzip-compressed (deterministically: no time stamp) and named by
the SHA-256 of its compressed bytes, so a file whose content did not change keeps its name (and
the browser's and service worker's caches survive a rebuild). ``.bin`` files are
``cellar.retrieval.packing``'s: a small JSON header and raw arrays, read with ``np.frombuffer``.

A query needs: the partitions of its terms (``partition_names``), the clusters its vector probes
(``probe``), then the containers of its top notebooks (``container_name``). ``Shard(read,
present=...)`` takes any ``read(name) -> bytes``; with ``present`` (a browser worker: has the file
been fetched yet?), asking for a file that is absent raises NeedFiles naming all that are, so the
caller fetches them in one round and asks again. Every file is checked against the manifest's
SHA-256 when it is first read: a damaged, missing or replaced file is a ShardError naming it.

On disk, ``write_shard(index, "build/shard")`` never touches the shard it replaces until the new
one is whole: it writes every file (each synced) into a new folder beside it,
``build/.shard.versions/<manifest checksum>`` (a file whose bytes the current version already holds
is hard-linked from it, not written again), opens and checks that folder as a reader would
(every file, the model), and only then switches ``build/shard``, a relative symbolic link, to it
with one ``os.replace`` of a new link. A writer killed at any moment leaves the previous shard
whole and in place; the next write removes what it left. The previous version is kept (a search
that opened it can finish reading its files); older ones are removed, so no stale file outlives a
smaller archive. A lock (``flock`` on ``build/.shard.lock``) refuses a second writer with
ShardBusy. A plain folder at the place (a shard of an older cellar) is moved into the versions
folder at the switch; a folder that holds no shard is refused, never replaced.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from cellar import __version__
from cellar.ingest.provenance import revision
from cellar.records import KINDS
from cellar.retrieval.analysis import AnalyzerSettings
from cellar.retrieval.embedding import StaticModel
from cellar.retrieval.index import Index
from cellar.retrieval.ivf import choose_nprobe, cluster_count, kmeans, nearest_centroid
from cellar.retrieval.packing import canonical, compress, hashed, pack, unpack
from cellar.retrieval.table import NotebookTable, table_json

FORMAT = 2
MANIFEST = "manifest.json"
MANIFEST_KEYS = ("model", "analyzer", "bm25", "counts", "calibration", "files", "lexical", "dense")
PARTITION_POSTINGS = 4096  # postings per terms partition (a term is never split)


class ShardError(ValueError):
    """A shard that is missing, damaged or does not fit this cellar or model; names the file."""


class ShardBusy(ShardError):
    """Another process is writing the same shard."""


class NeedFiles(Exception):
    """The files (names relative to the shard) a search needs that have not been fetched yet."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(f"needs {len(names)} file(s): {', '.join(names[:5])}")
        self.names = list(names)


def _places(directory: Path) -> tuple[Path, Path]:
    """The versions folder and the lock file that belong to the shard at `directory`."""
    return directory.parent / f".{directory.name}.versions", directory.parent / f".{directory.name}.lock"


# -- building ---------------------------------------------------------------------------------------


def _partitions(terms: list[str], indptr: np.ndarray, target: int) -> list[tuple[int, int]]:
    """Contiguous term ranges of about ``target`` postings each (a term is never split)."""
    ranges, first, count = [], 0, 0
    starts = indptr.tolist()
    for j in range(len(terms)):
        count += starts[j + 1] - starts[j]
        if count >= target:
            ranges.append((first, j + 1))
            first, count = j + 1, 0
    if first < len(terms):
        ranges.append((first, len(terms)))
    return ranges


def _described(data: bytes) -> dict[str, Any]:
    return {"bytes": len(data), "sha256": revision(data)}


def _kind_mask(kinds: Iterable[int]) -> int:
    mask = 0
    for kind in kinds:
        mask |= 1 << int(kind)
    return mask


def shard_files(
    index: Index, *, partition_postings: int = PARTITION_POSTINGS, clusters: int | None = None
) -> dict[str, bytes]:
    """The shard's files by name (manifest last), as bytes: pure, so it can be checked or served."""
    files: dict[str, bytes] = {}

    def add(role: str, raw: bytes) -> str:
        return added(role, compress(raw))

    def added(role: str, compressed: bytes, extension: str = "bin") -> str:
        name = hashed(role, compressed, extension)
        files[name] = compressed
        return name

    bm25 = index.bm25
    kinds = index.chunk_kind
    lexical_first, lexical_files = [], []
    for first, last in _partitions(bm25.terms, bm25.indptr, partition_postings):
        s, e = int(bm25.indptr[first]), int(bm25.indptr[last])
        encoded = [term.encode("utf-8") for term in bm25.terms[first:last]]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(t) for t in encoded], out=offsets[1:])
        rows = bm25.indices[s:e]
        arrays = {
            "terms_utf8": np.frombuffer(b"".join(encoded), dtype=np.uint8),
            "terms_offsets": offsets,
            "indptr": (bm25.indptr[first : last + 1] - s).astype(np.int64),
            "rows": rows.astype(np.int32),
            "kinds": kinds[rows].astype(np.uint8),
            "scores": bm25.data[s:e].astype(np.float32),
        }
        lexical_first.append(bm25.terms[first])
        lexical_files.append(add("terms", pack(arrays, {"first": bm25.terms[first], "last": bm25.terms[last - 1]})))

    dense = index.dense()
    k = clusters or cluster_count(index.n_chunks)
    centroids = kmeans(dense, k)
    assign = nearest_centroid(dense, centroids)
    nprobe, recall = choose_nprobe(dense, centroids, assign, index.pseudo_questions)
    cluster_files = []
    for c in range(k):
        rows = np.flatnonzero(assign == c).astype(np.int32)
        arrays = {"rows": rows, "kinds": kinds[rows], "codes": index.vectors[rows], "scales": index.scales[rows]}
        cluster_files.append(add("clusters", pack(arrays, {"cluster": c})))
    centroid_file = add("dense", pack({"centroids": centroids.astype(np.float16)}))
    # Each document's published view (its text and blocks, for the site's document viewer).
    documents = {path: added("documents", data, "json") for path, data in sorted(index.documents.items())}

    notebooks, containers = [], []
    for entry, compressed in zip(index.notebooks, index.containers):
        containers.append(added("notebooks", compressed))
        notebooks.append({**entry, "kinds": _kind_mask(np.unique(kinds[entry["start"] : entry["end"]]))})
    # The notebook table grows with the archive (41,000 notebooks: 20 MB of JSON, 5 MB gzipped):
    # a boot file, compressed and checked like the others, not part of the manifest.
    sizes, sums = [len(files[name]) for name in containers], [revision(files[name]) for name in containers]
    table_file = added("table", compress(canonical(table_json(notebooks, containers, sizes, sums))), "json")
    container_files = set(containers)
    kind_codes, kind_counts = np.unique(kinds, return_counts=True)
    manifest = {
        "format": FORMAT,
        "cellar": __version__,
        "model": {"id": index.model_id, "sha256": index.model_sha256},
        "analyzer": index.analyzer.to_dict(),
        "bm25": {"k1": bm25.k1, "b": bm25.b, "n": bm25.n_docs, "avgdl": bm25.avgdl},
        "counts": {
            "notebooks": len(index.notebooks),
            "chunks": index.n_chunks,
            "terms": len(bm25.terms),
            "dims": int(index.vectors.shape[1]),
            "kinds": {KINDS[c]: int(n) for c, n in zip(kind_codes.tolist(), kind_counts.tolist())},
        },
        "kinds": list(KINDS),  # the names of the kind codes
        "calibration": index.calibration,
        "table": table_file,
        "lexical": {"first": lexical_first, "files": lexical_files, "postings": partition_postings},
        "dense": {"centroids": centroid_file, "files": cluster_files, "nprobe": nprobe, "recall@50": recall},
        "boot": [centroid_file, table_file],
        "documents": documents,  # path -> its published view (listed in files)
        "bytes": sum(len(data) for data in files.values()),  # the whole shard but the manifest
        # every file but the containers, which the table lists
        "files": {name: _described(data) for name, data in files.items() if name not in container_files},
    }
    manifest["checksum"] = revision(canonical(manifest))
    # Sorted keys, like the JSON in every other file of the shard (packing.canonical).
    files[MANIFEST] = json.dumps(manifest, ensure_ascii=False, indent=1, sort_keys=True).encode("utf-8")
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
    folders = sorted({(partial / name).parent for name in files})
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    listed = _listed(json.loads(files[MANIFEST]), files.__getitem__)
    for name, data in files.items():
        same = earlier.get(listed[name]["sha256"]) if name in listed else None
        if same is None or not _link(same, partial / name):
            _write_file(partial / name, data)
    for folder in folders:
        _sync_folder(folder)


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


def _verify(folder: Path, files: dict[str, bytes], model: StaticModel | None) -> None:
    """Open the written folder as a reader would: the manifest, then every file it lists."""
    shard = open_shard(folder, model)
    shard.check_all()
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


def checked_manifest(data: bytes, source: str) -> dict[str, Any]:
    """The manifest of the shard at `source` from its bytes, once its checksum and format hold."""
    where = f"{source}/{MANIFEST}"
    try:
        manifest = json.loads(data)
        claimed = manifest.pop("checksum")
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, AttributeError, TypeError) as error:
        raise ShardError(f"{where}: damaged, not a shard manifest ({error})") from None
    if manifest.get("format") != FORMAT:
        raise ShardError(
            f"{where}: shard format {manifest.get('format')!r}, this cellar reads format {FORMAT}: "
            "index the archive again with `cellar index`"
        )
    if revision(canonical(manifest)) != claimed:
        raise ShardError(f"{where}: damaged (its checksum does not match its content)")
    missing = [key for key in MANIFEST_KEYS if not isinstance(manifest.get(key), dict | list)]
    if missing:
        raise ShardError(f"{where}: damaged, not a shard manifest (missing {', '.join(missing)})")
    return manifest


def checked_file(name: str, data: bytes, expected: dict[str, Any] | None, source: str) -> bytes:
    """A shard file's bytes once they match `expected` (its bytes and SHA-256), decompressed."""
    if expected is None:
        raise ShardError(f"{source}/{name}: not listed in {MANIFEST} or its table")
    digest = revision(data)
    if len(data) != expected["bytes"] or digest != expected["sha256"]:
        raise ShardError(
            f"{source}/{name}: damaged or replaced (SHA-256 mismatch: the file has {digest}, "
            f"{len(data)} bytes; {MANIFEST} records {expected['sha256']}, {expected['bytes']} bytes)"
        )
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as error:
        raise ShardError(f"{source}/{name}: damaged, not gzip data ({error})") from None


class Shard:
    """An opened, checked shard: its manifest and boot files (the centroids). Partitions,
    clusters and containers are read (checked, and kept) when a search first needs them.

    ``present(name)``: whether a file can be read now (a browser worker: whether it has been
    fetched); ``require(names)`` raises NeedFiles with those that cannot. None: all can."""

    def __init__(
        self, read: Callable[[str], bytes], source: str = "shard", present: Callable[[str], bool] | None = None
    ) -> None:
        self._read = read
        self._present = present
        self.source = source
        self.manifest = self._manifest()
        self._cache: dict[str, tuple[Any, dict[str, np.ndarray]]] = {}
        self._postings: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._parsed: set[str] = set()
        self._clusters: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._containers: dict[int, tuple[list[dict[str, Any]], np.ndarray]] = {}
        self._container_at: dict[str, int] = {}  # a container's number, once the table is read
        if self.manifest.get("kinds") != list(KINDS):
            raise ShardError(
                f"{source}/{MANIFEST}: chunk kinds {self.manifest.get('kinds')!r}, this cellar knows "
                f"{list(KINDS)}: index the archive again with `cellar index`"
            )
        try:
            self.analyzer = AnalyzerSettings.from_dict(self.manifest["analyzer"])
            bm25 = self.manifest["bm25"]
            self.n_docs, self.k1, self.b, self.avgdl = int(bm25["n"]), bm25["k1"], bm25["b"], bm25["avgdl"]
            self.lexical_first: list[str] = self.manifest["lexical"]["first"]
            self.lexical_files: list[str] = self.manifest["lexical"]["files"]
            dense = self.manifest["dense"]
            self.cluster_files: list[str] = dense["files"]
            self.nprobe = int(dense["nprobe"])
            self.table_file: str = self.manifest["table"]
            self.listed: dict[str, dict[str, Any]] = self.manifest["files"]  # all but the containers
            if len(self.lexical_first) != len(self.lexical_files):
                raise ValueError("the manifest's tables disagree in length")
        except (ValueError, KeyError, TypeError) as error:
            raise ShardError(f"{source}/{MANIFEST}: damaged, not a shard manifest ({error!r})") from None
        self.notebooks = self._table()
        self.containers = self.notebooks.containers
        self._container_at = {name: n for n, name in enumerate(self.containers)}
        self.model_id = self.manifest["model"]["id"]
        self.model_sha256 = self.manifest["model"]["sha256"]
        self.calibration = self.manifest["calibration"]
        self.starts = np.array([*self.notebooks.columns["start"], self.n_chunks], dtype=np.int64)
        _, arrays = self._unpacked(dense["centroids"], ("centroids",))
        self.centroids = arrays["centroids"].astype(np.float32)
        if self.centroids.shape != (len(self.cluster_files), self.manifest["counts"]["dims"]):
            raise ShardError(f"{source}/{dense['centroids']}: {self.centroids.shape} centroids, the manifest disagrees")

    @property
    def n_chunks(self) -> int:
        return int(self.manifest["counts"]["chunks"])

    # -- reading and checking ------------------------------------------------------------------

    def _manifest(self) -> dict[str, Any]:
        return checked_manifest(self._bytes(MANIFEST), self.source)

    def _table(self) -> NotebookTable:
        """The notebook table (a boot file): every notebook's entry, container and its checksum."""
        try:
            return NotebookTable(self._checked(self.table_file))
        except (UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
            if isinstance(error, ShardError):
                raise
            raise ShardError(f"{self.source}/{self.table_file}: damaged, not a notebook table ({error!r})") from None

    @property
    def files(self) -> dict[str, dict[str, Any]]:
        """Every file's bytes and SHA-256: the manifest's, and the containers' from the table."""
        return {**self.listed, **self.notebooks.files()}

    def _expected(self, name: str) -> dict[str, Any] | None:
        if name in self.listed:
            return self.listed[name]
        n = self._container_at.get(name)
        return None if n is None else {"bytes": self.notebooks.sizes[n], "sha256": self.notebooks.sums[n]}

    def _bytes(self, name: str) -> bytes:
        try:
            return self._read(name)
        except OSError as error:
            raise ShardError(f"{self.source}/{name}: cannot read ({error.strerror or error})") from None

    def _checked(self, name: str) -> bytes:
        """The file's bytes once they match the manifest's SHA-256, decompressed."""
        expected = self._expected(name)
        data = self._bytes(name) if expected is not None else b""
        return checked_file(name, data, expected, self.source)

    def _unpacked(self, name: str, needed: Sequence[str] = ()) -> tuple[Any, dict[str, np.ndarray]]:
        if name not in self._cache:
            try:
                meta, arrays = unpack(self._checked(name))
                absent = [key for key in needed if key not in arrays]
                if absent:
                    raise ValueError(f"arrays {absent} missing")
            except (ValueError, KeyError, TypeError) as error:
                if isinstance(error, ShardError):
                    raise
                raise ShardError(f"{self.source}/{name}: damaged ({error!r})") from None
            self._cache[name] = (meta, arrays)
        return self._cache[name]

    def _forget(self) -> None:
        """Let go of every file read so far (they are read and checked again when needed)."""
        for kept in (self._cache, self._postings, self._parsed, self._clusters, self._containers):
            kept.clear()

    def require(self, names: Iterable[str]) -> None:
        """Raise NeedFiles naming those of ``names`` that cannot be read yet (see the class)."""
        if self._present is None:
            return
        absent = [name for name in dict.fromkeys(names) if name not in self._cache and not self._present(name)]
        if absent:
            raise NeedFiles(absent)

    def check_model(self, model: StaticModel) -> None:
        """Refuse a model other than the one the shard was embedded with."""
        expected = self.manifest["model"]
        if (model.id, model.sha256) != (expected["id"], expected["sha256"]):
            raise ShardError(
                f"{self.source}/{MANIFEST}: built with model {expected['id']} (SHA-256 {expected['sha256']}), "
                f"not {model.id} (SHA-256 {model.sha256})"
            )

    def check_all(self) -> None:
        """Read and check every file the manifest lists (the writer's check), one at a time:
        what was read is let go at once, so checking a large archive's shard takes the memory
        of its largest file, not of all of them."""
        for name in self.lexical_files:
            self._partition(name)
            self._forget()
        for c in range(len(self.cluster_files)):
            self.cluster(c)
            self._forget()
        for n in range(len(self.notebooks)):
            self.container(n)
            self._forget()
        documents = list(self.manifest.get("documents", {}).values())
        for name in documents:  # the published documents (cellar.retrieval.published reads them)
            self._checked(name)
        named = {*self.lexical_files, *self.cluster_files, *self.containers, *documents, self.table_file}
        files = set(self.files)
        if named | {self.manifest["dense"]["centroids"]} != files:
            raise ShardError(f"{self.source}/{MANIFEST}: lists files no table names ({sorted(named ^ files)})")

    # -- lexical ---------------------------------------------------------------------------------

    def partition_name(self, term: str) -> str | None:
        """The partition that would hold ``term`` (None: before the first term)."""
        import bisect

        i = bisect.bisect_right(self.lexical_first, term) - 1
        return self.lexical_files[i] if i >= 0 else None

    def partition_names(self, terms: Iterable[str]) -> list[str]:
        return list(dict.fromkeys(name for name in map(self.partition_name, terms) if name is not None))

    def _partition(self, name: str) -> None:
        if name in self._parsed:
            return
        meta, arrays = self._unpacked(name, ("terms_utf8", "terms_offsets", "indptr", "rows", "kinds", "scores"))
        blob = arrays["terms_utf8"].tobytes()
        offsets = arrays["terms_offsets"].tolist()
        indptr = arrays["indptr"].tolist()
        rows, kinds, scores = arrays["rows"], arrays["kinds"], arrays["scores"]
        if len(offsets) != len(indptr) or indptr[-1] != len(rows) or not len(rows) == len(kinds) == len(scores):
            raise ShardError(f"{self.source}/{name}: damaged (its arrays disagree)")
        for j in range(len(offsets) - 1):
            term = blob[offsets[j] : offsets[j + 1]].decode("utf-8")
            s, e = indptr[j], indptr[j + 1]
            self._postings[term] = (rows[s:e], scores[s:e], kinds[s:e])
        self._parsed.add(name)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(chunk rows ascending, BM25 scores, kinds) of ``term``; None for a term no chunk holds."""
        name = self.partition_name(term)
        if name is None:
            return None
        self._partition(name)
        return self._postings.get(term)

    # -- dense -----------------------------------------------------------------------------------

    def probe(self, query_vector: np.ndarray, nprobe: int | None = None) -> list[int]:
        """The clusters whose centroids are closest to the query (best first)."""
        similarity = self.centroids @ query_vector.astype(np.float32)
        return np.argsort(-similarity, kind="stable")[: nprobe or self.nprobe].tolist()

    def cluster_name(self, c: int) -> str:
        return self.cluster_files[c]

    def cluster(self, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(chunk rows, kinds, float32 vectors) of cluster ``c``. The int8 codes are what is kept:
        the float32 vectors, four times their size, are made for each call (a tab that probes
        a few dozen clusters a question would otherwise hold hundreds of MB of them)."""
        if c not in self._clusters:
            name = self.cluster_files[c]
            _, arrays = self._unpacked(name, ("rows", "kinds", "codes", "scales"))
            rows, codes = arrays["rows"], arrays["codes"]
            if codes.shape != (len(rows), self.centroids.shape[1]) or len(arrays["scales"]) != len(rows):
                raise ShardError(f"{self.source}/{name}: damaged (its arrays disagree)")
            self._clusters[c] = (rows, arrays["kinds"], codes, arrays["scales"])
        rows, kinds, codes, scales = self._clusters[c]
        return rows, kinds, codes.astype(np.float32) * scales[:, None]

    # -- notebooks ---------------------------------------------------------------------------------

    def container_name(self, n: int) -> str:
        return self.containers[n]

    def container(self, n: int) -> tuple[list[dict[str, Any]], np.ndarray]:
        """Notebook ``n``'s chunk records (path and revision filled in) and float32 vectors."""
        if n not in self._containers:
            name = self.containers[n]
            meta, arrays = self._unpacked(name, ("vectors", "scales"))
            entry = self.notebooks[n]
            try:
                path, chunks = meta["path"], meta["chunks"]
            except (KeyError, TypeError) as error:
                raise ShardError(f"{self.source}/{name}: damaged, not a container ({error!r})") from None
            if (path, meta.get("revision")) != (entry["path"], entry["revision"]):
                raise ShardError(f"{self.source}/{name}: belongs to {path}, not {entry['path']}")
            if len(chunks) != entry["end"] - entry["start"] or arrays["vectors"].shape[0] != len(chunks):
                raise ShardError(f"{self.source}/{name}: damaged ({len(chunks)} chunks, the manifest disagrees)")
            records = [{"path": path, "revision": entry["revision"], **chunk} for chunk in chunks]
            self._containers[n] = (records, arrays["vectors"].astype(np.float32) * arrays["scales"][:, None])
        return self._containers[n]

    def fragment(self, n: int) -> list[dict[str, Any]]:
        """The chunk records of notebook ``n``."""
        return self.container(n)[0]

    def notebook_of(self, rows: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.starts, rows, side="right") - 1


def open_shard(
    directory: str | os.PathLike[str], model: StaticModel | None = None, present: Callable[[str], bool] | None = None
) -> Shard:
    """The shard in ``directory``, checked; with ``model``, checked against it too; ``present``
    as for Shard (a browser worker: the files fetched so far)."""
    directory = Path(directory)
    if not (directory / MANIFEST).is_file():
        raise ShardError(f"{directory}/{MANIFEST}: missing (not a shard directory)")
    pinned = directory.resolve()  # one version throughout, even if a writer switches the link meanwhile
    shard = Shard(lambda name: (pinned / name).read_bytes(), str(directory), present)
    if model is not None:
        shard.check_model(model)
    return shard

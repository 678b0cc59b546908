"""The shard (manifest format 3): an Index on disk as files a static site serves, cut so that a
query fetches only what it needs. What the tab fetches before its first result grows with the
number of notebooks, not of chunks.

    manifest.json                 the one fixed name: format, cellar version, model id + SHA-256,
                                  analyser settings, BM25 statistics (N, avgdl, k1, b), counts,
                                  refusal calibration, the term ranges of the postings partitions,
                                  the cluster files, the boot files, and every file but the
                                  containers with its bytes and SHA-256 (plus its own checksum)
    table/<hash>.bin.gz           boot: the notebook table by columns (cellar.retrieval.table):
                                  entries, kind bitmasks (what filters need), containers + SHA-256
    dense/<hash>.bin.gz           boot: the IVF centroids (float16, one row per cluster)
    terms/<hash>.bin.gz           a postings partition: a contiguous range of the sorted vocabulary
                                  with each term's postings (chunk row, kind, BM25 score: the CSC
                                  slice of the score matrix); df is a term's postings' length
    clusters/<hash>.bin.gz        an IVF cluster: its chunk rows, kinds, int8 codes and scales
    notebooks/<hash>.bin.gz       a notebook's container: its chunk records, int8 vectors, scales
    documents/<hash>.json.gz      a document's published view (its text and blocks): the viewer's

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

Made from an Index by ``cellar.retrieval.sharding.shard_files``; written aside, checked and
switched atomically by ``cellar.retrieval.publish.write_shard``. The tab loads this module alone.
"""

from __future__ import annotations

import bisect
import gzip
import json
import os
import zlib
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from cellar.ingest.provenance import revision
from cellar.records import KINDS
from cellar.retrieval.analysis import AnalyzerSettings
from cellar.retrieval.embedding import StaticModel
from cellar.retrieval.packing import canonical, unpack
from cellar.retrieval.table import NotebookTable

FORMAT = 3  # 3: the notebook table packed by columns (cellar.retrieval.table), not JSON
MANIFEST = "manifest.json"
MANIFEST_KEYS = ("model", "analyzer", "bm25", "counts", "calibration", "files", "lexical", "dense")
PARTITION_POSTINGS = 4096  # postings per terms partition (a term is never split)
# What a reader keeps of the files it decoded (Shard._keep). A tab's WebAssembly memory never
# shrinks: at 41,000 notebooks a question decodes about 7 MB of partitions and clusters, which,
# all kept, would grow the tab by that much for every question asked.
DECODED_BYTES = 48 << 20
RECORD_BYTES = 1000  # about what a chunk record takes as objects


class ShardError(ValueError):
    """A shard that is missing, damaged or does not fit this cellar or model; names the file."""


class ShardBusy(ShardError):
    """Another process is writing the same shard."""


class NeedFiles(Exception):
    """The files (names relative to the shard) a search needs that have not been fetched yet."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(f"needs {len(names)} file(s): {', '.join(names[:5])}")
        self.names = list(names)


def checked_manifest(data: bytes, source: str) -> dict[str, Any]:
    """The manifest of the shard at `source` from its bytes, once its checksum and format hold."""
    where = f"{source}/{MANIFEST}"
    try:
        manifest = json.loads(data)
        claimed = manifest.pop("checksum")
    except (ValueError, KeyError, AttributeError, TypeError, RecursionError) as error:  # ValueError: not JSON
        raise ShardError(f"{where}: damaged, not a shard manifest ({error})") from None
    if type(manifest.get("format")) is not int:  # a bool is no format either
        raise ShardError(f"{where}: damaged, its format is {manifest.get('format')!r}, not a number")
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


def checked_file(name: str, data: bytes, expected: Mapping[str, Any] | None, source: str) -> bytes:
    """A shard file's bytes once they match `expected` (its bytes and SHA-256), decompressed."""
    return decompressed(name, checked_bytes(name, data, expected, source), source)


def decompressed(name: str, data: bytes, source: str) -> bytes:
    """A shard file's gzip-compressed bytes, decompressed."""
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as error:
        raise ShardError(f"{source}/{name}: damaged, not gzip data ({error})") from None


def checked_bytes(name: str, data: bytes, expected: Mapping[str, Any] | None, source: str) -> bytes:
    """A shard file's bytes once they match `expected` (its bytes and SHA-256), as they are."""
    if expected is None:
        raise ShardError(f"{source}/{name}: not listed in {MANIFEST} or its table")
    digest = revision(data)
    if len(data) != expected["bytes"] or digest != expected["sha256"]:
        raise ShardError(
            f"{source}/{name}: damaged or replaced (SHA-256 mismatch: the file has {digest}, "
            f"{len(data)} bytes; {MANIFEST} records {expected['sha256']}, {expected['bytes']} bytes)"
        )
    return data


class Partition(NamedTuple):
    """A postings partition as read: its terms (sorted, UTF-8 end to end) and the postings of
    each, found by bisection. Reading one makes no Python object per term: a partition holds up
    to PARTITION_POSTINGS terms, and a question reads several whole partitions for a few."""

    terms: bytes
    offsets: list[int]  # term j is terms[offsets[j]:offsets[j + 1]]
    indptr: list[int]  # its postings are rows, scores and kinds [indptr[j]:indptr[j + 1]]
    rows: np.ndarray
    scores: np.ndarray
    kinds: np.ndarray

    @classmethod
    def of(cls, arrays: Mapping[str, np.ndarray]) -> Partition:
        """The partition of a terms file's arrays; ValueError if they disagree."""
        terms = arrays["terms_utf8"].tobytes()
        offsets, indptr = arrays["terms_offsets"].tolist(), arrays["indptr"].tolist()
        rows, scores, kinds = arrays["rows"], arrays["scores"], arrays["kinds"]
        if len(offsets) != len(indptr) or offsets[-1] != len(terms) or indptr[-1] != len(rows):
            raise ValueError("its arrays disagree")
        if not len(rows) == len(scores) == len(kinds):
            raise ValueError("its arrays disagree")
        terms.decode("utf-8")  # raises UnicodeDecodeError, a ValueError
        return cls(terms, offsets, indptr, rows, scores, kinds)

    def _term(self, j: int) -> bytes:
        return self.terms[self.offsets[j] : self.offsets[j + 1]]

    def get(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(chunk rows ascending, BM25 scores, kinds) of ``term``; None if the partition lacks it.
        UTF-8 bytes sort as the code points they encode, so the str order of the vocabulary holds."""
        key, n = term.encode("utf-8"), len(self.offsets) - 1
        j = bisect.bisect_left(range(n), key, key=self._term)
        if j == n or self._term(j) != key:
            return None
        s, e = self.indptr[j], self.indptr[j + 1]
        return self.rows[s:e], self.scores[s:e], self.kinds[s:e]


class Shard:
    """An opened, checked shard: its manifest and boot files (the centroids). Partitions,
    clusters and containers are read (checked, and kept) when a search first needs them.

    ``present(name)``: whether a file can be read now (a browser worker: whether it has been
    fetched); ``require(names)`` raises NeedFiles with those that cannot. None: all can."""

    def __init__(
        self,
        read: Callable[[str], bytes],
        source: str = "shard",
        present: Callable[[str], bool] | None = None,
        *,
        decoded_limit: int = DECODED_BYTES,
    ) -> None:
        self._read = read
        self._present = present
        self.decoded_limit = decoded_limit
        self.source = source
        self.manifest = self._manifest()
        # What the files read so far decode to (a partition's postings by term, a cluster's
        # arrays, a container's records and vectors), least recently used first, and their bytes.
        self._decoded: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self._decoded_bytes = 0
        # The files whose SHA-256 held when first read. A file read again once the reader let go
        # of what it decoded is not hashed again: its name is its content's hash, and where it was
        # read from (a tab's in-memory copy of what it fetched, a shard version no writer changes)
        # holds the bytes that were checked.
        self._verified: set[str] = set()
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
        table = self._checked(self.table_file)  # a boot file: every notebook's entry and container
        try:
            self.notebooks = NotebookTable(table)
        except (ValueError, KeyError, TypeError) as error:
            raise ShardError(f"{source}/{self.table_file}: damaged, not a notebook table ({error!r})") from None
        self.model_id, self.model_sha256 = self.manifest["model"]["id"], self.manifest["model"]["sha256"]
        self.calibration = self.manifest["calibration"]
        self.starts = np.append(self.notebooks.ints("start"), self.n_chunks)
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

    @property
    def files(self) -> dict[str, dict[str, Any]]:
        """Every file's bytes and SHA-256: the manifest's, and the containers' from the table."""
        return {**self.listed, **self.notebooks.files()}

    def _bytes(self, name: str) -> bytes:
        try:
            return self._read(name)
        except OSError as error:
            raise ShardError(f"{self.source}/{name}: cannot read ({error.strerror or error})") from None

    def _checked(self, name: str, expected: Mapping[str, Any] | None = None) -> bytes:
        """The file's bytes once they match the SHA-256 that the manifest (or, given as
        ``expected``, the notebook table) records, decompressed."""
        expected = expected or self.listed.get(name)
        data = self._bytes(name) if expected is not None else b""
        return checked_file(name, data, expected, self.source)

    def _hashed(self, name: str, expected: Mapping[str, Any] | None = None) -> bytes:
        """The file's bytes once they match the SHA-256 recorded, not decompressed (a file the
        writer linked from a version it checked whole: ``check_all(hashed_only=...)``)."""
        expected = expected or self.listed.get(name)
        data = self._bytes(name) if expected is not None else b""
        return checked_bytes(name, data, expected, self.source)

    def _unpacked(
        self, name: str, needed: Sequence[str] = (), expected: Mapping[str, Any] | None = None
    ) -> tuple[Any, dict[str, np.ndarray]]:
        """The file's meta data and arrays, checked when first read (not kept: see ``_kept``)."""
        if name in self._verified:
            data = decompressed(name, self._bytes(name), self.source)
        else:
            data = self._checked(name, expected)
            self._verified.add(name)
        try:
            meta, arrays = unpack(data)
            absent = [key for key in needed if key not in arrays]
            if absent:
                raise ValueError(f"arrays {absent} missing")
        except (ValueError, KeyError, TypeError) as error:
            raise ShardError(f"{self.source}/{name}: damaged ({error!r})") from None
        return meta, arrays

    def _kept(self, name: str) -> Any:
        """What ``name`` decoded to, if it is still kept (and now the most recently used)."""
        if name not in self._decoded:
            return None
        self._decoded.move_to_end(name)
        return self._decoded[name][0]

    def _keep(self, name: str, decoded: Any, size: int) -> Any:
        """Keep ``decoded`` (about ``size`` bytes), letting go of the least recently used files
        beyond ``decoded_limit`` (they are read again, from where they were fetched, if needed)."""
        self._decoded[name] = (decoded, size)
        self._decoded_bytes += size
        while self._decoded_bytes > self.decoded_limit and len(self._decoded) > 1:
            _, (_, freed) = self._decoded.popitem(last=False)
            self._decoded_bytes -= freed
        return decoded

    def _forget(self) -> None:
        """Let go of every file read so far (they are read and checked again when needed)."""
        self._decoded.clear()
        self._decoded_bytes = 0
        self._verified.clear()

    def require(self, names: Iterable[str]) -> None:
        """Raise NeedFiles naming those of ``names`` that cannot be read yet (see the class)."""
        if self._present is None:
            return
        absent = [name for name in dict.fromkeys(names) if name not in self._decoded and not self._present(name)]
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

    def check_all(self, hashed_only: Collection[str] = ()) -> None:
        """Read and check every file the manifest lists (the writer's check), one at a time:
        what was read is let go at once, so checking a large archive's shard takes the memory
        of its largest file, not of all of them. The files of ``hashed_only`` are checked by
        their bytes and SHA-256, not decompressed and parsed."""
        for name in self.lexical_files:
            if name in hashed_only:
                self._hashed(name)
                continue
            self._partition(name)
            self._forget()
        for c, name in enumerate(self.cluster_files):
            if name in hashed_only:
                self._hashed(name)
                continue
            self.cluster(c)
            self._forget()
        for n, name in enumerate(self.containers):
            if name in hashed_only:
                self._hashed(name, self.notebooks.file(n)[1])
                continue
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
        i = bisect.bisect_right(self.lexical_first, term) - 1
        return self.lexical_files[i] if i >= 0 else None

    def partition_names(self, terms: Iterable[str]) -> list[str]:
        return list(dict.fromkeys(name for name in map(self.partition_name, terms) if name is not None))

    def _partition(self, name: str) -> Partition:
        """Partition ``name``'s postings."""
        kept = self._kept(name)
        if kept is not None:
            return kept
        _, arrays = self._unpacked(name, ("terms_utf8", "terms_offsets", "indptr", "rows", "kinds", "scores"))
        try:
            partition = Partition.of(arrays)
        except ValueError as error:
            raise ShardError(f"{self.source}/{name}: damaged ({error})") from None
        return self._keep(name, partition, sum(array.nbytes for array in arrays.values()))

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(chunk rows ascending, BM25 scores, kinds) of ``term``; None for a term no chunk holds."""
        name = self.partition_name(term)
        return None if name is None else self._partition(name).get(term)

    # -- dense -----------------------------------------------------------------------------------

    def probe(self, query_vector: np.ndarray, nprobe: int | None = None) -> list[int]:
        """The clusters whose centroids are closest to the query (best first)."""
        similarity = self.centroids @ query_vector.astype(np.float32)
        return np.argsort(-similarity, kind="stable")[: nprobe or self.nprobe].tolist()

    def cluster_name(self, c: int) -> str:
        return self.cluster_files[c]

    def cluster(self, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(chunk rows, kinds, int8 codes, scales) of cluster ``c`` (a row's vector is its codes
        times its scale; ``sources.cosines`` scores them as they are)."""
        name = self.cluster_files[c]
        kept = self._kept(name)
        if kept is None:
            _, arrays = self._unpacked(name, ("rows", "kinds", "codes", "scales"))
            rows, codes = arrays["rows"], arrays["codes"]
            if codes.shape != (len(rows), self.centroids.shape[1]) or len(arrays["scales"]) != len(rows):
                raise ShardError(f"{self.source}/{name}: damaged (its arrays disagree)")
            kept = (rows, arrays["kinds"], codes, arrays["scales"])
            self._keep(name, kept, sum(array.nbytes for array in kept))
        return kept

    # -- notebooks ---------------------------------------------------------------------------------

    @property
    def containers(self) -> list[str]:
        """Every notebook's container file, in the notebooks' order."""
        return self.notebooks.containers

    def container_name(self, n: int) -> str:
        return self.notebooks.value("container", n)

    def container(self, n: int) -> tuple[list[dict[str, Any]], np.ndarray, np.ndarray]:
        """Notebook ``n``'s chunk records (path and revision filled in), int8 codes and scales."""
        name, expected = self.notebooks.file(n)
        kept = self._kept(name)
        if kept is not None:
            return kept
        meta, arrays = self._unpacked(name, ("vectors", "scales"), expected)
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
        codes, scales = arrays["vectors"], arrays["scales"]
        size = codes.nbytes + scales.nbytes + sum(RECORD_BYTES + len(chunk.get("text", "")) for chunk in chunks)
        return self._keep(name, (records, codes, scales), size)

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

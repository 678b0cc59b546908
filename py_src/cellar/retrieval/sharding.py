"""The shard's files (``cellar.retrieval.shard``) made from an Index, as bytes: the
postings partitions, the IVF clusters and centroids, the notebooks' containers, the notebook
table and the manifest. Pure: the same index gives the same bytes.

An incremental build may hand in what the previous build left (``Previous``): files whose raw
content is unchanged are taken as they were (not compressed again), and the IVF fit when the
rows are the same. Either way the bytes are those of a cold build.
"""

from __future__ import annotations

import json
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from cellar import __version__
from cellar.ingest.provenance import revision
from cellar.records import KINDS
from cellar.retrieval.index import Index
from cellar.retrieval.ivf import choose_nprobe, cluster_count, kmeans, nearest_centroid
from cellar.retrieval.packing import canonical, compress, hashed, pack
from cellar.retrieval.shard import FORMAT, MANIFEST, PARTITION_POSTINGS
from cellar.retrieval.table import table_bytes

T = TypeVar("T")


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


@dataclass
class Previous:
    """What the previous build of the same shard left for this one (``cellar.retrieval.publish``
    keeps it in the build's cache folder): ``files``, the files of the current version by the
    SHA-256 of their raw (uncompressed) content, each as its path and the SHA-256 of its bytes;
    ``containers``, the SHA-256 of every container in row order, and ``fit``, its IVF: centroids
    (float32, as fitted), every row's cluster, the probe count and its recall."""

    files: dict[str, tuple[Path, str]] = field(default_factory=dict)
    containers: list[str] = field(default_factory=list)
    fit: tuple[np.ndarray, np.ndarray, int, float] | None = None


@dataclass
class Made:
    """What ``shard_files`` leaves for the next build (``Previous``): each file's raw SHA-256 by
    name, the containers' SHA-256s and the IVF fit."""

    raw: dict[str, str] = field(default_factory=dict)
    containers: list[str] = field(default_factory=list)
    fit: tuple[np.ndarray, np.ndarray, int, float] | None = None


def shard_files(
    index: Index,
    *,
    partition_postings: int = PARTITION_POSTINGS,
    clusters: int | None = None,
    previous: Previous | None = None,
    made: Made | None = None,
) -> dict[str, bytes]:
    """The shard's files by name (manifest last), as bytes: pure, so it can be checked or served.

    With ``previous`` (an incremental build), a file whose raw content the current version
    already holds is taken from it rather than compressed again (the same bytes: gzip here is
    deterministic), after its bytes are checked against the SHA-256 recorded for them; and the
    IVF is taken as it was when the rows are the same (``_fit``). ``made``, when given, is
    filled with what the next build will need."""
    files: dict[str, bytes] = {}
    made = made if made is not None else Made()

    def made_ready(raw: bytes) -> tuple[str, bytes]:
        """(the raw content's SHA-256, its gzip): the previous version's file, or compressed now."""
        digest = revision(raw)
        compressed = _earlier(previous.files.get(digest)) if previous is not None else None
        return digest, compressed if compressed is not None else compress(raw)

    def add_all(role: str, raws: Iterable[bytes], extension: str = "bin") -> list[str]:
        names = []
        for digest, compressed in _threaded(made_ready, raws):
            names.append(added(role, compressed, extension))
            made.raw[names[-1]] = digest
        return names

    def add(role: str, raw: bytes, extension: str = "bin") -> str:
        return add_all(role, [raw], extension)[0]

    def added(role: str, compressed: bytes, extension: str = "bin") -> str:
        name = hashed(role, compressed, extension)
        files[name] = compressed
        return name

    bm25 = index.bm25
    kinds = index.chunk_kind
    ranges = _partitions(bm25.terms, bm25.indptr, partition_postings)
    lexical_first = [bm25.terms[first] for first, _ in ranges]
    lexical_files = add_all("terms", (_partition(bm25, kinds, first, last) for first, last in ranges))

    sums = [revision(compressed) for compressed in index.containers]
    centroids, assign, nprobe, recall = _fit(index, sums, clusters, previous)
    made.containers, made.fit = sums, (centroids, assign, nprobe, recall)
    order = np.argsort(assign, kind="stable")  # each cluster's rows, ascending
    bounds = np.searchsorted(assign[order], np.arange(len(centroids) + 1))
    cluster_files = add_all(
        "clusters", (_cluster(index, order[bounds[c] : bounds[c + 1]], c) for c in range(len(centroids)))
    )
    centroid_file = add("dense", pack({"centroids": centroids.astype(np.float16)}))
    # Each document's published view (its text and blocks, for the site's document viewer).
    documents = {path: added("documents", data, "json") for path, data in sorted(index.documents.items())}

    notebooks, containers = [], []
    for entry, compressed in zip(index.notebooks, index.containers):
        containers.append(added("notebooks", compressed))
        notebooks.append({**entry, "kinds": _kind_mask(np.unique(kinds[entry["start"] : entry["end"]]))})
    # The notebook table grows with the archive (41,000 notebooks: a few MB gzipped): a boot
    # file, compressed and checked like the others, not part of the manifest.
    sizes = [len(files[name]) for name in containers]
    table_file = add("table", table_bytes(notebooks, containers, sizes, sums))
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


def _partition(bm25: Any, kinds: np.ndarray, first: int, last: int) -> bytes:
    """A postings partition: the terms ``first:last`` of the sorted vocabulary, packed."""
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
    return pack(arrays, {"first": bm25.terms[first], "last": bm25.terms[last - 1]})


def _cluster(index: Index, rows: np.ndarray, c: int) -> bytes:
    """IVF cluster ``c``: its rows (ascending), their kinds, int8 codes and scales, packed."""
    rows = rows.astype(np.int32)
    arrays = {"rows": rows, "kinds": index.chunk_kind[rows], "codes": index.vectors[rows], "scales": index.scales[rows]}
    return pack(arrays, {"cluster": c})


THREADS = 1 if sys.platform == "emscripten" else 2  # zlib and hashlib let go of the GIL; Pyodide has no threads
WINDOW = 16  # files made ahead of the one being added: bounds the memory held


def _threaded(function: Callable[[bytes], T], items: Iterable[bytes]) -> Iterator[T]:
    """``function`` of each item, in order, on THREADS threads, at most WINDOW ahead."""
    if THREADS == 1:
        yield from map(function, items)
        return
    with ThreadPoolExecutor(THREADS) as pool:
        pending: deque[Future[T]] = deque()
        for item in items:
            pending.append(pool.submit(function, item))
            if len(pending) >= WINDOW:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _fit(
    index: Index,
    sums: list[str],
    clusters: int | None,
    previous: Previous | None,
) -> tuple[np.ndarray, np.ndarray, int, float]:
    """The IVF centroids, every row's cluster, the number of clusters to probe and its recall.

    k-means on a sample, every row to its nearest centroid, and the probe count measured on
    the pseudo-questions (``cellar.retrieval.ivf``): all of it a function of the chunks' vectors
    alone, so a build whose containers are those of the previous build, in the same order (the
    same rows), takes the previous build's result (``Previous.fit``) as it is, byte for byte.
    Any other change fits again: keeping the centroids while the archive drifts was tried and
    changed answers (on a 200-notebook synthetic archive after a 2% change, the top five of 4 of
    the 20 demo questions moved), where an incremental build must answer as a cold one."""
    k = clusters or cluster_count(index.n_chunks)
    if previous is not None and previous.fit is not None and previous.containers == sums:
        centroids, assign, nprobe, recall = previous.fit
        if len(centroids) == k and len(assign) == index.n_chunks:
            return centroids, assign, nprobe, recall
    dense = index.dense()
    centroids = kmeans(dense, k)
    assign, _ = nearest_centroid(dense, centroids)
    nprobe, recall = choose_nprobe(dense, centroids, assign, index.pseudo_questions)
    return centroids, assign, nprobe, recall


def _earlier(known: tuple[Path, str] | None) -> bytes | None:
    """The bytes of a file of the current version, when they still have the SHA-256 recorded."""
    if known is None:
        return None
    try:
        data = known[0].read_bytes()
    except OSError:
        return None
    return data if revision(data) == known[1] else None

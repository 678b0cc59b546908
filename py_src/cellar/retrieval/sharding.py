"""The shard's files (``cellar.retrieval.shard``) made from an Index, as bytes: the
postings partitions, the IVF clusters and centroids, the notebooks' containers, the notebook
table and the manifest. Pure: the same index gives the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import numpy as np

from cellar import __version__
from cellar.ingest.provenance import revision
from cellar.records import KINDS
from cellar.retrieval.index import Index
from cellar.retrieval.ivf import choose_nprobe, cluster_count, kmeans, nearest_centroid
from cellar.retrieval.packing import canonical, compress, hashed, pack
from cellar.retrieval.shard import FORMAT, MANIFEST, PARTITION_POSTINGS
from cellar.retrieval.table import table_bytes


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
    # The notebook table grows with the archive (41,000 notebooks: a few MB gzipped): a boot
    # file, compressed and checked like the others, not part of the manifest.
    sizes, sums = [len(files[name]) for name in containers], [revision(files[name]) for name in containers]
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

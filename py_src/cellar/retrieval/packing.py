"""The binary files of a shard, and a notebook's container, as bytes.

A ``.bin`` file is a small JSON header (meta data and the dtype, shape and offset of each array)
followed by the arrays' raw bytes, read back with ``np.frombuffer``; a shard stores each one
gzip-compressed without a time stamp, so the same content always gives the same bytes and the
same name (``hashed``).

A notebook's container (``container``) holds its chunk records, less the path and revision it
names once, and their int8 vectors with one scale per row. It is made where the notebook is
chunked (a build's worker process), kept as compressed bytes by the index and written to the shard
as it is: a large archive's chunk records never sit in the build's memory as Python objects.
"""

from __future__ import annotations

import gzip
import json
import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from cellar.ingest.provenance import revision
from cellar.records import ChunkRecord

MAGIC = b"CELLAR2\n"


def canonical(data: Any) -> bytes:
    """JSON with sorted keys and no spaces: the same data always gives the same bytes."""
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def pack(arrays: Mapping[str, np.ndarray], meta: Any = None) -> bytes:
    """A header (JSON: ``meta`` and each array's dtype, shape and offset) and the arrays' bytes."""
    layout, blobs, offset = {}, [], 0
    for name, array in arrays.items():
        data = np.ascontiguousarray(array)
        layout[name] = {"dtype": data.dtype.str, "shape": list(data.shape), "offset": offset}
        blobs.append(data.tobytes())
        offset += len(blobs[-1])
    header = canonical({"meta": meta, "arrays": layout})
    return MAGIC + struct.pack("<I", len(header)) + header + b"".join(blobs)


def unpack(data: bytes) -> tuple[Any, dict[str, np.ndarray]]:
    """Inverse of ``pack``: (meta, arrays); raises ValueError on anything that does not fit."""
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 4:
        raise ValueError("not a cellar .bin file")
    (size,) = struct.unpack_from("<I", data, len(MAGIC))
    body = len(MAGIC) + 4 + size
    header = json.loads(data[len(MAGIC) + 4 : body])
    arrays = {}
    for name, spec in header["arrays"].items():
        dtype = np.dtype(spec["dtype"])
        count = math.prod(spec["shape"])
        start = body + spec["offset"]
        if start + count * dtype.itemsize > len(data):
            raise ValueError(f"array {name} runs past the end of the file")
        arrays[name] = np.frombuffer(data, dtype, count, start).reshape(spec["shape"])
    return header["meta"], arrays


# gzip's default level. Measured on the files of a 41,000-notebook shard: level 9 wrote the
# postings at 10 MB/s against 22 MB/s at 6, for files 0.8 % smaller (containers 0.4 %, clusters
# the same), and a large archive's build gzips every partition again after any change. Inflating
# is as fast either way.
COMPRESS_LEVEL = 6


def compress(data: bytes) -> bytes:
    """gzip at ``COMPRESS_LEVEL`` with no time stamp: deterministic."""
    return gzip.compress(data, compresslevel=COMPRESS_LEVEL, mtime=0)


def hashed(role: str, compressed: bytes, extension: str = "bin") -> str:
    """A shard file's name: its folder (``role``) and the SHA-256 of its compressed bytes."""
    return f"{role}/{revision(compressed)[:20]}.{extension}.gz"


def container(
    path: str, file_revision: str, records: Sequence[ChunkRecord], vectors: np.ndarray, scales: np.ndarray
) -> bytes:
    """A notebook's container, compressed: its chunk records (path and revision named once) and
    their int8 vectors and scales."""
    chunks = [{key: value for key, value in record.items() if key not in ("path", "revision")} for record in records]
    meta = {"path": path, "revision": file_revision, "chunks": chunks}
    return compress(pack({"vectors": vectors, "scales": scales}, meta))


def container_records(compressed: bytes) -> list[ChunkRecord]:
    """The chunk records of a container made by ``container`` (path and revision filled in)."""
    meta, _ = unpack(gzip.decompress(compressed))
    named = {"path": meta["path"], "revision": meta["revision"]}
    return [cast(ChunkRecord, {**named, **chunk}) for chunk in meta["chunks"]]

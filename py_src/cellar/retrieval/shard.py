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
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
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
ARRAYS = ("vectors", "scales", "chunk_notebook", "chunk_cell", "chunk_output", "chunk_kind")


class ShardError(ValueError):
    """A shard that is missing, damaged or does not fit this cellar or model; names the file."""


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


def write_shard(index: Index, directory: str | os.PathLike[str]) -> dict[str, int]:
    """Write the shard of ``index`` into ``directory`` (created if needed; the manifest is
    written last, so a half-written shard has none). Returns each file's size in bytes."""
    directory = Path(directory)
    files = shard_files(index)
    (directory / "fragments").mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (directory / name).write_bytes(data)
    return {name: len(data) for name, data in files.items()}


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
        try:
            bm25 = BM25.from_arrays({name[5:-4]: self._array(name) for name in bm25_names})
            analyzer = AnalyzerSettings.from_dict(self.manifest["analyzer"])
        except ValueError as error:
            raise ShardError(f"{source}: {error}") from None
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
                f"{self.source}/{name}: damaged or replaced (SHA-256 {digest}, {len(data)} bytes; "
                f"{MANIFEST} records {expected['sha256']}, {expected['bytes']} bytes)"
            )
        return data

    def _array(self, name: str) -> np.ndarray:
        try:
            return np.load(io.BytesIO(self._checked(name)), allow_pickle=False)
        except ValueError as error:
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
            data = json.loads(self._checked(name))
            entry = self.index.notebooks[n]
            if (data["path"], data["revision"]) != (entry["path"], entry["revision"]):
                raise ShardError(f"{self.source}/{name}: belongs to {data['path']}, not {entry['path']}")
            self._fragments[n] = [{"path": data["path"], "revision": data["revision"], **c} for c in data["chunks"]]
        return self._fragments[n]


def open_shard(directory: str | os.PathLike[str], model: StaticModel | None = None) -> Shard:
    """The shard in ``directory``, checked; with ``model``, checked against it too."""
    directory = Path(directory)
    if not (directory / MANIFEST).is_file():
        raise ShardError(f"{directory}/{MANIFEST}: missing (not a shard directory)")
    shard = Shard(lambda name: (directory / name).read_bytes(), str(directory))
    if model is not None:
        shard.check_model(model)
    return shard

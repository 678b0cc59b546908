"""The blob store: an archive's input files as content-addressed blobs under
`blobs/sha256/<ab>/<hex>`, every read checked against the blob's SHA-256.

The store is a local folder (the archive) or an fsspec URL (object storage on the host); the
paths that name blobs, and the checks, are cellar.rerender.vfs's, which the browser's worker uses
without a store (it fetches `blob_path(blob_id)` from the site).
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Mapping
from os import PathLike
from typing import Any

from cellar.ingest.discovery import FileRefused, read_document, write_atomic
from cellar.rerender.vfs import (
    BLOB_PATTERN,
    MAX_BLOB_BYTES,
    AnyPath,
    BlobCorrupt,
    BlobNotFound,
    PathMap,
    blob_id_of,
    blob_path,
    verify_blob,
)

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


class BlobStore:
    """Content-addressed blobs under `root/blobs/sha256/<ab>/<hex>`; every read is hash-checked.

    `root` is a local folder (the archive by default) or an fsspec URL such as `s3://bucket/prefix`,
    `gs://bucket/prefix` or `https://host/site/archive`; `storage_options` go to fsspec (an S3
    endpoint, credentials). URLs need fsspec and its protocol's package on the host.
    """

    def __init__(self, root: str | PathLike[str], storage_options: Mapping[str, Any] | None = None) -> None:
        self.root = os.fspath(root)
        self._fs: Any = None
        self._base = self.root
        if _URL.match(self.root):
            import fsspec  # here, not at the top: only object storage on the host needs it

            self._fs, self._base = fsspec.core.url_to_fs(self.root, **dict(storage_options or {}))

    def location(self, blob_id: str) -> str:
        """Where the blob is (or would be): a file path or a URL; it names the blob in errors."""
        relative = blob_path(blob_id)
        if self._fs is None:
            return os.path.join(self.root, *relative.split("/"))
        return f"{self.root.rstrip('/')}/{relative}"

    def _path(self, blob_id: str) -> str:
        if self._fs is None:
            return self.location(blob_id)
        return f"{self._base.rstrip('/')}/{blob_path(blob_id)}"

    def read(self, blob_id: str) -> bytes:
        """The blob's bytes, checked against its id: BlobNotFound or BlobCorrupt name the blob."""
        where, path = self.location(blob_id), self._path(blob_id)
        try:
            if self._fs is None:
                if not os.path.lexists(path):
                    raise FileNotFoundError(path)
                # a regular file inside the store only: never a FIFO, a device or a link out of it
                data = read_document(path, self.root, limit=MAX_BLOB_BYTES)
            else:
                data = self._fs.cat_file(path)
        except FileNotFoundError:
            raise BlobNotFound(errno.ENOENT, f"blob {blob_id} is not in the blob store", where) from None
        except FileRefused as error:
            raise BlobCorrupt(f"{where}: blob {blob_id} cannot be used: {error.problem}") from None
        return verify_blob(blob_id, data, where)

    def write(self, data: bytes) -> str:
        """Store `data` (unless an intact copy is there already) and return its blob id."""
        blob_id = blob_id_of(data)
        try:
            self.read(blob_id)
            return blob_id
        except (BlobNotFound, BlobCorrupt):
            pass  # absent, or damaged and now repaired
        if self._fs is None:
            self._check_folders(blob_id)
            write_atomic(self._path(blob_id), data)
        else:
            self._fs.pipe_file(self._path(blob_id), data)
        return blob_id

    def _check_folders(self, blob_id: str) -> None:
        """Refuse to write a blob through a store folder (`blobs`, `blobs/sha256`, `blobs/sha256/<ab>`)
        that is a symbolic link or not a folder: the blob would land outside the archive, and
        `read` (which refuses such folders) would call it corrupt. Checked before any folder is made,
        so nothing is created through a link either."""
        folder = self.root
        for name in blob_path(blob_id).split("/")[:-1]:
            folder = os.path.join(folder, name)
            if os.path.islink(folder) or (os.path.lexists(folder) and not os.path.isdir(folder)):
                what = "a symbolic link" if os.path.islink(folder) else "not a folder"
                raise PermissionError(errno.EACCES, f"{folder}: {what} in the blob store: no blob is written there")

    def ids(self) -> list[str]:
        """The ids of all blobs in the store, sorted; stray files are not blobs and are left out."""
        if self._fs is not None:
            found = self._fs.find(f"{self._base.rstrip('/')}/blobs/sha256")
            pairs = [name.rsplit("/", 2)[-2:] for name in found]
        else:
            top = os.path.join(self.root, "blobs", "sha256")
            subs = [os.path.join(top, sub) for sub in os.listdir(top)] if os.path.isdir(top) else []
            pairs = [[os.path.basename(sub), name] for sub in subs if os.path.isdir(sub) for name in os.listdir(sub)]
        return sorted(
            f"sha256:{name}" for sub, name in pairs if BLOB_PATTERN.fullmatch(f"sha256:{name}") and name[:2] == sub
        )


def read_bytes(pathmap: PathMap, store: BlobStore, path: AnyPath, cwd: AnyPath | None = None) -> bytes:
    """The checked bytes of the mapped file that `path` names: the only way the sandbox reads input."""
    return store.read(pathmap.resolve(path, cwd))

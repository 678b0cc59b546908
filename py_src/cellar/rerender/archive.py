"""Writing and checking an archive's inputs (`cellar blobs add` / `check`).

In: local files and folders, each with the logical path or folder that notebooks use for it, and
an archive folder. Out: their bytes stored as blobs (cellar.rerender.blob_store's `BlobStore`) and
pathmap.json updated to map them (`add_to_archive`, an `AddReport`); or, for `check_archive`, a
`CheckReport` of every mapped blob that is missing or corrupt and every blob no path uses.
Messages name files and logical paths, never command-line flags: cellar.cli.blobs adds those.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from os import PathLike
from typing import Any

from cellar.ingest.discovery import FileRefused, read_document, read_regular
from cellar.rerender.blob_store import BlobStore
from cellar.rerender.vfs import (
    FORMAT,
    MAX_BLOB_BYTES,
    PATHMAP_FILE,
    BlobCorrupt,
    BlobNotFound,
    PathMap,
    VfsError,
    load_pathmap,
    logical_path,
    save_pathmap,
    tree_target,
)


@dataclass
class AddReport:
    """What `add_to_archive` stored: (logical path, blob id) pairs and one message per bad file."""

    added: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _load_or_empty(archive: str) -> PathMap:
    mapfile = os.path.join(archive, PATHMAP_FILE)
    if os.path.lexists(mapfile):  # a dangling link is reported by load_pathmap, not taken for no map
        return load_pathmap(mapfile)
    return PathMap.empty()


def _tree_files(folder: str) -> Iterator[tuple[str, str]]:
    """(relative path with '/', file path) for every name below `folder`, in a fixed order, listed
    as `find_documents` lists an archive: a link to a folder is yielded, never walked, and so is a
    folder that cannot be listed, so that reading each one (`read_document`) names it rather than
    skipping it silently."""
    unlisted: list[OSError] = []
    for parent, subdirs, names in os.walk(folder, onerror=unlisted.append):
        linked = [name for name in subdirs if os.path.islink(os.path.join(parent, name))]
        subdirs[:] = sorted(name for name in subdirs if name not in linked)
        for name in sorted(names + linked):
            full = os.path.join(parent, name)
            yield os.path.relpath(full, folder).replace(os.sep, "/"), full
    for error in unlisted:
        yield os.path.relpath(error.filename, folder).replace(os.sep, "/"), error.filename


def add_to_archive(
    archive: str | PathLike[str],
    files: Sequence[tuple[str, str | PathLike[str]]] = (),
    trees: Sequence[tuple[str, str | PathLike[str]]] = (),
) -> AddReport:
    """Store input files as blobs and map them: `files` as (logical path, local file) pairs, `trees`
    as (logical folder, local folder) pairs, a tree replacing any earlier tree at the same prefix.

    A later entry for a path replaces an earlier one, whatever its spelling. Blobs are written before
    the map, and pathmap.json atomically, so the map never names a missing blob. A bad file is
    reported and skipped; a map that would be invalid raises PathMapError and is not written.
    """
    archive = os.fspath(archive)
    current = _load_or_empty(archive)
    store = BlobStore(archive)
    report = AddReport()
    new_files: dict[str, str] = {}
    new_trees: dict[str, dict[str, str]] = {}
    tree_names: dict[tuple[str, ...], str] = {}  # one spelling per prefix given twice

    def store_file(local: str | PathLike[str]) -> str | None:
        # a file named on the command line is read wherever it is, through the links it was named
        # by, but a regular file only, up to the blob limit (a FIFO or `/dev/zero` named there hung it)
        try:
            return store.write(read_regular(local, MAX_BLOB_BYTES))
        except OSError as error:
            report.errors.append(f"{os.fspath(local)}: {error.strerror or error}")
            return None

    for logical, local in files:
        try:
            target = logical_path(logical)
        except VfsError as error:
            report.errors.append(
                f"{os.fspath(local)}: logical path {logical!r}: {getattr(error, 'strerror', None) or error}"
            )
            continue
        if not target.parts:
            report.errors.append(f"{os.fspath(local)}: logical path {logical!r}: a share or drive root is not a file")
            continue
        blob = store_file(local)
        if blob is not None:
            new_files[str(target)] = blob
            report.added.append((str(target), blob))
    for prefix, folder in trees:
        try:
            root = logical_path(prefix)
        except VfsError as error:
            report.errors.append(
                f"{os.fspath(folder)}: logical folder {prefix!r}: {getattr(error, 'strerror', None) or error}"
            )
            continue
        if not os.path.isdir(folder):
            report.errors.append(f"{os.fspath(folder)}: not a folder")
            continue
        tree = new_trees.setdefault(tree_names.setdefault(root.key, str(root)), {})
        for relative, local in _tree_files(os.fspath(folder)):
            try:
                # as an archive's files are read: regular files only, no link out of the folder, never
                # blocking (a FIFO), so that nothing from outside it becomes a blob the site publishes
                data = read_document(local, folder, limit=MAX_BLOB_BYTES)
                target = tree_target(root, relative)
                blob = store.write(data)
            except FileRefused as error:
                report.errors.append(f"{local}: {error.problem}")
                continue
            except (OSError, VfsError) as error:
                report.errors.append(f"{local}: {getattr(error, 'strerror', None) or error}")
                continue
            tree[relative] = blob
            report.added.append((str(target), blob))

    if new_files or new_trees:
        mapfile = os.path.join(archive, PATHMAP_FILE)
        save_pathmap(mapfile, PathMap.from_dict(_merge(current.data, new_files, new_trees), mapfile))
    return report


def _merge(data: Mapping[str, Any], files: Mapping[str, str], trees: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """The path map `data` with the new entries in and every entry they supersede out."""
    roots = {prefix: logical_path(prefix) for prefix in list(data["trees"]) + list(trees)}
    replaced_roots = {roots[prefix].key for prefix in trees}
    replaced = {logical_path(path).key for path in files} | {
        tree_target(roots[prefix], relative).key for prefix, tree in trees.items() for relative in tree
    }
    kept_files = {path: blob for path, blob in data["files"].items() if logical_path(path).key not in replaced}
    kept_trees = {
        prefix: {
            relative: blob
            for relative, blob in tree.items()
            if tree_target(roots[prefix], relative).key not in replaced
        }
        for prefix, tree in data["trees"].items()
        if roots[prefix].key not in replaced_roots
    }
    return {"format": FORMAT, "files": {**kept_files, **files}, "trees": {**kept_trees, **trees}}


@dataclass
class CheckReport:
    """`check_archive`'s findings; blob ids map to the logical paths that use them."""

    blobs: int
    paths: int
    missing: dict[str, list[str]]
    corrupt: dict[str, list[str]]
    orphans: list[str]
    # why each corrupt blob cannot be used: its bytes hash to another id, or it (or a folder on its
    # path) is a link out of the archive, a FIFO, ...
    problems: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every mapped blob is there and intact (orphans are only listed)."""
        return not self.missing and not self.corrupt

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def check_archive(archive: str | PathLike[str]) -> CheckReport:
    """Read every blob that the archive's path map names, check its hash, and list unused blobs."""
    archive = os.fspath(archive)
    pathmap = load_pathmap(os.path.join(archive, PATHMAP_FILE))
    store = BlobStore(archive)
    users: dict[str, list[str]] = {}
    for path, blob in pathmap.entries().items():
        users.setdefault(blob, []).append(path)
    missing: dict[str, list[str]] = {}
    corrupt: dict[str, list[str]] = {}
    problems: dict[str, str] = {}
    for blob in sorted(users):
        try:
            store.read(blob)
        except BlobNotFound:
            missing[blob] = users[blob]
        except BlobCorrupt as error:
            corrupt[blob], problems[blob] = users[blob], str(error)
    orphans = [blob for blob in store.ids() if blob not in users]
    return CheckReport(len(users), sum(map(len, users.values())), missing, corrupt, orphans, problems)

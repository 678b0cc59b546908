"""The shard's notebook table, by columns: one list per field, not one dict per notebook.

A page parses the table before its first answer. At 41,000 notebooks, a dict per notebook (with
its meta dict) was 22 MB of JSON and 1.1 s of ``json.loads`` in CPython, twice that in the tab,
and 86 MB of objects kept afterwards. By columns, the same table is a few hundred thousand
strings and numbers, and a notebook's entry (the NotebookEntry of ``cellar.records``, with its
kind bitmask) is made when it is asked for: a search shows a few.

    {"columns": {"path": [...], "revision": [...], ..., "kinds": [...], "entry": [...]},
     "meta": {"project": [...], "year": [...], ...},        null: the notebook has no such key
     "containers": [...], "bytes": [...], "sha256": [...]}  each notebook's container file
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

COLUMNS = ("path", "revision", "title", "status", "reason", "rendered", "start", "end", "cells", "kinds", "entry")
OPTIONAL = ("entry",)  # absent from an entry when null


def table_json(
    notebooks: Sequence[Mapping[str, Any]], containers: Sequence[str], sizes: Sequence[int], sums: Sequence[str]
) -> dict[str, Any]:
    """The table of ``notebooks`` (entries with their kind bitmask) and their container files."""
    meta_keys = sorted({key for entry in notebooks for key in entry["meta"]})
    return {
        "columns": {name: [entry.get(name) for entry in notebooks] for name in COLUMNS},
        "meta": {key: [entry["meta"].get(key) for entry in notebooks] for key in meta_keys},
        "containers": list(containers),
        "bytes": list(sizes),
        "sha256": list(sums),
    }


class NotebookTable(Sequence[dict[str, Any]]):
    """The notebooks of a shard, as a sequence of entries made on demand from the columns."""

    def __init__(self, data: bytes) -> None:
        table = json.loads(data)
        self.columns: dict[str, list[Any]] = table["columns"]
        self.meta: dict[str, list[Any]] = table["meta"]
        self.containers: list[str] = table["containers"]
        self.sizes: list[int] = table["bytes"]
        self.sums: list[str] = table["sha256"]
        n = len(self.containers)
        lengths = {len(column) for column in (*self.columns.values(), *self.meta.values(), self.sizes, self.sums)}
        if set(COLUMNS) - set(self.columns) or lengths - {n}:
            raise ValueError("its columns disagree")
        self._made: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.containers)

    def __getitem__(self, n: int) -> dict[str, Any]:  # type: ignore[override]  # no slices
        if n not in self._made:
            self._made[n] = self._entry(n)
        return self._made[n]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Every entry; those not asked for singly are made and let go (a filter reads them all once)."""
        return (self._made.get(n) or self._entry(n) for n in range(len(self)))

    def _entry(self, n: int) -> dict[str, Any]:
        entry = {name: column[n] for name, column in self.columns.items()}
        for name in OPTIONAL:
            if entry.get(name) is None:
                entry.pop(name, None)
        entry["meta"] = {key: column[n] for key, column in self.meta.items() if column[n] is not None}
        return entry

    def files(self) -> dict[str, dict[str, Any]]:
        """The containers' bytes and SHA-256, by name."""
        return {
            name: {"bytes": size, "sha256": digest}
            for name, size, digest in zip(self.containers, self.sizes, self.sums)
        }

"""The shard's notebook table: one packed file (cellar.retrieval.packing) of columns, not JSON.

A page reads the table before its first answer, and keeps it. At 41,000 notebooks a dict per
notebook was 22 MB of JSON, 1.1 s of ``json.loads`` in CPython (twice that in the tab) and 86 MB
of Python objects; a JSON list per column still made 60 MB of them (a string per notebook and
field). Packed, a column is one or two NumPy arrays read in place from the file's bytes, and the
table holds no object per notebook: an entry (the NotebookEntry of ``cellar.records``, with its
kind bitmask) is made when it is asked for, and a filter tests each distinct value of a column
once (``where``), not each notebook.

Each column (an entry's field, ``meta.<key>`` for each catalogue key, and each notebook's
container file: ``container``, ``bytes``, ``sha256``) is encoded by what it holds:

    int     every value an int: ``<name>.int``, one int64 per notebook
    values  values repeated (at least VALUES_REPEAT times on average; any JSON, None included):
            the distinct values in the header, ``<name>.codes`` an int32 index into them per notebook
    text    distinct strings: their UTF-8 bytes end to end (``<name>.utf8``) and where each
            starts and ends (``<name>.offsets``, one more than the notebooks)
    json    any other values: each one's JSON, as text

A meta value of None is a key the notebook does not have.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from cellar.retrieval.packing import canonical, pack, unpack

COLUMNS = ("path", "revision", "title", "status", "reason", "rendered", "start", "end", "cells", "kinds", "entry")
OPTIONAL = ("entry", "kinds")  # absent from an entry when None
FILES = ("container", "bytes", "sha256")  # each notebook's container file
VALUES_REPEAT = 4


def table_bytes(
    entries: Sequence[Mapping[str, Any]],
    containers: Sequence[str] = (),
    sizes: Sequence[int] = (),
    sums: Sequence[str] = (),
) -> bytes:
    """The packed table of ``entries`` (NotebookEntry dicts, with their kind bitmask) and, when
    given, their container files (name, bytes, SHA-256): deterministic, like every shard file."""
    columns: dict[str, Sequence[Any]] = {name: [entry.get(name) for entry in entries] for name in COLUMNS}
    for key in sorted({key for entry in entries for key in entry["meta"]}):
        columns[f"meta.{key}"] = [entry["meta"].get(key) for entry in entries]
    if containers:
        columns.update(zip(FILES, (containers, sizes, sums)))
    specs: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        specs[name] = _encode(name, values, arrays)
    return pack(arrays, {"rows": len(entries), "columns": specs})


def _encode(name: str, values: Sequence[Any], arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """Column ``name``'s arrays, added to ``arrays``, and its spec for the header (the module
    docstring says which encoding a column takes)."""
    if all(type(value) is int for value in values):
        arrays[f"{name}.int"] = np.array(values, dtype=np.int64)
        return {"encoding": "int"}
    keys = [value if isinstance(value, str) else canonical(value) for value in values]
    distinct = dict.fromkeys(keys)
    if len(distinct) * VALUES_REPEAT <= len(values):
        code = {key: c for c, key in enumerate(distinct)}
        value_of = dict(zip(keys, values))
        arrays[f"{name}.codes"] = np.array([code[key] for key in keys], dtype=np.int32)
        return {"encoding": "values", "values": [value_of[key] for key in distinct]}
    if all(isinstance(value, str) for value in values):
        texts: Sequence[Any] = values
        encoding = "text"
    else:
        texts, encoding = [canonical(value).decode("utf-8") for value in values], "json"
    encoded = [text.encode("utf-8") for text in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(data) for data in encoded], out=offsets[1:])
    arrays[f"{name}.utf8"] = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    arrays[f"{name}.offsets"] = offsets
    return {"encoding": encoding}


class NotebookTable(Sequence[dict[str, Any]]):
    """The notebooks of a shard (or an index), read from the packed table: entries made on
    demand, and columns tested in place."""

    def __init__(self, data: bytes) -> None:
        header, self._arrays = unpack(data)
        self._rows: int = header["rows"]
        self._specs: dict[str, dict[str, Any]] = header["columns"]
        for name, spec in self._specs.items():
            if not self._fits(name, spec):
                raise ValueError(
                    f"column {name}: its arrays disagree with its encoding or the table's {self._rows} rows"
                )
        if set(COLUMNS) - set(OPTIONAL) - set(self._specs):
            raise ValueError(f"columns {sorted(set(COLUMNS) - set(OPTIONAL) - set(self._specs))} missing")
        self._meta = [name for name in self._specs if name.startswith("meta.")]
        self._made: dict[int, dict[str, Any]] = {}

    def _fits(self, name: str, spec: Mapping[str, Any]) -> bool:
        encoding, arrays = spec.get("encoding"), self._arrays
        if encoding == "int":
            return arrays.get(f"{name}.int", np.zeros(0)).shape == (self._rows,)
        if encoding == "values":
            codes = arrays.get(f"{name}.codes", np.zeros(0))
            return codes.shape == (self._rows,) and (
                not self._rows or 0 <= codes.min() <= codes.max() < len(spec["values"])
            )
        if encoding in ("text", "json"):
            offsets, blob = arrays.get(f"{name}.offsets", np.zeros(0)), arrays.get(f"{name}.utf8", np.zeros(0))
            return offsets.shape == (self._rows + 1,) and offsets[0] == 0 and offsets[-1] == len(blob)
        return False

    @classmethod
    def of(cls, entries: Sequence[Mapping[str, Any]]) -> NotebookTable:
        """The table of in-memory entries (an Index's), so they are filtered as a shard's are."""
        return cls(table_bytes(entries))

    def __len__(self) -> int:
        return self._rows

    def __getitem__(self, n: int) -> dict[str, Any]:  # type: ignore[override]  # no slices
        if not 0 <= n < self._rows:
            raise IndexError(n)
        if n not in self._made:
            self._made[n] = self._entry(n)
        return self._made[n]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Every entry; those not asked for singly are made and let go."""
        return (self._made.get(n) or self._entry(n) for n in range(self._rows))

    def _entry(self, n: int) -> dict[str, Any]:
        entry = {name: self.value(name, n) for name in COLUMNS if name in self._specs}
        for name in OPTIONAL:
            if entry.get(name) is None:
                entry.pop(name, None)
        meta = ((name[5:], self.value(name, n)) for name in self._meta)
        entry["meta"] = {key: value for key, value in meta if value is not None}
        return entry

    # -- columns -------------------------------------------------------------------------------

    def value(self, name: str, n: int) -> Any:
        """Column ``name``'s value for notebook ``n`` (None for a column the table lacks)."""
        spec = self._specs.get(name)
        if spec is None:
            return None
        encoding = spec["encoding"]
        if encoding == "int":
            return int(self._arrays[f"{name}.int"][n])
        if encoding == "values":
            return spec["values"][self._arrays[f"{name}.codes"][n]]
        offsets = self._arrays[f"{name}.offsets"]
        text = self._arrays[f"{name}.utf8"][offsets[n] : offsets[n + 1]].tobytes().decode("utf-8")
        return text if encoding == "text" else json.loads(text)

    def column(self, name: str) -> list[Any]:
        """Every notebook's value of column ``name``."""
        spec = self._specs.get(name)
        if spec is not None and spec["encoding"] == "values":
            return [spec["values"][c] for c in self._arrays[f"{name}.codes"].tolist()]
        return [self.value(name, n) for n in range(self._rows)]

    def ints(self, name: str) -> np.ndarray:
        """An int column as an array (``start``, ``end``, ``cells``, ``bytes``)."""
        if self._specs.get(name, {}).get("encoding") != "int":
            raise ValueError(f"column {name} does not hold ints")
        return self._arrays[f"{name}.int"]

    def where(self, name: str, test: Callable[[Any], bool]) -> np.ndarray:
        """Per notebook, ``test`` of its value of column ``name`` (None where it has none); the
        test runs once per distinct value, not once per notebook, wherever the column allows."""
        spec = self._specs.get(name)
        if spec is None:
            return np.full(self._rows, bool(test(None)))
        if spec["encoding"] == "values":
            passed = np.array([bool(test(value)) for value in spec["values"]], dtype=bool)
            return passed[self._arrays[f"{name}.codes"]]
        if spec["encoding"] == "int":
            distinct, inverse = np.unique(self._arrays[f"{name}.int"], return_inverse=True)
            return np.array([bool(test(value)) for value in distinct.tolist()], dtype=bool)[inverse.ravel()]
        return np.array([bool(test(value)) for value in self.column(name)], dtype=bool)

    def starts_with(self, name: str, prefix: str) -> np.ndarray:
        """Per notebook, whether its value of text column ``name`` starts with ``prefix``,
        compared on the UTF-8 bytes in place."""
        if self._specs.get(name, {}).get("encoding") != "text":
            return self.where(name, lambda value: isinstance(value, str) and value.startswith(prefix))
        wanted = np.frombuffer(prefix.encode("utf-8"), dtype=np.uint8)
        blob, offsets = self._arrays[f"{name}.utf8"], self._arrays[f"{name}.offsets"]
        starts = offsets[:-1]
        long_enough = offsets[1:] - starts >= len(wanted)
        if not len(wanted):
            return np.ones(self._rows, dtype=bool)
        at = np.minimum(starts[:, None] + np.arange(len(wanted)), max(len(blob) - 1, 0))
        return long_enough & np.all(blob[at] == wanted, axis=1) if len(blob) else long_enough

    def distinct(self, name: str) -> list[tuple[Any, int]]:
        """The distinct values of column ``name`` (None included), each with the first notebook
        that has it, in the notebooks' order."""
        spec = self._specs.get(name)
        if spec is None:
            return [(None, 0)] if self._rows else []
        if spec["encoding"] in ("values", "int"):
            key = self._arrays[f"{name}.codes" if spec["encoding"] == "values" else f"{name}.int"]
            found, first = np.unique(key, return_index=True)
            value = spec["values"].__getitem__ if spec["encoding"] == "values" else int
            return [(value(k), n) for n, k in sorted(zip(first.tolist(), found.tolist()))]
        seen: dict[str, tuple[Any, int]] = {}
        for n, value in enumerate(self.column(name)):
            seen.setdefault(canonical(value).decode("utf-8"), (value, n))
        return list(seen.values())

    # -- container files -----------------------------------------------------------------------

    def file(self, n: int) -> tuple[str, dict[str, Any]]:
        """Notebook ``n``'s container file: its name, and its bytes and SHA-256."""
        return self.value("container", n), {"bytes": self.value("bytes", n), "sha256": self.value("sha256", n)}

    @property
    def containers(self) -> list[str]:
        """Every notebook's container file name."""
        return self.column("container")

    def files(self) -> dict[str, dict[str, Any]]:
        """The containers' bytes and SHA-256, by name."""
        return dict(self.file(n) for n in range(self._rows))

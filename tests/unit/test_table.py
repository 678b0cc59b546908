"""cellar.retrieval.table: the notebook table packed by columns gives back every entry as it was
given, and answers filters from its columns as a test of each entry would."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from cellar.records import KINDS
from cellar.retrieval.filters import Filters
from cellar.retrieval.packing import pack, unpack
from cellar.retrieval.table import NotebookTable, table_bytes


def _entries(n: int, seed: int = 7) -> list[dict]:
    """Entries whose columns take every encoding: ints, repeated values (None and dicts among
    them), distinct strings (non-ASCII too), distinct other values, and keys some entries lack."""
    rng = random.Random(seed)
    entries, start = [], 0
    for i in range(n):
        cells = rng.randint(1, 30)
        meta = {"year": rng.choice([2005, 2017, 2025, None]), "project": f"{rng.randint(1, 3):02d}-042"}
        meta["tags"] = [f"tag{i}", "ballast"]  # distinct lists: json
        if i % 3 == 0:
            meta["source"] = rng.choice(["records", "clauses"])
            meta["fields"] = {"machine": rng.choice(["T2-0457", "T1-0001"]), "date": "2018-01-02"}
        if i % 5 == 0:
            meta["deprecated"] = True
        entry = {
            "path": f"{2005 + i % 3}/Prüfung {i:03d}/tank_{i}.ipynb",
            "revision": f"{i:064x}",
            "title": f"Tanks {i}",
            "status": rng.choice(["unchecked", "stale"]),
            "reason": None,
            "rendered": None if i % 2 else f"rendered/{i}.ipynb",  # distinct strings and None: json
            "start": start,
            "end": start + cells,
            "cells": cells,
            "kinds": rng.randint(1, (1 << len(KINDS)) - 1),
            "meta": {key: value for key, value in meta.items() if value is not None},
        }
        start += cells
        entries.append(entry)
    return entries


def test_every_entry_comes_back_as_it_was_given():
    entries = _entries(40)
    containers = [f"notebooks/{i:020x}.bin.gz" for i in range(40)]
    table = NotebookTable(table_bytes(entries, containers, list(range(40)), [f"{i:064x}" for i in range(40)]))
    assert list(table) == entries and [table[n] for n in range(40)] == entries
    encodings = {name: spec["encoding"] for name, spec in unpack(table_bytes(entries))[0]["columns"].items()}
    assert {encodings[name] for name in ("start", "path", "status", "meta.tags", "rendered")} == {
        "int",
        "text",
        "values",
        "json",
    }
    assert table.containers == containers and table.file(3) == (containers[3], {"bytes": 3, "sha256": f"{3:064x}"})
    np.testing.assert_array_equal(table.ints("start"), [entry["start"] for entry in entries])
    with pytest.raises(IndexError):
        table[40]


@pytest.mark.parametrize(
    "filters",
    [
        Filters(),
        Filters(include_deprecated=True),
        Filters(year_from=2017),
        Filters(year_from=2006, year_to=2020, project="02-042"),
        Filters(sources=("notebook",)),
        Filters(sources=("records",), fields=(("machine", "T2-0457"),)),
        Filters(path_prefix="2006/Prüfung"),
        Filters(path_prefix="2006/Prüfung 001/tank_1.ipynb and more"),
        Filters(kinds=("table",)),
        Filters(kinds=("code", "plot"), include_deprecated=True),
    ],
    ids=repr,
)
def test_a_filter_lets_in_what_a_test_of_each_entry_lets_in(filters):
    entries = _entries(60)
    mask = filters.mask(NotebookTable.of(entries))
    assert mask.tolist() == [_allowed(filters, entry) for entry in entries]


def _allowed(filters: Filters, entry: dict) -> bool:
    """The filters' meaning, written out for one entry (the reference the columns must meet)."""
    meta = entry["meta"]
    year = meta.get("year")
    bits = sum(1 << KINDS.index(kind) for kind in filters.kinds)
    return (
        (filters.include_deprecated or not meta.get("deprecated"))
        and (filters.year_from is None or (year is not None and year >= filters.year_from))
        and (filters.year_to is None or (year is not None and year <= filters.year_to))
        and (filters.project is None or meta.get("project") == filters.project)
        and (not filters.sources or meta.get("source", "notebook") in filters.sources)
        and all((meta.get("fields") or {}).get(key) == value for key, value in filters.fields)
        and (filters.path_prefix is None or entry["path"].startswith(filters.path_prefix))
        and (not bits or bool(entry["kinds"] & bits))
    )


def test_a_path_prefix_typed_in_one_normal_form_finds_paths_written_in_the_other():
    """An archive copied from a Mac has its names in NFD (`e` + U+0301); a prefix typed on any other
    machine is NFC (`é`). Compared as code points, `--path-prefix café` missed `café/`."""
    entries = _entries(3)
    for entry, name in zip(entries, ("cafe\u0301/a.ipynb", "caf\u00e9/b.ipynb", "cafe/c.ipynb")):
        entry["path"] = name
    table = NotebookTable.of(entries)
    for typed in ("caf\u00e9", "cafe\u0301"):
        assert Filters(path_prefix=typed, include_deprecated=True).mask(table).tolist() == [True, True, False]


def test_an_entry_without_a_kind_bitmask_may_hold_any_kind():
    entries = [{key: value for key, value in entry.items() if key != "kinds"} for entry in _entries(8)]
    assert Filters(kinds=("table",), include_deprecated=True).mask(NotebookTable.of(entries)).all()
    assert "kinds" not in NotebookTable.of(entries)[0]


def test_distinct_values_come_with_their_first_notebook():
    entries = _entries(30)
    table = NotebookTable.of(entries)
    for name, get in [
        ("meta.project", lambda e: e["meta"].get("project")),
        ("path", lambda e: e["path"]),
        ("meta.fields", lambda e: e["meta"].get("fields")),
        ("cells", lambda e: e["cells"]),
        ("meta.no-such-key", lambda e: None),
    ]:
        expected: dict[str, tuple] = {}
        for n, entry in enumerate(entries):
            expected.setdefault(json.dumps(get(entry), sort_keys=True), (get(entry), n))
        assert table.distinct(name) == list(expected.values()), name


def test_an_empty_table_and_a_missing_column():
    table = NotebookTable.of([])
    assert len(table) == 0 and list(table) == [] and table.distinct("meta.year") == []
    assert Filters(year_from=2000).mask(table).shape == (0,)
    assert NotebookTable.of(_entries(5)).where("meta.no-such-key", lambda value: value is None).all()


def test_arrays_that_disagree_with_the_header_are_refused_naming_the_column():
    meta, arrays = unpack(table_bytes(_entries(10)))
    arrays = dict(arrays)
    arrays["path.offsets"] = arrays["path.offsets"][:-1]
    with pytest.raises(ValueError, match="column path"):
        NotebookTable(pack(arrays, meta))
    meta, arrays = unpack(table_bytes(_entries(10)))
    arrays = {**arrays, "status.codes": np.full(10, 99, dtype=np.int32)}
    with pytest.raises(ValueError, match="column status"):
        NotebookTable(pack(arrays, meta))

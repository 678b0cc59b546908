"""Filters: what a search may return, judged per index entry from the notebooks table alone.

A filter never fetches a chunk: the year, project, path, deprecation, source and a record's
structured fields are the entry's catalogue (``NotebookEntry.meta``), and the chunk kinds its
kind bitmask, all columns of the notebook table (``cellar.retrieval.table``).
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cellar.records import KINDS
from cellar.retrieval.table import NotebookTable

SOURCES = ("notebook", "document", "clauses", "records")  # what an index entry is (meta.source)


@dataclass(frozen=True)
class Filters:
    """What a search may return: year range, project, path prefix, chunk kinds; deprecated
    notebooks only when asked for."""

    year_from: int | None = None
    year_to: int | None = None
    project: str | None = None
    path_prefix: str | None = None
    kinds: tuple[str, ...] = ()
    include_deprecated: bool = False
    sources: tuple[str, ...] = ()  # notebook, document, clauses, records (all when empty)
    fields: tuple[tuple[str, str], ...] = ()  # a record's structured fields, e.g. (("machine", "T2-0457"),)

    def __post_init__(self) -> None:
        unknown = [kind for kind in self.kinds if kind not in KINDS]
        if unknown:
            raise ValueError(f"unknown chunk kind(s) {unknown}; choose from {list(KINDS)}")
        strange = [source for source in self.sources if source not in SOURCES]
        if strange:
            raise ValueError(f"unknown source(s) {strange}; choose from {list(SOURCES)}")

    @classmethod
    def of_options(cls, options: Mapping[str, Any]) -> Filters:
        """The filters of a search's options as JSON gives them (the page's, the bridge's: a key
        per field, each optional; null, "" and [] mean no filter), each checked for its type: a
        ValueError names the option and what it takes rather than failing later, or filtering
        on something else (``"kinds": "code"`` read as the kinds c, o, d and e)."""

        def whole(name: str) -> int | None:
            value = options.get(name)
            if value is None or type(value) is int:  # not a bool, not 2017.0
                return value
            raise ValueError(f"search option {name}: a whole year or null, not {value!r}")

        def text(name: str) -> str | None:
            value = options.get(name)
            if value is None or isinstance(value, str):
                return value or None
            raise ValueError(f"search option {name}: a string or null, not {value!r}")

        def names(name: str) -> tuple[str, ...]:
            value = options.get(name) or []
            if isinstance(value, list) and all(isinstance(item, str) for item in value):
                return tuple(value)
            raise ValueError(f"search option {name}: a list of strings, not {value!r}")

        deprecated, pairs = options.get("include_deprecated", False), options.get("fields") or {}
        if not isinstance(deprecated, bool):
            raise ValueError(f"search option include_deprecated: true or false, not {deprecated!r}")
        if not (isinstance(pairs, dict) and all(isinstance(v, str | None) for v in pairs.values())):
            raise ValueError(f"search option fields: an object of field names and string values, not {pairs!r}")
        return cls(
            whole("year_from"), whole("year_to"), text("project"), text("path_prefix"), names("kinds"), deprecated,
            names("sources"), tuple((str(key), value) for key, value in pairs.items() if value),
        )  # fmt: skip

    def mask(self, table: NotebookTable) -> np.ndarray:
        """Per entry of ``table``, whether the filters let it in. Each test runs on a column's
        distinct values (``NotebookTable.where``), not on 41,000 entries made one by one."""
        allowed = np.ones(len(table), dtype=bool)
        if not self.include_deprecated:
            allowed &= table.where("meta.deprecated", lambda deprecated: not deprecated)
        if self.year_from is not None or self.year_to is not None:
            allowed &= table.where("meta.year", self._year_allowed)
        if self.project is not None:
            allowed &= table.where("meta.project", lambda project: project == self.project)
        if self.sources:
            allowed &= table.where("meta.source", lambda source: (source or "notebook") in self.sources)
        if self.fields:
            allowed &= table.where(
                "meta.fields", lambda fields: all((fields or {}).get(key) == value for key, value in self.fields)
            )
        if self.path_prefix is not None:
            # as typed (NFC) or as macOS writes names (NFD): `café` finds a folder copied from a Mac
            spellings = {unicodedata.normalize(form, self.path_prefix) for form in ("NFC", "NFD")}
            allowed &= np.any([table.starts_with("path", spelling) for spelling in sorted(spellings)], axis=0)
        if self.kinds:
            bits = sum(1 << KINDS.index(kind) for kind in set(self.kinds))
            # an entry without a kind bitmask (an in-memory index's) may hold any kind
            allowed &= table.where("kinds", lambda kinds: kinds is None or bool(kinds & bits))
        return allowed

    def _year_allowed(self, year: Any) -> bool:
        return (
            year is not None
            and (self.year_from is None or year >= self.year_from)
            and (self.year_to is None or year <= self.year_to)
        )


OPTIONS = tuple(field.name for field in dataclasses.fields(Filters))  # the filters' keys in a search's options

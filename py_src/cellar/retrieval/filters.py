"""Filters: what a search may return, judged per index entry from the notebooks table alone.

A filter never fetches a chunk: the year, project, path, deprecation, source and a record's
structured fields are the entry's catalogue (``NotebookEntry.meta``), and the chunk kinds its
kind bitmask (``cellar.retrieval.search``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cellar.records import KINDS

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

    def notebook_allowed(self, entry: Mapping[str, Any]) -> bool:
        meta = entry["meta"]
        year = meta.get("year")
        if meta.get("deprecated") and not self.include_deprecated:
            return False
        if (self.year_from is not None or self.year_to is not None) and year is None:
            return False
        if self.year_from is not None and year < self.year_from:
            return False
        if self.year_to is not None and year > self.year_to:
            return False
        if self.project is not None and meta.get("project") != self.project:
            return False
        if self.sources and meta.get("source", "notebook") not in self.sources:
            return False
        fields = meta.get("fields") or {}
        if any(fields.get(key) != value for key, value in self.fields):
            return False
        return self.path_prefix is None or entry["path"].startswith(self.path_prefix)

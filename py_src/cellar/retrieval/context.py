"""A document block's context: what the page shows when a reader opens a document hit.

A notebook hit's context is its neighbourhood (``cellar.retrieval.search.neighbourhood``: the
heading above, the cell and the next two). A document has no cells; its blocks carry their
section path and citation (``cellar.ingest.documents``), so its context is the section's path and
the block with the blocks that follow it in that section, each cited.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cellar.records import NeighbourhoodEntry

FOLLOWING = 2  # blocks after the hit's, as a notebook hit shows the next two cells
TEXT_LIMIT = 1200  # characters of an entry, as a notebook's neighbourhood


def section_context(records: Sequence[Mapping[str, Any]], chunk_id: str) -> list[NeighbourhoodEntry]:
    """A document block's context, as a reader turning to it sees it: the section's heading
    path, then the block and the next ``FOLLOWING`` blocks of the same section, each with its
    citation (the windows of a long block shown once)."""
    at = next((i for i, record in enumerate(records) if record["id"] == chunk_id), None)
    if at is None:
        return []
    path = records[at].get("meta", {}).get("headings") or []
    entries: list[NeighbourhoodEntry] = []
    if path:
        entries.append({"cell": None, "kind": "heading", "text": " > ".join(path)})
    cited: list[str] = []
    for record in records[at:]:
        meta = record.get("meta", {})
        if (meta.get("headings") or []) != path or len(cited) > FOLLOWING:
            break
        if meta.get("citation") in cited:
            continue
        cited.append(meta.get("citation", ""))
        entry: NeighbourhoodEntry = {"cell": None, "kind": record["kind"], "text": record["quote"][:TEXT_LIMIT]}
        entry["citation"] = meta.get("citation", "")
        # where the block lies in the published text, so the page links the entry into the viewer
        entry["start"], entry["end"] = record["start"], record["end"]
        entries.append(entry)
    return entries

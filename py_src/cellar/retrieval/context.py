"""A hit's context (``hit_context``): what the page shows around a hit when a reader opens it.

A notebook hit's context is its neighbourhood (``neighbourhood``: the heading above, the cell
and the next two). A document has no cells; its blocks carry their
section path and citation (``cellar.ingest.documents``), so its context is the section's path and
the block with the blocks that follow it in that section, each cited.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cellar.records import Hit, NeighbourhoodEntry

FOLLOWING = 2  # blocks after the hit's, as a notebook hit shows the next two cells
TEXT_LIMIT = 1200  # characters of an entry, as a notebook's neighbourhood
NEIGHBOUR_CELLS = 2  # cells after the best hit's cell


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


def neighbourhood(records: Sequence[Mapping[str, Any]], cell: int | None) -> list[NeighbourhoodEntry]:
    """The heading above ``cell``, then the cell and the next two with their outputs, from
    one notebook's chunk records (overlapping windows of a cell are shown once, in order)."""
    if cell is None:
        return []
    entries = []
    heading = _heading_above(records, cell)
    if heading:
        entries.append(heading)
    seen_sources: set[tuple[int, int | None]] = set()
    for record in records:
        if not cell <= (record["cell"] if record["cell"] is not None else -1) <= cell + NEIGHBOUR_CELLS:
            continue
        key = (record["cell"], record["output"])
        if record["output"] is None and key in seen_sources:
            continue  # the first window of a cell's source stands for it
        seen_sources.add(key)
        entry: NeighbourhoodEntry = {
            "cell": record["cell"],
            "kind": record["kind"],
            "text": record["quote"][:TEXT_LIMIT],
        }
        if record["output"] is not None:
            entry["output"] = record["output"]
        entries.append(entry)
    return entries


def hit_context(records: Sequence[Mapping[str, Any]], hit: Hit) -> list[NeighbourhoodEntry]:
    """A hit's context: a notebook's ``neighbourhood``; a document's ``section_context``."""
    if "citation" in hit:
        return section_context(records, hit["chunk_id"])
    return neighbourhood(records, hit["cell"])


def _heading_above(records: Sequence[Mapping[str, Any]], cell: int) -> NeighbourhoodEntry | None:
    """The markdown chunk at or above ``cell`` whose text opens the innermost heading there."""
    before = [r for r in records if r["cell"] is not None and r["cell"] <= cell]
    if not before:
        return None
    titles = before[-1].get("meta", {}).get("headings") or []
    for record in reversed(before):
        if record["kind"] == "markdown" and titles and titles[-1] in record["quote"]:
            return {"cell": record["cell"], "kind": "heading", "text": titles[-1]}
    return None

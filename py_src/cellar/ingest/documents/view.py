"""A document as the site publishes it for the document viewer: the extracted text and its
blocks, each with its kind, heading path, citation and exact offsets into that text (a PDF's
page, a note's id and structured fields). Pure data, JSON as it is: the viewer draws the text
as text (never as HTML) and marks the cited block by its offsets.

    {"format": "cellar-document", "version": 1, "path", "revision", "source", "type", "title",
     "designation", "text", "blocks": [{"kind", "start", "end", "headings", "citation",
     "page"?, "entry"?, "fields"?}]}

`cellar.retrieval.shard` writes one such file per document (gzip, named by its hash, listed with
its SHA-256 in the manifest); `published_document` checks one read back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cellar.ingest.documents.blocks import Extracted

FORMAT = "cellar-document"
VERSION = 1


def document_view(path: str, file_revision: str, extracted: Extracted, text: str) -> dict[str, Any]:
    """The published view of the document `path`: its `text` and `extracted`'s blocks as indexed
    (the extracted text cut where the index cuts it, and the blocks within it)."""
    blocks = []
    for block in extracted.blocks:
        described: dict[str, Any] = {
            "kind": block.kind,
            "start": block.start,
            "end": block.end,
            "headings": list(block.headings),
            "citation": block.citation,
        }
        if block.page is not None:
            described["page"] = block.page
        if block.entry is not None:
            described["entry"] = block.entry
        if block.fields:
            described["fields"] = dict(block.fields)
        blocks.append(described)
    return {
        "format": FORMAT,
        "version": VERSION,
        "path": path,
        "revision": file_revision,
        "source": extracted.source,
        "type": extracted.format,
        "title": extracted.title,
        "designation": extracted.designation,
        "text": text,
        "blocks": blocks,
    }


def checked_view(view: Any, path: str, where: str) -> dict[str, Any]:
    """`view` (a published document read back) once it is one and is `path`'s; a ValueError
    naming `where` (the file) otherwise."""
    if not isinstance(view, Mapping) or view.get("format") != FORMAT:
        raise ValueError(f"{where}: not a published document")
    if view.get("version") != VERSION:
        raise ValueError(f"{where}: published document version {view.get('version')!r}, this cellar reads {VERSION}")
    if view.get("path") != path:
        raise ValueError(f"{where}: belongs to {view.get('path')!r}, not {path!r}")
    text = view.get("text")
    blocks = view.get("blocks")
    if not isinstance(text, str) or not isinstance(blocks, list):
        raise ValueError(f"{where}: damaged (no text or blocks)")
    for block in blocks:
        start, end = (block.get("start"), block.get("end")) if isinstance(block, Mapping) else (None, None)
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(text)):
            raise ValueError(f"{where}: damaged (a block's offsets fall outside the text)")
    return dict(view)

"""Chunks: what a chunk record is, how its id is made, and what its searched text may hold.

In: a document's path, revision and meta, then the quotes and searched texts the chunkers find
(`ChunkMaker.add`). Out: `Chunk`s, each a record in the contract order of DESIGN.md
(`Chunk.record`; the kinds are `cellar.records.KINDS`), gathered in a `Chunked` with the skip
counts. `original_text` finds the string a notebook chunk's quote slices; `clean_text` strips
terminal escapes, overwritten progress and base64 from searched text.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cellar.ingest.notebook import Cell, Notebook, Output
from cellar.records import ChunkRecord

ID_HEX = 16

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Text a carriage return sends the cursor back over: from a line's start or a carriage return
# only (tried from every position, a long line ending in \r\n took quadratic time: 26 s at 100,000).
OVERWRITTEN = re.compile(r"(?:^|(?<=\r))[^\r\n]*\r(?!\n)", re.MULTILINE)
# A data URI (with the long lines of a wrapped payload) or any long run of base64 characters.
BASE64 = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]*(?:\r?\n[A-Za-z0-9+/=]{60,})*|[A-Za-z0-9+/]{120,}={0,2}")


@dataclass(frozen=True)
class Chunk:
    """One searchable, citable unit: the chunk record contract of DESIGN.md.

    `cell` is None for plain documents, `output` None for a cell's own source; `meta["field"]`
    names the original string that `quote` slices (see `original_text`).
    """

    id: str
    kind: str
    path: str
    cell: int | None
    output: int | None
    revision: str
    quote: str
    start: int
    end: int
    text: str
    meta: dict[str, Any]

    def record(self) -> ChunkRecord:
        """The chunk as a plain dict in contract order: a line of `cellar chunk --jsonl`."""
        return {
            "id": self.id, "kind": self.kind, "path": self.path, "cell": self.cell,
            "output": self.output, "revision": self.revision, "quote": self.quote,
            "start": self.start, "end": self.end, "text": self.text, "meta": self.meta,
        }  # fmt: skip


@dataclass(frozen=True)
class Chunked:
    """The chunks of one document, what was skipped (reason -> count), and what was chunked:
    the notebook, or a document's (extracted) text."""

    chunks: tuple[Chunk, ...]
    skipped: dict[str, int]
    source: Notebook | str
    title: str | None = None  # a document's title (its first heading, a standard's designation)
    document: Mapping[str, Any] | None = None  # a document's published view (cellar.ingest.documents.view)


def original_text(notebook: Notebook, chunk: Chunk) -> str:
    """The string that a notebook chunk's quote slices: a cell's source, or an output's text,
    MIME data, error value or name, as `chunk.meta["field"]` says. (A plain document's chunks
    slice the document's text.)"""
    assert chunk.cell is not None  # only a plain document's chunks have no cell
    cell = notebook.cells[chunk.cell]
    where = chunk.meta["field"]
    if chunk.output is None or where == "source":
        return cell.source
    output = cell.outputs[chunk.output]
    if where in ("text", "ename", "evalue"):
        return getattr(output, where)
    return output.data[where]


class ChunkMaker:
    """Collects the chunks of one document: stable ids, shared meta, skip counts."""

    def __init__(self, path: str, file_revision: str, meta: dict[str, Any]) -> None:
        self.path, self.revision, self.meta = path, file_revision, meta
        self.chunks: list[Chunk] = []
        self.skipped: Counter[str] = Counter()
        self.cell: int | None = None
        self.cell_key = ""
        self.headings: list[str] = []
        self.digests: dict[tuple[int | None, str], str] = {}

    def start_cell(self, cell: Cell, occurrence: int) -> None:
        self.cell = cell.index
        self.digests = {}
        # Path, content and the rank among identical cells: not the cell index or file revision,
        # so that editing another cell leaves these ids alone.
        self.cell_key = _digest(self.path, cell.cell_type, cell.source, str(occurrence))

    def start_document(self, text: str) -> None:
        self.cell = None
        self.cell_key = _digest(self.path, "document", text)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def add(self, kind: str, original: str, start: int, end: int, text: str,
            output: Output | None = None, place: str = "source", **meta: Any) -> None:  # fmt: skip
        """Add a chunk quoting `original[start:end]`, which is the cell source or `place` of
        `output`; empty values in `meta` are left out."""
        text = text.strip()
        if not text:
            return
        number = None if output is None else output.index
        if (number, place) not in self.digests:
            self.digests[number, place] = "" if output is None else _digest(place, original)
        content = self.digests[number, place]
        chunk_id = _digest(self.cell_key, kind, str(number), content, str(start), str(end))[:ID_HEX]
        meta = {**self.meta, "field": place, "headings": list(self.headings), **meta}
        meta = {key: value for key, value in meta.items() if value not in (None, [], {}, "")}
        self.chunks.append(
            Chunk(chunk_id, kind, self.path, self.cell, number, self.revision,
                  original[start:end], start, end, text, meta)
        )  # fmt: skip


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def clean_text(text: str) -> str:
    """Searchable form of a text: no terminal escapes, no overwritten progress, no base64."""
    if "\x1b" in text:
        text = ANSI.sub("", text)
    if "\r" in text:
        text = OVERWRITTEN.sub("", text)
    return BASE64.sub("[data]", text)

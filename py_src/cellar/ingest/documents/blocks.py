"""Blocks: the citable units of a document, and how they are cited.

In: the text extracted from a file and its `Unit`s (what a format's parser found: headings,
paragraphs, list items, tables, each with its offsets into that text). Out: `Block`s with their
heading path and a citation read the way one says it aloud (`assemble`): a report's
`3.2 Ballast arrangement, paragraph 4`, a list item `3.2 Ballast arrangement, item b`, a table
`3.2 Ballast arrangement, table 1`. Clause collections and records make their blocks
themselves (`cellar.ingest.documents.clauses`, `.notes`) with `§6.3.2 b` and note ids.

Every block keeps `text[start:end]` as its quote, verbatim: nothing is summarised, so a hit can
be checked against the file's revision down to the character.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cellar.ingest.discovery import FileRefused, lone_surrogate
from cellar.text import shortened

SOURCES = ("document", "clauses", "records")  # what a non-notebook file is, as a source
# Every block under a heading carries its title: a 208 KB heading over 2,000 paragraphs made
# 1.4 GB of chunks (and an index that never finished, at 5.7 GB).
MAX_HEADING_CHARS = 200


@dataclass(frozen=True)
class Unit:
    """What a parser found at `text[start:end]`: a heading (`level` from 1, its `title` as
    written, section number included), a paragraph, a list item (`marker`: `b`, `3`, or empty
    for a bullet), a table or a code block."""

    kind: str
    start: int
    end: int
    level: int = 0
    title: str = ""
    marker: str = ""


@dataclass(frozen=True)
class Block:
    """A citable unit: its quote is `text[start:end]` of the extracted text; `headings` is the
    path of section titles above it (its own title for a heading); `fields` the structured
    fields of a record; `entry`, a record's id, makes it an index entry of its own."""

    kind: str
    start: int
    end: int
    headings: tuple[str, ...]
    citation: str
    fields: Mapping[str, str] = field(default_factory=dict)
    entry: str | None = None
    page: int | None = None  # a PDF's page, from 1


@dataclass(frozen=True)
class Extracted:
    """The text extracted from one file and its blocks, in document order. `source` is one of
    SOURCES; `format` names the parser (markdown, text, html, pdf, docx, xml, json, csv, jsonl);
    `designation` is a standard's name (`NEN 3140:2018`), which its citations start with."""

    text: str
    blocks: tuple[Block, ...]
    source: str
    format: str
    title: str | None = None
    designation: str | None = None


def utf8_text(data: bytes, path: str) -> str:
    """A text file's text (a byte-order mark dropped), or a FileRefused naming the file and the
    first byte that is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FileRefused(path, f"not UTF-8 text (byte {error.start}: {error.reason})") from None


# A JSON escape of a surrogate (`\ud800`): only such an escape can put one in a decoded value
# (UTF-8 text has no surrogates), so a text without it is not walked.
ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def refuse_lone_surrogates(raw: Any, source: str, path: str, where: str = "") -> None:
    """A FileRefused when a string of the decoded JSON `raw` (a key or a value) holds a lone
    surrogate (a `\\udXXX` escape without its pair): it has no UTF-8 form, so no chunk, record
    or shard could hold it (as for a notebook, `cellar.ingest.notebook`). `source` is the JSON
    text `raw` came from; `where` (`line 3: `) says where in the file. Walked without recursion."""
    problem = lone_surrogate(raw) if ESCAPED_SURROGATE.search(source) else None
    if problem:
        raise FileRefused(path, where + problem)


def assemble(text: str, units: Iterable[Unit]) -> tuple[Block, ...]:
    """The blocks of a report-like document from its units: each under the heading path in
    effect, numbered within its section by kind (paragraphs, items without a marker, tables),
    so that `paragraph 4` is the fourth paragraph of that section, counted as a reader would.

    A heading followed by its section's first block is quoted with that block (the block starts
    at the heading): a heading alone is too short to answer anything, and as a chunk of its own
    it outranked the paragraph under it (a short text scores high in BM25). A heading followed
    by another heading, or by nothing, is a block of its own, cited by its title."""
    stack: list[tuple[int, str]] = []
    counts: Counter[tuple[tuple[str, ...], str]] = Counter()
    blocks = []
    pending: Unit | None = None  # a heading waiting for its section's first block
    for unit in units:
        if unit.start >= unit.end or not text[unit.start : unit.end].strip():
            continue
        if unit.kind == "heading":
            if pending is not None:
                blocks.append(Block("heading", pending.start, pending.end, _path(stack), heading_title(pending.title)))
            while stack and stack[-1][0] >= unit.level:
                stack.pop()
            stack.append((unit.level, heading_title(unit.title)))
            pending = unit
            continue
        path = _path(stack)
        kind = "paragraph" if unit.kind == "code" else unit.kind
        counts[path, kind] += 1
        if kind == "list item" and unit.marker:
            place = f"item {unit.marker}"
        else:
            noun = {"paragraph": "paragraph", "list item": "item", "table": "table"}[kind]
            place = f"{noun} {counts[path, kind]}"
        citation = f"{path[-1]}, {place}" if path else place
        start = pending.start if pending is not None else unit.start
        blocks.append(Block(unit.kind, start, unit.end, path, citation))
        pending = None
    if pending is not None:
        blocks.append(Block("heading", pending.start, pending.end, _path(stack), heading_title(pending.title)))
    return tuple(blocks)


def first_heading(blocks: Iterable[Block]) -> str | None:
    """The title of the document's first heading (what its entry is called when it has no
    other title), None when it has no heading."""
    return next((block.headings[0] for block in blocks if block.headings), None)


def heading_title(title: str) -> str:
    """A section title as every block under it carries it (its heading path, its citation): cut
    at `MAX_HEADING_CHARS`. The heading's own block quotes it whole."""
    return shortened(title, MAX_HEADING_CHARS)


def _path(stack: list[tuple[int, str]]) -> tuple[str, ...]:
    return tuple(title for _, title in stack)


def search_prefix(block: Block) -> str:
    """What a block is searched by besides its quote: its heading path (a heading's own title
    is its quote), and a record's fields, so that `T2-0457` or a fault code finds the note."""
    above = block.headings[:-1] if block.kind == "heading" else block.headings
    lines = [" > ".join(above)] if above else []
    if block.fields:
        lines.append("; ".join(f"{key}: {value}" for key, value in block.fields.items()))
    return "\n".join(lines)


def joined(pieces: Iterable[tuple[str, str]], separator: str = "\n\n") -> tuple[str, list[tuple[int, int]]]:
    """A text made of `(prefix, body)` pieces, one after another with `separator`, and the
    span of each body in it: how the formats whose text is not the file itself (PDF pages,
    DOCX paragraphs, clauses, notes) build their extracted text with exact offsets."""
    parts, spans, at = [], [], 0
    for number, (prefix, body) in enumerate(pieces):
        if number:
            parts.append(separator)
            at += len(separator)
        parts.append(prefix + body)
        spans.append((at + len(prefix), at + len(prefix) + len(body)))
        at += len(prefix) + len(body)
    return "".join(parts), spans

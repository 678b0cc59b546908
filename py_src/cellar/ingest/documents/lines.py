"""Markdown and plain text, line by line, into units (`cellar.ingest.documents.blocks.Unit`).

Pure Python with no dependency: `.md` and `.txt` are chunked in the tab too (the lesson's chunk
explorer), so the parser must run in Pyodide as it does here. A careful line parser is enough for
what a block needs (where headings, paragraphs, list items, tables and code start and end); it
renders nothing.

Markdown: ATX (`## 3.2 Ballast arrangement`) and setext headings, fenced code, list items
(`-`, `*`, `+`, `1.`, `1)`, `a)`), pipe tables; everything else is a paragraph, ended by a blank
line. Plain text: the same, with headings that are numbered lines (`3 Ballast`, `3.2 Ballast
arrangement`, `6.3.2 Earthing`): a short line that starts with a section number and a capital
letter and does not end like a sentence. PDF text goes through the plain-text parser.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from cellar.ingest.documents.blocks import Unit

ATX_OPENING = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
TAG = re.compile(r"<[^<>]*>")  # not [^>]*: a run of "<" would be scanned to its end from each one
FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
MD_ITEM = re.compile(r"[ \t]*(?:([-*+])|(\d{1,3}|[a-z])[.)])[ \t]+\S")
TEXT_ITEM = re.compile(r"[ \t]*(?:([-*•–])|([a-z]|\d{1,3})\)|([a-z])\.)[ \t]+\S")
NUMBERED = re.compile(r"[ \t]*(\d{1,3}(?:\.\d{1,3}){0,5})\.?[ \t]+([A-ZÀ-Þ][^\n]{0,100})")
SENTENCE_END = (".", ",", ";", ":", "?", "!")
MAX_HEADING = 90  # characters: a longer numbered line is a numbered paragraph


def _lines(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, content) of each line, `end` before its line break."""
    at = 0
    for line in text.splitlines(keepends=True):
        content = line.rstrip("\r\n")
        yield at, at + len(content), content
        at += len(line)


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """The span without the white space at either end."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class _Units:
    """The units found so far and the one still open (a paragraph, item or table grows line by
    line until a blank line or another unit starts)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.units: list[Unit] = []
        self.open: Unit | None = None

    def close(self) -> None:
        if self.open is not None:
            start, end = _trimmed(self.text, self.open.start, self.open.end)
            if start < end:
                self.units.append(Unit(self.open.kind, start, end, self.open.level, self.open.title, self.open.marker))
            self.open = None

    def start(self, kind: str, start: int, end: int, marker: str = "") -> None:
        self.close()
        self.open = Unit(kind, start, end, marker=marker)

    def extend(self, end: int) -> None:
        assert self.open is not None
        self.open = Unit(self.open.kind, self.open.start, end, marker=self.open.marker)

    def prose(self, start: int, end: int, marker: str | None) -> None:
        """A line of prose: a list item starts (`marker` not None: its label, or empty for a
        bullet), or the open paragraph or item goes on, or a paragraph starts."""
        if marker is not None:
            self.start("list item", start, end, marker)
        elif self.open is not None and self.open.kind != "table":
            self.extend(end)
        else:
            self.start("paragraph", start, end)

    def table_row(self, start: int, end: int) -> None:
        """A table's line: the open table grows, or a table starts."""
        if self.open is not None and self.open.kind == "table":
            self.extend(end)
        else:
            self.start("table", start, end)

    def heading(self, start: int, end: int, level: int, title: str) -> None:
        self.close()
        start, end = _trimmed(self.text, start, end)
        self.units.append(Unit("heading", start, end, level, title))


def atx_heading(line: str) -> tuple[int, str] | None:
    """(level, raw title) of a Markdown ATX heading line (`## 3.2 Ballast arrangement ##`), or
    None. Read by hand past the hashes: as one regular expression, the lazy title before the
    optional closing hashes and spaces backtracked over a long run of spaces (100,000 of them in
    one heading took minutes)."""
    opening = ATX_OPENING.match(line)
    if opening is None:
        return None
    title = line[opening.end() :].strip(" \t\r\n")
    unclosed = title.rstrip("#")
    if unclosed != title and (not unclosed or unclosed[-1] in " \t"):  # `## Title ##`, `# #`
        title = unclosed.rstrip(" \t")
    return len(opening[1]), title


def heading_title(raw: str) -> str:
    """A heading's title as plain words: tags, emphasis and code marks dropped, spaces collapsed."""
    return " ".join(TAG.sub("", raw).replace("*", "").replace("`", "").split())


def _table_row(line: str) -> bool:
    row = line.strip(" \t")
    return len(row) > 1 and row[0] == row[-1] == "|"


def markdown_units(text: str) -> list[Unit]:
    """The units of a Markdown text."""
    found = _Units(text)
    fence = ""
    for start, end, line in _lines(text):
        if fence:
            found.extend(end)
            if line.strip().startswith(fence):
                fence = ""
                found.close()
            continue
        opening = FENCE.match(line)
        atx = atx_heading(line)
        item = MD_ITEM.match(line)
        if opening:
            fence = opening[1]
            found.start("code", start, end)
        elif not line.strip():
            found.close()
        elif atx and (title := heading_title(atx[1])):
            found.heading(start, end, atx[0], title)
        elif SETEXT.fullmatch(line) and found.open is not None and found.open.kind == "paragraph":
            first = found.open.start
            if "\n" not in text[first : found.open.end].strip():
                found.open = None
                found.heading(first, end, 1 if line.strip()[0] == "=" else 2, heading_title(text[first:start]))
            else:
                found.extend(end)
        elif _table_row(line):
            found.table_row(start, end)
        else:
            found.prose(start, end, None if item is None else item[2] or "")
    found.close()
    return found.units


def numbered_heading(line: str) -> tuple[int, str] | None:
    """(level, title) of a plain-text line that is a numbered heading (`6.3.2 Earthing of
    the hull`: level 3), or None: the line must be short, start with a capital after the number
    and not end like a sentence."""
    match = NUMBERED.fullmatch(line.rstrip())
    if not match or len(line.strip()) > MAX_HEADING or line.rstrip().endswith(SENTENCE_END):
        return None
    return match[1].count(".") + 1, " ".join(line.split())


def text_units(text: str, levels: Mapping[str, int] | None = None) -> list[Unit]:
    """The units of a plain text (or a PDF's text layer) with numbered headings; ``levels``: the
    lines (whitespace collapsed) known to be headings otherwise, with their level (a PDF's lines
    set larger than its body text, ``cellar.ingest.documents.pdf``)."""
    found = _Units(text)
    for start, end, line in _lines(text):
        key = " ".join(line.split())
        heading = (levels[key], key) if levels and key in levels else numbered_heading(line)
        item = TEXT_ITEM.match(line)
        if not line.strip():
            found.close()
        elif heading:
            found.heading(start, end, *heading)
        elif _table_row(line) or "\t" in line.strip():
            found.table_row(start, end)
        else:
            found.prose(start, end, None if item is None else item[2] or item[3] or "")
    found.close()
    return found.units


def text_title(text: str) -> str | None:
    """The title of a plain text or PDF: its first line when that reads as a title (short, not
    ending like a sentence), else None (the first heading stands for it)."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not first or len(first) > MAX_HEADING or first.endswith(SENTENCE_END):
        return None
    return " ".join(first.split())

"""Which parser reads a document, by its file name, and the text it extracts.

In: a file's bytes and its path in the archive. Out: an `Extracted`
(`cellar.ingest.documents.blocks`), or a FileRefused naming the file and the problem.

Records and clause collections are named by a second suffix (`service.records.csv`,
`nen3140.clauses.xml`): an archive is full of CSV, JSON and XML that are a notebook's input data,
not documents, and reading every one as notes would refuse most of them loudly or index
numbers as prose. A `.md` or `.txt` is the file's own text; the other formats' text is
extracted (see each module), and offsets point into that extracted text.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from cellar.ingest.discovery import FileRefused
from cellar.ingest.documents.blocks import Extracted, assemble, first_heading, utf8_text

Parser = Callable[[bytes, str], Extracted]


def markdown_document(data: bytes, path: str) -> Extracted:
    from cellar.ingest.documents.lines import markdown_units

    text = utf8_text(data, path)
    blocks = assemble(text, markdown_units(text))
    return Extracted(text, blocks, "document", "markdown", first_heading(blocks))


def text_document(data: bytes, path: str) -> Extracted:
    from cellar.ingest.documents.lines import text_title, text_units

    text = utf8_text(data, path)
    blocks = assemble(text, text_units(text))
    return Extracted(text, blocks, "document", "text", text_title(text) or first_heading(blocks))


def html_document(data: bytes, path: str) -> Extracted:
    from cellar.ingest.documents.markup import html_units

    text, units = html_units(utf8_text(data, path))
    blocks = assemble(text, units)
    return Extracted(text, blocks, "document", "html", first_heading(blocks))


# Suffix -> (module of cellar.ingest.documents, function), longest suffixes first so that
# `.records.csv` is looked for before anything shorter could match. A module is imported when a
# file of its kind is met: pypdf, python-docx and defusedxml load only for the files that need them.
PARSERS: dict[str, tuple[str, str]] = {
    ".clauses.xml": ("clauses", "clauses_from_xml"),
    ".clauses.json": ("clauses", "clauses_from_json"),
    ".records.csv": ("notes", "records_from_csv"),
    ".records.jsonl": ("notes", "records_from_jsonl"),
    ".markdown": ("extract", "markdown_document"),
    ".md": ("extract", "markdown_document"),
    ".txt": ("extract", "text_document"),
    ".html": ("extract", "html_document"),
    ".htm": ("extract", "html_document"),
    ".pdf": ("pdf", "pdf_document"),
    ".docx": ("word", "docx_document"),
}
SUFFIXES = tuple(PARSERS)


def parser_for(path: str) -> Parser | None:
    """The parser of a document path (case-insensitive suffix), None when none reads it."""
    lowered = path.lower()
    for suffix, (module, function) in PARSERS.items():
        if lowered.endswith(suffix):
            parser: Parser = getattr(importlib.import_module(f"cellar.ingest.documents.{module}"), function)
            return parser
    return None


def extract(data: bytes, path: str) -> Extracted:
    """The extracted text and blocks of the document `path`; a ValueError (FileRefused for a
    malformed file) names the file and what is wrong."""
    parser = parser_for(path)
    if parser is None:
        raise FileRefused(path, "not a document Cellar reads (suffixes: " + ", ".join(SUFFIXES) + ")")
    try:
        return parser(data, path)
    except RecursionError:  # a structure nested past what a parser checked: this file's problem alone
        raise FileRefused(path, "nested too deeply to read") from None

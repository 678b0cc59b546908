"""PDF with a text layer into extracted text and blocks, with pypdf.

pypdf is pure Python (no C library to build or trust), kept up, and reads the text layer that
a word processor or a typesetter writes, which is what a report or a standard in an archive
has. A PDF without any text (a scan) is refused as `scanned, no text layer`, never indexed
empty: an empty entry would look searched and answer nothing. Anything pypdf cannot read is
refused with its reason and the file's name, and the batch goes on.

The extracted text is each page's text as pypdf lays it out (layout mode, which keeps the
blank line between paragraphs), lines without trailing spaces, pages separated by a blank line; it then goes through
the plain-text parser (numbered headings, paragraphs, list items), and every block carries the
page it starts on.
"""

from __future__ import annotations

import io
from bisect import bisect_right
from dataclasses import replace

from cellar.ingest.discovery import FileRefused
from cellar.ingest.documents.blocks import Extracted, assemble, first_heading, joined
from cellar.ingest.documents.lines import text_title, text_units

HEADER_WINDOW = 1024  # a PDF's %PDF- header may follow some junk bytes, within the first 1 KB


def pdf_document(data: bytes, path: str) -> Extracted:
    """The text and blocks of a PDF; a FileRefused naming `path` for a file that is not a PDF,
    cannot be read, is encrypted, or has no text layer."""
    if b"%PDF-" not in data[:HEADER_WINDOW]:
        raise FileRefused(path, "not a PDF: no %PDF- header in its first bytes")
    pages = _page_texts(data, path)
    if not any(page.strip() for page in pages):
        raise FileRefused(path, f"scanned, no text layer: {len(pages)} page(s) without any text; not indexed")
    text, spans = joined(("", page.strip("\n")) for page in pages)
    starts = [start for start, _ in spans]
    blocks = assemble(text, text_units(text))
    blocks = tuple(replace(block, page=bisect_right(starts, block.start)) for block in blocks)
    return Extracted(text, blocks, "document", "pdf", text_title(text) or first_heading(blocks))


def _page_texts(data: bytes, path: str) -> list[str]:
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise FileRefused(path, "an encrypted PDF: its text cannot be read; not indexed")
        # Layout mode keeps the blank line between paragraphs that plain mode drops.
        texts = [page.extract_text(extraction_mode="layout") or "" for page in reader.pages]
        return ["\n".join(line.rstrip() for line in text.splitlines()) for text in texts]
    except FileRefused:
        raise
    except Exception as error:  # pypdf raises many kinds on a damaged file; each one is a refusal
        raise FileRefused(path, f"not a readable PDF ({type(error).__name__}: {error})") from None

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

Layout mode costs, for each text it shows, one matrix product per positioning operator before
it in its text object (`Td`, `T*`, ...) and per `cm` in force: quadratic in a page of many
operators (20,000 `(x) Tj 1 0 Td`, 280 KB, took 155 s; plain mode 0.7 s). So that cost is counted
first from the page's operators (`layout_work`), and a page over `MAX_LAYOUT_WORK` (about a
second) is read in plain mode, with a warning naming the file and the page: its text is all
there, its paragraphs are not told apart by a blank line. A real page costs a few thousand.

A PDF encrypted with an empty user password (restrictions only: every viewer opens it without
asking) is decrypted and read; one that needs a password is refused.

Headings without a number are found by their size (``font_levels``): a second pass of pypdf
with a text visitor gives each line's font size (the size set by `Tf` times the text and
graphics matrices' vertical scale); the body size is the one most characters are set in, and a
short line that does not end like a sentence, set at least 15 % larger, is a heading. Its level
is 1 + the number of larger heading sizes, and a numbered heading's level (from its number) moves
down by the unnumbered heading sizes set larger than it, so a report's title set at 18 pt stands
above `1 Scope` at 14 pt in every heading path.
"""

from __future__ import annotations

import io
import logging
import re
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from cellar.ingest.discovery import FileRefused
from cellar.ingest.documents.blocks import Extracted, assemble, first_heading, joined
from cellar.ingest.documents.lines import MAX_HEADING, SENTENCE_END, numbered_heading, text_title, text_units

HEADER_WINDOW = 1024  # a PDF's %PDF- header may follow some junk bytes, within the first 1 KB
# The most matrix products layout mode may spend on a page (`layout_work`): 4,000,000 take about
# a second. A dense real page (3,000 words, each placed with its own `Td`) costs about 10,000,000
# only when all of them sit in one text object, which is rare; most pages cost under 100,000.
MAX_LAYOUT_WORK = 4_000_000
# The texts shown (`Tj`, `TJ`, `'`, `"`) read from one file: pypdf reads some 4,000 a second in
# each of its two passes, so 300,000 on one page of 86 KB, or 1,500 on each of 500 pages sharing
# one content stream, took minutes. A report of 300 pages shows some 50,000.
MAX_SHOWN = 100_000


def pdf_document(data: bytes, path: str) -> Extracted:
    """The text and blocks of a PDF; a FileRefused naming `path` for a file that is not a PDF,
    cannot be read, is encrypted, or has no text layer."""
    if b"%PDF-" not in data[:HEADER_WINDOW]:
        raise FileRefused(path, "not a PDF: no %PDF- header in its first bytes")
    pages, sizes, body = _page_texts(data, path)
    if not any(page.strip() for page in pages):
        raise FileRefused(path, f"scanned, no text layer: {len(pages)} page(s) without any text; not indexed")
    text, spans = joined(("", page.strip("\n")) for page in pages)
    starts = [start for start, _ in spans]
    blocks = assemble(text, text_units(text, font_levels(sizes, body)))
    blocks = tuple(replace(block, page=bisect_right(starts, block.start)) for block in blocks)
    return Extracted(text, blocks, "document", "pdf", text_title(text) or first_heading(blocks))


HEADING_SCALE = 1.15  # a line set this much larger than the body text may be a heading


def font_levels(sizes: Mapping[str, float], body: float) -> dict[str, int]:
    """The heading level of each line (whitespace collapsed) that its size makes a heading or
    moves down (see the module docstring); `sizes`: each line's largest font size, `body`: the
    size most characters are set in."""

    def heading_like(line: str) -> bool:
        return bool(line) and len(line) <= MAX_HEADING and not line.endswith(SENTENCE_END) and line[0].isalnum()

    big = {line: size for line, size in sizes.items() if body and size >= HEADING_SCALE * body and heading_like(line)}
    unnumbered = {line: size for line, size in big.items() if numbered_heading(line) is None}
    if not unnumbered:
        return {}
    heading_sizes = sorted({round(size, 1) for size in big.values()}, reverse=True)
    plain_sizes = {round(size, 1) for size in unnumbered.values()}
    levels = {line: 1 + sum(s > round(size, 1) for s in heading_sizes) for line, size in unnumbered.items()}
    for line, size in sizes.items():
        numbered = numbered_heading(line)
        if numbered is not None:
            levels[line] = numbered[0] + sum(s > round(size, 1) for s in plain_sizes)
    return levels


def _page_texts(data: bytes, path: str) -> tuple[list[str], dict[str, float], float]:
    """Each page's text (layout mode), each line's largest font size, and the body size."""
    with _logged_as_warnings(path):
        return _read_pages(data, path)


@contextmanager
def _logged_as_warnings(path: str) -> Iterator[None]:
    """What pypdf logs while it reads `path` (`EOF marker not found`) as warnings naming the file,
    each once: logged, it would reach the terminal without the file's name."""
    from cellar.ingest.notebook import NotebookWarning

    logger, messages = logging.getLogger("pypdf"), _Messages()
    propagate, logger.propagate = logger.propagate, False
    logger.addHandler(messages)
    try:
        yield
    finally:
        logger.removeHandler(messages)
        logger.propagate = propagate
        for message in dict.fromkeys(messages.seen):
            warnings.warn(f"{path}: pypdf: {message}", NotebookWarning, stacklevel=4)


class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage()[:200])


def _read_pages(data: bytes, path: str) -> tuple[list[str], dict[str, float], float]:
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        # An empty user password opens the file in any viewer: only its permissions are set.
        if reader.is_encrypted and not reader.decrypt(""):
            raise FileRefused(path, "an encrypted PDF: it needs a password to be read; not indexed")
        texts: list[str] = []
        shown = 0
        for number, page in enumerate(reader.pages, 1):
            contents = page.get_contents()
            work, shows = layout_work(contents.get_data() if contents is not None else b"")
            shown += shows
            if shown > MAX_SHOWN:
                if not texts:
                    raise FileRefused(path, f"page 1 shows {shows:,} texts, over the limit of {MAX_SHOWN:,} for a file")
                _warn(
                    f"{path}: more than {MAX_SHOWN:,} texts shown by page {number}: pages {number} to "
                    f"{len(reader.pages)} are not indexed"
                )
                break
            texts.append(_page_text(page, work, path, number))
        sizes: dict[str, float] = {}
        characters: Counter[float] = Counter()
        for page in reader.pages[: len(texts)]:
            rows: dict[float, list[Any]] = {}

            def visit(
                text: str, cm: list[float], tm: list[float], font: Any, size: float, rows: dict[float, list[Any]] = rows
            ) -> None:
                if text.strip():
                    row = rows.setdefault(round(tm[5] * (cm[3] or 1.0) + cm[5], 1), ["", 0.0])
                    scaled = float(size) * abs(tm[3] or 1.0) * abs(cm[3] or 1.0)
                    row[0] += text
                    row[1] = max(row[1], scaled)
                    characters[round(scaled, 1)] += len(text.strip())

            page.extract_text(visitor_text=visit)
            for line, size in rows.values():
                key = " ".join(line.split())
                sizes[key] = max(sizes.get(key, 0.0), size)
        body = characters.most_common(1)[0][0] if characters else 0.0
        return ["\n".join(line.rstrip() for line in text.splitlines()) for text in texts], sizes, body
    except FileRefused:
        raise
    except Exception as error:  # pypdf raises many kinds on a damaged file; each one is a refusal
        raise FileRefused(path, f"not a readable PDF ({type(error).__name__}: {error})") from None


def _page_text(page: Any, work: int, path: str, number: int) -> str:
    """A page's text in layout mode (which keeps the blank line between paragraphs that plain
    mode drops), or in plain mode, with a warning, when layout mode would cost too much
    (``work``: its ``layout_work``)."""
    if work <= MAX_LAYOUT_WORK:
        return page.extract_text(extraction_mode="layout") or ""
    _warn(
        f"{path}: page {number} has too many text operators for layout mode ({work:,} matrix products, over "
        f"{MAX_LAYOUT_WORK:,}): its text is read in plain mode, its paragraphs without a blank line between them"
    )
    return page.extract_text() or ""


def _warn(message: str) -> None:
    from cellar.ingest.notebook import NotebookWarning

    warnings.warn(message, NotebookWarning, stacklevel=5)


# A content stream's operators, skipping what may spell one inside it: a literal string (its
# nested parentheses aside: a miscount only moves a page between the two modes), a hex string,
# a comment. An operator stands between delimiters or white space.
OPERATOR = re.compile(
    rb"\((?:[^()\\]|\\.)*\)|<[0-9A-Fa-f\s]*>|%[^\r\n]*"
    rb"|(?<![^\s()<>\[\]{}/%])(BT|ET|Tm|Td|TD|T\*|cm|q|Q|Tj|TJ|'|\")(?![^\s()<>\[\]{}/%])"
)


def layout_work(content: bytes) -> tuple[int, int]:
    """The matrix products pypdf's layout mode spends on a page's content stream, and the texts
    it shows (`Tj`, `TJ`, `'`, `"`): for each, one product per positioning operator since its text
    object began or its last `Tm` (`Td`, `TD`, `T*`, `'`, `"`) and one per `cm` in force (undone
    at its `Q`)."""
    cms = [0]  # the cm operators in force at each q level
    positions = work = shows = 0
    for match in OPERATOR.finditer(content):
        operator = match[1]
        if operator is None:
            continue
        if operator == b"q":
            cms.append(cms[-1])
        elif operator == b"Q":
            if len(cms) > 1:
                cms.pop()
        elif operator == b"cm":
            cms[-1] += 1
        elif operator in (b"BT", b"ET", b"Tm"):
            positions = 1 if operator == b"Tm" else 0
        elif operator in (b"Td", b"TD", b"T*"):
            positions += 1
        else:
            positions += operator in (b"'", b'"')
            work += 1 + cms[-1] + positions
            shows += 1
    return work, shows

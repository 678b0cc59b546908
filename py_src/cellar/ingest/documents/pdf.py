"""PDF with a text layer into extracted text and blocks, with pypdf.

pypdf is pure Python (no C library to build or trust), kept up, and reads the text layer that
a word processor or a typesetter writes, which is what a report or a standard in an archive
has. A PDF without any text (a scan) is refused as `scanned, no text layer`, never indexed
empty: an empty entry would look searched and answer nothing. Anything pypdf cannot read is
refused with its reason and the file's name, and the batch goes on.

The extracted text is each page's text as pypdf lays it out (layout mode, which keeps the
blank line between paragraphs), lines without trailing spaces, pages separated by a blank line; it then goes through
the plain-text parser (numbered headings, paragraphs, list items), and every block carries the
page it starts on. Layout mode reads only the page's own content stream and leaves out rotated
text: what a page draws through a form XObject (`/Fm0 Do`: a stamp, a PDF figure that LaTeX
includes) it dropped without a word, where plain mode reads it. So a page whose layout text
lacks characters its plain text has (read in any case, for the font sizes below) is read in
plain mode, with a warning: all its text is there, its paragraphs are not told apart by a blank
line.

Layout mode costs, for each text it shows, one matrix product per positioning operator before
it in its text object (`Td`, `T*`, ...) and per `cm` in force: quadratic in a page of many
operators (20,000 `(x) Tj 1 0 Td`, 280 KB, took 155 s; plain mode 0.7 s). So that cost is counted
first from the page's operators (`layout_work`), and a page over `MAX_LAYOUT_WORK` (about a
second) is read in plain mode, with a warning naming the file and the page: its text is all
there, its paragraphs are not told apart by a blank line. A real page costs a few thousand.

What pypdf will parse is counted the same way before it does (`_Costs`): a page's content
streams, decompressed, and at each `Do` the form XObject drawn, with the forms that one draws
(plain mode parses a form each time it is drawn). pypdf holds every operator as Python objects,
so a page of more than `MAX_PAGE_CONTENT` bytes of content, or of forms nested deeper than
`MAX_FORM_DEPTH`, is not read, with a warning naming it (a file with no other page of text is
refused); and a file's pages are read up to the one that passes `MAX_SHOWN` texts shown or
`MAX_CONTENT` bytes of content, with a warning naming those left. pypdf keeps every stream it
unpacks while the file is open, so the pages are also read no further than the one by which the
streams unpacked to count them (pages left out too) pass the limit of any archive file.

A PDF encrypted with an empty user password (restrictions only: every viewer opens it without
asking) is decrypted and read; one that needs a password is refused.

Headings without a number are found by their size (``font_levels``): pypdf's plain mode, with
a text visitor, gives each line's font size (the size set by `Tf` times the text and
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
from typing import Any, NamedTuple

from cellar.ingest.discovery import MAX_FILE_BYTES, FileRefused
from cellar.ingest.documents.blocks import Extracted, assemble, first_heading, joined
from cellar.ingest.documents.lines import MAX_HEADING, SENTENCE_END, numbered_heading, text_title, text_units

HEADER_WINDOW = 1024  # a PDF's %PDF- header may follow some junk bytes, within the first 1 KB
# The most matrix products layout mode may spend on a page (`layout_work`): 4,000,000 take about
# a second. A dense real page (3,000 words, each placed with its own `Td`) costs about 10,000,000
# only when all of them sit in one text object, which is rare; most pages cost under 100,000.
MAX_LAYOUT_WORK = 4_000_000
# The texts shown (`Tj`, `TJ`, `'`, `"`) read from one file, those of a form each time a page draws
# it: pypdf reads some 4,000 a second in each of its two passes, so 300,000 on one page of 86 KB,
# or 1,500 on each of 500 pages sharing one content stream, took minutes, and a form of 2,000
# drawn 500 times by a page of 934 bytes 18 s. A report of 300 pages shows some 50,000.
MAX_SHOWN = 100_000
# The bytes of content pypdf may parse for one page, decompressed: its content streams and each
# form it draws, each time it draws it. pypdf holds each operator as Python objects: 40 MB of
# `q Q ` (deflated to 40 KB) took minutes and 2.8 GB; 4 MB takes 13 s (both passes) and 320 MB.
# A page of text has 5 to 20 KB, a vector drawing some 60 KB.
MAX_PAGE_CONTENT = 4_000_000
# The same for the pages read from one file (pages that share a stream each parse it): some 50 s
# at worst, as `MAX_SHOWN` texts. A report of 300 pages has some 3 MB.
MAX_CONTENT = 16_000_000
# Forms drawn in forms: a real page nests them two or three deep. One that draws itself (which
# pypdf skips) nests deeper than any limit.
MAX_FORM_DEPTH = 10


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
        left_out: list[str] = []  # each page not read, and why: `page 3 has more than ...`
        sizes: dict[str, float] = {}
        characters: Counter[float] = Counter()
        costs = _Costs(reader)
        shown = content = 0
        for number, page in enumerate(reader.pages, 1):
            # 20 pages of 40 KB, each unpacked to 40 MB and left out, held 860 MB
            if costs.unpacked > MAX_FILE_BYTES:
                _warn(
                    f"{path}: more than {MAX_FILE_BYTES:,} bytes of content unpacked by page {number - 1}: pages "
                    f"{number} to {len(reader.pages)} are not indexed"
                )
                break
            if page.get_contents() is None:  # a blank page, valid PDF: pypdf's layout mode fails on it
                texts.append("")
                continue
            try:
                cost = costs.page(page)
            except PastPageLimit as past:
                left_out.append(f"page {number} {past}")
                texts.append("")  # the pages after it keep their numbers
                continue
            shown += cost.shows
            content += cost.size
            passed = _file_limit_passed(shown, content, cost)
            if passed is not None:
                by_then, alone = passed
                if not texts:
                    raise FileRefused(path, f"page 1 {alone} for a file")
                _warn(f"{path}: {by_then} by page {number}: pages {number} to {len(reader.pages)} are not indexed")
                break
            plain = _plain_text(page, sizes, characters)
            texts.append(_page_text(page, cost.work, plain, path, number))
        if left_out and not any(text.strip() for text in texts):
            raise FileRefused(path, f"{left_out[0]}: not indexed, and no other page has text")
        for why in left_out:
            _warn(f"{path}: {why}: not indexed")
        body = characters.most_common(1)[0][0] if characters else 0.0
        return ["\n".join(line.rstrip() for line in text.splitlines()) for text in texts], sizes, body
    except FileRefused:
        raise
    except Exception as error:  # pypdf raises many kinds on a damaged file; each one is a refusal
        raise FileRefused(path, f"not a readable PDF ({type(error).__name__}: {error})") from None


def _file_limit_passed(shown: int, content: int, page: PageCost) -> tuple[str, str] | None:
    """None while the pages read so far keep within a file's limits; else what they pass
    (`more than 100,000 texts shown`) and what the last page, `page`, does on its own (`shows
    150,000 texts, over the limit of 100,000`)."""
    if shown > MAX_SHOWN:
        return f"more than {MAX_SHOWN:,} texts shown", f"shows {page.shows:,} texts, over the limit of {MAX_SHOWN:,}"
    if content > MAX_CONTENT:
        return (
            f"more than {MAX_CONTENT:,} bytes of content",
            f"has {page.size:,} bytes of content, over the limit of {MAX_CONTENT:,}",
        )
    return None


def _plain_text(page: Any, sizes: dict[str, float], characters: Counter[float]) -> str:
    """A page's text in plain mode, read with a visitor that notes in `sizes` each line's largest
    font size and in `characters` how many characters are set in each size."""
    rows: dict[float, list[Any]] = {}

    def visit(text: str, cm: list[float], tm: list[float], font: Any, size: float) -> None:
        if text.strip():
            row = rows.setdefault(round(tm[5] * (cm[3] or 1.0) + cm[5], 1), ["", 0.0])
            scaled = float(size) * abs(tm[3] or 1.0) * abs(cm[3] or 1.0)
            row[0] += text
            row[1] = max(row[1], scaled)
            characters[round(scaled, 1)] += len(text.strip())

    plain: str = page.extract_text(visitor_text=visit) or ""
    for line, size in rows.values():
        key = " ".join(line.split())
        sizes[key] = max(sizes.get(key, 0.0), size)
    return plain


def _page_text(page: Any, work: int, plain: str, path: str, number: int) -> str:
    """A page's text in layout mode (which keeps the blank line between paragraphs that plain
    mode drops), or its plain text, with a warning, when layout mode would cost too much
    (``work``: its ``layout_work``) or leaves out characters plain mode reads."""
    if work > MAX_LAYOUT_WORK:
        _warn(
            f"{path}: page {number} has too many text operators for layout mode ({work:,} matrix products, over "
            f"{MAX_LAYOUT_WORK:,}): its text is read in plain mode, its paragraphs without a blank line between them"
        )
        return plain
    layout: str = page.extract_text(extraction_mode="layout") or ""
    lost = Counter("".join(plain.split())) - Counter("".join(layout.split()))
    if lost:
        _warn(
            f"{path}: page {number} has text that layout mode leaves out ({lost.total():,} characters, drawn "
            f"through a form XObject or rotated): its text is read in plain mode, its paragraphs without a blank "
            f"line between them"
        )
        return plain
    return layout


def _warn(message: str) -> None:
    from cellar.ingest.notebook import NotebookWarning

    warnings.warn(message, NotebookWarning, stacklevel=5)


class PastPageLimit(Exception):
    """A page not given to pypdf; the message says why (`has more than 4,000,000 bytes ...`)."""


class PageCost(NamedTuple):
    """What reading a page costs pypdf, counted before it parses any of it."""

    size: int  # bytes of content plain mode parses: the page's streams, and a form at each `Do`
    shows: int  # texts shown, in those forms too
    work: int  # layout mode's matrix products, in the page's streams: layout mode draws no form


def _check_page_content(size: int) -> None:
    if size > MAX_PAGE_CONTENT:
        raise PastPageLimit(
            f"has more than {MAX_PAGE_CONTENT:,} bytes of content (its streams and the forms it draws, each time it "
            f"draws one), the limit for a page"
        )


class _Costs:
    """What reading each page of a file costs pypdf, counted before it parses any of it, and the
    bytes unpacked to count it (`unpacked`)."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.unpacked = 0

    def page(self, page: Any) -> PageCost:
        """What reading `page` costs pypdf; a PastPageLimit as soon as its content passes
        MAX_PAGE_CONTENT or its forms nest deeper than MAX_FORM_DEPTH."""
        contents = page.get_contents()
        data = contents.get_data() if contents is not None else b""
        self.unpacked += len(data)
        _check_page_content(len(data))
        own = layout_work(data)
        size, shows = self._drawn(own.xobjects, page, {}, 1)
        _check_page_content(len(data) + size)
        return PageCost(len(data) + size, own.shows + shows, own.work)

    def _drawn(
        self, names: Counter[bytes], owner: Any, known: dict[int, tuple[int, int]], depth: int
    ) -> tuple[int, int]:
        """The bytes of content and the texts shown of drawing the XObjects `names` (each as many
        times as it is drawn) from `owner`, `depth` forms deep, as pypdf's plain mode draws them:
        each looked up in the resources of `owner` (a page's inherited from the page tree, a form's
        own); an image not parsed, any other stream parsed as a form, each time, with the forms it
        draws (pypdf draws no more than 5,000 for a page: all are counted). `known`: each form's
        (bytes, texts) once counted."""
        xobjects = _xobjects(owner)
        size = shows = 0
        for written, times in names.items():
            name = self._name(written)
            form = xobjects[name] if name in xobjects else None
            if not _parsed_when_drawn(form):
                continue
            if id(form) not in known:  # pypdf keeps one object per object of the file
                if depth > MAX_FORM_DEPTH:
                    raise PastPageLimit(f"draws forms nested more than {MAX_FORM_DEPTH} deep (or in a cycle)")
                known[id(form)] = self._form(form, known, depth)
            form_size, form_shows = known[id(form)]
            size += times * form_size
            shows += times * form_shows
            _check_page_content(size)
        return size, shows

    def _form(self, form: Any, known: dict[int, tuple[int, int]], depth: int) -> tuple[int, int]:
        """The bytes of content and the texts shown of drawing `form` once."""
        try:
            data = form.get_data()
        except Exception:  # pypdf cannot decode it either: it logs why and draws nothing of it
            return 0, 0
        self.unpacked += len(data)
        _check_page_content(len(data))
        own = layout_work(data)
        size, shows = self._drawn(own.xobjects, form, known, depth + 1)
        return len(data) + size, own.shows + shows

    def _name(self, written: bytes) -> str:
        """A name as pypdf reads it from a content stream (`/F#30` is `/F0`)."""
        from pypdf.generic import NameObject

        return NameObject.read_from_stream(io.BytesIO(written), self.reader)


def _xobjects(owner: Any) -> Any:
    """The XObjects of a page's or a form's resources by name, as pypdf finds them; none for
    anything amiss."""
    from pypdf.generic import DictionaryObject

    resources = owner.get_inherited("/Resources", None)
    if isinstance(resources, DictionaryObject) and "/XObject" in resources:
        xobjects = resources["/XObject"]
        if isinstance(xobjects, DictionaryObject):
            return xobjects
    return DictionaryObject()


def _parsed_when_drawn(xobject: Any) -> bool:
    """Whether pypdf's plain mode parses `xobject` when a page draws it: any stream but an image."""
    from pypdf.generic import StreamObject

    return isinstance(xobject, StreamObject) and not ("/Subtype" in xobject and xobject["/Subtype"] == "/Image")


# A content stream's names and operators, skipping what may spell one inside it: a literal string
# (its nested parentheses aside: a miscount only moves a page between the two modes), a hex
# string, a comment. An operator stands between delimiters or white space.
OPERATOR = re.compile(
    rb"\((?:[^()\\]|\\.)*\)|<[0-9A-Fa-f\s]*>|%[^\r\n]*|(/[^\s()<>\[\]{}/%]*)"
    rb"|(?<![^\s()<>\[\]{}/%])(BT|ET|Tm|Td|TD|T\*|cm|q|Q|Tj|TJ|'|\"|Do)(?![^\s()<>\[\]{}/%])"
)


class Operators(NamedTuple):
    """What a content stream's operators cost pypdf (see `layout_work`)."""

    work: int  # layout mode's matrix products
    shows: int  # texts shown
    xobjects: Counter[bytes]  # the XObjects drawn (`Do`), by their names as written, with the times each


def layout_work(content: bytes) -> Operators:
    """The matrix products pypdf's layout mode spends on a content stream, the texts it shows
    (`Tj`, `TJ`, `'`, `"`) and the XObjects it draws: for each text, one product per positioning
    operator since its text object began or its last `Tm` (`Td`, `TD`, `T*`, `'`, `"`) and one per
    `cm` in force (undone at its `Q`); for each `Do`, every name since the operator before it
    (pypdf draws the first of its operands, and operators not told apart here may stand between)."""
    cms = [0]  # the cm operators in force at each q level
    positions = work = shows = 0
    names: list[bytes] = []  # written since the last operator
    xobjects: Counter[bytes] = Counter()
    for match in OPERATOR.finditer(content):
        name, operator = match[1], match[2]
        if name is not None:
            names.append(name)
            continue
        if operator is None:
            continue
        if operator == b"Do":
            xobjects.update(names)
        elif operator == b"q":
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
        names.clear()
    return Operators(work, shows, xobjects)

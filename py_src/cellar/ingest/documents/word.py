"""DOCX into extracted text and blocks, with python-docx.

python-docx reads the document part of a Word package with its styles, so headings come from
their style (`Heading 2`, `Title`), list items from their numbering or list style, and tables
cell by cell, in body order. A file is checked to be a ZIP holding a main document before
python-docx opens it (the part its `_rels/.rels` names, as python-docx finds it: Word names it
`word/document.xml`), so a renamed ZIP of something else is refused as such; anything
python-docx cannot read is refused with its reason and the file's name.

The extracted text is one piece per non-empty paragraph or table, separated by a blank line; an
auto-numbered heading is written with the number Word shows (`3.2 Ballast arrangement`), a
table one row a line with its cells joined by ` | `: each cell once, however many columns it
spans, and a cell merged with the one above (`vMerge`) with that cell's text. (python-docx's
`row.cells` repeats a cell once per column it spans, so a `gridSpan` of 1,000,000 took 47 s and
99,999,999 all the memory; its merged cells look up each row above again, recursively.)
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any
from xml.parsers import expat

from cellar.ingest.discovery import MAX_FILE_BYTES, FileRefused
from cellar.ingest.documents.blocks import Extracted, Unit, assemble, first_heading, joined

HEADING_STYLE = re.compile(r"heading (\d)", re.IGNORECASE)
NUMBER_WRITTEN = re.compile(r"\d+(?:\.\d+)*\.?\s")
MAX_PARAGRAPHS = 500_000  # a report of 1,000 pages has some 20,000
MAX_RUNS = 1_000_000  # runs (`<w:r>`, a stretch of one formatting): python-docx makes an object of each
# What reading a damaged member raises: a CRC or a length that does not match (BadZipFile,
# EOFError), deflate data that is not (zlib.error), an encrypted member (RuntimeError), a
# compression zipfile lacks (NotImplementedError).
DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError, OSError)


def docx_document(data: bytes, path: str) -> Extracted:
    """The text and blocks of a DOCX; a FileRefused naming `path` for anything else."""
    _check_package(data, path)
    try:
        import docx
        from docx.table import Table
        from docx.text.paragraph import Paragraph

        document = docx.Document(io.BytesIO(data))
        pieces: list[tuple[str, int, str]] = []  # (unit kind, heading level, text)
        counters: list[int] = []
        for child in document.element.body.iterchildren():
            tag = child.tag.rsplit("}", 1)[-1]
            if tag == "p":
                piece = _paragraph(Paragraph(child, document), counters)
                if piece is not None:
                    pieces.append(piece)
            elif tag == "tbl":
                rows = _table_rows(Table(child, document))
                if any(row.strip(" |") for row in rows):
                    pieces.append(("table", 0, "\n".join(rows)))
    except Exception as error:  # python-docx raises many kinds on a damaged package
        raise FileRefused(path, f"not a readable Word document ({type(error).__name__}: {error})") from None
    text, spans = joined(("", body) for _, _, body in pieces)
    units = [
        Unit(kind, start, end, level, " ".join(text[start:end].split()) if kind == "heading" else "")
        for (kind, level, _), (start, end) in zip(pieces, spans)
    ]
    blocks = assemble(text, units)
    return Extracted(text, blocks, "document", "docx", first_heading(blocks))


def _check_package(data: bytes, path: str) -> None:
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise FileRefused(path, "not a Word document: a DOCX is a ZIP package and this is not one") from None
    except UnicodeDecodeError as error:  # a member's name flagged UTF-8 that is not
        raise FileRefused(path, f"not a readable Word package: a member's name is not UTF-8 ({error})") from None
    with package:
        names = set(package.namelist())
        unpacked = sum(member.file_size for member in package.infolist())
        # A ZIP bomb is refused before python-docx unpacks it: the limit of any archive file. (zipfile
        # reads a member no further than its stated size, so the sizes stated bound the memory.)
        if unpacked > MAX_FILE_BYTES:
            raise FileRefused(
                path, f"a Word package that unpacks to {unpacked:,} bytes, over the limit of {MAX_FILE_BYTES:,}"
            )
        # Word writes no DTD; one declares entities, which python-docx's parser drops with the
        # text around them (an entity that names a file is never read): refused, as a clause
        # collection's is. (The main document is checked again as it is counted, whatever its name.)
        for name in sorted(names):
            if name.endswith((".xml", ".rels")):
                with _unpacked(package, name, path) as part:
                    if _declares_dtd(part):
                        raise FileRefused(path, f"a Word package whose {name} declares a DTD (entities), refused")
        documents = _main_documents(package, names, path)
        if not documents:  # python-docx finds nothing to read either
            missing = "word/document.xml" if "word/document.xml" not in names else "the main document _rels/.rels names"
            raise FileRefused(
                path, f"not a Word document: a ZIP package without {missing} (another kind of file renamed .docx?)"
            )
        # python-docx makes an object of each: 16 million paragraphs took 195 s and 2 GB, 2 million
        # runs in one paragraph 44 s and 1.1 GB
        for name in documents:
            paragraphs, runs = _element_counts(package, name, path)
            if paragraphs > MAX_PARAGRAPHS:
                raise FileRefused(
                    path, f"a Word document of {paragraphs:,} paragraphs, over the limit of {MAX_PARAGRAPHS:,}"
                )
            if runs > MAX_RUNS:
                raise FileRefused(path, f"a Word document of {runs:,} runs of text, over the limit of {MAX_RUNS:,}")


@contextmanager
def _unpacked(package: zipfile.ZipFile, name: str, path: str) -> Iterator[IO[bytes]]:
    """The member `name`, to be read as it is unpacked; one that cannot be unpacked, or that expat
    cannot read as XML, is refused naming it."""
    try:
        with package.open(name) as part:
            yield part
    except DAMAGED as error:
        raise FileRefused(path, f"a damaged Word package: {name} cannot be unpacked ({error})") from None
    except expat.ExpatError as error:  # malformed (python-docx refuses it too), or in an encoding expat lacks
        raise FileRefused(path, f"a Word package whose {name} is not readable XML ({error})") from None


class _Prolog(Exception):
    """The root element or a DOCTYPE reached: the prolog is read."""


def _declares_dtd(part: IO[bytes]) -> bool:
    """Whether an XML part declares a DTD, read with expat up to its root element (in any encoding
    it declares, and past any comment: a search of its first bytes for `<!DOCTYPE` missed one
    after a long comment or written in UTF-16). A part expat cannot read declares none: python-docx
    refuses it with its reason."""
    found = False

    def doctype(*_: object) -> None:
        nonlocal found
        found = True
        raise _Prolog

    def root(*_: object) -> None:
        raise _Prolog

    parser = expat.ParserCreate()
    parser.StartDoctypeDeclHandler = doctype
    parser.StartElementHandler = root
    try:
        while chunk := part.read(1 << 16):
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except _Prolog:
        pass
    except expat.ExpatError:
        return False
    return found


def _parser(name: str, path: str) -> expat.XMLParserType:
    """An expat parser for the part `name` that names each element `namespace local-name`, whatever
    prefix the part binds to its namespace, and refuses a DTD: a part read as the main document
    need not end in .xml, which the check of the package's parts looks for."""

    def doctype(*_: object) -> None:
        raise FileRefused(path, f"a Word package whose {name} declares a DTD (entities), refused")

    parser = expat.ParserCreate(namespace_separator=" ")
    parser.ordered_attributes = True  # [name, value, ...]
    parser.StartDoctypeDeclHandler = doctype
    return parser


def _main_documents(package: zipfile.ZipFile, names: set[str], path: str) -> list[str]:
    """The members python-docx may read as the main document, found as it finds it: the targets of
    the officeDocument relationships in the package's _rels/.rels, resolved against the package's
    root. (It reads the one there is and refuses several; each is counted all the same.) A body
    in another part than `word/document.xml` took python-docx 46 s past a count of that one."""
    from docx.opc.constants import NAMESPACE, RELATIONSHIP_TARGET_MODE, RELATIONSHIP_TYPE
    from docx.opc.packuri import PACKAGE_URI, PackURI

    relationship = f"{NAMESPACE.OPC_RELATIONSHIPS} Relationship"
    targets: list[str] = []

    def start(element: str, attributes: list[str]) -> None:
        values = dict(zip(attributes[::2], attributes[1::2]))
        if (
            element == relationship
            and values.get("Type") == RELATIONSHIP_TYPE.OFFICE_DOCUMENT
            and values.get("TargetMode") != RELATIONSHIP_TARGET_MODE.EXTERNAL
            and "Target" in values
        ):
            targets.append(PackURI.from_rel_ref(PACKAGE_URI.baseURI, values["Target"]).membername)

    rels = PACKAGE_URI.rels_uri.membername
    if rels in names:
        parser = _parser(rels, path)
        parser.StartElementHandler = start
        with _unpacked(package, rels, path) as part:
            parser.ParseFile(part)
    return [target for target in dict.fromkeys(targets) if target in names]


def _element_counts(package: zipfile.ZipFile, name: str, path: str) -> tuple[int, int]:
    """The paragraphs (`p`) and runs (`r`, a stretch of one formatting) of WordprocessingML in the
    part `name`, counted by expat as it is unpacked, by namespace: a byte search for `<w:p` missed
    `<x:p/>` with `x` bound to that namespace and `<w:p\\n/>` (2 million paragraphs, read in 38 s)."""
    from docx.opc.constants import NAMESPACE

    # The elements ended in the chunk last parsed, appended by expat itself: a handler written in
    # Python took twice as long (2 million empty paragraphs: 2 s).
    ended: list[str] = []
    counts: Counter[str] = Counter()
    parser = _parser(name, path)
    parser.EndElementHandler = ended.append
    with _unpacked(package, name, path) as part:
        while chunk := part.read(1 << 20):
            parser.Parse(chunk, False)
            counts.update(ended)
            ended.clear()
        parser.Parse(b"", True)
    counts.update(ended)
    return counts[f"{NAMESPACE.WML_MAIN} p"], counts[f"{NAMESPACE.WML_MAIN} r"]


def _table_rows(table: Any) -> list[str]:
    """A table's rows, each its cells' texts joined by ` | `, in time linear in the table's XML:
    a cell is read once whatever it spans; one that continues a vertical merge repeats the text
    of the cell it continues (found by its grid column in the row above, as Word lays it out)."""
    from docx.table import _Cell

    above: dict[int, str] = {}  # grid column -> the text of the cell starting there in the row above
    rows = []
    for tr in table._tbl.tr_lst:
        cells, here, column = [], {}, tr.grid_before
        for tc in tr.tc_lst:
            text = above.get(column, "") if tc.vMerge == "continue" else _Cell(tc, table).text.strip()
            here[column] = text
            cells.append(text)
            column += tc.grid_span
        above = here
        rows.append(" | ".join(cells))
    return rows


def _paragraph(paragraph: Any, counters: list[int]) -> tuple[str, int, str] | None:
    """(kind, level, text) of a paragraph; a numbered heading gets the number Word shows."""
    text = paragraph.text.strip()
    if not text:
        return None
    style = paragraph.style.name if paragraph.style is not None else ""
    numbered = paragraph._p.pPr is not None and paragraph._p.pPr.numPr is not None
    heading = HEADING_STYLE.fullmatch(style.strip())
    if style == "Title":
        return ("heading", 0, text)
    if heading:
        level = int(heading[1])
        if numbered and not NUMBER_WRITTEN.match(text):
            del counters[level:]
            counters.extend([0] * (level - len(counters)))
            counters[level - 1] += 1
            text = f"{'.'.join(str(count) for count in counters)} {text}"
        return ("heading", level, text)
    if numbered or style.lower().startswith("list"):
        return ("list item", 0, text)
    return ("paragraph", 0, text)

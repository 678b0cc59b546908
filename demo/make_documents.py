"""Write the demo archive's documents beside its notebooks: deterministic bytes, no clock.

`demo/make_archive.py` calls `write_documents(out)`; the tests use the writers to make real
files for the document parsers:

    pdf_bytes(pages)        a minimal PDF with a text layer (Helvetica, one text object per
                            page, one line per string; an empty string leaves a blank line), or
                            without one (`pdf_bytes([], scanned=1)`: a page with only a drawing)
    docx_bytes(blocks)      a DOCX written by python-docx from (style, text) pairs or tables,
                            its ZIP entries re-stamped with a fixed time so the bytes never change

    write_documents(out)    the demo documents into an archive folder (also: `python
                            demo/make_documents.py [ARCHIVE]`, default demo/archive)

The documents themselves are in demo/documents/ (Markdown, the standard's clauses, the service
notes, the glossary); the PDF and the DOCX are generated here from text kept in this file.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from pathlib import Path

FIXED_TIME = (2024, 1, 1, 0, 0, 0)
LINE_HEIGHT = 14


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _pdf_line(line: str | tuple[int, str]) -> bytes:
    """One line of a page: a string in the body font (10 pt), or (size, text) in a font of its
    own size (a heading set larger), the body font set again after it."""
    if isinstance(line, tuple):
        size, text = line
        return b"/F1 %d Tf " % size + _pdf_string(text) + b" Tj T* /F1 10 Tf"
    return _pdf_string(line) + b" Tj T*" if line else b"T*"


def pdf_bytes(pages: Sequence[Sequence[str | tuple[int, str]]], scanned: int = 0) -> bytes:
    """A PDF whose pages hold `pages` (lines of text), then `scanned` pages with no text layer."""
    streams = []
    for lines in pages:
        body = [b"BT /F1 10 Tf %d TL 56 790 Td" % LINE_HEIGHT]
        body += [_pdf_line(line) for line in lines]
        streams.append(b"\n".join([*body, b"ET"]))
    streams += [b"0.5 g 56 400 480 380 re f"] * scanned  # a grey box: what a scan's image stands for
    return pdf_of_streams(streams)


def pdf_of_streams(streams: Sequence[bytes]) -> bytes:
    """A PDF of one page per content stream, Helvetica as /F1."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"", b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]  # fmt: skip
    kids = []
    for stream in streams:
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> "
            b"/Contents %d 0 R >>" % len(objects)
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    return pdf_file(objects)


def pdf_file(objects: Sequence[bytes]) -> bytes:
    """A PDF of `objects` (numbered from 1; the first the catalog) with its cross-reference table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def docx_bytes(blocks: Sequence[tuple[str, str] | list[list[str]]]) -> bytes:
    """A DOCX of `blocks`: (style name, text) paragraphs (`Title`, `Heading 2`, `List Bullet`,
    `Normal`, ...) and tables as lists of rows; the same bytes on every run."""
    import docx

    document = docx.Document()
    document.core_properties.author = "Cellar demo"
    for block in blocks:
        if isinstance(block, tuple):
            style, text = block
            document.add_paragraph(text, style=style)
        else:
            table = document.add_table(rows=len(block), cols=len(block[0]))
            for row, values in zip(table.rows, block):
                for cell, value in zip(row.cells, values):
                    cell.text = value
    raw = io.BytesIO()
    document.save(raw)
    return restamped(raw.getvalue())


def restamped(package: bytes) -> bytes:
    """A ZIP package with every entry's time set to FIXED_TIME (python-docx stamps the clock)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(package)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, FIXED_TIME)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            target.writestr(fixed, source.read(info.filename))
    return out.getvalue()


DOCUMENTS = Path(__file__).resolve().parent / "documents"

# The mooring review of project 20-004, as a PDF with a text layer: one list of lines per page,
# an empty line between paragraphs. It cites the result of mooring_tension_20004.ipynb.
MOORING_REVIEW = "2020/20-004 Mooring/mooring_review_20004.pdf"
MOORING_PAGES = [
    [
        "Mooring arrangement review, project 20-004",
        "",
        "Written for Cellar's demo archive: the vessel, the berth and the figures are invented.",
        "",
        "1 Scope",
        "This review checks the mooring lines of the vessel at the exposed berth against the",
        "owner's criteria, using the quasi-static tension calculation of the project.",
        "",
        "2 Mooring lines",
        "2.1 Arrangement",
        "The vessel is moored with eight lines: two head lines, two forward springs, two aft",
        "springs and two stern lines, all of HMPE rope with a breaking load of 6000 kN.",
        "",
        "2.2 Environmental loads",
        "The design wind is 25 m/s from the beam with a current of 1.5 knots along the berth.",
    ],
    [
        "2.3 Line loads",
        "The notebook mooring_tension_20004 gives the highest top tension in line ML1, the",
        "forward head line: 1007 kN, with a safety factor of 5.96 against the required 1.67.",
        "",
        "The other lines stay below 800 kN in every load case.",
        "",
        "3 Recommendations",
        "a) Replace the forward spring lines at the next docking, as their tails show wear.",
        "b) Check the bollard welds on the berth before the winter season.",
        "c) Keep the winch brakes set at 60 percent of the breaking load.",
    ],
]

# The short-circuit inspection report of project 21-019, in Dutch, as a DOCX written by
# python-docx. It cites the result of kortsluiting_hoofdschakelbord_21019.ipynb.
SWITCHBOARD_REPORT = "2021/21-019 Elektrisch/keuringsrapport_21019.docx"
SWITCHBOARD_BLOCKS: list[tuple[str, str] | list[list[str]]] = [
    ("Title", "Keuringsrapport hoofdschakelbord, project 21-019"),
    ("Normal", "Geschreven voor Cellar's demo-archief: het schip en de cijfers zijn verzonnen."),
    ("Heading 1", "1 Onderwerp"),
    ("Normal", "Dit rapport beoordeelt de kortsluitvastheid van het 690 V hoofdschakelbord van de sleephopperzuiger."),
    ("Heading 1", "2 Kortsluitvastheid"),
    ("Heading 2", "2.1 Berekende stromen"),
    ("Normal", "Volgens de berekening kortsluiting_hoofdschakelbord_21019 is de kortsluitstroom Ik'' 55,3 kA en de piekstroom ip 140,8 kA."),
    [["grootheid", "berekend", "schakelaar"], ["Ik'' (kA)", "55,3", "Icu 65"], ["ip (kA)", "140,8", "Icm 143"]],
    ("Heading 2", "2.2 Beoordeling"),
    ("Normal", "De generatorschakelaars zijn voldoende: het uitschakelvermogen Icu van 65 kA ligt boven de berekende kortsluitstroom."),
    ("Normal", "De marge op het inschakelvermogen is klein: 143 kA tegen een piekstroom van 140,8 kA."),
    ("Heading 1", "3 Aanbevelingen"),
    ("List Bullet", "Bij uitbreiding met een vierde generator de berekening opnieuw maken."),
    ("List Bullet", "De aardverbindingen van de pompmotoren jaarlijks controleren."),
]  # fmt: skip


def write_documents(out: Path) -> list[Path]:
    """Write the demo's documents into the archive folder `out`: the files of demo/documents/ as
    they are (glossary.json at the root: the abbreviations of the service notes, which `cellar
    index` reads from there), the mooring review PDF and the switchboard report DOCX. The same
    bytes on every run. Returns the paths written."""
    written = []
    for source in sorted(DOCUMENTS.rglob("*")):
        if source.is_file():
            target = out / source.relative_to(DOCUMENTS)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            written.append(target)
    for name, data in (
        (MOORING_REVIEW, pdf_bytes(MOORING_PAGES)),
        (SWITCHBOARD_REPORT, docx_bytes(SWITCHBOARD_BLOCKS)),
    ):
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written.append(target)
    return written


if __name__ == "__main__":
    import sys

    archive = Path(sys.argv[1]) if len(sys.argv) > 1 else DOCUMENTS.parent / "archive"
    for path in write_documents(archive):
        print(path)

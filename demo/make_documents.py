"""Write the demo archive's documents beside its notebooks: deterministic bytes, no clock.

`demo/make_archive.py` calls `write_documents(out)`; the tests use the writers to make real
files for the document parsers:

    pdf_bytes(pages)        a minimal PDF with a text layer (Helvetica, one text object per
                            page, one line per string; an empty string leaves a blank line), or
                            without one (`pdf_bytes([], scanned=1)`: a page with only a drawing)
    docx_bytes(blocks)      a DOCX written by python-docx from (style, text) pairs or tables,
                            its ZIP entries re-stamped with a fixed time so the bytes never change

The documents themselves are in demo/documents/ (Markdown, the standard's clauses, the service
notes); the PDF and the DOCX are generated here from text kept in this file.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence

FIXED_TIME = (2024, 1, 1, 0, 0, 0)
LINE_HEIGHT = 14


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def pdf_bytes(pages: Sequence[Sequence[str]], scanned: int = 0) -> bytes:
    """A PDF whose pages hold `pages` (lines of text), then `scanned` pages with no text layer."""
    streams = []
    for lines in pages:
        body = [b"BT /F1 10 Tf %d TL 56 790 Td" % LINE_HEIGHT]
        body += [_pdf_string(line) + b" Tj T*" if line else b"T*" for line in lines]
        streams.append(b"\n".join([*body, b"ET"]))
    streams += [b"0.5 g 56 400 480 380 re f"] * scanned  # a grey box: what a scan's image stands for
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

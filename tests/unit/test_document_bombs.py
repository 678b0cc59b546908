"""Word and PDF files built to pass the limits on what python-docx and pypdf are given: each was
read (slowly, or never to the end) or lost its text before these checks.

The hostile files are written here, small: a DOCX is python-docx's own package with a part
rewritten; a PDF is written by hand (every stream deflated), its forms /Fm0, /Fm1, ... drawn by
every page and by each other.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Sequence

import pytest
from tests.unit.conftest import deadline, demo_documents_writers

from cellar.ingest.discovery import FileRefused
from cellar.ingest.documents import pdf, word
from cellar.ingest.documents.extract import extract

WRITERS = demo_documents_writers()
W = b"http://schemas.openxmlformats.org/wordprocessingml/2006/main"


# -- Word -----------------------------------------------------------------------------------------


def _with_body(document: bytes, body: bytes) -> bytes:
    start, end = document.index(b"<w:body>") + len(b"<w:body>"), document.index(b"</w:body>")
    return document[:start] + body + document[end:]


def _docx(body: bytes, main: str = "word/document.xml", doctype: bytes = b"") -> bytes:
    """A DOCX written by python-docx whose main document holds `body` (after `doctype`):
    word/document.xml, or `main`, named so in _rels/.rels and [Content_Types].xml (with its own
    relationships), beside a word/document.xml of one paragraph that nothing names."""
    source = zipfile.ZipFile(io.BytesIO(WRITERS.docx_bytes([("Normal", "The decoy paragraph.")])))
    members = {member.filename: source.read(member.filename) for member in source.infolist()}
    members[main] = _with_body(members["word/document.xml"], body).replace(b"?>", b"?>" + doctype, 1)
    members[main.replace("word/", "word/_rels/") + ".rels"] = members["word/_rels/document.xml.rels"]
    for name in ("_rels/.rels", "[Content_Types].xml"):
        members[name] = members[name].replace(b"word/document.xml", main.encode())
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for name, content in members.items():
            package.writestr(name, content)
    return out.getvalue()


@pytest.mark.parametrize(
    ("limit", "body", "problem"),
    [
        # another prefix bound to WordprocessingML's namespace, or none (a default namespace)
        ("MAX_PARAGRAPHS", b'<x:p xmlns:x="%s"/>' % W * 3, "3 paragraphs, over the limit of 2"),
        ("MAX_PARAGRAPHS", b'<p xmlns="%s"/>' % W * 3, "3 paragraphs, over the limit of 2"),
        # white space in the tag
        ("MAX_PARAGRAPHS", b"<w:p\n/><w:p\t></w:p><w:p\r\n/>", "3 paragraphs, over the limit of 2"),
        ("MAX_RUNS", b'<w:p><x:r xmlns:x="%s"/><w:r\n/><w:r\t/></w:p>' % W, "3 runs of text, over the limit of 2"),
    ],
)
def test_paragraphs_and_runs_are_counted_by_namespace_however_the_tag_is_written(monkeypatch, limit, body, problem):
    """A search for the bytes `<w:p` missed them: 2 million paragraphs in a DOCX of 52 KB were read
    in 38 s."""
    monkeypatch.setattr(word, limit, 2)
    with pytest.raises(FileRefused, match=f"^archive/r.docx: a Word document of {problem}$"):
        extract(_docx(body), "archive/r.docx")


def test_the_paragraphs_counted_are_those_of_the_main_document_python_docx_reads(monkeypatch):
    """python-docx reads the part _rels/.rels names: a body of 2 million paragraphs in
    word/main2.xml, beside a word/document.xml of one, was read in 46 s."""
    monkeypatch.setattr(word, "MAX_PARAGRAPHS", 2)
    body = b"<w:p><w:r><w:t>The ballast pump was replaced.</w:t></w:r></w:p>"
    with pytest.raises(FileRefused, match="^archive/r.docx: a Word document of 3 paragraphs, over the limit of 2$"):
        extract(_docx(body * 3, main="word/main2.xml"), "archive/r.docx")
    # the part counted is the part read
    assert extract(_docx(body * 2, main="word/main2.xml"), "archive/r.docx").text == (
        "The ballast pump was replaced.\n\nThe ballast pump was replaced."
    )


def test_a_main_document_of_any_name_is_checked_for_a_dtd():
    """The check for a DTD looked at the parts named .xml only; python-docx would have dropped
    the entity's text without a word."""
    body = b"<w:p><w:r><w:t>&x;</w:t></w:r></w:p>"
    data = _docx(body, main="word/body.bin", doctype=b'<!DOCTYPE w:document [<!ENTITY x "hidden">]>')
    with pytest.raises(FileRefused, match="^archive/r.docx: a Word package whose word/body.bin declares a DTD"):
        extract(data, "archive/r.docx")


def test_a_package_whose_rels_name_no_main_document_is_refused():
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as package:
        package.writestr("word/document.xml", b'<w:document xmlns:w="%s"><w:body/></w:document>' % W)
    with pytest.raises(FileRefused, match="not a Word document: a ZIP package without the main document _rels/.rels"):
        extract(data.getvalue(), "archive/r.docx")


def test_two_million_paragraphs_written_with_a_newline_are_refused_before_python_docx_reads_them():
    data = _docx(b"<w:p\n/>" * 2_000_000)
    assert len(data) < 100_000
    with (
        deadline(),
        pytest.raises(FileRefused, match="a Word document of 2,000,000 paragraphs, over the limit of 500,000"),
    ):
        extract(data, "archive/report.docx")


# -- PDF ------------------------------------------------------------------------------------------


def _stream(data: bytes, dictionary: bytes = b"") -> bytes:
    deflated = zlib.compress(data)
    return b"<< %s /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (dictionary, len(deflated), deflated)


def _pdf(contents: Sequence[bytes], forms: Sequence[bytes] = ()) -> bytes:
    """A PDF of a page per content stream, drawing with Helvetica as /F1 and `forms` as /Fm0,
    /Fm1, ...: form XObjects that draw with the same resources (so with each other)."""
    resources = b"<< /Font << /F1 3 0 R >> /XObject << %s >> >>" % b" ".join(
        b"/Fm%d %d 0 R" % (number, 5 + number) for number in range(len(forms))
    )
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"", b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    objects.append(resources)
    form = b"/Type /XObject /Subtype /Form /BBox [0 0 595 842] /Resources 4 0 R"
    objects += [_stream(content, form) for content in forms]
    kids = []
    for content in contents:
        objects.append(_stream(content))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources 4 0 R /Contents %d 0 R >>" % len(objects)
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    return WRITERS.pdf_file(objects)


def _text(*lines: str) -> bytes:
    return b"BT /F1 10 Tf 14 TL 56 790 Td " + b" ".join(b"(%s) Tj T*" % line.encode() for line in lines) + b" ET"


def test_texts_shown_by_forms_count_each_time_a_page_draws_them(monkeypatch):
    """Only the page's own stream was counted: a page of 934 bytes drawing a form of 2,000 texts
    500 times showed a million (18 s), 5,000 times, ten million."""
    monkeypatch.setattr(pdf, "MAX_SHOWN", 9)
    # a page draws /Fm0 twice (once by an escaped name), which shows a text and draws /Fm1 twice,
    # which shows two: 2 x (1 + 2 x 2) = 10
    forms = [b"q /Fm1 Do Q q /Fm1 Do Q " + _text("Ballast"), _text("pump", "valve")]
    data = _pdf([b"/Fm0 Do /F#6D0 Do"], forms)
    with pytest.raises(FileRefused, match=r"^archive/r\.pdf: page 1 shows 10 texts, over the limit of 9 for a file$"):
        extract(data, "archive/r.pdf")
    monkeypatch.setattr(pdf, "MAX_SHOWN", 10)
    assert "Ballast" in extract(data, "archive/r.pdf").text


def test_a_form_of_2000_texts_drawn_5000_times_is_refused_at_once():
    data = _pdf([b"/Fm0 Do " * 5_000], [_text(*["x"] * 2_000)])
    assert len(data) < 1_500
    with (
        deadline(),
        pytest.raises(FileRefused, match=r"^archive/r\.pdf: page 1 has more than 4,000,000 bytes of content"),
    ):
        extract(data, "archive/r.pdf")


def test_a_page_whose_content_inflates_past_the_limit_is_left_out_and_the_others_read():
    """40 KB deflated to 40 MB of `q Q ` took pypdf minutes and 2.8 GB: the file's limit of 100 MB
    is on the bytes it holds, not on what its streams unpack to."""
    bomb = b"q Q " * 10_000_000
    data = _pdf([_text("1 Scope"), bomb, _text("3 Trim", "Trim by the stern.")])
    assert len(data) < 60_000
    with deadline(), pytest.warns(UserWarning) as caught:
        doc = extract(data, "archive/r.pdf")
    assert (
        "archive/r.pdf: page 2 has more than 4,000,000 bytes of content (its streams and the forms it draws, each "
        "time it draws one), the limit for a page: not indexed"
    ) in [str(warning.message) for warning in caught]
    assert "1 Scope" in doc.text and "Trim by the stern." in doc.text
    assert {doc.text[block.start : block.end].split("\n")[0]: block.page for block in doc.blocks} == {
        "1 Scope": 1,
        "3 Trim": 3,
    }
    # a page alone past it, and no other to read: refused, not taken for a scan
    with (
        deadline(),
        pytest.raises(
            FileRefused,
            match=r"^archive/q\.pdf: page 1 has more than 4,000,000 bytes of content .*: not indexed, and no other page has text$",
        ),
    ):
        extract(_pdf([bomb]), "archive/q.pdf")


def test_the_content_of_the_pages_read_from_one_file_is_limited(monkeypatch):
    """Pages that share a stream parse it each: 500 pages of one stream just under a page's limit
    would take hours."""
    monkeypatch.setattr(pdf, "MAX_CONTENT", 100)
    page = _text("The ballast pump was replaced.")
    assert 50 < len(page) <= 100
    with pytest.warns(
        UserWarning, match=r"^archive/r\.pdf: more than 100 bytes of content by page 2: pages 2 to 3 are not indexed$"
    ):
        doc = extract(_pdf([page] * 3), "archive/r.pdf")
    assert doc.text == "The ballast pump was replaced."


def test_the_pages_are_read_no_further_than_the_file_limit_of_content_unpacked(monkeypatch):
    """pypdf keeps every stream it unpacks while the file is open: 20 pages of 40 KB, each
    unpacked to 40 MB and left out, held 860 MB."""
    monkeypatch.setattr(pdf, "MAX_FILE_BYTES", 10_000_000)
    bombs = [b"q Q " * 1_250_000 + b"%% page %d" % number for number in range(2, 6)]  # 5 MB each
    data = _pdf([_text("1 Scope"), *bombs, _text("6 Trim")])
    with deadline(), pytest.warns(UserWarning) as caught:
        doc = extract(data, "archive/r.pdf")
    assert "archive/r.pdf: more than 10,000,000 bytes of content unpacked by page 3: pages 4 to 6 are not indexed" in [
        str(warning.message) for warning in caught
    ]
    assert doc.text.strip() == "1 Scope"


def test_forms_that_draw_each_other_leave_their_page_out():
    """Counted form by form at each `Do`, a cycle would never end: forms are followed no deeper
    than MAX_FORM_DEPTH."""
    forms = [b"/Fm1 Do " + _text("round"), b"/Fm0 Do"]
    with (
        deadline(),
        pytest.warns(
            UserWarning,
            match=r"^archive/r\.pdf: page 1 draws forms nested more than 10 deep \(or in a cycle\): not indexed$",
        ),
    ):
        doc = extract(_pdf([b"/Fm0 Do", _text("The ballast pump was replaced.")], forms), "archive/r.pdf")
    assert doc.text.strip() == "The ballast pump was replaced."  # after page 1's place


def test_text_drawn_only_through_a_form_is_read_in_plain_mode():
    """pypdf's layout mode draws no form XObject: the page was taken for a scan and refused."""
    data = _pdf(
        [b"q /Fm0 Do Q " + _text("Ballast pump inspection report")],
        [_text("The sea chest valve was replaced in March.")],
    )
    with pytest.warns(
        UserWarning, match=r"^archive/r\.pdf: page 1 has text that layout mode leaves out \(35 characters"
    ):
        doc = extract(data, "archive/r.pdf")
    assert "The sea chest valve was replaced in March." in doc.text and "Ballast pump inspection report" in doc.text

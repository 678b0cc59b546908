"""Documents beside notebooks: every format split into blocks along its own structure, each
block quoted verbatim at its offsets and cited the way one reads it aloud; malformed files
refused with the file's name and the problem.

PDFs are written by demo/make_documents.py's minimal writer and read back by pypdf; DOCX files
are written by python-docx; nothing is mocked.
"""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from collections.abc import Callable

import pytest
from tests.unit.conftest import demo_documents_writers

from cellar.ingest.chunking import chunk_document, coverage
from cellar.ingest.discovery import FileRefused
from cellar.ingest.documents import notes
from cellar.ingest.documents.extract import extract

WRITERS = demo_documents_writers()

REPORT_MD = b"""# Ballast report 17-042

Written for the owner.

## 3 Ballast

### 3.2 Ballast arrangement

The forepeak tank FP holds 412.1 m3.

The aft peak is not used for ballast.
It stays empty at sea.

- pump P1 serves the aft group
- pump P2 serves the forepeak

| tank | m3 |
|---|---|
| FP | 412.1 |

The fourth paragraph.
"""

STANDARD_XML = b"""<?xml version="1.0" encoding="UTF-8"?>
<clauses designation="NEN 3140:2018" title="Operation of electrical installations">
  <article number="6" title="Earthing">
    <article number="6.3" title="Protective earthing">
      <article number="6.3.2" title="Earthing of the hull">
        <text>The hull shall be earthed before work on the switchboard starts.</text>
        <item label="a">at two points at least;</item>
        <item label="b">with a copper conductor of at least 16 mm2.</item>
        <note>A hull on a slipway is not earthed by the water.</note>
      </article>
    </article>
  </article>
</clauses>
"""

NOTES_CSV = (
    b"id,date,machine,fault_code,customer,text\n"
    b"T2-2017-04411,2017-03-02,T2-0457,E217,Van Dijk,brg noise on aux pump; repl brg\n"
    b'T2-2018-00012,2018-01-09,T2-0458,E101,Smit,"lkg at flange, ""tightened"" bolts"\n'
)


def quotes(extracted):
    return [extracted.text[block.start : block.end] for block in extracted.blocks]


def cited(extracted):
    return {extracted.text[block.start : block.end]: block.citation for block in extracted.blocks}


# -- structured documents -------------------------------------------------------------------------


def test_markdown_blocks_are_cited_by_section_and_paragraph():
    doc = extract(REPORT_MD, "reports/ballast.md")
    assert doc.text == REPORT_MD.decode()  # a Markdown file's text is its own
    by_quote = cited(doc)
    assert (
        by_quote["### 3.2 Ballast arrangement\n\nThe forepeak tank FP holds 412.1 m3."]
        == "3.2 Ballast arrangement, paragraph 1"
    )
    assert (
        by_quote["The aft peak is not used for ballast.\nIt stays empty at sea."]
        == "3.2 Ballast arrangement, paragraph 2"
    )
    assert by_quote["- pump P2 serves the forepeak"] == "3.2 Ballast arrangement, item 2"
    assert by_quote["| tank | m3 |\n|---|---|\n| FP | 412.1 |"] == "3.2 Ballast arrangement, table 1"
    assert by_quote["The fourth paragraph."] == "3.2 Ballast arrangement, paragraph 3"
    assert by_quote["# Ballast report 17-042\n\nWritten for the owner."] == "Ballast report 17-042, paragraph 1"
    assert by_quote["## 3 Ballast"] == "3 Ballast"  # a heading straight above another stands alone
    block = next(b for b in doc.blocks if b.citation == "3.2 Ballast arrangement, paragraph 1")
    assert block.headings == ("Ballast report 17-042", "3 Ballast", "3.2 Ballast arrangement")
    assert doc.title == "Ballast report 17-042"


def test_plain_text_numbered_headings_and_lettered_items():
    text = (
        b"Notes on earthing\n\n6 Earthing\n6.3 Protective earthing\n6.3.2 Earthing of the hull\n"
        b"The hull shall be earthed.\na) at two points;\nb) with copper of 16 mm2.\n\n"
        b"1.2 million tonnes were moved in 2019, a record.\n"
    )
    doc = extract(text, "earthing.txt")
    by_quote = cited(doc)
    assert by_quote["b) with copper of 16 mm2."] == "6.3.2 Earthing of the hull, item b"
    assert (
        by_quote["6.3.2 Earthing of the hull\nThe hull shall be earthed."] == "6.3.2 Earthing of the hull, paragraph 1"
    )
    hull = next(b for b in doc.blocks if b.citation.endswith("item b"))
    assert hull.headings == ("6 Earthing", "6.3 Protective earthing", "6.3.2 Earthing of the hull")
    # a sentence that starts with a number is no heading
    assert by_quote["1.2 million tonnes were moved in 2019, a record."] == "6.3.2 Earthing of the hull, paragraph 2"


def test_html_text_is_extracted_block_by_block_without_scripts():
    page = (
        b"<html><head><title>t</title><script>alert('x')</script></head><body>"
        b"<h1>Service report</h1><p>The pump   <b>P2</b>\n was replaced.</p>"
        b"<ul><li>seal</li><li>bearing &amp; shaft</li></ul>"
        b"<table><tr><th>part</th><th>qty</th></tr><tr><td>seal</td><td>2</td></tr></table>"
        b"<h2>2.1 Findings</h2><p>Wear on the shaft.</p></body></html>"
    )
    doc = extract(page, "service.html")
    assert "alert" not in doc.text
    assert cited(doc) == {
        "Service report\n\nThe pump P2 was replaced.": "Service report, paragraph 1",
        "seal": "Service report, item 1",
        "bearing & shaft": "Service report, item 2",
        "part | qty\nseal | 2": "Service report, table 1",
        "2.1 Findings\n\nWear on the shaft.": "2.1 Findings, paragraph 1",
    }


def test_pdf_text_layer_blocks_carry_their_page():
    data = WRITERS.pdf_bytes(
        [
            ["3 Ballast", "3.2 Ballast arrangement", "The forepeak tank holds 412.1 m3.", "It is filled by P2.",
             "", "The aft peak stays empty.", "a) pump P1;", "b) pump P2."],
            ["4 Stability", "GZ meets the criteria."],
        ]
    )  # fmt: skip
    doc = extract(data, "report.pdf")
    by_quote = cited(doc)
    assert (
        by_quote["3.2 Ballast arrangement\nThe forepeak tank holds 412.1 m3.\nIt is filled by P2."]
        == "3.2 Ballast arrangement, paragraph 1"
    )
    assert by_quote["The aft peak stays empty."] == "3.2 Ballast arrangement, paragraph 2"
    assert by_quote["b) pump P2."] == "3.2 Ballast arrangement, item b"
    pages = {doc.text[b.start : b.end]: b.page for b in doc.blocks}
    assert pages["b) pump P2."] == 1 and pages["4 Stability\nGZ meets the criteria."] == 2


def test_docx_headings_by_style_lists_and_tables():
    data = WRITERS.docx_bytes(
        [
            ("Title", "Ballast report 17-042"),
            ("Heading 1", "3 Ballast"),
            ("Heading 2", "3.2 Ballast arrangement"),
            ("Normal", "The forepeak tank holds 412.1 m3."),
            ("List Bullet", "pump P2 serves the forepeak"),
            [["tank", "m3"], ["FP", "412.1"]],
            ("Normal", "The aft peak stays empty."),
        ]
    )
    doc = extract(data, "report.docx")
    assert cited(doc) == {
        "Ballast report 17-042": "Ballast report 17-042",
        "3 Ballast": "3 Ballast",
        "3.2 Ballast arrangement\n\nThe forepeak tank holds 412.1 m3.": "3.2 Ballast arrangement, paragraph 1",
        "pump P2 serves the forepeak": "3.2 Ballast arrangement, item 1",
        "tank | m3\nFP | 412.1": "3.2 Ballast arrangement, table 1",
        "The aft peak stays empty.": "3.2 Ballast arrangement, paragraph 2",
    }
    assert WRITERS.docx_bytes([("Normal", "x")]) == WRITERS.docx_bytes([("Normal", "x")])  # deterministic


# -- clause collections and records ---------------------------------------------------------------


def test_xml_clauses_are_cited_by_their_full_path():
    doc = extract(STANDARD_XML, "standards/nen3140.clauses.xml")
    assert cited(doc) == {
        "The hull shall be earthed before work on the switchboard starts.": "NEN 3140:2018 §6.3.2",
        "at two points at least;": "NEN 3140:2018 §6.3.2 a",
        "with a copper conductor of at least 16 mm2.": "NEN 3140:2018 §6.3.2 b",
        "A hull on a slipway is not earthed by the water.": "NEN 3140:2018 §6.3.2 note 1",
    }
    assert doc.source == "clauses" and doc.designation == "NEN 3140:2018"
    assert doc.blocks[2].headings == ("6 Earthing", "6.3 Protective earthing", "6.3.2 Earthing of the hull")


def test_json_clauses_read_as_the_xml_ones():
    data = json.dumps({"designation": "NEN 3140:2018", "articles": [{"number": "6", "title": "Earthing", "articles": [
        {"number": "6.3.2", "title": "Earthing of the hull", "text": "The hull shall be earthed.",
         "items": [{"label": "a", "text": "at two points"}, {"label": "b", "text": "with copper"}],
         "notes": ["Not by the water."]}]}]}).encode()  # fmt: skip
    assert list(cited(extract(data, "n.clauses.json")).values()) == [
        "NEN 3140:2018 §6.3.2", "NEN 3140:2018 §6.3.2 a", "NEN 3140:2018 §6.3.2 b", "NEN 3140:2018 §6.3.2 note 1",
    ]  # fmt: skip


def test_records_one_block_per_note_with_fields_and_original_words():
    for name, data in (
        ("service.records.csv", NOTES_CSV),
        ("service.records.jsonl", b"\n".join(json.dumps({"note_id": i, "date": d, "machine": m, "text": t}).encode()
                                             for i, d, m, t in (("T2-2017-04411", "2017-03-02", "T2-0457", "brg noise on aux pump; repl brg"),
                                                                ("T2-2018-00012", "2018-01-09", "T2-0458", 'lkg at flange, "tightened" bolts')))),
    ):  # fmt: skip
        doc = extract(data, name)
        assert quotes(doc) == ["brg noise on aux pump; repl brg", 'lkg at flange, "tightened" bolts']
        first = doc.blocks[0]
        assert (first.citation, first.entry, first.fields["machine"]) == ("T2-2017-04411", "T2-2017-04411", "T2-0457")


# -- malformed files ------------------------------------------------------------------------------


def _zip_of(name: str, content: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        package.writestr(name, content)
    return out.getvalue()


def _flagged_utf8_name(raw_name: bytes) -> bytes:
    """A ZIP whose member's name is flagged UTF-8 (bit 11) and is not: written with a placeholder
    name of the same length, then patched in the local header and the central directory."""
    placeholder = "x" * len(raw_name)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        package.writestr(zipfile.ZipInfo(placeholder), b"<d/>")
        package.writestr("word/document.xml", b"<d/>")
    data = out.getvalue().replace(placeholder.encode(), raw_name)
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local header, central directory
        at = data.index(signature)
        flags = int.from_bytes(data[at + flags_at : at + flags_at + 2], "little") | 0x800
        data = data[: at + flags_at] + flags.to_bytes(2, "little") + data[at + flags_at + 2 :]
    return data


BILLION_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(b'<!ENTITY lol%d "%s">' % (n, (b"&lol%d;" % (n - 1) if n > 1 else b"&lol;") * 10) for n in range(1, 10))
    + b']><clauses><article number="1"><text>&lol9;</text></article></clauses>'
)


@pytest.mark.parametrize(
    ("name", "data", "problem"),
    [
        ("a.pdf", b"PK\x03\x04 this is a zip, not a pdf", "not a PDF: no %PDF- header"),
        ("b.pdf", b"%PDF-1.4\n1 0 obj << broken", "not a readable PDF"),
        ("scan.pdf", WRITERS.pdf_bytes([], scanned=2), "scanned, no text layer: 2 page(s)"),
        ("c.docx", _zip_of("content.xml", b"<odt/>"), "without word/document.xml"),
        ("d.docx", b"plain text renamed", "a DOCX is a ZIP package and this is not one"),
        ("bomb.clauses.xml", BILLION_LAUGHS, "entity declarations or external references, refused unexpanded"),
        ("ext.clauses.xml", b'<!DOCTYPE c [<!ENTITY x SYSTEM "file:///etc/passwd">]><clauses>&x;</clauses>',
         "refused unexpanded"),
        ("e.clauses.xml", b"<clauses><article number='1'>", "not well-formed XML"),
        ("f.clauses.xml", b"<standard><section/></standard>", "no <article> under <standard>"),
        ("g.records.csv", b"machine,date\nT2,2017\n", "an id column (id or note_id) and a text column"),
        ("h.records.csv", b"id,text\nA,x\nA,y\n", "note A appears twice (lines 2 and 3)"),
        ("i.records.jsonl", b'{"id": "A", "text": "x"}\n[1, 2]\n', "line 2 is not a JSON object"),
        ("j.clauses.json", b"[" * 100_000 + b"]" * 100_000, "JSON nested too deeply for this reader"),
        ("k.records.jsonl", b'{"id": "A", "text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
         "line 1: JSON nested too deeply for this reader"),
        # no field a filter selects on (nested just under the reader's limit, written back out as
        # text, it had overflowed the stack and stopped the whole batch)
        ("l.records.jsonl", b'{"id": "A", "text": "x", "f": ' + b"[" * 50 + b"]" * 50 + b"}\n",
         "the note on line 1 has a field that is an array, not a value"),
        ("m.records.jsonl", b'{"id": "A", "text": ["x", {"b": 1}]}\n', "the note on line 1: its text is not text but an array"),
        ("n.records.jsonl", b'{"id": "A", "text": true}\n', "its text is not text but a boolean"),
        ("o.records.csv", b"id,text\nA,x,lost\n", "the note on line 2 has more cells than the header has columns"),
        ("p.records.csv", b"id,text,Machine,machine \nA,x,T1,T2\n", "two columns are named 'machine'"),
        ("p2.records.csv", b"id,,text\nA,x,y\n", "the note on line 2 has a value in a column without a name"),
        ("p3.records.jsonl", b'{"id": "A", "text": "x", " ": "T1"}\n', "the note on line 1 has a value in a column without a name"),
        # a quote left open: notes B and C would have been A's text
        ("o2.records.csv", b'id,text\nA,"pump noisy\nB,seal leaks\nC,"valve" stuck\n',
         "not a readable CSV file (the record that starts on line 2: ',' expected after '\"')"),
        ("o3.records.csv", b'id,text\nA,x\nB,"never closed\nC,y\n', "not a readable CSV file (the record that starts on line 3: unexpected end of data)"),
        ("q.clauses.xml", b'<?xml version="1.0" encoding="UTF-7"?><clauses/>', "not readable XML"),
        ("r.docx", _zip_of("word/document.xml", b'<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><d>&x;</d>'),
         "word/document.xml declares a DTD (entities), refused"),
        # past a long comment, or in UTF-16, a DTD is no less one (the entity's paragraph was lost)
        ("r2.docx", _zip_of("word/document.xml", b"<!--" + b"x" * 5000 + b'--><!DOCTYPE d [<!ENTITY x "y">]><d>&x;</d>'),
         "word/document.xml declares a DTD (entities), refused"),
        ("r3.docx", _zip_of("word/document.xml", '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE d [<!ENTITY x "y">]><d>&x;</d>'.encode("utf-16")),
         "word/document.xml declares a DTD (entities), refused"),
        ("s.docx", _flagged_utf8_name(b"word/\xff.xml"), "a member's name is not UTF-8"),
        # a header of 200,000 columns or a name of 1 MB, read into every note, took minutes
        ("v.records.csv", b"id,text," + b",".join(b"c%d" % i for i in range(999)) + b"\nA,x\n",
         "more than 1,000 columns, refused: a records file has tens"),
        ("w.records.csv", b"id,text," + b"k" * 501 + b"\nA,x,y\n", "a column name of 501 characters, over the limit of 500"),
        ("x.records.jsonl", b'{"id": "A", "text": "x"}\n' + json.dumps({"id": "B", "text": "y", **{f"c{i}": "z" for i in range(999)}}).encode(),
         "more than 1,000 columns by line 2, refused"),
        ("y.records.csv", b"id,text\n" + b"A" * 501 + b",x\n", "the note on line 2 has an id of 501 characters, over 500"),
        ("z.clauses.xml", b'<clauses designation="' + b"N" * 301 + b'"><article number="1"><text>x</text></article></clauses>',
         "a designation of 301 characters, over the limit of 300"),
        ("z2.clauses.xml", b'<clauses designation="NEN 1"><article number="' + b"1" * 300 + b'"><text>x</text></article></clauses>',
         "a clause cited by 307 characters, over the limit of 300"),
        ("t.clauses.xml", b"<clauses>" + b"<z/>" * 1_000_000 + b"</clauses>",
         "a clause collection of up to 1,000,002 elements, over the limit of 1,000,000"),
        ("u.clauses.json", b'{"articles": [' + b"{}," * 1_000_000 + b"{}]}",
         "a clause collection of up to 1,000,003 objects and arrays, over the limit of 1,000,000"),
        # a control character in an id or a column name, a non-finite id, a key twice (2026-12-07)
        ("a.records.csv", b"id,text\nA\x00,brg hot\nB,x\n",
         "the note on line 2 has an id with a control character ('\\x00'): 'A\\x00', refused: a citation must print as it is"),
        ("b.records.csv", b"id,text\nA,x\nB\x1b[31m,y\n", "the note on line 3 has an id with a control character ('\\x1b')"),
        ("c.records.csv", b"id,te\x00xt,text\nA,b,x\n",
         "a column name with a control character ('\\x00') in the header (line 1): 'te\\x00xt', refused: a filter could not show it"),
        ("d.records.jsonl", b'{"id": "A", "text": "x"}\n{"id": "B\\u0085C", "text": "y"}\n',
         "the note on line 2 has an id with a control character ('\\x85')"),
        ("e.records.jsonl", b'{"id": "A", "text": "x"}\n{"id": "B", "text": "y", "m\\u0000": "T1"}\n',
         "a column name with a control character ('\\x00') by line 2: 'm\\x00', refused"),
        ("f.records.jsonl", b'{"id": "A", "text": "x"}\n{"id": NaN, "text": "y"}\n',
         "the note on line 2 has NaN for its id: not a finite number"),
        ("g.records.jsonl", b'{"note_id": Infinity, "text": "y"}\n', "the note on line 1 has Infinity for its note_id: not a finite number"),
        ("h.records.jsonl", b'{"id": -Infinity, "text": "y"}\n', "has -Infinity for its id: not a finite number"),
        ("i.records.jsonl", b'{"id": 1e999, "text": "y"}\n', "has Infinity for its id: not a finite number"),
        ("j.records.jsonl", b'{"id": "A", "text": "x"}\n{"id": "B", "text": "x", "text": "y"}\n',
         "line 2: the key 'text' appears twice in one object: one of its values would be lost"),
        ("k.records.jsonl", b'{"id": "A", "machine": "T1", "text": "x", "machine": "T2"}\n',
         "line 1: the key 'machine' appears twice in one object"),
        ("l.clauses.json", b'{"designation": "X", "articles": [{"number": NaN, "text": "a"}]}',
         "articles[0].number must be a finite number, not NaN"),
        ("m.clauses.json", b'{"articles": [{"number": "1", "items": [{"label": -Infinity, "text": "a"}]}]}',
         "articles[0].items[0].label must be a finite number, not -Infinity"),
    ],
)  # fmt: skip
def test_malformed_files_are_refused_naming_the_file_and_the_problem(name, data, problem):
    with pytest.raises(FileRefused) as caught:
        extract(data, f"archive/{name}")
    assert str(caught.value).startswith(f"archive/{name}: ")
    assert problem in str(caught.value)


def test_a_word_package_that_unpacks_past_the_file_limit_is_refused_before_python_docx_opens_it(monkeypatch):
    """A ZIP bomb: the sizes its members state are summed first (zipfile reads no further)."""
    import cellar.ingest.documents.word as word

    small = WRITERS.docx_bytes([("Heading 1", "1 Scope"), ("Normal", "This report covers ballast.")])
    unpacked = sum(member.file_size for member in zipfile.ZipFile(io.BytesIO(small)).infolist())
    monkeypatch.setattr(word, "MAX_FILE_BYTES", unpacked - 1)
    with pytest.raises(FileRefused, match=f"archive/r.docx: a Word package that unpacks to {unpacked:,} bytes"):
        extract(small, "archive/r.docx")
    monkeypatch.setattr(word, "MAX_FILE_BYTES", unpacked)
    assert extract(small, "archive/r.docx").blocks


def test_a_word_document_of_too_many_paragraphs_is_refused_before_python_docx_reads_them(monkeypatch):
    """python-docx makes an object of every paragraph: they are counted as the part is unpacked
    (16 million empty ones in 176 KB had taken 195 s and 2 GB)."""
    import cellar.ingest.documents.word as word

    two = WRITERS.docx_bytes([("Heading 1", "1 Scope"), ("Normal", "This report covers ballast.")])
    monkeypatch.setattr(word, "MAX_PARAGRAPHS", 1)
    with pytest.raises(FileRefused, match="archive/r.docx: a Word document of 2 paragraphs, over the limit of 1"):
        extract(two, "archive/r.docx")
    monkeypatch.setattr(word, "MAX_PARAGRAPHS", 2)
    assert extract(two, "archive/r.docx").text == "1 Scope\n\nThis report covers ballast."


def test_a_word_document_of_too_many_runs_is_refused_before_python_docx_reads_them(monkeypatch):
    """Runs too (`<w:r>`, a stretch of one formatting): 2 million in one paragraph of 158 KB took 44 s
    and 1.1 GB."""
    import cellar.ingest.documents.word as word

    body = b"<w:p>" + b"<w:r><w:t>ab </w:t></w:r>" * 3 + b"</w:p>"
    monkeypatch.setattr(word, "MAX_RUNS", 2)
    with pytest.raises(FileRefused, match="archive/r.docx: a Word document of 3 runs of text, over the limit of 2"):
        extract(_docx_with_body(body), "archive/r.docx")
    monkeypatch.setattr(word, "MAX_RUNS", 3)
    assert extract(_docx_with_body(body), "archive/r.docx").text == "ab ab ab"


def _damaged(flip: Callable[[bytearray, int], None]) -> bytes:
    """A stored (uncompressed) DOCX whose word/document.xml entry `flip` damages at its data's start."""
    source = zipfile.ZipFile(io.BytesIO(WRITERS.docx_bytes([("Normal", "The ballast pump was replaced.")])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as package:
        for member in source.infolist():
            package.writestr(member.filename, source.read(member.filename))
    data = bytearray(out.getvalue())
    flip(data, data.index(b"The ballast pump"))
    return bytes(data)


def _byte_flipped(data: bytearray, at: int) -> None:
    data[at] ^= 1


def _encrypted(data: bytearray, _: int) -> None:
    """The encryption flag set on word/document.xml's entry, in its local and its central header."""
    for signature, flags, name_at in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):
        at = data.find(signature)
        while at >= 0:
            if data[at + name_at : at + name_at + 17] == b"word/document.xml":
                data[at + flags] |= 1
            at = data.find(signature, at + 4)


@pytest.mark.parametrize(
    ("flip", "reason"),
    [
        (_byte_flipped, "Bad CRC-32 for file 'word/document.xml'"),
        (_encrypted, "is encrypted"),
    ],
)
def test_a_damaged_word_package_is_refused_naming_the_part_not_stopping_the_batch(flip, reason):
    """A member whose bytes no longer match their CRC, or that is encrypted, is a problem of this
    file: before, the error escaped the reader and stopped `cellar index` with a traceback."""
    with pytest.raises(FileRefused) as caught:
        extract(_damaged(flip), "archive/r.docx")
    assert str(caught.value).startswith("archive/r.docx: a damaged Word package: word/document.xml cannot be unpacked")
    assert reason in str(caught.value)


# -- chunks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data"),
    [("r.md", REPORT_MD), ("s.clauses.xml", STANDARD_XML), ("n.records.csv", NOTES_CSV),
     ("r.pdf", WRITERS.pdf_bytes([["1 Scope", "This report covers the ballast system."]])),
     ("r.docx", WRITERS.docx_bytes([("Heading 1", "1 Scope"), ("Normal", "This report covers ballast.")]))],
)  # fmt: skip
def test_document_chunks_quote_the_extracted_text_and_carry_their_citation(name, data):
    chunked = chunk_document(data, name)
    assert chunked.chunks
    assert len({chunk.id for chunk in chunked.chunks}) == len(chunked.chunks)
    for chunk in chunked.chunks:
        assert chunk.quote == chunked.source[chunk.start : chunk.end]
        assert chunk.meta["citation"] and chunk.meta["source"] in ("document", "clauses", "records")
        assert chunk.cell is None and chunk.output is None
    # every word is in a block, but a clause's number, title, label and NOTE mark, which its
    # citation and heading path carry instead
    if not name.endswith(".clauses.xml"):
        assert coverage(chunked).coverage == 1.0


def test_a_record_chunk_is_searched_with_its_fields_and_has_the_year_of_its_date():
    chunk = chunk_document(NOTES_CSV, "n.records.csv").chunks[0]
    assert chunk.quote == "brg noise on aux pump; repl brg"
    assert "machine: T2-0457" in chunk.text and chunk.meta["year"] == 2017
    assert chunk.meta["fields"]["fault_code"] == "E217" and chunk.meta["entry"] == "T2-2017-04411"


def test_a_long_paragraph_is_cut_into_windows_under_one_citation():
    words = " ".join(f"word{n}" for n in range(400))
    chunked = chunk_document(f"## 2 Scope\n\n{words}\n".encode(), "long.md")
    windows = [chunk for chunk in chunked.chunks if chunk.meta["block"] == "paragraph"]
    assert len(windows) > 1 and {chunk.meta["citation"] for chunk in windows} == {"2 Scope, paragraph 1"}


# -- hostile documents: refused naming the file, or read in bounded time ----------------------------


@pytest.mark.parametrize(
    ("name", "data"),
    [("s.records.jsonl", b'{"id": "A", "text": "ok"}\n{"id": "B", "text": "bad \\ud800 here"}\n'),
     ("t.records.jsonl", b'{"id": "\\udc00", "text": "bad id"}\n'),
     ("x.clauses.json", b'{"designation": "X", "articles": [{"number": "1", "text": "bad \\ud800"}]}'),
     ("y.clauses.json", b'{"designation": "X\\ud800", "articles": [{"number": "1", "text": "t"}]}')],
)  # fmt: skip
def test_a_lone_surrogate_in_records_or_clauses_is_refused_naming_the_file(name, data):
    with pytest.raises(FileRefused) as caught:
        extract(data, f"archive/{name}")
    assert str(caught.value).startswith(f"archive/{name}: ")
    assert "a string holds a lone surrogate" in str(caught.value)
    # a surrogate pair is one character, and read
    paired = extract(b'{"id": "A", "text": "ok \\ud83d\\ude00"}\n', "p.records.jsonl")
    assert paired.text == "ok \U0001f600"


@pytest.mark.parametrize(
    ("article", "problem"),
    [({"number": "1", "text": "t", "notes": 5}, "articles[0].notes must be an array, not a number"),
     ({"number": "1", "text": "t", "items": 7}, "articles[0].items must be an array, not a number"),
     ({"number": "1", "text": "t", "articles": 3}, "articles[0].articles must be an array, not a number"),
     ({"number": "1", "text": "t", "notes": [{"text": 5}]}, "articles[0].notes[0].text must be a string, not a number"),
     ({"number": "1", "text": "t", "notes": [{"text": ["a"]}]}, "articles[0].notes[0].text must be a string, not an array"),
     ({"number": "1", "text": "t", "notes": [None]}, "articles[0].notes[0] must be a string or an object"),
     ({"number": "1", "text": ["t"]}, "articles[0].text must be a string, not an array"),
     ({"number": "1", "title": {"a": 1}, "text": "t"}, "articles[0].title must be a string, not an object"),
     ({"number": [1], "text": "t"}, "articles[0].number must be a string or a number, not an array"),
     ({"number": "1", "items": [{"label": [1], "text": "a"}]}, "articles[0].items[0].label must be a string or a number"),
     ({"number": "1", "items": [{"label": "a", "text": 3}]}, "articles[0].items[0].text must be a string, not a number"),
     ({"number": "1", "items": [True]}, "articles[0].items[0] must be an object or a string, not a boolean"),
     ({"number": "1", "articles": [{"number": "1.1", "notes": {"a": 1}}]},
      "articles[0].articles[0].notes must be an array, not an object")],
)  # fmt: skip
def test_a_json_clause_field_of_the_wrong_type_is_refused_naming_the_field(article, problem):
    data = json.dumps({"designation": "X", "articles": [article]}).encode()
    with pytest.raises(FileRefused) as caught:
        extract(data, "archive/x.clauses.json")
    assert str(caught.value) == f"archive/x.clauses.json: {problem}" or problem in str(caught.value)
    assert str(caught.value).startswith("archive/x.clauses.json: ")
    # null stands for absent, and numbers and labels may be numbers, as before
    fine = {"designation": "X", "articles": [{"number": 2, "title": None, "text": "t", "notes": None,
                                              "items": [{"label": 1, "text": "a"}, "b"]}]}  # fmt: skip
    assert list(cited(extract(json.dumps(fine).encode(), "ok.clauses.json")).values()) == ["X §2", "X §2 1", "X §2 2"]


def test_a_records_line_with_unicode_line_separators_in_a_string_is_one_note():
    # JSON allows U+2028, U+2029 and U+0085 unescaped in a string; str.splitlines() splits at them
    text = "seal\u2028replaced\u2029bearing\u0085checked"
    data = (json.dumps({"id": "A", "text": text}, ensure_ascii=False) + "\r\n" + '{"id": "B", "text": "x"}').encode()
    doc = extract(data, "n.records.jsonl")
    assert quotes(doc) == [text, "x"] and [block.citation for block in doc.blocks] == ["A", "B"]


def test_a_records_csv_with_a_trailing_comma_reads_its_empty_column_as_nothing():
    """A spreadsheet's export often ends every line with a comma: a column without a name and
    without a value is no field (one with a value is refused: a filter could not name it)."""
    doc = extract(b"id,text,machine,\nA,seal replaced,T2,\nB,bearing noise,T1,\n", "n.records.csv")
    assert [block.fields for block in doc.blocks] == [{"machine": "T2"}, {"machine": "T1"}]


def test_a_note_without_text_is_still_an_entry_even_last_in_its_file():
    """A note whose text cell is empty or missing (a row short of cells) is found by its fields.
    The last such note starts where the extracted text ends, and was left out without a word, as
    if a cut had passed it."""
    data = b"id,machine,text\nA1,T1,pump seal leaking\nA2,T2,\nA3,T3\n"
    chunked = chunk_document(data, "n.records.csv")
    assert [chunk.text for chunk in chunked.chunks] == ["machine: T1\npump seal leaking", "machine: T2", "machine: T3"]


def test_a_records_csv_with_one_very_long_note_keeps_all_its_notes():
    # the csv module refused a field past 131,072 characters, and with it every note of the file;
    # the note keeps its first MAX_NOTE_TEXT_CHARS (100,000), the next note is read
    long = " ".join(["bearing noise"] * 20_000)
    data = f'id,text\nA,"{long}"\nB,seal replaced\n'.encode()
    with pytest.warns(UserWarning, match=r"^n\.records\.csv: 1 note\(s\) have a text of more than 100,000 characters"):
        doc = extract(data, "n.records.csv")
    assert quotes(doc) == [long[:100_000], "seal replaced"]


@pytest.mark.parametrize(
    "markup",
    ["<a" * 80_000, "</" * 300_000, "<?" * 300_000, "<a x='" * 40_000, "<a " * 60_000,
     "<p>Text</p>" + "<![CDATA[>" * 60_000, "<p>Text</p>" + "<!-- >x" * 60_000],
    ids=["a", "end-tag", "pi", "quote", "attributes", "cdata", "comment"],
)  # fmt: skip
def test_html_that_never_closes_is_read_in_linear_time(markup):
    # html.parser tried each unclosed `<` against all the text after it: 38 s and more for these
    doc = extract(markup.encode(), "archive/page.html")
    assert doc.text.startswith("Text") or doc.text.replace(" ", "") == markup.replace(" ", "")


def test_html_marked_sections_html_parser_asserts_on_are_read_as_comments():
    doc = extract(b"<p>a</p><![foo[x]]><p>b</p><![ x]><p>c</p>", "archive/page.html")
    assert quotes(doc) == ["a", "b", "c"]


def test_html_head_without_its_end_tag_ends_where_the_body_begins():
    for page in (
        b"<html><head><title>Report</title>\n<body><h1>Pump report</h1><p>The impeller was replaced.</p></body></html>",
        b"<html><head><title>Report</title><meta charset=utf-8>\n<h1>Pump report</h1><p>The impeller was replaced.</p>",
    ):
        doc = extract(page, "archive/report.html")
        assert cited(doc) == {"Pump report\n\nThe impeller was replaced.": "Pump report, paragraph 1"}
    # what stands in a head is still dropped
    doc = extract(b"<head><title>T</title><style>p{}</style><script>x()</script></head><p>body</p>", "r.html")
    assert doc.text == "body"


def _docx_with_body(body: bytes) -> bytes:
    """A DOCX written by python-docx whose document body is `body` (WordprocessingML)."""
    source = zipfile.ZipFile(io.BytesIO(WRITERS.docx_bytes([("Normal", "x")])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        for member in source.infolist():
            content = source.read(member.filename)
            if member.filename == "word/document.xml":
                start, end = content.index(b"<w:body>") + len(b"<w:body>"), content.index(b"</w:body>")
                content = content[:start] + body + content[end:]
            package.writestr(member, content)
    return out.getvalue()


def test_a_docx_cell_spanning_a_million_columns_is_read_once():
    # python-docx's row.cells repeats a cell once per column it spans: 47 s, or all the memory
    cell = b'<w:tc><w:tcPr><w:gridSpan w:val="%d"/></w:tcPr><w:p><w:r><w:t>x</w:t></w:r></w:p></w:tc>'
    for span in (1_000_000, 99_999_999):
        doc = extract(_docx_with_body(b"<w:tbl><w:tr>" + cell % span + b"</w:tr></w:tbl>"), "archive/r.docx")
        assert quotes(doc) == ["x"]


def test_a_docx_cell_merged_down_many_rows_repeats_its_text_in_linear_time():
    # python-docx looked each continued cell up through every row above it (600 rows: 14 s)
    first = b'<w:tr><w:tc><w:tcPr><w:vMerge w:val="restart"/></w:tcPr><w:p><w:r><w:t>cat</w:t></w:r></w:p></w:tc>'
    rest = b"<w:tr><w:tc><w:tcPr><w:vMerge/></w:tcPr><w:p/></w:tc>"
    row_end = b"<w:tc><w:p><w:r><w:t>%d</w:t></w:r></w:p></w:tc></w:tr>"
    body = first + row_end % 0 + b"".join(rest + row_end % n for n in range(1, 2000))
    doc = extract(_docx_with_body(b"<w:tbl>" + body + b"</w:tbl>"), "archive/r.docx")
    assert doc.text.splitlines() == [f"cat | {n}" for n in range(2000)]


def test_a_pdf_page_too_large_for_layout_mode_is_read_in_plain_mode_with_a_warning():
    # pypdf's layout mode is quadratic in a text object's positioning operators: 155 s for this page
    data = WRITERS.pdf_of_streams([b"BT /F1 10 Tf 56 790 Td " + b"(x) Tj 1 0 Td " * 20_000 + b"ET"])
    with pytest.warns(UserWarning, match=r"archive/big\.pdf: page 1 has too many text operators for layout mode"):
        doc = extract(data, "archive/big.pdf")
    assert doc.text.count("x") == 20_000 and doc.blocks


def test_a_pdf_showing_too_many_texts_is_read_up_to_the_files_limit(monkeypatch):
    """pypdf reads some 4,000 texts shown a second in each of its passes: 300,000 on one page of
    86 KB, or 1,500 on each of 500 pages, took minutes. The pages are read up to MAX_SHOWN texts,
    with a warning naming those left; a first page past it alone is refused."""
    import cellar.ingest.documents.pdf as pdf

    monkeypatch.setattr(pdf, "MAX_SHOWN", 5)
    pages = WRITERS.pdf_bytes(
        [["Ballast pumps", "Two pumps of 250 m3/h."], ["Trim", "Trim by the stern."], ["Notes", "None."]]
    )
    with pytest.warns(
        UserWarning, match=r"archive/r\.pdf: more than 5 texts shown by page 3: pages 3 to 3 are not indexed"
    ):
        doc = extract(pages, "archive/r.pdf")
    assert "Trim by the stern." in doc.text and "None." not in doc.text
    monkeypatch.setattr(pdf, "MAX_SHOWN", 1)
    with pytest.raises(FileRefused, match=r"archive/r\.pdf: page 1 shows 2 texts, over the limit of 1 for a file"):
        extract(pages, "archive/r.pdf")


def test_a_pdf_encrypted_with_an_empty_password_is_read_and_one_that_needs_a_password_is_refused():
    from pypdf import PdfReader, PdfWriter

    def encrypted(user_password: str) -> bytes:
        writer = PdfWriter(clone_from=PdfReader(io.BytesIO(WRITERS.pdf_bytes([["1 Scope", "Ballast pumps."]]))))
        writer.encrypt(user_password=user_password, owner_password="owner", algorithm="AES-128")
        out = io.BytesIO()
        writer.write(out)
        return out.getvalue()

    assert quotes(extract(encrypted(""), "archive/open.pdf")) == ["1 Scope\nBallast pumps."]
    with pytest.raises(FileRefused, match=r"^archive/locked\.pdf: an encrypted PDF: it needs a password"):
        extract(encrypted("secret"), "archive/locked.pdf")


def test_a_blank_page_without_content_is_read_as_empty_and_the_pages_around_it_keep_their_numbers():
    """A page with no content stream is valid PDF (a report's blank left page); pypdf's layout
    mode raised KeyError on it, and the whole report was refused."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(
        clone_from=PdfReader(io.BytesIO(WRITERS.pdf_bytes([["1 Scope", "Ballast."], ["2 Pumps", "P2."]])))
    )
    writer.insert_blank_page(index=1)
    out = io.BytesIO()
    writer.write(out)
    doc = extract(out.getvalue(), "archive/blank.pdf")
    assert {doc.text[b.start : b.end]: b.page for b in doc.blocks} == {"1 Scope\nBallast.": 1, "2 Pumps\nP2.": 3}


def test_what_pypdf_logs_reading_a_pdf_is_a_warning_naming_the_file(capsys):
    data = WRITERS.pdf_bytes([["1 Scope", "Some text here."]])[:-30]  # its end, %%EOF, cut off
    with warnings.catch_warnings(record=True) as caught, pytest.raises(FileRefused):
        warnings.simplefilter("always")
        extract(data, "archive/cut.pdf")
    assert "archive/cut.pdf: pypdf: EOF marker not found" in [str(warning.message) for warning in caught]
    assert capsys.readouterr().err == ""  # not logged without the file's name


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_a_records_file_past_its_limits_keeps_its_first_notes_and_cuts_long_fields(monkeypatch, suffix):
    """Notes past MAX_NOTES and a field's characters past MAX_FIELD_CHARS are left out, with a
    warning naming the file: each note is an index entry, a field a value a filter selects on."""
    monkeypatch.setattr(notes, "MAX_NOTES", 3)
    monkeypatch.setattr(notes, "MAX_FIELD_CHARS", 10)
    rows = [{"id": f"N{n}", "text": f"note {n}", "machine": "T2-" + "0" * (20 if n == 1 else 1)} for n in range(5)]
    if suffix == "csv":
        data = ("id,text,machine\n" + "".join(f"{r['id']},{r['text']},{r['machine']}\n" for r in rows)).encode()
    else:
        data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        extracted = extract(data, f"archive/s.records.{suffix}")
    assert [block.citation for block in extracted.blocks] == ["N0", "N1", "N2"]
    assert dict(extracted.blocks[1].fields)["machine"] == "T2-0000000"
    line = 3 if suffix == "csv" else 2
    assert [str(warning.message) for warning in caught] == [
        f"archive/s.records.{suffix}: more than 3 notes; only the first 3 are indexed",
        f"archive/s.records.{suffix}: the note on line {line}: its machine has 23 characters; the first 10 are kept",
    ]


def test_a_file_nested_past_what_its_parser_checked_is_refused_naming_it(monkeypatch):
    """A RecursionError in any parser is that file's problem, named, never the batch's."""

    def too_deep(data, path):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(notes, "records_from_jsonl", too_deep)
    with pytest.raises(FileRefused, match="^archive/x.records.jsonl: nested too deeply to read$"):
        extract(b"{}", "archive/x.records.jsonl")

"""Unnumbered PDF headings found by their font size (cellar.ingest.documents.pdf.font_levels)."""

from __future__ import annotations

from tests.unit.conftest import demo_documents_writers

from cellar.ingest.documents.pdf import font_levels, pdf_document

writers = demo_documents_writers()


def test_lines_set_larger_than_the_body_are_headings_at_the_level_their_size_gives():
    data = writers.pdf_bytes(
        [
            [(18, "Survey of the hull"), "Written for a test.", "", (14, "Scope"), "The survey measures plates.", "",
             (12, "Findings"), "The worst plate measured 7.6 mm.", "", (14, "2 Method"), "Probe readings."],
            [(14, "Repairs"), "Four plates were renewed."],
        ]
    )  # fmt: skip
    extracted = pdf_document(data, "survey.pdf")
    assert extracted.title == "Survey of the hull"
    cited = {block.citation: (block.headings, block.page) for block in extracted.blocks}
    assert cited["Findings, paragraph 1"] == (("Survey of the hull", "Scope", "Findings"), 1)
    assert cited["2 Method, paragraph 1"] == (("Survey of the hull", "2 Method"), 1)
    assert cited["Repairs, paragraph 1"] == (("Survey of the hull", "Repairs"), 2)
    for block in extracted.blocks:  # the quote is still the extracted text, verbatim
        assert extracted.text[block.start : block.end].strip()


def test_a_large_sentence_or_a_pdf_in_one_size_gives_no_heading():
    assert font_levels({"Body text.": 10.0, "A pull quote that ends like a sentence.": 16.0}, 10.0) == {}
    assert font_levels({"Title": 10.0, "Body": 10.0}, 10.0) == {}
    # numbered headings move down under a larger unnumbered title
    assert font_levels({"Report": 18.0, "1 Scope": 14.0, "Body.": 10.0}, 10.0) == {"Report": 1, "1 Scope": 2}


def test_the_demo_mooring_review_is_read_as_before():
    data = writers.pdf_bytes([["2 Mooring", "The most loaded line is the forward spring line."]])
    assert [b.citation for b in pdf_document(data, "m.pdf").blocks] == ["2 Mooring, paragraph 1"]

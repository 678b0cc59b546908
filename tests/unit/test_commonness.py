"""How common a question's words are, and what that does to the refusal's coverage: a word of
everyday language that a notebook lacks says little about whether it answers, a word of the
subject much."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cellar.retrieval.analysis import Analyzer, packaged_table_dir
from cellar.retrieval.commonness import COMMON, FLOOR, RARE, TABLE_ID, specificity, term_specificities, zipf_frequencies
from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.index import build_index
from cellar.retrieval.search import Searcher

DEFAULT = Analyzer()


def test_the_table_is_the_one_its_readme_describes():
    """Checked against table.json on load; every word at or above RARE, no word twice."""
    folder = packaged_table_dir(TABLE_ID)
    meta = json.loads((folder / "table.json").read_text(encoding="utf-8"))
    frequencies = zipf_frequencies()
    assert len(frequencies) == meta["words"] == len((folder / meta["file"]).read_text(encoding="utf-8").splitlines())
    assert min(frequencies.values()) >= RARE == meta["min_zipf"]
    assert (folder / "LICENSE").is_file() and "CC BY-SA 4.0" in (folder / "README.md").read_text(encoding="utf-8")


def test_a_tampered_table_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    folder = packaged_table_dir(TABLE_ID)
    copy = tmp_path / TABLE_ID
    copy.mkdir()
    (copy / "table.json").write_bytes((folder / "table.json").read_bytes())
    (copy / "zipf.tsv").write_text("found\t7.9\n", encoding="utf-8")
    monkeypatch.setattr("cellar.retrieval.commonness.packaged_table_dir", lambda _: copy)
    zipf_frequencies.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"zipf\.tsv: SHA-256"):
            zipf_frequencies()
    finally:
        zipf_frequencies.cache_clear()


@pytest.mark.parametrize("everyday", ["found", "instead", "versus", "jaar", "staat"])
@pytest.mark.parametrize("subject", ["nitrogen", "skewness", "weibull"])
def test_everyday_words_are_commoner_than_words_of_a_subject(everyday, subject):
    frequencies = zipf_frequencies()
    assert frequencies[everyday] > frequencies.get(subject, RARE)


def test_specificity_ramps_from_rare_to_common():
    assert specificity(RARE - 1) == specificity(RARE) == 1.0
    assert specificity(COMMON) == specificity(COMMON + 1) == pytest.approx(FLOOR)
    middle = (RARE + COMMON) / 2
    assert specificity(middle) == pytest.approx((1.0 + FLOOR) / 2)
    assert specificity(RARE + 0.1) > specificity(middle) > specificity(COMMON - 0.1)


def test_a_term_weighs_as_its_commonest_word_and_unlisted_words_are_absent():
    weights = term_specificities("which Weibull shape was found for the Penmanshiel turbines", DEFAULT.terms)
    found = DEFAULT.terms("found")
    assert found and all(weights[term] < 0.5 for term in found)
    assert not set(DEFAULT.terms("Penmanshiel")) & weights.keys()  # a name no language uses
    assert all(weights.get(term, 1.0) > weights[found[0]] for term in DEFAULT.terms("Weibull"))
    # two words of one term: the commoner one decides
    assert term_specificities("found founding", DEFAULT.terms)[found[0]] == min(
        specificity(zipf_frequencies()[w]) for w in ("found", "founding") if DEFAULT.terms(w) == found
    )


@pytest.fixture(scope="module")
def compressor():
    """One notebook on compressing oxygen, among notebooks on other things."""
    text = "Isothermal compression work of oxygen in the two stage compressor at 20 bar"
    records = [
        {
            "id": f"{path}:0:markdown:None",
            "kind": "markdown",
            "path": path,
            "cell": 0,
            "output": None,
            "revision": f"rev-{path}",
            "quote": body,
            "start": 0,
            "end": len(body),
            "text": body,
            "meta": {},
        }
        for path, body in [
            ("compressor.ipynb", text),
            ("pump.ipynb", "Centrifugal pump head and efficiency curve of the cooling water system"),
            ("beam.ipynb", "Deflection of a cantilever beam under a point load at its free end"),
            ("wind.ipynb", "Weibull fit of the hourly wind speeds measured at the met mast"),
        ]
    ]
    model = load_model(default_model_dir())
    return Searcher(build_index(records, model), model)


def test_a_missing_everyday_word_costs_less_coverage_than_a_missing_subject(compressor):
    """Both questions ask the compressor notebook with one word it lacks: `found` is what a
    person asking says, `nitrogen` is a gas the notebook does not compress."""
    everyday = compressor.search("compression work found for oxygen", k=1, mode="bm25")
    subject = compressor.search("compression work of nitrogen", k=1, mode="bm25")
    assert everyday["evidence"]["coverage"] > subject["evidence"]["coverage"]
    assert not everyday["refused"], everyday["refusal_reason"]
    # weighed by idf alone, `nitrogen` left 0.44 of the question held, above the threshold
    assert subject["refused"] and "nitrogen" in subject["evidence"]["missing"]


def test_a_pasted_page_weighs_as_its_distinct_words():
    """Each distinct word is analysed once: a megabyte of a repeated sentence costs what the
    sentence does (before, every repeat was stemmed again)."""
    sentence = "the pressure of water found in Dutch pipes, het water werd gevonden "
    assert term_specificities(sentence * 15_000, DEFAULT.terms) == term_specificities(sentence, DEFAULT.terms)

"""The demo archive's documents (demo/documents/, demo/make_documents.py) and their gold set
(demo/gold_documents.jsonl): committed as the script writes them, every gold block findable by
its citation and evidence, the glossary leaving the demo notebooks' terms alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.unit.conftest import demo_documents_writers

from cellar.ingest.chunking import chunk_file
from cellar.retrieval.evaluation import judge, read_gold

DEMO = Path(__file__).resolve().parents[2] / "demo"
ARCHIVE = DEMO / "archive"
GOLD = read_gold((DEMO / "gold_documents.jsonl").read_text(encoding="utf-8").splitlines())


def test_committed_documents_are_what_the_script_writes(tmp_path):
    written = demo_documents_writers().write_documents(tmp_path)
    assert len(written) >= 6
    for path in written:
        relative = path.relative_to(tmp_path)
        assert (ARCHIVE / relative).read_bytes() == path.read_bytes(), f"{relative}: run demo/make_documents.py"


def test_gold_covers_every_kind_in_english_and_dutch():
    kinds = {(row["kind"], row["lang"]) for row in GOLD}
    for kind in ("report", "clause", "record", "out_of_scope"):
        assert {(kind, "en"), (kind, "nl")} <= kinds
    assert sum(not row["expect"] for row in GOLD) >= 5  # one out-of-scope question per fold at least


@pytest.mark.parametrize("row", [row for row in GOLD if row["expect"]], ids=lambda row: row["id"])
def test_each_gold_block_is_found_by_its_citation_and_evidence(row):
    for expect in row["expect"]:
        chunked = chunk_file(ARCHIVE / expect["path"], ARCHIVE)
        assert any(
            chunk.meta["citation"] == expect["citation"] and expect["evidence"] in chunk.quote
            for chunk in chunked.chunks
        ), f"{row['id']}: no block {expect['citation']!r} quoting {expect['evidence']!r}"


def test_the_glossary_keys_occur_in_no_demo_notebook():
    glossary = json.loads((ARCHIVE / "glossary.json").read_text(encoding="utf-8"))
    for notebook in ARCHIVE.rglob("*.ipynb"):
        text = notebook.read_text(encoding="utf-8").lower()
        used = [key for key in glossary if re.search(rf"\b{re.escape(key)}\b", text)]
        assert not used, f"{notebook.name} holds glossary key(s) {used}: its terms would change"


def test_judge_scores_the_block_and_its_citation():
    row = {"expect": [{"path": "s.clauses.xml", "cell": None, "citation": "CVS 210:2019 §7.2 a", "evidence": "five"}]}

    def answer(citation, quote, refused=False):
        hit = {"cell": None, "citation": citation, "quote": quote}
        return {"refused": refused, "notebooks": [{"path": "s.clauses.xml", "hits": [hit], "neighbourhood": []}]}

    assert judge(row, answer("CVS 210:2019 §7.2 a", "every five years"))["citation_exact"]
    wrong = judge(row, answer("CVS 210:2019 §7.2", "every five years"))
    assert wrong["block_first"] and not wrong["citation_exact"]
    assert not judge(row, answer("CVS 210:2019 §7.2 b", "gratings"))["block_first"]

"""benchmarks/gold/heldout.jsonl, the held-out gold set: well formed, balanced as its README says,
disjoint from the dev set's notebooks, and every evidence string where it says it is (in that
cell's source or an output's text, cells numbered as cellar numbers them) when ../shared/corpus is
there."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from cellar.ingest.notebook import load_notebook
from cellar.retrieval.evaluation import read_gold

ROOT = Path(__file__).resolve().parents[2]
HELDOUT = ROOT / "benchmarks" / "gold" / "heldout.jsonl"
KINDS = {"locate", "value", "vocabulary", "out_of_scope"}


@pytest.fixture(scope="module")
def heldout() -> list[dict]:
    return read_gold(HELDOUT.read_text(encoding="utf-8").splitlines(), str(HELDOUT))


def test_heldout_is_well_formed_and_balanced(heldout):
    assert len(heldout) >= 45
    assert len({row["id"] for row in heldout}) == len(heldout)
    for row in heldout:
        assert row["lang"] in {"en", "nl"} and row["kind"] in KINDS, row["id"]
        assert (row["kind"] == "out_of_scope") == (not row["expect"]), row["id"]
        for e in row["expect"]:
            assert isinstance(e["cell"], int) and e["evidence"].strip(), row["id"]
    langs = Counter(row["lang"] for row in heldout)
    assert langs["nl"] * 3 >= len(heldout)
    assert sum(row["kind"] == "out_of_scope" for row in heldout) * 5 >= len(heldout)


def test_heldout_touches_no_dev_notebook(heldout, shared_corpus):
    dev_path = shared_corpus.parent / "gold" / "dev.jsonl"
    if not dev_path.is_file():
        pytest.skip(f"{dev_path} not found")
    dev = read_gold(dev_path.read_text(encoding="utf-8").splitlines(), str(dev_path))
    dev_paths = {e["path"] for row in dev for e in row["expect"]}
    assert not dev_paths & {e["path"] for row in heldout for e in row["expect"]}


def _texts(cell) -> list[str]:
    """A cell's source and its outputs' text (stream text, text-like data, error values)."""
    texts = [cell.source]
    for output in cell.outputs:
        texts += [output.text or "", output.evalue or "", *output.traceback]
        texts += [value for mime, value in output.data.items() if not mime.startswith("image/")]
    return texts


def test_every_evidence_is_in_its_cell(heldout, shared_corpus):
    notebooks: dict[str, object] = {}
    wrong = []
    for row in heldout:
        for e in row["expect"]:
            if e["path"] not in notebooks:
                notebooks[e["path"]] = load_notebook(shared_corpus / e["path"], shared_corpus)
            cells = notebooks[e["path"]].cells  # type: ignore[attr-defined]
            if not (0 <= e["cell"] < len(cells) and any(e["evidence"] in t for t in _texts(cells[e["cell"]]))):
                wrong.append((row["id"], e["path"], e["cell"], e["evidence"]))
    assert not wrong, json.dumps(wrong, indent=1)


def test_dutch_dev_questions_translate_dev_questions(shared_corpus):
    """benchmarks/gold/dev_nl.jsonl: Dutch translations of English dev questions, citing what they cite."""
    dev_path = shared_corpus.parent / "gold" / "dev.jsonl"
    if not dev_path.is_file():
        pytest.skip(f"{dev_path} not found")
    dev = {row["id"]: row for row in map(json.loads, dev_path.read_text(encoding="utf-8").splitlines()) if row}
    rows = [json.loads(line) for line in (HELDOUT.parent / "dev_nl.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 30 and len({row["id"] for row in rows}) == len(rows)
    for row in rows:
        original = dev[row["translates"]]
        assert row["lang"] == "nl" and original["lang"] == "en" and row["query"] != original["query"]
        assert row["expect"] == original["expect"] and row["kind"] == original["kind"]

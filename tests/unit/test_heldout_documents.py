"""The gold sets over committed files: the held-out ones (benchmarks/gold/heldout_documents*.jsonl
over benchmarks/heldout_documents*/, heldout_english_over_dutch.jsonl over
benchmarks/english_over_dutch/) and a third document set, documents_c.jsonl over
benchmarks/documents_c/, which is a tuning set, not a held-out one: every gold block findable by
its citation and evidence, every gold cell holding its evidence, and the second and third
document sets keeping the mix they were written with."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from cellar.ingest.chunking import chunk_file
from cellar.retrieval.evaluation import read_gold

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# gold file -> (the folder its paths start with, the committed documents it is placed from)
SETS = {
    "heldout_documents.jsonl": ("heldout", BENCHMARKS / "heldout_documents"),
    "heldout_documents_b.jsonl": ("heldout_b", BENCHMARKS / "heldout_documents_b"),
    "heldout_english_over_dutch.jsonl": ("heldout_en_nl", BENCHMARKS / "english_over_dutch"),
    "documents_c.jsonl": ("tuning_c", BENCHMARKS / "documents_c"),  # a tuning set
}


def _gold(name: str) -> list[dict]:
    return read_gold((BENCHMARKS / "gold" / name).read_text(encoding="utf-8").splitlines())


def _cases() -> list[tuple[str, dict]]:
    return [(name, row) for name in SETS for row in _gold(name) if row["expect"]]


@pytest.mark.parametrize(("name", "row"), _cases(), ids=lambda value: value if isinstance(value, str) else value["id"])
def test_each_gold_block_is_found_by_its_citation_and_evidence(name, row, tmp_path):
    prefix, folder = SETS[name]
    for expect in row["expect"]:
        relative = Path(expect["path"]).relative_to(prefix)
        # placed as in the README's commands: the documents under `prefix` inside an archive
        placed = tmp_path / prefix / relative
        placed.parent.mkdir(parents=True)
        placed.write_bytes((folder / relative).read_bytes())
        records = [chunk.record() for chunk in chunk_file(placed, tmp_path).chunks]
        if expect["cell"] is not None:  # a notebook's cell
            assert any(r["cell"] == expect["cell"] and expect["evidence"] in r["text"] for r in records), (
                f"{name} {row['id']}: cell {expect['cell']} does not hold {expect['evidence']!r}"
            )
            continue
        assert any(r["meta"]["citation"] == expect["citation"] and expect["evidence"] in r["quote"] for r in records), (
            f"{name} {row['id']}: no block {expect['citation']!r} quoting {expect['evidence']!r}"
        )


def test_second_set_keeps_its_mix():
    rows = _gold("heldout_documents_b.jsonl")
    assert len(rows) >= 30
    assert sum(row["lang"] == "nl" for row in rows) * 3 >= len(rows)  # a third Dutch
    assert sum(not row["expect"] for row in rows) * 5 >= len(rows)  # a fifth near misses
    for kind in ("report", "clause", "record", "out_of_scope"):
        assert {row["lang"] for row in rows if row["kind"] == kind} == {"en", "nl"}
    assert len({row["id"] for row in rows}) == len(rows)


def test_third_set_keeps_its_mix():
    """documents_c.jsonl, a tuning set: 40 questions, 30 answerable (14 report, 8 clause, 8
    record) and 10 near misses, at least 14 in Dutch, every kind asked in both languages."""
    rows = _gold("documents_c.jsonl")
    assert len(rows) == 40
    kinds = Counter(row["kind"] for row in rows)
    assert kinds == {"report": 14, "clause": 8, "record": 8, "out_of_scope": 10}
    assert all(bool(row["expect"]) == (row["kind"] != "out_of_scope") for row in rows)
    assert sum(row["lang"] == "nl" for row in rows) >= 14
    for kind in kinds:
        assert {row["lang"] for row in rows if row["kind"] == kind} == {"en", "nl"}
    assert [row["id"] for row in rows] == [f"c{n:02d}" for n in range(1, 41)]
    assert all(e["path"].startswith("tuning_c/") for row in rows for e in row["expect"])


def test_english_questions_over_the_demos_dutch_notebooks_cite_cells_that_hold_their_evidence():
    """benchmarks/gold/english_over_dutch.jsonl, a tuning set over the demo archive."""
    demo = BENCHMARKS.parent / "demo" / "archive"
    rows = _gold("english_over_dutch.jsonl")
    assert rows and all(row["lang"] == "en" for row in rows)
    for row in rows:
        for expect in row["expect"]:
            records = [chunk.record() for chunk in chunk_file(demo / expect["path"], demo).chunks]
            assert any(r["cell"] == expect["cell"] and expect["evidence"] in r["text"] for r in records), row["id"]

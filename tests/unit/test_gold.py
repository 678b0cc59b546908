"""The gold sets of benchmarks/gold (held-out, near misses, the course sets): well formed, balanced
as their README says, disjoint from the notebooks the other sets cite, and every evidence string
where it says it is (in that cell's source or an output's text, cells numbered as cellar numbers
them) when ../shared/corpus is there."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from cellar.ingest.notebook import load_notebook
from cellar.retrieval.evaluation import read_gold

ROOT = Path(__file__).resolve().parents[2]
HELDOUT = ROOT / "benchmarks" / "gold" / "heldout.jsonl"
KINDS = {"locate", "value", "vocabulary", "out_of_scope"}


def _gold(path: Path) -> list[dict]:
    return read_gold(path.read_text(encoding="utf-8").splitlines(), str(path))


def _dev(shared_corpus: Path) -> list[dict] | None:
    """The shared dev set beside the corpus, or None where it is absent."""
    path = shared_corpus.parent / "gold" / "dev.jsonl"
    return _gold(path) if path.is_file() else None


def _misplaced(rows: list[dict], shared_corpus: Path) -> list[tuple]:
    """The expected cells of `rows` whose evidence is not in them (in the cell's source or an
    output's text, cells numbered as cellar numbers them)."""
    cells_of: dict[str, list] = {}
    wrong = []
    for row in rows:
        for e in row["expect"]:
            if e["path"] not in cells_of:
                cells_of[e["path"]] = load_notebook(shared_corpus / e["path"], shared_corpus).cells
            cells = cells_of[e["path"]]
            if not (0 <= e["cell"] < len(cells) and any(e["evidence"] in t for t in _texts(cells[e["cell"]]))):
                wrong.append((row["id"], e["path"], e["cell"], e["evidence"]))
    return wrong


@pytest.fixture(scope="module")
def heldout() -> list[dict]:
    return _gold(HELDOUT)


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
    dev = _dev(shared_corpus)
    if dev is None:
        pytest.skip(f"{shared_corpus.parent / 'gold' / 'dev.jsonl'} not found")
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
    wrong = _misplaced(heldout, shared_corpus)
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


NEAR_MISS = HELDOUT.parent / "near_miss.jsonl"


@pytest.fixture(scope="module")
def near_miss() -> list[dict]:
    return _gold(NEAR_MISS)


def test_near_misses_are_well_formed_and_paired(near_miss):
    """benchmarks/gold/near_miss.jsonl: 24 value questions over 24 notebooks, each paired with a near
    miss on the same notebook (its `pair`), a third in Dutch, half the key terms absent from the corpus."""
    rows = {row["id"]: row for row in near_miss}
    assert len(near_miss) == 48 and len(rows) == 48
    for row in near_miss:
        assert row["lang"] in {"en", "nl"} and row["kind"] in {"value", "out_of_scope"}, row["id"]
        assert (row["kind"] == "out_of_scope") == (not row["expect"]), row["id"]
        assert isinstance(row["answer"], str) and row["answer"].strip(), row["id"]
        for e in row["expect"]:
            assert isinstance(e["cell"], int) and e["evidence"].strip(), row["id"]
    misses = [row for row in near_miss if row["kind"] == "out_of_scope"]
    assert len(misses) == 24
    assert sum(row["lang"] == "nl" for row in near_miss) >= 16
    assert len({row["pair"] for row in misses}) == 24  # every answerable question has its own near miss
    notebooks = set()
    for row in misses:
        partner = rows[row["pair"]]
        assert partner["kind"] == "value" and partner["lang"] == row["lang"], row["id"]
        assert row["key_term"].strip() and isinstance(row["key_term_elsewhere"], bool), row["id"]
        paths = {e["path"] for e in partner["expect"]}
        assert len(paths) == 1, partner["id"]
        notebooks |= paths
    assert len(notebooks) == 24
    elsewhere = Counter(row["key_term_elsewhere"] for row in misses)
    assert elsewhere[True] >= 10 and elsewhere[False] >= 10


def test_near_misses_touch_no_dev_or_heldout_notebook(near_miss, heldout, shared_corpus):
    used = {e["path"] for row in near_miss for e in row["expect"]}
    assert not used & {e["path"] for row in heldout for e in row["expect"]}
    dev = _dev(shared_corpus)
    if dev is None:
        pytest.skip(f"{shared_corpus.parent / 'gold' / 'dev.jsonl'} not found")
    assert not used & {e["path"] for row in dev for e in row["expect"]}


def test_every_near_miss_evidence_is_in_its_cell(near_miss, shared_corpus):
    wrong = _misplaced(near_miss, shared_corpus)
    assert not wrong, json.dumps(wrong, indent=1)


def test_near_miss_key_terms_are_where_they_say(near_miss, shared_corpus):
    """A near miss's key term occurs in no notebook of the corpus, or (`key_term_elsewhere`) in a
    notebook other than the one it is near; a term is a whole word, `_` and punctuation separate."""
    corpus = {}
    for path in sorted(shared_corpus.rglob("*.ipynb")):
        rel = path.relative_to(shared_corpus).as_posix()
        if not rel.startswith("edge/"):
            cells = load_notebook(path, shared_corpus).cells
            corpus[rel] = "\n".join(t for cell in cells for t in _texts(cell))
    rows = {row["id"]: row for row in near_miss}
    wrong = []
    for row in near_miss:
        if row["kind"] != "out_of_scope":
            continue
        near = rows[row["pair"]]["expect"][0]["path"]
        word = re.compile(rf"(?<![^\W_]){re.escape(row['key_term'])}(?![^\W_])", re.IGNORECASE)
        found = {rel for rel, text in corpus.items() if word.search(text)}
        if row["key_term_elsewhere"] != bool(found - {near}) or (not row["key_term_elsewhere"] and found):
            wrong.append((row["id"], row["key_term"], sorted(found)))
    assert not wrong, json.dumps(wrong, indent=1)


# The sets a helper wrote blind over the corpus: the course set for reporting only, the others for
# tuning. Per set: its questions, how many are Dutch, how many are near misses, and whether it keeps
# off every notebook another set cites (the Dutch and English sets ask anew about the tuning ones).
COURSE_SETS = {
    "heldout_course.jsonl": (40, 24, 8, True),
    "course_dev.jsonl": (40, 28, 8, True),
    "course_dev_b.jsonl": (32, 14, 8, True),
    "dutch_dev_b.jsonl": (30, 30, 6, False),
    "english_dev_b.jsonl": (30, 0, 6, False),
    "dutch_dev_c.jsonl": (30, 30, 6, False),
    "english_dev_c.jsonl": (30, 0, 6, False),
    "dutch_dev_d.jsonl": (30, 30, 6, False),
    "english_dev_d.jsonl": (30, 0, 6, False),
}


@pytest.fixture(scope="module", params=sorted(COURSE_SETS))
def course(request) -> tuple[str, list[dict]]:
    return request.param, _gold(HELDOUT.parent / request.param)


def test_a_course_set_is_well_formed_with_its_share_of_dutch(course):
    """Its questions, as many in Dutch as its README says, its near misses each naming the notebook
    it is near and its key term."""
    name, rows = course
    size, dutch, near_misses, _ = COURSE_SETS[name]
    assert len(rows) == size and len({row["id"] for row in rows}) == size
    for row in rows:
        assert row["lang"] in {"en", "nl"} and row["kind"] in KINDS, row["id"]
        assert (row["kind"] == "out_of_scope") == (not row["expect"]), row["id"]
        assert (row["kind"] == "out_of_scope") == ("near" in row) == ("key_term" in row), row["id"]
        for e in row["expect"]:
            assert isinstance(e["cell"], int) and e["evidence"].strip(), row["id"]
    assert Counter(row["lang"] for row in rows)["nl"] == dutch
    assert sum(row["kind"] == "out_of_scope" for row in rows) == near_misses


def test_a_course_set_touches_no_notebook_another_set_cites(course, heldout, near_miss, shared_corpus):
    """None that another set cites, or, for a tuning set written over the tuning sets' notebooks,
    none that a held-out set cites."""
    name, rows = course
    used = {e["path"] for row in rows for e in row["expect"]} | {row["near"] for row in rows if "near" in row}
    if not COURSE_SETS[name][3]:
        others = [*heldout, *_gold(HELDOUT.parent / "heldout_course.jsonl")]
        assert not used & {e["path"] for row in others for e in row["expect"]}
        return
    others = [*heldout, *near_miss]
    for other in {n for n, (*_, apart) in COURSE_SETS.items() if apart} - {name}:
        others += _gold(HELDOUT.parent / other)
    others += _dev(shared_corpus) or []
    cited = {e["path"] for row in others for e in row["expect"]} | {row["near"] for row in others if "near" in row}
    assert not used & cited


def test_every_course_evidence_is_in_its_cell_and_no_near_miss_in_its_notebook(course, shared_corpus):
    wrong = _misplaced(course[1], shared_corpus)
    for row in course[1]:
        if "near" in row:
            cells = load_notebook(shared_corpus / row["near"], shared_corpus).cells
            if any(row["key_term"] in t for cell in cells for t in _texts(cell)):
                wrong.append((row["id"], row["near"], "holds", row["key_term"]))
    assert not wrong, json.dumps(wrong, indent=1)


PAIRED = HELDOUT.parent / "heldout_paired.jsonl"
# The tuning sets over ../shared/corpus besides dev itself: what a held-out set must not share.
TUNING_SETS = (
    "dev_nl.jsonl",
    "course_dev.jsonl",
    "course_dev_b.jsonl",
    "dutch_dev_b.jsonl",
    "dutch_dev_c.jsonl",
    "dutch_dev_d.jsonl",
    "english_dev_b.jsonl",
    "english_dev_c.jsonl",
    "english_dev_d.jsonl",
    "near_miss.jsonl",
)


@pytest.fixture(scope="module")
def paired() -> dict[str, tuple[dict, dict]]:
    """benchmarks/gold/heldout_paired.jsonl by pair: (the English question, the Dutch one)."""
    rows = _gold(PAIRED)
    by_pair: dict[str, list[dict]] = {}
    for row in rows:
        by_pair.setdefault(row["id"][:-2], []).append(row)
    return {pair: (questions[0], questions[-1]) for pair, questions in by_pair.items()}


def test_the_paired_set_asks_each_question_in_english_and_in_dutch(paired):
    """The same question twice, so that Dutch and English are compared on what they ask, not on
    which questions each language happened to get: same kind, same cells, ids `p001en`, `p001nl`."""
    assert len(paired) == 24
    for pair, (english, dutch) in paired.items():
        assert (english["id"], dutch["id"]) == (f"{pair}en", f"{pair}nl")
        assert (english["lang"], dutch["lang"]) == ("en", "nl") and english["query"] != dutch["query"]
        assert english["kind"] == dutch["kind"] and english["kind"] in KINDS and english["expect"] == dutch["expect"]
        assert (english["kind"] == "out_of_scope") == (not english["expect"]), pair
    kinds = Counter(english["kind"] for english, _ in paired.values())
    assert kinds == {"value": 13, "locate": 5, "vocabulary": 2, "out_of_scope": 4}


def test_the_paired_set_touches_no_notebook_a_tuning_set_cites(paired, shared_corpus):
    used = {e["path"] for english, _ in paired.values() for e in english["expect"]}
    tuning = (_dev(shared_corpus) or []) + [row for name in TUNING_SETS for row in _gold(HELDOUT.parent / name)]
    cited = {e["path"] for row in tuning for e in row["expect"]} | {row["near"] for row in tuning if "near" in row}
    assert not used & cited


def test_every_paired_evidence_is_in_its_cell(paired, shared_corpus):
    wrong = _misplaced([english for english, _ in paired.values()], shared_corpus)
    assert not wrong, json.dumps(wrong, indent=1)

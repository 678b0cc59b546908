"""The scorecard: `judge` and `scorecard` on hand-made answers, the out-of-sample calibration
(folds, and a toy gold set where in-sample and out-of-sample refusal differ), and `cellar eval` /
`cellar index` / `cellar search` end to end on the demo archive."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.unit.conftest import deadline

from cellar.cli import main
from cellar.retrieval.evaluation import assign_folds, calibrate, cross_validate, judge, read_gold, scorecard, scorecards
from cellar.retrieval.refusal import refuses
from cellar.retrieval.search import Ranking
from cellar.retrieval.shard import open_shard

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo"
KEYS = {
    "n",
    "notebook_hit@1",
    "notebook_hit@3",
    "notebook_hit@5",
    "cell_hit@5",
    "cell_strict@5",
    "cell_first",
    "mrr",
    "refusal_recall",
    "false_refusal_rate",
    "by_kind",
    "by_lang",
    "latency_ms",
}


def answer(paths_cells: list[tuple[str, int]], refused: bool = False) -> dict:
    notebooks = [{"path": p, "hits": [{"cell": c}], "neighbourhood": [{"cell": c + 1}]} for p, c in paths_cells]
    return {"refused": refused, "notebooks": [] if refused else notebooks}


def test_judge_and_scorecard():
    gold = [
        {"expect": [{"path": "a", "cell": 3}]},
        {"expect": [{"path": "b", "cell": 1}, {"path": "c", "cell": 7}]},
        {"expect": []},
        {"expect": [{"path": "d", "cell": 0}]},
    ]
    answers = [answer([("a", 2), ("x", 0)]), answer([("x", 0), ("y", 0), ("c", 7)]), answer([], True), answer([], True)]
    judged = [judge(g, a) for g, a in zip(gold, answers)]
    assert [j["rank"] for j in judged] == [1, 3, None, None]
    assert [j["cell_hit"] for j in judged] == [True, True, False, False]  # a: cell 3 is the neighbour of 2
    card = scorecard(judged, [1.0, 2.0, 3.0, 4.0])
    assert card["notebook_hit@1"] == pytest.approx(1 / 3, abs=1e-3)
    assert card["notebook_hit@3"] == pytest.approx(2 / 3, abs=1e-3)
    assert card["mrr"] == pytest.approx((1 + 1 / 3) / 3, abs=1e-3)
    assert card["refusal_recall"] == 1.0 and card["false_refusal_rate"] == pytest.approx(1 / 3, abs=1e-3)
    assert card["latency_ms"]["p50"] == 2.5


def test_strict_cell_figures_count_hits_only_and_the_first_hit():
    """cell_hit@5 counts the neighbourhood (what the page shows), cell_strict@5 the hits of the top
    5 notebooks alone, cell_first only the top notebook's first hit."""
    gold = [
        {"expect": [{"path": "a", "cell": 3}]},  # the neighbour of a's hit: product only
        {"expect": [{"path": "b", "cell": 7}]},  # a hit of the second notebook: strict, not first
        {"expect": [{"path": "c", "cell": 0}]},  # the first hit
    ]
    answers = [answer([("a", 2)]), answer([("x", 0), ("b", 7)]), answer([("c", 0), ("b", 7)])]
    judged = [judge(g, a) for g, a in zip(gold, answers)]
    assert [(j["cell_hit"], j["cell_strict"], j["cell_first"]) for j in judged] == [
        (True, False, False),
        (True, True, False),
        (True, True, True),
    ]
    card = scorecard(judged, [])
    assert (card["cell_hit@5"], card["cell_strict@5"]) == (1.0, pytest.approx(2 / 3, abs=1e-3))
    assert card["cell_first"] == pytest.approx(1 / 3, abs=1e-3)


def test_folds_are_deterministic_and_stratified():
    gold = [{"id": f"q{i:02d}", "kind": "out_of_scope" if i % 6 == 0 else "value", "expect": []} for i in range(30)]
    folds = assign_folds(gold, 5)
    assert folds == assign_folds(list(gold), 5) and sorted(set(folds)) == [0, 1, 2, 3, 4]
    assert sorted(folds.count(f) for f in range(5)) == [6] * 5
    assert {folds[i] for i in range(30) if gold[i]["kind"] == "out_of_scope"} == {0, 1, 2, 3, 4}
    shuffled = gold[7:] + gold[:7]  # the order of the file does not matter
    assert [assign_folds(shuffled, 5)[(i - 7) % 30] for i in range(30)] == folds
    with pytest.raises(ValueError):
        assign_folds(gold, 1)


class ToySearcher:
    """A searcher whose every question has a fixed refusal evidence (coverage only) and one
    notebook that answers; the shape ``evaluate`` (and its router) and ``calibrate`` read."""

    def __init__(self, coverage: dict[str, float]) -> None:
        self.coverage = coverage
        self.notebooks = [{"path": "nb", "meta": {}}]
        self.calibration = {"min_coverage": 0.0, "min_numbers": 0.0, "min_similarity": 0.0}

    def rank(self, query: str, k: int = 3, filters=None, mode: str = "hybrid") -> Ranking:
        evidence = {"coverage": self.coverage[query], "known_coverage": 0.0, "numbers": 1.0, "similarity": None}
        notebooks = ((0, 1.0, [(0, 1.0)]),)
        return Ranking(query, mode, (), notebooks, evidence, refuses(evidence, self.calibration), {"total": 1.0})

    def answer(self, ranking: Ranking) -> dict:
        notebooks = [] if ranking.refused else [{"path": "nb", "hits": [{"cell": 0}], "neighbourhood": []}]
        return {"refused": ranking.refused, "notebooks": notebooks, "timings_ms": dict(ranking.timings_ms)}

    def search(self, query: str, k: int = 3, filters=None, mode: str = "hybrid") -> dict:
        return self.answer(self.rank(query, k, filters, mode))


def test_out_of_sample_refusal_is_not_flattered_by_the_questions_that_set_it():
    """Ten answerable questions with coverage .9 and five out-of-scope ones, four far below (.2)
    and one close (.8). Calibrated on all fifteen, the threshold lands between .8 and .9 and every
    out-of-scope question is refused, the close one too: in sample, refusal looks perfect. Out of
    sample, the fold that holds the close one is judged with a threshold fitted without it (between
    .2 and .9), which lets it through: refusal recall 4/5."""
    gold = [
        {"id": f"a{i}", "query": f"a{i}", "kind": "value", "expect": [{"path": "nb", "cell": 0}]} for i in range(10)
    ]
    gold += [{"id": f"o{i}", "query": f"o{i}", "kind": "out_of_scope", "expect": []} for i in range(5)]
    toy = ToySearcher({**{f"a{i}": 0.9 for i in range(10)}, **{f"o{i}": 0.2 for i in range(4)}, "o4": 0.8})
    toy.calibration = calibrate(toy, gold)["thresholds"]  # what `cellar index --calibrate` stores
    assert 0.8 < toy.calibration["min_coverage"] < 0.9
    stored = scorecards(toy, gold, ("bm25",), calibration="stored")["bm25"]
    honest = scorecards(toy, gold, ("bm25",))["bm25"]
    assert stored["refusal_recall"] == 1.0 and stored["calibration"]["method"] == "stored"
    assert honest["refusal_recall"] == 0.8 and honest["calibration"]["method"] == "5-fold out of sample"
    assert stored["false_refusal_rate"] == honest["false_refusal_rate"] == 0.0
    thresholds, how = cross_validate(toy, gold, 5)
    held_out = thresholds[[row["id"] for row in gold].index("o4")]
    assert held_out["min_coverage"] < 0.8 and len(how["folds"]) == 5
    assert all(fold["out_of_scope"] == 1 for fold in how["folds"])


@pytest.fixture(scope="module")
def demo_shard(tmp_path_factory):
    if not (DEMO / "archive").is_dir() or not (DEMO / "gold_documents.jsonl").is_file():
        pytest.skip("demo/archive or demo/gold_documents.jsonl not found")
    out = tmp_path_factory.mktemp("demo") / "shard"
    calibrate = ["--calibrate", str(DEMO / "gold.jsonl"), "--calibrate", str(DEMO / "gold_documents.jsonl")]
    assert main(["index", str(DEMO / "archive"), "--out", str(out), *calibrate]) in (0, 1)
    return out


def test_index_calibrates_on_every_gold_set_given_together(demo_shard):
    calibration = open_shard(demo_shard).calibration
    sets = [read_gold((DEMO / name).read_text().splitlines()) for name in ("gold.jsonl", "gold_documents.jsonl")]
    assert calibration["gold"]["questions"] == sum(map(len, sets))
    assert {"notebook", "document"} <= set(calibration["by_source"])  # each source fitted on its own questions


def test_index_names_a_gold_set_that_is_not_one_and_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "ballast"}\n')
    out = tmp_path / "shard"
    calibrate = ["--calibrate", str(DEMO / "gold.jsonl"), "--calibrate", str(bad)]
    assert main(["index", str(DEMO / "archive"), "--out", str(out), *calibrate]) == 2
    assert f"{bad}:1: not a gold question" in capsys.readouterr().err
    assert not out.exists()


GOOD = {"id": "q1", "query": "ballast tank volumes", "expect": [{"path": "a.ipynb", "cell": 3}]}


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("[1, 2, 3]", "a JSON object is needed, not list"),
        (json.dumps({**GOOD, "query": " "}), "query must be a string that is not empty"),
        (json.dumps({**GOOD, "lang": 7}), "lang must be a string"),
        (
            json.dumps({**GOOD, "expect": [{"path": "a.ipynb", "cell": "5"}]}),
            'a cell is a cell number (0 or more) or null, not "5"',
        ),
        (json.dumps({**GOOD, "expect": [{"path": "a.ipynb", "cell": True}]}), "not true"),
        (json.dumps({**GOOD, "expect": [{"path": "a.ipynb", "cell": -1}]}), "not -1"),
        ('{"query": "q", "expect": [{"path": "a.ipynb", "cell": NaN}]}', "not NaN"),
        (json.dumps({**GOOD, "expect": ["a.ipynb"]}), "each expect entry must be an object with a path"),
        (json.dumps({**GOOD, "kind": "out_of_scope"}), "an out_of_scope question expects nothing"),
        ('{"query": "q\\ud800", "expect": []}', "lone surrogate"),
    ],
)
def test_a_malformed_gold_line_is_named_not_scored(line, problem):
    """Scored as any other, such a line skewed the figures (a cell "5" never matched), and
    thresholds calibrated on it shipped (found by a hostile-input sweep)."""
    with pytest.raises(ValueError, match=r"^g\.jsonl:2: not a gold question \(") as error:
        read_gold([json.dumps(GOOD), line], "g.jsonl")
    assert problem in str(error.value)


def test_a_gold_set_names_a_repeated_id_and_an_empty_file():
    with pytest.raises(ValueError, match=r"^g\.jsonl:3: the id 'q1' is also that of line 1$"):
        read_gold([json.dumps(GOOD), "", json.dumps(GOOD)], "g.jsonl")
    with pytest.raises(ValueError, match=r"^g\.jsonl: holds no gold question$"):
        read_gold(["", "  "], "g.jsonl")


def test_cli_eval_names_a_gold_file_it_cannot_read_and_never_waits_on_one(demo_shard, tmp_path, capsys):
    """/dev/zero took 5.6 GB in 20 s and a FIFO blocked for ever; a binary file's error named no file."""
    fifo, binary, single = tmp_path / "fifo.jsonl", tmp_path / "binary.jsonl", tmp_path / "one.jsonl"
    os.mkfifo(fifo)
    binary.write_bytes(b"\x99\xff\n")
    single.write_text(json.dumps(GOOD) + "\n")
    with deadline(60):
        for gold, said in [
            (fifo, f"{fifo}: not a regular file (a folder, a FIFO, a socket or a device): not read"),
            ("/dev/zero", "/dev/zero: not a regular file (a folder, a FIFO, a socket or a device): not read"),
            (binary, f"{binary}: not UTF-8 text ("),
            (single, "a gold set of 1 question(s) cannot be judged out of sample: add questions, or judge it with"),
        ]:
            assert main(["eval", str(demo_shard), str(gold)]) == 2
            assert capsys.readouterr().err.startswith(f"cellar eval: {said}")
        assert main(["eval", str(demo_shard), str(single), "--calibration", "stored"]) == 0


def test_index_refuses_a_gold_set_without_an_answerable_question_before_indexing(tmp_path, capsys):
    unanswerable = tmp_path / "oos.jsonl"
    unanswerable.write_text(json.dumps({"query": "salary of the CEO", "expect": [], "kind": "out_of_scope"}) + "\n")
    out = tmp_path / "shard"
    assert main(["index", str(DEMO / "archive"), "--out", str(out), "--calibrate", str(unanswerable)]) == 2
    assert f"cellar index: {unanswerable}: no answerable question to calibrate on" in capsys.readouterr().err
    assert not out.exists()


def test_cli_eval_prints_a_gold_questions_control_characters_as_escapes(demo_shard, tmp_path, capsys):
    gold = tmp_path / "g.jsonl"
    rows = [{**GOOD, "id": f"q{n}", "query": f"ballast \x1b[31mRED {n}"} for n in range(2)]
    gold.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert main(["eval", str(demo_shard), str(gold), "--questions", "--calibration", "stored"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[31mRED 0" in out


def test_cli_eval_json_all_modes(demo_shard, capsys):
    assert main(["eval", str(demo_shard), str(DEMO / "gold.jsonl"), "--json", "--mode", "all"]) == 0
    cards = json.loads(capsys.readouterr().out)
    assert set(cards) == {"bm25", "dense", "hybrid"}
    for card in cards.values():
        assert KEYS <= set(card)
        assert {"p50", "p95"} <= set(card["latency_ms"])
        assert set(card["by_lang"]) == {"en", "nl"}
    assert cards["hybrid"]["notebook_hit@5"] >= 0.8
    assert cards["hybrid"]["calibration"]["method"] == "5-fold out of sample"
    assert main(["eval", str(demo_shard), str(DEMO / "gold.jsonl"), "--json", "--calibration", "stored"]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert stored["calibration"]["method"] == "stored" and KEYS <= set(stored)


def test_cli_eval_says_question_by_question_which_fail_and_how(demo_shard, capsys):
    gold = [json.loads(line) for line in (DEMO / "gold.jsonl").read_text().splitlines() if line.strip()]
    assert main(["eval", str(demo_shard), str(DEMO / "gold.jsonl"), "--json", "--calibration", "stored"]) == 0
    card = json.loads(capsys.readouterr().out)
    questions = card["questions"]
    assert [q["id"] for q in questions] == [row["id"] for row in gold]
    # the lines add up to the scorecard
    answerable = [q for q in questions if q["answerable"]]
    assert sum(q["rank"] == 1 and not q["refused"] for q in answerable) == round(
        card["notebook_hit@1"] * len(answerable)
    )
    assert sum(q["cell_first"] for q in answerable) == round(card["cell_first"] * len(answerable))
    ballast = questions[0]
    assert ballast["rank"] == 1 and ballast["top"]["path"] == gold[0]["expect"][0]["path"]
    assert all(q["reason"].startswith("looked for") for q in questions if q["refused"])

    assert main(["eval", str(demo_shard), str(DEMO / "gold.jsonl"), "--calibration", "stored", "--questions"]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith(("| demo", "| doc"))]
    assert len(lines) == len(gold)
    assert lines[0].startswith(
        "| demo01 | ballast tank volumes for the 2017 vessel | en | value | 1 | yes | yes | answered | 2017/17-042 Ballast/"
    )


def test_cli_search_json_and_listing(demo_shard, capsys):
    assert main(["search", str(demo_shard), "forepeak tank volume", "--json", "--k", "2"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["notebooks"][0]["path"].startswith("2017/17-042 Ballast/")
    assert len(result["notebooks"]) <= 2
    assert main(["search", str(demo_shard), "forepeak tank volume", "--year-from", "2020"]) in (0, 3)
    assert "17-042" not in capsys.readouterr().out
    assert main(["search", str(demo_shard), "forepeak tank volume", "--k", "0"]) == 2
    assert capsys.readouterr().err == "cellar search: --k must be at least 1\n"


def test_demo_ballast_question_finds_the_notebook_and_its_table(demo_shard, capsys):
    assert main(["search", str(demo_shard), "ballast tank volumes for the 2017 vessel", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    best = result["notebooks"][0]
    assert best["path"] == "2017/17-042 Ballast/ballast_tanks_17042.ipynb"
    assert "table" in {hit["kind"] for hit in best["hits"]}


def test_index_leaves_out_the_archive_readme_requirements_and_blobs(demo_shard):
    paths = {nb["path"] for nb in open_shard(demo_shard).notebooks}
    notebooks = {path for path in paths if path.endswith(".ipynb")}
    assert len(notebooks) == 13  # and beside them only the demo's documents (demo/make_documents.py)
    assert paths - notebooks == {
        "2017/17-042 Ballast/ballast_report_17042.md",
        "2020/20-004 Mooring/mooring_review_20004.pdf",
        "2021/21-019 Elektrisch/keuringsrapport_21019.docx",
        "service/pump_service_notes.records.csv",
        "standards/cvs-210-2019.clauses.xml",
    }


@pytest.mark.parametrize("damage", ["flip", "remove"])
def test_cli_search_refuses_a_damaged_shard(demo_shard, tmp_path, capsys, damage):
    """A flipped byte in (or the loss of) the partition that holds a query's term is exit
    status 2 with a message naming the file, read during the search."""
    import bisect
    import json
    import shutil

    copy = tmp_path / "shard"
    shutil.copytree(demo_shard, copy)
    lexical = json.loads((copy / "manifest.json").read_text())["lexical"]
    name = lexical["files"][bisect.bisect_right(lexical["first"], "ballast") - 1]
    target = copy / name
    if damage == "flip":
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0xFF
        target.write_bytes(bytes(data))
    else:
        target.unlink()
    assert main(["search", str(copy), "ballast"]) == 2
    err = capsys.readouterr().err
    assert f"{name}: damaged" in err if damage == "flip" else f"{name}: cannot read" in err


def test_the_refusal_ceiling_is_never_below_what_the_calibration_reaches_in_sample(demo_shard):
    """benchmarks/refusal_ceiling.py tries every threshold the gold set's evidence allows; the
    calibration fitted on the same questions is one of them, so the ceiling bounds it."""
    import argparse
    import importlib.util

    from cellar.cli.search import open_searcher
    from cellar.retrieval.embedding import default_model_dir
    from cellar.retrieval.evaluation import calibrate_features

    spec = importlib.util.spec_from_file_location("refusal_ceiling", ROOT / "benchmarks" / "refusal_ceiling.py")
    assert spec and spec.loader
    ceiling = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ceiling)
    searcher = open_searcher(str(demo_shard), str(default_model_dir()))
    gold = [
        row
        for name in ("gold.jsonl", "gold_documents.jsonl")
        for row in read_gold((DEMO / name).read_text().splitlines())
    ]
    questions = [ceiling.searched(searcher, row) for row in gold]
    fitted = calibrate_features([(ok, evidence) for ok, evidence, _ in questions])["thresholds"]
    refused = [refuses(evidence, fitted) for _, evidence, _ in questions]
    caught = sum(r for r, (ok, _, _) in zip(refused, questions) if not ok) / sum(not ok for ok, _, _ in questions)
    false = sum(r for r, (ok, _, _) in zip(refused, questions) if ok) / sum(ok for ok, _, _ in questions)
    assert false <= 0.10 and caught > 0  # the fit refuses something, within its budget
    bound = ceiling.ceiling(questions, argparse.Namespace(recall=caught, false=0.10, nb5=0.0))
    assert bound["recall_at_nb5_target"] >= caught
    assert bound["nb5_at_refusal_target"] is not None  # the fit's own recall is reachable
    assert bound["nb5_unrefused"] >= bound["nb5_at_refusal_target"]

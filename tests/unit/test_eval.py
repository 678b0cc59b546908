"""The scorecard: `judge` and `scorecard` on hand-made answers, and `cellar eval` / `cellar index`
/ `cellar search` end to end on the demo archive."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cellar.cli import main
from cellar.retrieval.evaluation import judge, scorecard

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo"
KEYS = {
    "n",
    "notebook_hit@1",
    "notebook_hit@3",
    "notebook_hit@5",
    "cell_hit@5",
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


@pytest.fixture(scope="module")
def demo_shard(tmp_path_factory):
    if not (DEMO / "archive").is_dir() or not (DEMO / "gold.jsonl").is_file():
        pytest.skip("demo/archive or demo/gold.jsonl not found")
    out = tmp_path_factory.mktemp("demo") / "shard"
    assert main(["index", str(DEMO / "archive"), "--out", str(out), "--calibrate", str(DEMO / "gold.jsonl")]) in (0, 1)
    return out


def test_cli_eval_json_all_modes(demo_shard, capsys):
    assert main(["eval", str(demo_shard), str(DEMO / "gold.jsonl"), "--json", "--mode", "all"]) == 0
    cards = json.loads(capsys.readouterr().out)
    assert set(cards) == {"bm25", "dense", "hybrid"}
    for card in cards.values():
        assert KEYS <= set(card)
        assert {"p50", "p95"} <= set(card["latency_ms"])
        assert set(card["by_lang"]) == {"en", "nl"}
    assert cards["hybrid"]["notebook_hit@5"] >= 0.8


def test_cli_search_json_and_listing(demo_shard, capsys):
    assert main(["search", str(demo_shard), "forepeak tank volume", "--json", "--k", "2"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["notebooks"][0]["path"].startswith("2017/17-042 Ballast/")
    assert len(result["notebooks"]) <= 2
    assert main(["search", str(demo_shard), "forepeak tank volume", "--year-from", "2020"]) in (0, 3)
    assert "17-042" not in capsys.readouterr().out


def test_demo_ballast_question_finds_the_notebook_and_its_table(demo_shard, capsys):
    assert main(["search", str(demo_shard), "ballast tank volumes for the 2017 vessel", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    best = result["notebooks"][0]
    assert best["path"] == "2017/17-042 Ballast/ballast_tanks_17042.ipynb"
    assert "table" in {hit["kind"] for hit in best["hits"]}


def test_index_leaves_out_the_archive_readme_requirements_and_blobs(demo_shard):
    paths = [nb["path"] for nb in json.loads((demo_shard / "manifest.json").read_text(encoding="utf-8"))["notebooks"]]
    assert len(paths) == 13 and all(path.endswith(".ipynb") for path in paths)


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

"""cellar.site.bridge: the JSON the lesson pages get from the worker, checked on the shipped lessons, and
the search page's two rounds over a shard whose fragments are fetched on demand."""

import json
import shutil
from pathlib import Path

import pytest

from cellar.lessons.lesson import read_lesson_files
from cellar.retrieval.embedding import default_model_dir
from cellar.retrieval.table import NotebookTable
from cellar.site import bridge

ROOT = Path(__file__).resolve().parents[2]
LESSON_1 = read_lesson_files(ROOT / "lessons/01-passages")
MODEL = default_model_dir()


def test_lesson_page_gives_one_languages_texts_as_plain_json():
    page = bridge.lesson_page(LESSON_1, "nl")
    assert json.loads(json.dumps(page)) == page
    assert page["title"] == "Knip bronnen in passages zonder te vergeten waar ze vandaan komen"
    assert [c["id"] for c in page["checkpoints"]] == ["document_snapshots", "word_chunks", "chunk_coverage"]
    assert page["checkpoints"][1]["title"] == "Knip een momentopname in overlappende woordvensters"
    assert "<!-- widget: chunk-explorer -->" in page["prose"]
    assert page["next"] == "embedding-lab" and page["starter"] == LESSON_1["main.py"]
    with pytest.raises(ValueError, match="no language 'de'"):
        bridge.lesson_page(LESSON_1, "de")


def test_run_code_reports_output_and_the_learners_line():
    result = bridge.run_code("print('a')\n\n1 / 0\n")
    assert result["stdout"] == "a\n"
    assert result["error"] == "ZeroDivisionError: division by zero (main.py, line 3)"
    assert 'File "main.py", line 3' in result["traceback"]


def test_run_code_clips_a_flood_of_output():
    result = bridge.run_code("print('x' * 300_000)")
    assert len(result["stdout"]) < bridge.OUTPUT_LIMIT + 100
    assert result["stdout"].endswith("(200,001 more characters not shown)\n")


def test_check_code_passes_the_solution_and_names_the_first_failure_of_the_starter():
    assert bridge.check_code(LESSON_1, "chunk_coverage", LESSON_1["solution.py"]) == {
        "passed": True,
        "message": "passed",
    }
    verdict = bridge.check_code(LESSON_1, "document_snapshots", LESSON_1["main.py"])
    assert not verdict["passed"] and "not written yet" in verdict["message"]


def test_chunk_explorer_on_the_tasks_example():
    result = bridge.chunk_explorer("  A  B\nC D E F G H  ", 4, 1)
    assert [(p["id"], p["start"], p["end"]) for p in result["passages"]] == [
        ("d:0", 2, 10),
        ("d:3", 9, 16),
        ("d:6", 15, 18),
    ]
    assert (result["total_words"], result["covered_words"], result["word_occurrences"]) == (8, 8, 10)
    assert result["duplication_factor"] == 1.25 and result["error"] is None


@pytest.mark.parametrize(
    ("text", "window", "overlap", "message"),
    [
        ("   ", 4, 1, "text is empty"),
        ("a b", 4, 4, "overlap must be at least 0 and less than the size 4"),
        ("a b", True, 0, "must be an integer"),
    ],
)
def test_chunk_explorer_shows_refusals_as_messages(text, window, overlap, message):
    assert message in bridge.chunk_explorer(text, window, overlap)["error"]


def test_embedding_lab_ranks_the_passages_both_ways():
    if not (MODEL / "model.json").exists():
        pytest.skip(f"no embedding model in {MODEL}")
    lab = json.loads(read_lesson_files(ROOT / "lessons/02-embedding-lab")["lab.json"])
    passages = lab["en"]["passages"]
    result = bridge.embedding_lab(passages, "FP-3", lab["fusion_k"])
    assert len(result["similarity"]) == len(passages)
    assert all(abs(result["similarity"][i][i] - 1) < 1e-3 for i in range(len(passages)))
    assert result["bm25"][0]["id"] == "tank"
    assert sorted(row["id"] for row in result["embedding"]) == sorted(p["id"] for p in passages)
    assert {row["id"] for row in result["fused"]} == {p["id"] for p in passages}


def test_search_asks_once_for_the_fragments_it_needs_then_answers_as_the_searcher(tmp_path):
    """The page's search over a shard of which only the manifest and boot files are fetched: the
    first call names exactly the postings partitions of the query's terms and the clusters its
    vector probes, the second the containers of the notebooks the answer shows (for a refusal,
    the closest one is among them), the third, with those in place, answers what
    cellar.retrieval.search answers over the whole shard, plus the marks and tables the page draws."""
    from cellar.retrieval.embedding import load_model
    from cellar.retrieval.index import build_index_from_directory
    from cellar.retrieval.publish import write_shard
    from cellar.retrieval.routing import Router
    from cellar.retrieval.search import NUMBER_IN_TEXT, Filters, Searcher
    from cellar.retrieval.shard import MANIFEST, open_shard

    demo = ROOT / "demo/archive"
    if not demo.is_dir() or not (MODEL / "model.json").exists():
        pytest.skip("the demo archive or the embedding model is missing")
    model = load_model(MODEL)
    index = build_index_from_directory(demo, model).index
    write_shard(index, tmp_path / "all")
    whole = open_shard(tmp_path / "all", model)
    manifest = whole.manifest
    shard = tmp_path / "shard"
    for name in (MANIFEST, *manifest["boot"]):
        (shard / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / "all" / name, shard / name)
    searcher = Searcher(whole, model)
    numbers = {nb["path"]: n for n, nb in enumerate(index.notebooks)}
    opened = bridge.search_open(str(shard))
    assert (opened["notebooks"], opened["chunks"]) == (len(index.notebooks), whole.n_chunks)
    # the filters' options come from the boot files alone, in a call of their own
    assert bridge.search_filters(str(shard)) == bridge.catalogue(whole.notebooks)
    assert not (shard / "notebooks").exists()
    fetched = 0
    for query, options, filters, marked_words in [
        (
            "ballast tank volumes for the 2017 vessel",
            {"kinds": ["table"]},
            Filters(kinds=("table",)),
            {"ballast", "tank"},
        ),
        ("what is the salary of the CEO", {"k": 2}, Filters(), set()),
    ]:
        expected = Router(searcher).search(query, k=options.get("k", 3), filters=filters)  # as the page routes
        shown = expected["closest"] if expected["refused"] else expected["notebooks"]
        assert len(shown) == (1 if expected["refused"] else 3)
        terms = {
            *searcher.analyzer.query_terms(query),
            *searcher.analyzer.terms(" ".join(NUMBER_IN_TEXT.findall(query))),
        }
        vector = model.encode([query])[0]
        first = set(whole.partition_names(terms)) | {whole.cluster_name(c) for c in whole.probe(vector)}
        rounds = []
        while "fetch" in (answer := bridge.search(query, options, str(shard))):
            rounds.append(answer["fetch"])
            for name in answer["fetch"]:
                (shard / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(tmp_path / "all" / name, shard / name)
            assert len(rounds) <= 2
        if fetched == 0:
            assert set(rounds[0]) == first
        top = {whole.container_name(numbers[nb["path"]]) for nb in shown}
        assert top <= {name for names in rounds for name in names} | set(whole._decoded)
        fetched += sum(len(names) for names in rounds)
        marked = []
        for nb in (*answer["notebooks"], *answer.get("closest", ())):
            for hit in nb["hits"]:
                marked += [hit["quote"][a:b] for a, b in hit.pop("marks")]
                if hit["kind"] == "table":
                    assert "|" in hit.pop("table")  # the Markdown table the page draws
            for item in nb["neighbourhood"]:
                marked += [item["text"][a:b] for a, b in item.pop("marks")]
        assert marked_words <= {word.lower() for word in marked} and bool(marked) == bool(marked_words)
        del answer["timings_ms"], expected["timings_ms"]
        assert answer == expected
    on_disk = [p for p in shard.rglob("*.gz")]
    assert len(on_disk) == fetched + len(manifest["boot"]) < len(whole.files)
    assert len(list((shard / "notebooks").iterdir())) < len(index.notebooks)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"year": 2017}, r"unknown search option\(s\) \['year'\]"),  # a misspelt filter is no filter at all
        ({"kinds": "table"}, "search option kinds: a list of strings"),
    ],
)
def test_search_names_a_bad_option_before_it_opens_anything(tmp_path, options, named):
    with pytest.raises(ValueError, match=named):
        bridge.search("ballast tank volumes", options, str(tmp_path / "no shard"))


def test_the_catalogue_offers_the_tables_filters_from_its_columns():
    """Years, projects (with their first notebook's title), sources in their order and the records'
    fields but the date, from the notebook table's columns."""
    entries = [
        {"title": "Ballast 17-042", "meta": {"year": 2017, "project": "17-042"}},
        {"title": "Ballast, revised", "meta": {"year": 2019, "project": "17-042"}},
        {"title": "CVS 210:2019 §6.3.2", "meta": {"source": "clauses"}},
        {
            "title": "T2-1",
            "meta": {"source": "records", "year": 2018, "fields": {"machine": "T2-0457", "date": "2018-01-02"}},
        },
        {"title": "T2-2", "meta": {"source": "records", "fields": {"machine": "T1-0001"}}},
    ]
    assert bridge.catalogue(NotebookTable.of(entries)) == {
        "years": [2017, 2019],
        "projects": [("17-042", "Ballast 17-042")],
        "sources": ["notebook", "clauses", "records"],
        "fields": {"machine": ["T1-0001", "T2-0457"]},
    }
    assert bridge.catalogue(NotebookTable.of([]))["years"] is None

"""Documents through `cellar index` and `cellar search`: blocks in the shard, hits that carry
their citation and source, one index entry per service note whose fields filter like a
notebook's catalogue, and a batch that goes on past malformed files."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from tests.unit.conftest import demo_documents_writers

from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.index import build_index_from_directory
from cellar.retrieval.publish import write_shard
from cellar.retrieval.refusal import refuses
from cellar.retrieval.search import Filters, Searcher
from cellar.retrieval.shard import open_shard
from cellar.retrieval.table import NotebookTable

writers = demo_documents_writers()

STANDARD = b"""<clauses designation="NEN 3140:2018">
  <article number="6" title="Earthing">
    <article number="6.3.2" title="Earthing of the hull">
      <text>The hull shall be earthed before work on the switchboard starts.</text>
      <item label="a">at two points at least;</item>
      <item label="b">with a flexible copper conductor of at least 16 mm2.</item>
    </article>
  </article>
</clauses>"""

NOTES = (
    b"id,date,machine,fault_code,customer,text\n"
    b"T2-2017-04411,2017-03-02,T2-0457,E217,Van Dijk,brg noise on cooling water pump; repl brg\n"
    b"T2-2018-00012,2018-01-09,T2-0458,E101,Smit,lkg at sea chest flange; tightened bolts\n"
    b"T2-2019-00345,2019-06-21,T2-0457,E101,Van Dijk,lkg at cooling water pump seal; seal repl\n"
)


def _renamed_zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        package.writestr("mimetype", "application/vnd.oasis.opendocument.text")
    return out.getvalue()


@pytest.fixture(scope="module")
def model():
    return load_model(default_model_dir())


@pytest.fixture(scope="module")
def built(model, tmp_path_factory):
    root = tmp_path_factory.mktemp("archive")
    (root / "reports").mkdir()
    (root / "reports" / "ballast.md").write_text(
        "# Ballast report\n\n## 3.2 Ballast arrangement\n\nThe forepeak tank holds 412.1 m3 of ballast water.\n",
        encoding="utf-8",
    )
    (root / "reports" / "mooring.pdf").write_bytes(
        writers.pdf_bytes([["2 Mooring", "The most loaded line is the forward spring line."]])
    )
    (root / "standards").mkdir()
    (root / "standards" / "nen3140.clauses.xml").write_bytes(STANDARD)
    (root / "service").mkdir()
    (root / "service" / "pumps.records.csv").write_bytes(NOTES)
    # malformed: each reported by name, the rest indexed
    (root / "reports" / "fake.pdf").write_bytes(b"GIF89a not a pdf")
    (root / "reports" / "scan.pdf").write_bytes(writers.pdf_bytes([], scanned=1))
    (root / "reports" / "renamed.docx").write_bytes(_renamed_zip())
    (root / "standards" / "bomb.clauses.xml").write_bytes(
        b'<!DOCTYPE c [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><clauses>&b;</clauses>'
    )
    (root / "service" / "no_text.records.csv").write_bytes(b"id,machine\nX1,T2-0457\n")
    return build_index_from_directory(root, model)


def test_the_batch_goes_on_past_malformed_files_and_names_each(built):
    problems = "\n".join(built.problems)
    for name, why in (
        ("reports/fake.pdf", "not a PDF"),
        ("reports/scan.pdf", "scanned, no text layer"),
        ("reports/renamed.docx", "without word/document.xml"),
        ("standards/bomb.clauses.xml", "refused unexpanded"),
        ("service/no_text.records.csv", "a text column"),
    ):
        assert any(p.startswith(f"{name}: ") and why in p for p in built.problems), problems
    assert built.skipped == 5
    paths = {entry["path"] for entry in built.index.notebooks}
    assert paths == {
        "reports/ballast.md", "reports/mooring.pdf", "standards/nen3140.clauses.xml", "service/pumps.records.csv",
    }  # fmt: skip


def test_each_note_is_an_entry_with_its_fields_as_catalogue(built):
    notes = [entry for entry in built.index.notebooks if entry["path"] == "service/pumps.records.csv"]
    assert [entry["entry"] for entry in notes] == ["T2-2017-04411", "T2-2018-00012", "T2-2019-00345"]
    assert notes[0]["title"] == "T2-2017-04411"
    assert notes[0]["meta"] == {
        "year": 2017,
        "source": "records",
        "fields": {"date": "2017-03-02", "machine": "T2-0457", "fault_code": "E217", "customer": "Van Dijk"},
    }


def test_a_standards_designation_is_held_by_its_clauses(built, model):
    """A question that names the standard (``according to NEN 3140``) asks for its clauses: the
    designation is the collection's catalogue, held in the refusal test as a notebook's year is,
    though no clause's text repeats it."""
    entry = next(entry for entry in built.index.notebooks if entry["path"] == "standards/nen3140.clauses.xml")
    assert entry["meta"] == {"source": "clauses", "designation": "NEN 3140:2018"}
    searcher = Searcher(built.index, model)
    ranking = searcher.rank("copper conductor for earthing the hull according to NEN 3140", k=1)
    assert ranking.evidence["numbers"] == 1.0 and "nen" not in ranking.evidence["missing"]


def test_hits_carry_their_citation_and_source_through_the_shard(built, model, tmp_path):
    write_shard(built.index, tmp_path / "shard", model)
    searcher = Searcher(open_shard(tmp_path / "shard", model), model)
    answer = searcher.search("copper conductor for earthing the hull", k=3)
    assert not answer["refused"]
    top = answer["notebooks"][0]
    assert top["path"] == "standards/nen3140.clauses.xml"
    assert top["hits"][0]["citation"] == "NEN 3140:2018 §6.3.2 b"
    assert top["hits"][0]["source"] == "clauses"
    assert top["hits"][0]["quote"] == "with a flexible copper conductor of at least 16 mm2."
    report = searcher.search("forepeak tank ballast volume", k=3)["notebooks"][0]
    assert (report["hits"][0]["citation"], report["hits"][0]["source"]) == (
        "3.2 Ballast arrangement, paragraph 1",
        "document",
    )


def test_fields_and_sources_filter_entries_without_reading_chunks(built, model):
    searcher = Searcher(built.index, model)
    on_machine = Filters(fields=(("machine", "T2-0457"),))
    answer = searcher.search("pump leakage", k=5, filters=on_machine)
    assert {nb["hits"][0]["citation"] for nb in answer["notebooks"] + answer.get("closest", [])} <= {
        "T2-2017-04411", "T2-2019-00345",
    }  # fmt: skip
    allowed = Filters(sources=("records",)).mask(NotebookTable.of(built.index.notebooks))
    assert [nb.get("entry") for nb, ok in zip(built.index.notebooks, allowed) if ok] == [
        "T2-2017-04411", "T2-2018-00012", "T2-2019-00345",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="unknown source"):
        Filters(sources=("emails",))


def test_the_glossary_expands_a_note_for_search_while_the_quote_keeps_the_abbreviation(tmp_path, model):
    (tmp_path / "pumps.records.csv").write_bytes(NOTES)
    glossary = {"brg": "bearing", "lkg": "leakage", "repl": "replaced"}
    index = build_index_from_directory(tmp_path, model, glossary=glossary).index
    answer = Searcher(index, model).search("bearing replaced", k=1, mode="bm25")
    hit = answer["notebooks"][0]["hits"][0]
    assert hit["citation"] == "T2-2017-04411"
    assert hit["quote"] == "brg noise on cooling water pump; repl brg"
    without = build_index_from_directory(tmp_path, model).index
    assert Searcher(without, model).search("bearing replaced", k=1, mode="bm25")["refused"]


def test_cli_search_prints_citations_and_filters_by_field(built, model, tmp_path, capsys):
    from cellar.cli import main

    write_shard(built.index, tmp_path / "shard", model)
    shard = str(tmp_path / "shard")
    assert main(["search", shard, "copper conductor for earthing the hull"]) == 0
    assert "- clauses NEN 3140:2018 §6.3.2 b: with a flexible copper conductor" in capsys.readouterr().out
    assert main(["search", shard, "pump leakage", "--k", "5", "--field", "machine=T2-0457", "--json"]) in (0, 3)
    answer = json.loads(capsys.readouterr().out)
    shown = answer["notebooks"] + answer.get("closest", [])
    assert shown and {nb["meta"]["fields"]["machine"] for nb in shown} == {"T2-0457"}
    assert main(["search", shard, "pump", "--field", "machine"]) == 2
    assert "give KEY=VALUE" in capsys.readouterr().err
    assert main(["search", shard, "pump", "--year-from", "2020", "--year-to", "2015"]) == 2
    assert "--year-from 2020 is after --year-to 2015" in capsys.readouterr().err


def test_a_note_is_embedded_with_its_glossary_expansions_the_same_way_cold_or_from_parts(tmp_path, model):
    from cellar.retrieval.analysis import Analyzer, AnalyzerSettings
    from cellar.retrieval.incremental import embedded_text
    from cellar.retrieval.index import build_index

    (tmp_path / "pumps.records.csv").write_bytes(NOTES)
    glossary = {"brg": "bearing", "repl": "replaced"}
    built = build_index_from_directory(tmp_path, model, glossary=glossary).index
    analyzer = Analyzer(AnalyzerSettings(glossary=tuple(glossary.items())))
    records = [record for n in range(len(built.notebooks)) for record in built.notebook_chunks(n)]
    note = records[0]
    assert embedded_text(note, analyzer).endswith("\nbearing replaced bearing")
    assert embedded_text({**note, "meta": {}}, analyzer) == note["text"]  # only a note's text grows
    cold = build_index(records, model, AnalyzerSettings(glossary=tuple(glossary.items())))
    assert (cold.vectors == built.vectors).all() and (cold.scales == built.scales).all()


def found(source: str | None = None, coverage: float = 1.0, similarity: float = 0.7) -> dict:
    """The refusal's evidence for a best entry of ``source`` (a notebook when None) that holds
    ``coverage`` of the question's words, every one the archive knows."""
    held = {"coverage": coverage, "known_coverage": coverage, "numbers": 1.0, "similarity": similarity, "missing": []}
    return {**held, "source": source} if source else held


def test_each_source_gets_its_own_thresholds_where_the_gold_calibrates_one(built, model):
    from cellar.retrieval.evaluation import calibrate_features

    features = [
        (True, found(similarity=0.80)), (True, found(similarity=0.75)), (False, found(similarity=0.60)),  # notebooks
        (True, found("records", similarity=0.45)), (True, found("records", similarity=0.50)),
        (False, found("records", similarity=0.20)),
    ]  # fmt: skip
    fitted = calibrate_features(features, max_false=0.0)
    assert 0.60 < fitted["by_source"]["notebook"]["min_similarity"] <= 0.75
    assert 0.20 < fitted["by_source"]["records"]["min_similarity"] <= 0.45
    assert fitted["thresholds"]["min_similarity"] <= 0.45  # one threshold for all must let the notes through
    built.index.calibration = fitted
    try:
        searcher = Searcher(built.index, model)
        assert searcher.thresholds_for(found("records", similarity=0.5))["min_similarity"] < 0.45
        assert searcher.thresholds_for(found(similarity=0.5))["min_similarity"] > 0.6
        assert searcher.thresholds_for(found("clauses", similarity=0.5)) == searcher.calibration  # none fitted
    finally:
        built.index.calibration = {}


def test_a_source_whose_gold_questions_are_all_answerable_gets_the_archives_thresholds_that_pass_them():
    """A notebook gold set over an archive with reports: the few questions whose best entry is a
    report are all answerable, and thresholds fitted on them alone refuse nothing (every one 0),
    so an out-of-scope question that came closest to a report was never refused. Such a source
    gets the archive's thresholds, lowered only as far as its own questions need to pass; one
    with both kinds gets thresholds of its own."""
    from cellar.retrieval.evaluation import calibrate_features

    features = [
        (True, found(coverage=0.9)), (True, found(coverage=0.8)),  # notebooks
        (False, found(coverage=0.3)), (False, found(coverage=0.5)),
        (True, found("document", coverage=0.6)), (True, found("document", coverage=0.95)),  # reports: answerable alone
        (True, found("records", coverage=0.9)), (False, found("records", coverage=0.6)),  # notes: both kinds
    ]  # fmt: skip
    fitted = calibrate_features(features, max_false=0.2)  # one answerable question may be refused
    archive, report = fitted["thresholds"], fitted["by_source"]["document"]
    assert 0.6 < archive["min_coverage"] <= 0.8  # it spends that on the report at 0.6
    assert report["min_coverage"] == 0.6 and report["min_similarity"] == archive["min_similarity"]
    assert not refuses(found("document", coverage=0.6), report) and refuses(found("document", coverage=0.55), report)
    assert 0.6 < fitted["by_source"]["records"]["min_coverage"] <= 0.9


def test_the_fit_waives_the_similarity_test_where_refuses_does():
    """A question one chunk holds whole is never refused for its closeness in meaning
    (``refusal.held_in_one_chunk``), so the fit must not spend the similarity threshold on it:
    the out-of-scope question a little closer is caught, and a source whose questions are all
    answerable keeps the archive's threshold rather than one lowered to pass it."""
    from cellar.retrieval.evaluation import calibrate_features

    held_whole = {**found(similarity=0.30), "chunk_coverage": 1.0}
    features = [(True, held_whole), (True, found(similarity=0.80)), (False, found(similarity=0.50))]
    fitted = calibrate_features(features, max_false=0.0)["thresholds"]
    assert 0.50 < fitted["min_similarity"] <= 0.80
    assert [refuses(evidence, fitted) for _, evidence in features] == [False, False, True]
    report = (True, {**found("document", similarity=0.30), "chunk_coverage": 1.0})
    fitted = calibrate_features([*features[1:], report], max_false=0.0)
    assert fitted["by_source"]["document"]["min_similarity"] == fitted["thresholds"]["min_similarity"] > 0.50


def test_routing_names_a_machine_or_a_requirement_and_falls_back(built, model):
    from cellar.retrieval.routing import RULES, Router, field_values, route

    values = field_values(entry["meta"].get("fields") for entry in built.index.notebooks)
    assert values["t2-0457"] == ("machine", "T2-0457") and "2017-03-02" not in values  # dates are not routed
    sources = ("notebook", "document", "clauses", "records")
    assert route("leakage on t2-0457?", values, sources).fields == (("machine", "T2-0457"),)
    assert route("what cross-section must the conductor have", values, sources).sources == ("clauses",)
    assert route("Welke doorsnede is vereist?", values, sources).rule == "normative"
    assert route("forepeak tank volume", values, sources).rule == "none"
    assert route("leakage on T2-0457", values, ("notebook",)).rule == "none"  # no records to route to

    router = Router(Searcher(built.index, model), RULES)
    answer = router.search("leakage on the cooling water pump T2-0457", k=3)
    assert answer["route"]["rule"] == "field" and answer["route"]["fields"] == {"machine": "T2-0457"}
    shown = answer["notebooks"] or answer["closest"]
    assert {nb["meta"]["fields"]["machine"] for nb in shown} == {"T2-0457"} or answer["route"]["fell_back"]
    fell = router.search("must the tug carry a spare propeller", k=3)  # no clause says so
    assert fell["route"]["rule"] == "normative" and fell["route"]["fell_back"]
    assert fell["route"]["sources"][0] == "clauses" and set(fell["route"]["sources"]) == set(router.sources)


def test_a_machine_named_is_never_answered_with_another_machines_notes(built, model):
    """`sea chest flange bolts of T2-0457`: none of T2-0457's notes holds it, T2-0458's does. The
    routed search refuses, and the fall-back searches the other sources (a report, a standard),
    not the notes of the machines the question did not name."""
    from cellar.retrieval.routing import Router

    router = Router(Searcher(built.index, model))
    answer = router.search("tightened bolts at the sea chest flange of T2-0457", k=3)
    assert answer["route"]["fell_back"] and answer["route"]["sources"][0] == "records"
    assert "records" not in answer["route"]["sources"][1:]
    shown = answer["notebooks"] + answer.get("closest", [])
    assert shown and {nb["meta"].get("fields", {}).get("machine") for nb in shown} <= {None, "T2-0457"}
    # the question without the machine finds T2-0458's note
    plain = router.search("tightened bolts at the sea chest flange", k=3)
    assert plain["notebooks"][0]["meta"]["fields"]["machine"] == "T2-0458"


def test_a_document_hit_opens_on_its_section_with_the_blocks_that_follow(built, model):
    answer = Searcher(built.index, model).search("copper conductor for earthing the hull", k=1)
    context = answer["notebooks"][0]["neighbourhood"]
    assert context[0] == {"cell": None, "kind": "heading", "text": "6 Earthing > 6.3.2 Earthing of the hull"}
    assert [entry["citation"] for entry in context[1:]] == ["NEN 3140:2018 §6.3.2 b"]  # the last of its section
    # each passage carries its offsets in the published text, where the viewer opens it
    hit = answer["notebooks"][0]["hits"][0]
    assert (context[1]["start"], context[1]["end"]) == (hit["start"], hit["end"])
    notebook_like = Searcher(built.index, model).search("forepeak tank ballast volume", k=1)["notebooks"][0]
    assert notebook_like["neighbourhood"][0]["text"] == "Ballast report > 3.2 Ballast arrangement"


def test_a_cached_records_file_gives_the_same_note_entries(tmp_path, model):
    """A records file's part holds one container per note (``Part.entries``); the cache keeps
    them, so a build from the cache has the same entries, containers and vectors as a cold one."""
    archive = tmp_path / "archive"
    archive.mkdir()
    (archive / "pumps.records.csv").write_bytes(NOTES)
    (archive / "report.md").write_text("# Report\n\n## 1 Pumps\n\nThe pumps were overhauled.\n", encoding="utf-8")
    cold = build_index_from_directory(archive, model, cache=tmp_path / "cache")
    warm = build_index_from_directory(archive, model, cache=tmp_path / "cache")
    assert warm.reused == ["pumps.records.csv", "report.md"]
    assert [entry.get("entry") for entry in warm.index.notebooks] == [
        "T2-2017-04411", "T2-2018-00012", "T2-2019-00345", None,
    ]  # fmt: skip
    assert warm.index.notebooks == cold.index.notebooks and warm.index.containers == cold.index.containers
    assert (warm.index.vectors == cold.index.vectors).all()
    assert [r["quote"] for r in warm.index.notebook_chunks(1)] == ["lkg at sea chest flange; tightened bolts"]


def test_a_question_naming_a_machine_asks_its_notes_first_by_default(built, model, tmp_path, capsys):
    """Every search routes by the field rule (the site's, `cellar search`'s, `cellar eval`'s); a
    requirement goes to the standards first only when asked (`--route`), and a field question
    never into a source the filters leave out."""
    from cellar.cli import main
    from cellar.retrieval.routing import DEFAULT_RULES, Router

    router = Router(Searcher(built.index, model))
    assert router.rules == DEFAULT_RULES == ("field",)
    answer = router.search("seal leakage on T2-0457", k=3)
    assert answer["route"]["rule"] == "field" and not answer["route"]["fell_back"]
    assert {nb["meta"]["fields"]["machine"] for nb in answer["notebooks"]} == {"T2-0457"}
    assert router.search("what cross-section must the conductor have", k=3)["route"]["rule"] == "none"
    kept_out = router.search("seal leakage on T2-0457", k=3, filters=Filters(sources=("document",)))
    assert kept_out["route"]["rule"] == "none" and kept_out["route"]["sources"] == ["document"]  # what was searched
    with pytest.raises(ValueError, match="unknown routing rule"):
        Router(Searcher(built.index, model), ("fields",))

    write_shard(built.index, tmp_path / "shard", model)
    assert main(["search", str(tmp_path / "shard"), "seal leakage on T2-0457"]) == 0
    assert "searched records (field rule)" in capsys.readouterr().out  # the notes answered: no fall-back
    assert main(["search", str(tmp_path / "shard"), "seal leakage on T2-0457", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["route"]["fields"] == {"machine": "T2-0457"}

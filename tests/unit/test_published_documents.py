"""The documents a shard publishes for the site's document viewer: each indexed document's
extracted text and blocks (citation, heading path, offsets, page, a note's fields), gzip JSON
named by its hash and listed with its SHA-256 in the manifest; read back checked, a damaged or
foreign file refused naming it; the same from the build cache as cold."""

from __future__ import annotations

import gzip
import json

import pytest
from tests.unit.conftest import demo_documents_writers
from tests.unit.test_document_search import NOTES, STANDARD

from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.index import build_index_from_directory
from cellar.retrieval.packing import canonical, compress
from cellar.retrieval.publish import write_shard
from cellar.retrieval.published import published_document
from cellar.retrieval.shard import ShardError, open_shard
from cellar.site.bridge import document_view

writers = demo_documents_writers()
REPORT = "# Ballast report\n\n## 3.2 Ballast arrangement\n\nThe forepeak tank holds 412.1 m3.\n\n- two pumps\n"


@pytest.fixture(scope="module")
def model():
    return load_model(default_model_dir())


@pytest.fixture(scope="module")
def shard(model, tmp_path_factory):
    root = tmp_path_factory.mktemp("archive")
    (root / "reports").mkdir()
    (root / "reports" / "ballast.md").write_text(REPORT, encoding="utf-8")
    (root / "reports" / "mooring.pdf").write_bytes(
        writers.pdf_bytes([["1 Scope", "A review."], ["2 Mooring", "The forward spring line is the most loaded."]])
    )
    (root / "standards").mkdir()
    (root / "standards" / "nen3140.clauses.xml").write_bytes(STANDARD)
    (root / "pumps.records.csv").write_bytes(NOTES)
    out = tmp_path_factory.mktemp("shard") / "shard"
    write_shard(build_index_from_directory(root, model).index, out)
    return out


def read(folder):
    return lambda name: (folder / name).read_bytes()


def test_every_document_is_published_with_its_text_blocks_and_offsets(shard):
    manifest = json.loads((shard / "manifest.json").read_text())
    assert sorted(manifest["documents"]) == [
        "pumps.records.csv", "reports/ballast.md", "reports/mooring.pdf", "standards/nen3140.clauses.xml",
    ]  # fmt: skip
    for path, name in manifest["documents"].items():
        assert name.startswith("documents/") and name in manifest["files"]
        view = published_document(read(shard), path)
        assert view["file"] == name and len(view["revision"]) == 64
        assert all(view["text"][b["start"] : b["end"]].strip() for b in view["blocks"])
    report = published_document(read(shard), "reports/ballast.md")
    assert report["text"] == REPORT  # a Markdown file's own text
    assert [b["citation"] for b in report["blocks"]] == [
        "Ballast report", "3.2 Ballast arrangement, paragraph 1", "3.2 Ballast arrangement, item 1",
    ]  # fmt: skip
    assert report["blocks"][1]["headings"] == ["Ballast report", "3.2 Ballast arrangement"]
    clauses = published_document(read(shard), "standards/nen3140.clauses.xml")
    assert "NEN 3140:2018 §6.3.2 b" in [b["citation"] for b in clauses["blocks"]]
    notes = published_document(read(shard), "pumps.records.csv")
    first = notes["blocks"][0]
    assert (first["citation"], first["entry"], first["fields"]["machine"]) == (
        "T2-2017-04411",
        "T2-2017-04411",
        "T2-0457",
    )
    assert notes["text"][first["start"] : first["end"]] == "brg noise on cooling water pump; repl brg"
    pdf = published_document(read(shard), "reports/mooring.pdf")
    assert {b["page"] for b in pdf["blocks"]} == {1, 2}


def test_the_published_blocks_are_the_chunks_citations_and_offsets(shard, model):
    """What the viewer marks is what a hit cites: every chunk's [start, end) lies in a published
    block with the same citation."""
    opened = open_shard(shard, model)
    for n, entry in enumerate(opened.notebooks):
        view = published_document(read(shard), entry["path"])
        for record in opened.fragment(n):
            holding = [b for b in view["blocks"] if b["start"] <= record["start"] and record["end"] <= b["end"]]
            assert [b["citation"] for b in holding] == [record["meta"]["citation"]], record
            assert view["text"][record["start"] : record["end"]] == record["quote"]


def test_the_shards_check_reads_the_published_documents(shard, model):
    open_shard(shard, model).check_all()


def test_a_damaged_replaced_or_foreign_document_is_refused_naming_it(shard, tmp_path):
    manifest = json.loads((shard / "manifest.json").read_text())
    name = manifest["documents"]["reports/ballast.md"]
    files = {n: (shard / n).read_bytes() for n in ["manifest.json", *manifest["files"]]}

    def damaged(changes):
        def reader(n):
            return changes.get(n, files[n])

        return reader

    flipped = bytearray(files[name])
    flipped[len(flipped) // 2] ^= 1
    with pytest.raises(ShardError, match=f"{name}: damaged or replaced \\(SHA-256 mismatch"):
        published_document(damaged({name: bytes(flipped)}), "reports/ballast.md")
    other = manifest["documents"]["pumps.records.csv"]
    with pytest.raises(ShardError, match=f"{name}: damaged or replaced"):
        published_document(damaged({name: files[other]}), "reports/ballast.md")
    with pytest.raises(ShardError, match="no published document 'reports/missing.md'"):
        published_document(read(shard), "reports/missing.md")
    # a file listed under another path's name (the manifest itself altered) fails its checksum
    altered = json.loads(files["manifest.json"])
    altered["documents"]["reports/ballast.md"] = other
    with pytest.raises(ShardError, match="manifest.json: damaged"):
        published_document(damaged({"manifest.json": json.dumps(altered).encode()}), "reports/ballast.md")


def test_a_view_that_names_another_path_is_refused(shard):
    from cellar.ingest.documents.view import checked_view

    view = json.loads(
        gzip.decompress(
            (shard / json.loads((shard / "manifest.json").read_text())["documents"]["reports/ballast.md"]).read_bytes()
        )
    )
    with pytest.raises(ValueError, match="belongs to 'reports/ballast.md'"):
        checked_view(view, "reports/other.md", "x")
    broken = {**view, "blocks": [{"start": 0, "end": len(view["text"]) + 5}]}
    with pytest.raises(ValueError, match="offsets fall outside"):
        checked_view(broken, "reports/ballast.md", "x")
    assert compress(canonical(view))  # the view is canonical JSON data


def test_the_bridge_asks_for_the_file_first_then_gives_the_view(shard, tmp_path):
    site = tmp_path / "shard"
    site.mkdir()
    (site / "manifest.json").write_bytes((shard / "manifest.json").read_bytes())
    asked = document_view("standards/nen3140.clauses.xml", str(site))
    assert list(asked) == ["fetch"] and asked["fetch"][0].startswith("documents/")
    (site / "documents").mkdir()
    (site / asked["fetch"][0]).write_bytes((shard / asked["fetch"][0]).read_bytes())
    view = document_view("standards/nen3140.clauses.xml", str(site))
    assert view["designation"] == "NEN 3140:2018" and view["source"] == "clauses"


def test_a_cached_build_publishes_the_same_documents(tmp_path, model):
    archive = tmp_path / "archive"
    archive.mkdir()
    (archive / "pumps.records.csv").write_bytes(NOTES)
    (archive / "report.md").write_text(REPORT, encoding="utf-8")
    cold = build_index_from_directory(archive, model, cache=tmp_path / "cache")
    warm = build_index_from_directory(archive, model, cache=tmp_path / "cache")
    assert warm.reused == ["pumps.records.csv", "report.md"]
    assert warm.index.documents == cold.index.documents and sorted(cold.index.documents) == [
        "pumps.records.csv",
        "report.md",
    ]

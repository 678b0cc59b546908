"""cellar.retrieval.index and cellar.retrieval.shard: an index built from chunk records survives a trip through a
shard directory, and a damaged or mismatched shard is refused with an error naming the file."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.index import Render, build_index, build_index_from_directory
from cellar.retrieval.publish import write_shard
from cellar.retrieval.shard import MANIFEST, NeedFiles, Shard, ShardError, open_shard
from cellar.retrieval.sharding import shard_files

ROOT = Path(__file__).resolve().parents[2]
MODEL = default_model_dir()
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(scope="module")
def model():
    return load_model(MODEL)


@pytest.fixture(scope="module")
def built(model):
    """The fixture notebooks and documents, indexed (the invalid ones reported)."""
    corpus = FIXTURES
    return build_index_from_directory(corpus, model)


@pytest.fixture()
def shard_dir(built, tmp_path):
    write_shard(built.index, tmp_path / "shard")
    return tmp_path / "shard"


def test_directory_build_reports_bad_files_and_goes_on(built):
    assert built.files > 3
    assert built.skipped >= 1
    assert all(": " in problem for problem in built.problems)
    assert any("invalid" in problem for problem in built.problems)
    paths = [nb["path"] for nb in built.index.notebooks]
    assert paths == sorted(paths) and len(set(paths)) == len(paths)


def test_chunks_are_contiguous_per_notebook(built):
    index = built.index
    for n, entry in enumerate(index.notebooks):
        rows = index.notebook_chunks(n)
        assert len(rows) == entry["end"] - entry["start"]
        assert {record["path"] for record in rows} == {entry["path"]}
        assert np.all(index.chunk_notebook[entry["start"] : entry["end"]] == n)
        assert entry["status"] == "unchecked" and entry["rendered"] is None and entry["title"]
    assert index.notebooks[-1]["end"] == index.n_chunks
    assert index.vectors.dtype == np.int8 and index.scales.dtype == np.float32


def test_shard_round_trip(built, shard_dir, model):
    """Every posting keeps today's precomputed BM25 score, every chunk its int8 vector in one
    cluster, every notebook its records and vectors in its container; files are gzip, named by
    the hash of their bytes."""
    shard = open_shard(shard_dir, model)
    index = built.index
    assert list(shard.notebooks) == [
        {**entry, "kinds": sum(1 << int(k) for k in set(index.chunk_kind[entry["start"] : entry["end"]].tolist()))}
        for entry in json.loads(json.dumps(index.notebooks))
    ]
    for j, term in enumerate(index.bm25.terms):
        rows, scores, kinds = shard.postings(term)
        s, e = index.bm25.indptr[j], index.bm25.indptr[j + 1]
        np.testing.assert_array_equal(rows, index.bm25.indices[s:e])
        np.testing.assert_array_equal(scores, index.bm25.data[s:e])
        np.testing.assert_array_equal(kinds, index.chunk_kind[rows])
    assert shard.postings("zzzz-no-such-term") is None
    assert (shard.n_docs, shard.avgdl) == (index.bm25.n_docs, pytest.approx(index.bm25.avgdl))
    seen = np.concatenate([shard.cluster(c)[0] for c in range(len(shard.cluster_files))])
    assert sorted(seen.tolist()) == list(range(index.n_chunks))
    for n in range(len(index.notebooks)):
        records, codes, scales = shard.container(n)
        assert records == [json.loads(json.dumps(r)) for r in index.notebook_chunks(n)]
        entry = index.notebooks[n]
        np.testing.assert_array_equal(codes, index.vectors[entry["start"] : entry["end"]])
        np.testing.assert_array_equal(scales, index.scales[entry["start"] : entry["end"]])
    manifest = shard.manifest
    assert manifest["format"] == 3 and manifest["model"] == {"id": model.id, "sha256": model.sha256}
    assert manifest["counts"]["chunks"] == index.n_chunks
    on_disk = {p.relative_to(shard_dir).as_posix() for p in shard_dir.rglob("*") if p.is_file()}
    # The manifest lists every file but the containers, which the notebook table (a boot file) lists.
    assert on_disk == set(shard.files) | {MANIFEST} == set(manifest["files"]) | set(shard.containers) | {MANIFEST}
    assert manifest["table"] in manifest["boot"] and manifest["bytes"] == sum(e["bytes"] for e in shard.files.values())
    for name in on_disk - {MANIFEST}:
        data = (shard_dir / name).read_bytes()
        assert gzip.decompress(data) and name.split("/")[1].startswith(hashlib.sha256(data).hexdigest()[:20])
        assert shard.files[name] == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_unchanged_files_keep_their_names(built):
    """Built twice, the shard is the same to the byte; a notebook's container is named by its content."""
    first, second = shard_files(built.index), shard_files(built.index)
    assert first == second
    containers = Shard(first.__getitem__).containers
    assert len(set(containers)) == len(containers)


def test_shard_opens_from_bytes(built):
    files = shard_files(built.index)
    shard = Shard(files.__getitem__, "memory")
    assert shard.fragment(0)[0]["id"] == built.index.notebook_chunks(0)[0]["id"]


def test_a_reader_that_lacks_files_is_told_which(built):
    """With ``present``, a file not fetched yet is NeedFiles naming it, not an error."""
    files = shard_files(built.index)
    manifest = json.loads(files[MANIFEST])
    fetched = {MANIFEST, *manifest["boot"]}
    shard = Shard(files.__getitem__, "tab", present=fetched.__contains__)
    with pytest.raises(NeedFiles) as need:
        shard.require([shard.containers[0], manifest["lexical"]["files"][0]])
    assert need.value.names == [shard.containers[0], manifest["lexical"]["files"][0]]
    fetched |= set(need.value.names)
    shard.require(need.value.names)


def test_a_reader_keeps_what_it_decoded_within_its_limit_and_reads_again_what_it_let_go(built, model):
    """A tab's memory never shrinks, so a reader keeps a bounded amount of decoded files: one
    whose limit holds a single file answers like one that keeps everything, reading files again
    as it goes; one that keeps everything reads a question's files once."""
    from cellar.retrieval.search import Searcher

    files = shard_files(built.index)
    reads: dict[str, list[str]] = {"roomy": [], "tight": []}

    def reader(log: list[str]):
        return lambda name: log.append(name) or files[name]

    roomy = Searcher(Shard(reader(reads["roomy"])), model)
    tight = Searcher(Shard(reader(reads["tight"]), decoded_limit=1), model)
    queries = ["tank volume", "pipe friction factor", "ballast water", "tank volume"]
    for query in queries:
        answers = [searcher.search(query, k=3) for searcher in (tight, roomy)]
        for answer in answers:
            answer.pop("timings_ms")
        assert answers[0] == answers[1], query
    read_roomy, read_tight = reads["roomy"], reads["tight"]
    assert len(read_roomy) == len(set(read_roomy))  # the repeated question read nothing again
    assert len(read_tight) > len(read_roomy) and set(read_tight) == set(read_roomy)


def _role_file(shard_dir: Path, role: str) -> str:
    manifest = json.loads((shard_dir / MANIFEST).read_text())
    return {
        "manifest": MANIFEST,
        "partition": manifest["lexical"]["files"][0],
        "cluster": manifest["dense"]["files"][0],
        "centroids": manifest["dense"]["centroids"],
        "table": manifest["table"],
        "container": open_shard(shard_dir).containers[0],
    }[role]


def _read_everything(shard_dir: Path) -> None:
    shard = open_shard(shard_dir)
    shard.check_all()


@pytest.mark.parametrize("role", ["manifest", "partition", "cluster", "centroids", "table", "container"])
def test_flipped_byte_is_refused_naming_the_file(shard_dir, role):
    name = _role_file(shard_dir, role)
    target = shard_dir / name
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    with pytest.raises(ShardError, match=re.escape(name)):
        _read_everything(shard_dir)


@pytest.mark.parametrize("role", ["partition", "container"])
def test_missing_file_is_refused_naming_it(shard_dir, role):
    name = _role_file(shard_dir, role)
    (shard_dir / name).unlink()
    with pytest.raises(ShardError, match=re.escape(name) + ": cannot read"):
        _read_everything(shard_dir)


def test_every_listed_file_is_checked(shard_dir):
    names = open_shard(shard_dir).files
    assert len(names) > 10
    for name in names:
        copy = shard_dir.parent / "copy"
        shutil.copytree(shard_dir, copy)
        (copy / name).write_bytes((copy / name).read_bytes() + b"\0")
        with pytest.raises(ShardError, match=name):
            _read_everything(copy)
        shutil.rmtree(copy)


def test_other_model_is_refused(built, shard_dir, model, tmp_path):
    other = tmp_path / "model"
    shutil.copytree(MODEL, other)
    manifest = json.loads((other / "model.json").read_text())
    manifest["id"] = "another-model"
    (other / "model.json").write_text(json.dumps(manifest))
    with pytest.raises(ShardError, match="manifest.json: built with model minilm"):
        open_shard(shard_dir, load_model(other))


@pytest.mark.parametrize(
    ("format", "message"),
    [
        (1, "shard format 1, this cellar reads format 3: index the archive again"),
        ("3", "damaged, its format is '3', not a number"),
        (True, "damaged, its format is True, not a number"),
    ],
)
def test_other_format_is_refused(shard_dir, format, message):
    manifest = json.loads((shard_dir / MANIFEST).read_text())
    manifest["format"] = format
    (shard_dir / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ShardError, match=message):
        open_shard(shard_dir)


def test_missing_shard_is_refused(tmp_path):
    with pytest.raises(ShardError, match="manifest.json: missing"):
        open_shard(tmp_path)


def test_an_archive_that_gives_no_chunk_names_the_files_and_why(tmp_path, model):
    """The error of an archive with nothing to index says what became of each file, so that the
    user knows which file to look at (an empty notebook, an empty report): not only that
    nothing came of them."""
    (tmp_path / "calc.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    (tmp_path / "report.md").write_text("")
    with pytest.raises(ValueError) as raised:
        build_index_from_directory(tmp_path, model)
    message = str(raised.value)
    assert message.startswith("nothing to index: no chunk records in 2 file(s)")
    assert "calc.ipynb: nothing to index: it holds no text" in message
    assert "report.md: nothing to index: it holds no text" in message


def test_build_index_rejects_no_records_and_unknown_status(model):
    with pytest.raises(ValueError, match="no chunk records"):
        build_index([], model)
    record = {
        "id": "a",
        "kind": "text",
        "path": "a.txt",
        "cell": None,
        "output": None,
        "revision": "r",
        "quote": "x",
        "start": 0,
        "end": 1,
        "text": "x",
        "meta": {},
    }
    with pytest.raises(ValueError, match="unknown status"):
        build_index([record], model, renders={"a.txt": Render("broken")})

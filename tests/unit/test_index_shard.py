"""cellar.retrieval.index and cellar.retrieval.shard: an index built from chunk records survives a trip through a
shard directory, and a damaged or mismatched shard is refused with an error naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.index import Render, build_index, build_index_from_directory
from cellar.retrieval.shard import MANIFEST, Shard, ShardError, open_shard, shard_files, write_shard

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
        rows = index.chunks[entry["start"] : entry["end"]]
        assert {record["path"] for record in rows} == {entry["path"]}
        assert np.all(index.chunk_notebook[entry["start"] : entry["end"]] == n)
        assert entry["status"] == "unchecked" and entry["rendered"] is None and entry["title"]
    assert index.notebooks[-1]["end"] == index.n_chunks
    assert index.vectors.dtype == np.int8 and index.scales.dtype == np.float32


def test_shard_round_trip(built, shard_dir, model):
    shard = open_shard(shard_dir, model)
    index = built.index
    assert shard.index.notebooks == json.loads(json.dumps(index.notebooks))
    assert shard.index.bm25.terms == index.bm25.terms
    np.testing.assert_array_equal(shard.index.vectors, index.vectors)
    np.testing.assert_array_equal(shard.index.chunk_kind, index.chunk_kind)
    np.testing.assert_array_equal(shard.index.bm25.score(["ballast"]), index.bm25.score(["ballast"]))
    for n in range(len(index.notebooks)):
        assert shard.fragment(n) == [json.loads(json.dumps(r)) for r in index.notebook_chunks(n)]
    manifest = shard.manifest
    assert manifest["model"] == {"id": model.id, "sha256": model.sha256}
    assert manifest["counts"]["chunks"] == index.n_chunks
    on_disk = {p.relative_to(shard_dir).as_posix() for p in shard_dir.rglob("*") if p.is_file()}
    assert on_disk == set(manifest["files"]) | {MANIFEST}
    assert all(name.endswith((".npy", ".json")) for name in on_disk)


def test_shard_opens_from_bytes(built):
    files = shard_files(built.index)
    shard = Shard(files.__getitem__, "memory")
    assert shard.fragment(0)[0]["id"] == built.index.chunks[0]["id"]


@pytest.mark.parametrize(
    "name", ["manifest.json", "vectors.npy", "bm25_data.npy", "chunk_cell.npy", "fragments/0.json"]
)
def test_flipped_byte_is_refused_naming_the_file(shard_dir, name):
    target = shard_dir / name
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    with pytest.raises(ShardError, match=name.replace(".", r"\.")):
        shard = open_shard(shard_dir)
        shard.fragment(0)


def test_every_listed_file_is_checked(shard_dir):
    names = json.loads((shard_dir / MANIFEST).read_text())["files"]
    assert len(names) > 10
    for name in names:
        copy = shard_dir.parent / "copy"
        shutil.copytree(shard_dir, copy)
        (copy / name).write_bytes((copy / name).read_bytes() + b"\0")
        with pytest.raises(ShardError, match=name):
            shard = open_shard(copy)
            shard.fragment(int(name.split("/")[1].split(".")[0]) if name.startswith("fragments/") else 0)
        shutil.rmtree(copy)


def test_other_model_is_refused(built, shard_dir, model, tmp_path):
    other = tmp_path / "model"
    shutil.copytree(MODEL, other)
    manifest = json.loads((other / "model.json").read_text())
    manifest["id"] = "another-model"
    (other / "model.json").write_text(json.dumps(manifest))
    with pytest.raises(ShardError, match="manifest.json: built with model minilm"):
        open_shard(shard_dir, load_model(other))


def test_other_format_is_refused(shard_dir):
    manifest = json.loads((shard_dir / MANIFEST).read_text())
    manifest["format"] = 99
    (shard_dir / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ShardError, match="format 99"):
        open_shard(shard_dir)


def test_missing_shard_is_refused(tmp_path):
    with pytest.raises(ShardError, match="manifest.json: missing"):
        open_shard(tmp_path)


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

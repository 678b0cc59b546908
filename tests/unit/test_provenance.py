"""cellar.ingest.provenance: revisions are SHA-256 of exact bytes; snapshots keep text as given."""

import hashlib

import pytest

from cellar.ingest.provenance import file_revision, revision, snapshot, snapshots


def test_revision_of_text_is_sha256_of_its_utf8_bytes():
    text = "Ballastwater: 1284.6 m³ achter\r\n"
    assert revision(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_revision_of_bytes_is_taken_as_is():
    assert revision(b"\xff\x00") == hashlib.sha256(b"\xff\x00").hexdigest()


@pytest.mark.parametrize("other", ["abc ", "ABC", "abc\n", "abc\r\n", "a\u0301bc"])
def test_revision_does_not_normalise(other):
    assert revision(other) != revision("abc")


def test_lone_surrogate_is_a_value_error():
    with pytest.raises(ValueError, match="UTF-8"):
        revision("half a pair: \ud800")


def test_file_revision_matches_text_revision(tmp_path):
    path = tmp_path / "tanks.csv"
    path.write_bytes(b"tank,volume\naft,1284.6\n")
    assert file_revision(path) == revision("tank,volume\naft,1284.6\n")


def test_snapshot_keeps_text_unstripped_and_adds_revision():
    record = {"id": "tanks-17042", "title": "Tanks", "text": "  aft 1284.6  \n"}
    doc = snapshot(record)
    assert doc == {**record, "revision": revision("  aft 1284.6  \n")}
    assert doc is not record


@pytest.mark.parametrize(
    "record, message",
    [
        ({"id": "a b", "title": "t", "text": "x"}, "must match"),
        ({"id": "x" * 41, "title": "t", "text": "x"}, "must match"),
        ({"id": "ok", "title": "   ", "text": "x"}, "title is empty"),
        ({"id": "ok", "title": "t", "text": "\n\t"}, "text is empty"),
        ({"id": "ok", "title": "t"}, "missing text"),
        ({"id": "ok", "title": 3, "text": "x"}, "title must be a str"),
    ],
)
def test_bad_snapshots_are_value_errors(record, message):
    with pytest.raises(ValueError, match=message):
        snapshot(record)


def test_snapshot_ids_are_unique_within_a_batch():
    docs = [{"id": "a", "title": "t", "text": "x"}, {"id": "a", "title": "u", "text": "y"}]
    with pytest.raises(ValueError, match="more than once"):
        snapshots(docs)

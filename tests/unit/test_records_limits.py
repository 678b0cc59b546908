"""What a records file's notes may carry, and the glossary's size: bounded, each past its limit
with a warning or an error naming the file (the cases of the second hostile-input audit).

A records CSV inside every earlier limit (1,000 columns named with 500 characters, 2,000 notes:
4.4 MB) took `cellar chunk` 31 s and 6.3 GB and wrote 2 GB: every note held its own copies of
every column name, and every chunk carried all of its note's fields. A 24 MB glossary made a
24.5 MB shard manifest. Control characters in an id or a column name, an id of NaN, and a key
given twice on a JSON Lines line were read without a word.
"""

from __future__ import annotations

import json
import shutil
import tracemalloc
import warnings
from pathlib import Path

import pytest
from tests.unit.conftest import deadline

from cellar.cli import main
from cellar.ingest.chunking import chunk_document
from cellar.ingest.discovery import FileRefused
from cellar.ingest.documents import notes
from cellar.ingest.documents.extract import extract
from cellar.ingest.notebook import NotebookWarning
from cellar.retrieval import analysis

GOOD = Path(__file__).resolve().parents[1] / "fixtures" / "notebooks" / "ballast_v4.ipynb"


@pytest.fixture()
def archive(tmp_path: Path) -> Path:
    folder = tmp_path / "archive"
    folder.mkdir()
    shutil.copy(GOOD, folder / "good.ipynb")
    return folder


def wide_csv(columns: int, name_chars: int, rows: int, value: str = "1") -> bytes:
    """A records CSV of `columns` structured columns named with `name_chars` characters each."""
    names = [f"{i:04d}".ljust(name_chars, "c") for i in range(columns)]
    row = ",".join([value] * columns)
    return ("id,text," + ",".join(names) + "\n" + "".join(f"N{i},t,{row}\n" for i in range(rows))).encode()


def field_chars(fields: dict[str, str]) -> int:
    """A note's fields as it is searched by them: `name: value; `."""
    return sum(len(key) + len(value) + 4 for key, value in fields.items())


# -- 1. what a note carries ------------------------------------------------------------------------


def test_the_audits_wide_csv_is_read_with_bounded_fields_a_note_and_a_warning():
    """998 columns named with 500 characters: each note keeps its first fields, up to the limit."""
    data = wide_csv(998, 500, 40)
    with deadline(60), pytest.warns(NotebookWarning) as caught:
        chunked = chunk_document(data, "archive/s.records.csv")
    assert len(chunked.chunks) == 40
    for chunk in chunked.chunks:
        assert 0 < field_chars(chunk.meta["fields"]) <= notes.MAX_NOTE_FIELD_CHARS
        assert len(chunk.text) < 2 * notes.MAX_NOTE_FIELD_CHARS
    first = list(chunked.chunks[0].meta["fields"])
    assert first == [f"{i:04d}".ljust(500, "c") for i in range(len(first))]  # the first columns, in order
    messages = [str(warning.message) for warning in caught]
    assert messages == [
        f"archive/s.records.csv: 40 note(s) have fields of more than {notes.MAX_NOTE_FIELD_CHARS:,} characters "
        "(as `name: value; `), the first on line 2: each keeps its first fields up to that"
    ]


def test_a_note_at_the_limit_keeps_every_field_without_a_warning():
    # 8 fields of a 495-character name and a 1-character value, as `name: value; `: 4,000 exactly
    assert notes.MAX_NOTE_FIELD_CHARS == 4_000
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        doc = extract(wide_csv(8, 495, 3), "n.records.csv")
    assert [field_chars(dict(block.fields)) for block in doc.blocks] == [4_000] * 3


def test_every_note_shares_one_key_object_per_column():
    """A note's fields hold its file's keys, never a copy of the column name a note (1,000 names of
    500 characters were half a megabyte a note)."""
    csv_doc = extract(b"id,text,Machine,fault_code\nA,x,T1,E1\nB,y,T2,E2\n", "n.records.csv")
    jsonl = b"".join(json.dumps({"id": n, "text": "x", "Machine": n, "fault_code": "E"}).encode() + b"\n" for n in "AB")
    jsonl_doc = extract(jsonl, "n.records.jsonl")
    for doc in (csv_doc, jsonl_doc):
        first, second = (list(block.fields) for block in doc.blocks)
        assert first == second == ["machine", "fault_code"]
        assert all(a is b for a, b in zip(first, second))


def test_a_files_fields_are_read_up_to_the_file_limit_with_a_warning(monkeypatch):
    monkeypatch.setattr(notes, "MAX_FILE_FIELD_CHARS", 30)
    data = b"id,text,machine\nA,x,T1\nB,y,T2\nC,z,T3\nD,w,T4\n"  # `machine: T1; `: 13 characters a note
    with pytest.warns(NotebookWarning) as caught:
        doc = extract(data, "archive/n.records.csv")
    assert [block.citation for block in doc.blocks] == ["A", "B"]
    assert [str(warning.message) for warning in caught] == [
        "archive/n.records.csv: the notes' fields pass 30 characters (as `name: value; `) by the note on line 4; "
        "it and the notes after it are not indexed"
    ]


def test_the_file_limit_bounds_a_long_file_of_notes_each_at_the_note_limit():
    """200,000 notes (MAX_NOTES) of 4,000 characters of fields would still be 800 million (and
    42 MB of one-character cells at 40 million took `cellar chunk` 2.9 GB)."""
    assert notes.MAX_FILE_FIELD_CHARS // notes.MAX_NOTE_FIELD_CHARS <= 10_000


def test_a_csv_is_read_a_row_at_a_time():
    """A row of 1,000 empty cells is a dict of 1,000 entries: 100,000 of them (a 100 MB file)
    held at once were 3.6 GB. 3,000 rows: some 110 MB held at once, a few MB a row at a time."""
    data = (
        b"id,text,"
        + b",".join(b"c%d" % i for i in range(998))
        + b"\n"
        + b"".join(b"N%d,t" % i + b"," * 998 + b"\n" for i in range(3_000))
    )
    tracemalloc.start()
    try:
        with deadline(60):
            doc = extract(data, "n.records.csv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(doc.blocks) == 3_000
    assert peak < 40e6, f"{peak / 1e6:.0f} MB at the peak"


# -- 2. the glossary -------------------------------------------------------------------------------


def test_a_glossary_of_too_many_entries_is_an_error_naming_it(archive, tmp_path, capsys):
    """A 24 MB glossary (100,000 entries) was copied whole into the shard's manifest: 24.5 MB
    that every search and every page reads at boot."""
    glossary = {f"ab{n}": f"expansion word{n} pump" for n in range(analysis.MAX_GLOSSARY_ENTRIES + 1)}
    (archive / "glossary.json").write_text(json.dumps(glossary))
    assert main(["index", str(archive), "--out", str(tmp_path / "shard"), "--no-cache"]) == 2
    assert capsys.readouterr().err == (
        f"cellar index: {archive / 'glossary.json'}: a glossary of 5,001 entries, over the limit of 5,000: "
        "it is copied into the shard manifest every search reads\n"
    )
    assert not (tmp_path / "shard").exists()


def test_a_glossary_that_gives_an_abbreviation_twice_is_an_error_naming_it(archive, tmp_path, capsys):
    """JSON keeps the last of two equal keys silently: `HP` read as heat pump alone, though the
    glossary says high pressure too. Which one the writer meant only the writer knows."""
    (archive / "glossary.json").write_text('{"HP": "high pressure", "LO": "lube oil", "HP": "heat pump"}')
    assert main(["index", str(archive), "--out", str(tmp_path / "shard"), "--no-cache"]) == 2
    assert capsys.readouterr().err == (
        f"cellar index: {archive / 'glossary.json'}: not valid JSON (the key 'HP' is given twice in one object)\n"
    )
    assert not (tmp_path / "shard").exists()


def test_a_glossary_at_the_limit_gives_a_manifest_of_at_most_a_few_mb(archive, tmp_path):
    wide = "x" * (analysis.MAX_GLOSSARY_CHARS - 6)
    glossary = {
        f"k{n:05d}{wide}": "bearing " * (analysis.MAX_GLOSSARY_CHARS // 8) for n in range(analysis.MAX_GLOSSARY_ENTRIES)
    }
    (archive / "glossary.json").write_text(json.dumps(glossary))
    assert main(["index", str(archive), "--out", str(tmp_path / "shard"), "--no-cache"]) == 0
    assert (tmp_path / "shard" / "manifest.json").stat().st_size < 2.2e6


# -- 3. control characters, NaN, a key twice -------------------------------------------------------
# (each refused, naming the file: cases of test_documents.py's test of malformed files)


def test_what_is_still_read_as_before():
    """A tab, spaces or a CR around an id or a name are trimmed as before; a control character in
    the text is the note's own words, quoted as written; a finite number is an id; a key twice in
    different case is the columns' clash it was."""
    doc = extract(b"id,text,\tMachine \nA\t,brg\x07 hot,T1\n", "n.records.csv")
    assert [(block.citation, dict(block.fields)) for block in doc.blocks] == [("A", {"machine": "T1"})]
    assert doc.text == "brg\x07 hot"
    assert [block.citation for block in extract(b'{"id": 1.5, "text": "x"}\n', "n.records.jsonl").blocks] == ["1.5"]
    with pytest.raises(FileRefused, match="two columns are named 'text'"):
        extract(b'{"id": "A", "text": "x", "Text": "y"}\n', "n.records.jsonl")


def test_a_batch_goes_on_past_the_bad_records_files(tmp_path, capsys):
    (tmp_path / "a.records.jsonl").write_bytes(b'{"id": NaN, "text": "y"}\n')
    (tmp_path / "b.records.jsonl").write_bytes(b'{"id": "1", "text": "x", "text": "y"}\n')
    (tmp_path / "c.records.csv").write_bytes(b"id,text\nA\x00,x\n")
    (tmp_path / "d.records.csv").write_bytes(wide_csv(998, 500, 3))
    (tmp_path / "ok.records.csv").write_bytes(b"id,text,machine\nA1,brg noise,T1\n")
    assert main(["chunk", str(tmp_path), "--jsonl"]) == 1
    out, err = capsys.readouterr()
    assert sorted({json.loads(line)["path"] for line in out.splitlines()}) == ["d.records.csv", "ok.records.csv"]
    assert "a.records.jsonl: the note on line 1 has NaN for its id: not a finite number" in err
    assert "b.records.jsonl: line 1: the key 'text' appears twice in one object" in err
    assert "c.records.csv: the note on line 2 has an id with a control character" in err
    assert "d.records.csv: 3 note(s) have fields of more than 4,000 characters" in err
    assert "cellar chunk: 2 files read, 3 rejected" in err

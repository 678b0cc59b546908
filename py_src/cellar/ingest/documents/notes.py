"""Records: service notes as CSV or JSON Lines, one block per note.

A records file has an id column (`id` or `note_id`), a free-text column (`text`, `description`
or `remarks`) and any structured fields (fault code, machine id, date, customer, ...). Each note
is one block, cited by its id (`T2-2017-04411`); its quote is the free text exactly as written
(abbreviations and all); its fields are kept as they are. The glossary of the index's analyser
expands the abbreviations for search (`cellar.retrieval.analysis`), so `brg` finds `bearing`
while the quote still shows `brg`.

Each note is also an index entry of its own (`Block.entry`), carrying its fields as entry-level
metadata: the filters that select notebooks by project or year select notes by machine or fault
code the same way, from the notebooks table, without fetching any chunk.

A file without the id or text column, a note without an id, or an id used twice is refused with
the file's name and the problem: a citation must name exactly one note. So is an id or a column
name holding a control character (an id `A` and a NUL prints as `A`), an id that is no finite
number (`NaN`), and a JSON Lines object that has a key twice (json keeps the last value).

What a note carries is bounded: every chunk of a note repeats its fields, and its index entry
stores them, so a note keeps its first fields up to MAX_NOTE_FIELD_CHARS, and a file's notes are
read up to MAX_FILE_FIELD_CHARS of fields, each with a warning. Every note shares its file's one
key object per column, never a copy of the name.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from cellar.ingest.discovery import MAX_FILE_BYTES, FileRefused
from cellar.ingest.documents.blocks import Block, Extracted, joined, refuse_lone_surrogates, utf8_text

# The csv module refuses a field past 131,072 characters, and with it the whole file; a note may
# be as long as its file (its text is cut where any document's is, with a warning).
csv.field_size_limit(MAX_FILE_BYTES)

# A records file's notes are index entries each, and a field a value a filter selects on: past
# these, a file's notes and a field's characters are left out with a warning (a JSON Lines file
# of 30 million lines had taken 2.4 GB to be refused, and a 10 MB field was searched with every
# chunk of its note).
MAX_NOTES = 200_000
MAX_FIELD_CHARS = 500
# A service log has tens of columns; a header of 200,000 (1.2 MB) or one name of 1 MB, read into
# every note's fields, took minutes: refused, as is a column name longer than a field's value.
MAX_COLUMNS = 1_000
# A note's fields, each counted as the note is searched by it, `name: value; `: the 4 characters
# besides its name and value charge every field for what it costs whatever its length. Every chunk
# of a note carries its fields, and its entry stores them: 1,000 columns named with 500 characters
# made each note 500,000 characters, and 2,000 notes (a 4.4 MB CSV) took `cellar chunk` 6.3 GB and
# wrote 2 GB. A service note has a few dozen short fields (the demo's: 4 fields, 84 characters);
# 4,000 is 40 fields of 100, or 7 of the longest value a field keeps. Past it, a note keeps its
# first fields.
FIELD_SEPARATORS = 4
MAX_NOTE_FIELD_CHARS = 4_000
# The same over a file's notes: 200,000 notes (MAX_NOTES) of 4,000 would still be 800 million
# characters, from a file of a few MB (every note repeats the header's names); and 42 MB of
# one-character cells, read up to 40 million characters of names and values alone, took 2.9 GB.
# 20 million is some 25,000 notes of three dozen fields, ten times the text a file is indexed up to
# (chunking.MAX_TEXT_CHARS); past it, the notes that follow are not read.
MAX_FILE_FIELD_CHARS = 20_000_000
# A note's text: a service note is a few lines. A note of 10 MB (a pasted log) took the whole text a
# file is indexed up to (chunking.MAX_TEXT_CHARS), and every note after it was lost; past this, a
# note keeps its first characters, with a warning, and the notes after it are read.
MAX_NOTE_TEXT_CHARS = 100_000
ID_COLUMNS = ("id", "note_id")
TEXT_COLUMNS = ("text", "description", "remarks")
YEAR = re.compile(r"(?:19|20)\d\d")
# C0, DEL and C1: invisible or rewriting in a citation, a terminal, a filter's select
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def records_from_csv(data: bytes, path: str) -> Extracted:
    """The notes of a CSV file with a header row. Read strictly: a quote left open would make
    one note of every line up to the next quote, losing those notes without a word."""
    text = utf8_text(data, path)
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        header = _checked_columns(reader.fieldnames or [], path)
        # read a row at a time: 100,000 rows of 1,000 empty cells held at once were 3.6 GB of dicts
        return _notes(path, header, ((reader.line_num, row) for row in _first_notes(reader, path)), "csv")
    except csv.Error as error:
        # line_num counts the lines of the records read whole: the broken one starts on the next
        where = f"the record that starts on line {reader.line_num + 1}"
        raise FileRefused(path, f"not a readable CSV file ({where}: {error})") from None


def records_from_jsonl(data: bytes, path: str) -> Extracted:
    """The notes of a JSON Lines file: one object per line."""
    rows: list[tuple[int, Mapping[str, Any]]] = []
    header: dict[str, None] = {}
    # Lines end at "\n" alone (a "\r" before it dropped): JSON Lines' own rule. `splitlines`
    # also splits at U+2028, U+2029, U+0085 and others, which JSON allows unescaped in a string.
    lines = ((number, line) for number, line in enumerate(_lines(utf8_text(data, path)), 1) if line.strip())
    keys: dict[str, str] = {}  # one object per key, shared by every line's row
    for number, line in _first_notes(lines, path):
        line = line.removesuffix("\r")
        try:
            row = json.loads(line, object_pairs_hook=lambda pairs: _object(pairs, keys))
        except _KeyTwice as error:
            raise FileRefused(path, f"line {number}: {error}: one of its values would be lost") from None
        except ValueError as error:
            raise FileRefused(path, f"line {number} is not JSON ({error})") from None
        except RecursionError:
            raise FileRefused(path, f"line {number}: JSON nested too deeply for this reader") from None
        if not isinstance(row, dict):
            raise FileRefused(path, f"line {number} is not a JSON object")
        refuse_lone_surrogates(row, line, path, f"line {number}: ")
        if row.keys() - header.keys():
            header.update(dict.fromkeys(row))
            _checked_columns(header, path, f" by line {number}")
        rows.append((number, row))
    return _notes(path, list(header), rows, "jsonl")


class _KeyTwice(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]], keys: dict[str, str]) -> dict[str, Any]:
    """A JSON object whose keys are ``keys``' objects; _KeyTwice for a key it has twice (json
    would keep the last value without a word)."""
    row = {keys.setdefault(key, key): value for key, value in pairs}
    if len(row) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _KeyTwice(f"the key {key[:60]!r} appears twice in one object")
            seen.add(key)
    return row


def _lines(text: str) -> Iterator[str]:
    """`text`'s lines, one at a time (split at once, 30 million short lines took 2 GB)."""
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        yield text[start:end]
        start = end + 1


def _first_notes(rows: Iterator[Any], path: str) -> Iterator[Any]:
    """The first MAX_NOTES of ``rows`` (a CSV's rows, a JSON Lines file's lines), taken one at a
    time: what follows is never read, with a warning."""
    for number, row in enumerate(rows):
        if number == MAX_NOTES:
            _warn(f"{path}: more than {MAX_NOTES:,} notes; only the first {MAX_NOTES:,} are indexed")
            return
        yield row


def _checked_columns(header: Sequence[str] | Mapping[str, None], path: str, where: str = "") -> Sequence[str]:
    """``header`` when it has at most MAX_COLUMNS names of at most MAX_FIELD_CHARS each; else a
    FileRefused (``where``: the JSON Lines line that took it past)."""
    if len(header) > MAX_COLUMNS:
        raise FileRefused(path, f"more than {MAX_COLUMNS:,} columns{where}, refused: a records file has tens")
    if long := next((name for name in header if isinstance(name, str) and len(name) > MAX_FIELD_CHARS), None):
        raise FileRefused(
            path, f"a column name of {len(long):,} characters{where}, over the limit of {MAX_FIELD_CHARS:,}"
        )
    for name in header:
        if isinstance(name, str) and (control := CONTROL.search(name.strip())):
            raise FileRefused(
                path,
                f"a column name with a control character ({control[0]!r}){where or ' in the header (line 1)'}: "
                f"{name[:60]!r}, refused: a filter could not show it",
            )
    return list(header)


def _warn(message: str) -> None:
    from cellar.ingest.notebook import NotebookWarning

    warnings.warn(message, NotebookWarning, stacklevel=3)


def _column(header: Iterable[str], names: tuple[str, ...]) -> str | None:
    lowered = {name.strip().lower(): name for name in header if isinstance(name, str)}
    return next((lowered[name] for name in names if name in lowered), None)


def _notes(path: str, header: Sequence[str], rows: Iterable[tuple[int, Mapping[str, Any]]], fmt: str) -> Extracted:
    id_column, text_column = _column(header, ID_COLUMNS), _column(header, TEXT_COLUMNS)
    if id_column is None or text_column is None:
        missing = " and ".join(
            f"{what} column ({' or '.join(names)})"
            for what, names, found in (("an id", ID_COLUMNS, id_column), ("a text", TEXT_COLUMNS, text_column))
            if found is None
        )
        raise FileRefused(
            path, f"not a records file: {missing} is needed; its columns are {', '.join(map(str, header)) or 'none'}"
        )
    names = [name.strip().lower() for name in header if isinstance(name, str)]
    if clash := next((name for name in names if names.count(name) > 1), None):
        raise FileRefused(path, f"two columns are named {clash!r} (case and spaces aside): a field would be lost")
    # each column's key, one object every note's fields share (not a copy of the name a note)
    keys = {name: sys.intern(name.strip().lower()) for name in header if isinstance(name, str)}
    seen: dict[str, int] = {}
    notes = []
    left = MAX_FILE_FIELD_CHARS  # the file's fields still to be read
    cut, first_cut = 0, 0  # the notes whose fields were cut, the first one's line
    cut_texts, first_cut_text = 0, 0  # the same for their texts
    long: list[str] = []  # fields cut to MAX_FIELD_CHARS: told after the notes (read a row at a time)
    for line, row in rows:
        if None in row:  # csv.DictReader's key for the cells past the header's
            raise FileRefused(path, f"the note on line {line} has more cells than the header has columns")
        raw_id = row.get(id_column)
        if isinstance(raw_id, float) and not math.isfinite(raw_id):  # json reads NaN, Infinity, 1e999
            raise FileRefused(
                path, f"the note on line {line} has {json.dumps(raw_id)} for its {id_column}: not a finite number"
            )
        note_id = _value(raw_id, path, line)
        if not note_id:
            raise FileRefused(path, f"the note on line {line} has no {id_column}")
        if len(note_id) > MAX_FIELD_CHARS:  # its citation: read aloud, repeated in its block
            raise FileRefused(
                path,
                f"the note on line {line} has an {id_column} of {len(note_id):,} characters, over {MAX_FIELD_CHARS:,}",
            )
        if control := CONTROL.search(note_id):
            raise FileRefused(
                path,
                f"the note on line {line} has an {id_column} with a control character ({control[0]!r}): "
                f"{note_id[:60]!r}, refused: a citation must print as it is",
            )
        if note_id in seen:
            raise FileRefused(path, f"note {note_id} appears twice (lines {seen[note_id]} and {line})")
        seen[note_id] = line
        text = row.get(text_column)
        if text is not None and not isinstance(text, str):
            raise FileRefused(path, f"the note on line {line}: its {text_column} is not text but {_json_type(text)}")
        fields, size, whole = _fields(row, keys, (id_column, text_column), path, line, long)
        if size > left:
            _warn(
                f"{path}: the notes' fields pass {MAX_FILE_FIELD_CHARS:,} characters (as `name: value; `) "
                f"by the note on line {line}; it and the notes after it are not indexed"
            )
            break
        left -= size
        if not whole:
            cut, first_cut = cut + 1, first_cut or line
        body = (text or "").strip()
        if len(body) > MAX_NOTE_TEXT_CHARS:
            body = body[:MAX_NOTE_TEXT_CHARS]
            cut_texts, first_cut_text = cut_texts + 1, first_cut_text or line
        notes.append((note_id, body, fields))
    for message in long:
        _warn(message)
    if cut:
        _warn(
            f"{path}: {cut:,} note(s) have fields of more than {MAX_NOTE_FIELD_CHARS:,} characters (as "
            f"`name: value; `), the first on line {first_cut}: each keeps its first fields up to that"
        )
    if cut_texts:
        _warn(
            f"{path}: {cut_texts:,} note(s) have a {text_column} of more than {MAX_NOTE_TEXT_CHARS:,} characters, the "
            f"first on line {first_cut_text}: each keeps its first {MAX_NOTE_TEXT_CHARS:,}"
        )
    if not notes:
        raise FileRefused(path, "a records file without any note")
    text, spans = joined(("", body) for _, body, _ in notes)
    blocks = tuple(
        Block("record", start, end, (), note_id, fields, entry=note_id)
        for (note_id, _, fields), (start, end) in zip(notes, spans)
    )
    return Extracted(text, blocks, "records", fmt)


def _fields(
    row: Mapping[str, Any], keys: Mapping[str, str], skip: tuple[str, str], path: str, line: int, long: list[str]
) -> tuple[dict[str, str], int, bool]:
    """A note's fields under their columns' shared keys, the first up to MAX_NOTE_FIELD_CHARS
    (`name: value; `), their characters and whether they are all of them. Every cell is checked,
    kept or not, so that a file is refused or read whatever the limit."""
    fields: dict[str, str] = {}
    size, whole = 0, True
    for key, raw in row.items():
        if not isinstance(key, str) or key in skip or not (value := _value(raw, path, line)):
            continue
        name = keys[key]
        if not name:  # a filter has no name to show it by (an empty column of a trailing comma is fine)
            raise FileRefused(path, f"the note on line {line} has a value in a column without a name")
        if len(value) > MAX_FIELD_CHARS:
            long.append(
                f"{path}: the note on line {line}: its {key.strip()} has {len(value):,} characters; "
                f"the first {MAX_FIELD_CHARS} are kept"
            )
            value = value[:MAX_FIELD_CHARS]
        chars = len(name) + len(value) + FIELD_SEPARATORS
        whole = whole and size + chars <= MAX_NOTE_FIELD_CHARS
        if whole:
            fields[name] = value
            size += chars
    return fields, size, whole


def _value(raw: Any, path: str, line: int) -> str:
    """A field's value as text (a JSON number or boolean as written in JSON); an array or an
    object is no field a filter can select on, and is refused."""
    if raw is None:
        return ""
    if isinstance(raw, (list, dict)):
        raise FileRefused(path, f"the note on line {line} has a field that is {_json_type(raw)}, not a value")
    return (raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)).strip()


def _json_type(value: Any) -> str:
    return {list: "an array", dict: "an object", bool: "a boolean"}.get(type(value), "a number")


def record_year(fields: Mapping[str, str]) -> int | None:
    """The year of a note, from its `date` or `year` field, for the year filter."""
    for key in ("date", "year"):
        match = YEAR.match(fields.get(key, ""))
        if match:
            return int(match[0])
    return None

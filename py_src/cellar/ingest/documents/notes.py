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
the file's name and the problem: a citation must name exactly one note.
"""

from __future__ import annotations

import csv
import io
import json
import re
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
ID_COLUMNS = ("id", "note_id")
TEXT_COLUMNS = ("text", "description", "remarks")
YEAR = re.compile(r"(?:19|20)\d\d")


def records_from_csv(data: bytes, path: str) -> Extracted:
    """The notes of a CSV file with a header row. Read strictly: a quote left open would make
    one note of every line up to the next quote, losing those notes without a word."""
    text = utf8_text(data, path)
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        header = _checked_columns(reader.fieldnames or [], path)
        rows = [(reader.line_num, row) for row in _first_notes(reader, path)]
    except csv.Error as error:
        # line_num counts the lines of the records read whole: the broken one starts on the next
        where = f"the record that starts on line {reader.line_num + 1}"
        raise FileRefused(path, f"not a readable CSV file ({where}: {error})") from None
    return _notes(path, header, rows, "csv")


def records_from_jsonl(data: bytes, path: str) -> Extracted:
    """The notes of a JSON Lines file: one object per line."""
    rows: list[tuple[int, Mapping[str, Any]]] = []
    header: dict[str, None] = {}
    # Lines end at "\n" alone (a "\r" before it dropped): JSON Lines' own rule. `splitlines`
    # also splits at U+2028, U+2029, U+0085 and others, which JSON allows unescaped in a string.
    lines = ((number, line) for number, line in enumerate(_lines(utf8_text(data, path)), 1) if line.strip())
    for number, line in _first_notes(lines, path):
        line = line.removesuffix("\r")
        try:
            row = json.loads(line)
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
    return list(header)


def _warn(message: str) -> None:
    from cellar.ingest.notebook import NotebookWarning

    warnings.warn(message, NotebookWarning, stacklevel=3)


def _column(header: Iterable[str], names: tuple[str, ...]) -> str | None:
    lowered = {name.strip().lower(): name for name in header if isinstance(name, str)}
    return next((lowered[name] for name in names if name in lowered), None)


def _notes(path: str, header: Sequence[str], rows: Sequence[tuple[int, Mapping[str, Any]]], fmt: str) -> Extracted:
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
    seen: dict[str, int] = {}
    notes = []
    for line, row in rows:
        if None in row:  # csv.DictReader's key for the cells past the header's
            raise FileRefused(path, f"the note on line {line} has more cells than the header has columns")
        note_id = _value(row.get(id_column), path, line)
        if not note_id:
            raise FileRefused(path, f"the note on line {line} has no {id_column}")
        if len(note_id) > MAX_FIELD_CHARS:  # its citation: read aloud, repeated in its block
            raise FileRefused(
                path,
                f"the note on line {line} has an {id_column} of {len(note_id):,} characters, over {MAX_FIELD_CHARS:,}",
            )
        if note_id in seen:
            raise FileRefused(path, f"note {note_id} appears twice (lines {seen[note_id]} and {line})")
        seen[note_id] = line
        text = row.get(text_column)
        if text is not None and not isinstance(text, str):
            raise FileRefused(path, f"the note on line {line}: its {text_column} is not text but {_json_type(text)}")
        fields = {
            key.strip().lower(): _bounded(value, path, line, key)
            for key, raw in row.items()
            if isinstance(key, str) and key not in (id_column, text_column) and (value := _value(raw, path, line))
        }
        if "" in fields:  # a filter has no name to show it by (an empty column of a trailing comma is fine)
            raise FileRefused(path, f"the note on line {line} has a value in a column without a name")
        notes.append((note_id, (text or "").strip(), fields))
    if not notes:
        raise FileRefused(path, "a records file without any note")
    text, spans = joined(("", body) for _, body, _ in notes)
    blocks = tuple(
        Block("record", start, end, (), note_id, fields, entry=note_id)
        for (note_id, _, fields), (start, end) in zip(notes, spans)
    )
    return Extracted(text, blocks, "records", fmt)


def _value(raw: Any, path: str, line: int) -> str:
    """A field's value as text (a JSON number or boolean as written in JSON); an array or an
    object is no field a filter can select on, and is refused."""
    if raw is None:
        return ""
    if isinstance(raw, (list, dict)):
        raise FileRefused(path, f"the note on line {line} has a field that is {_json_type(raw)}, not a value")
    return (raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)).strip()


def _bounded(value: str, path: str, line: int, key: str) -> str:
    if len(value) <= MAX_FIELD_CHARS:
        return value
    _warn(
        f"{path}: the note on line {line}: its {key.strip()} has {len(value):,} characters; the first {MAX_FIELD_CHARS} are kept"
    )
    return value[:MAX_FIELD_CHARS]


def _json_type(value: Any) -> str:
    return {list: "an array", dict: "an object", bool: "a boolean"}.get(type(value), "a number")


def record_year(fields: Mapping[str, str]) -> int | None:
    """The year of a note, from its `date` or `year` field, for the year filter."""
    for key in ("date", "year"):
        match = YEAR.match(fields.get(key, ""))
        if match:
            return int(match[0])
    return None

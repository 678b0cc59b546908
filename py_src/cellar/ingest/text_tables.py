"""Text tables: pandas' fixed-width repr of a DataFrame or Series read back into a `Table`.

In: the `text/plain` of an output or what `print(df)` wrote to stdout. Out: a
`cellar.ingest.tables.Table` (`parse_text_table`), or None when the text is not such a repr.
pandas is imported only once a table is built, as in `cellar.ingest.tables`.
"""

from __future__ import annotations

import re
from typing import Any, TypeGuard, TypeVar

from cellar.ingest.tables import ELLIPSIS, INT, Table, build_frame

# --------------------------------------------------------------------------------------------
# Text: pandas' fixed-width repr of a DataFrame or Series (text/plain and printed to stdout).
#
# pandas lays a frame out as an index (left-aligned, one column per level) and data columns
# (right-aligned, header included) joined by at least one space, every line padded to one width.
# So the positions that are blank on every line (gutters) cut the lines into segments; a data
# column is a segment with a header label and a value on every row, flush with its right edge.
# A value with a space at the same place on every row splits a column in two: the piece without
# a header label is joined to its right.
# --------------------------------------------------------------------------------------------

# (ASCII digits, a count's worth: see tables._SHAPE_FOOTER)
_FRAME_FOOTER = re.compile(r"\[([0-9]{1,15}) rows x ([0-9]{1,15}) columns\]")
_SERIES_FOOTER = re.compile(r"(?:(?:Freq|Name|Length): .*, )?dtype: (\S.*)")
_SERIES_LENGTH = re.compile(r"(?:^|, )Length: ([0-9]{1,15}), ")
_SERIES_NAME = re.compile(r"(?:^|, )Name: (.*?), (?:Length: \d+, )?dtype: ")
_NUMERIC_DTYPE = re.compile(r"(?:u?int|float|complex|bool|Int|UInt|Float)\d*|boolean")
_MAX_HEADER_LINES = 6
# SymPy's pretty printer draws tall brackets from these pieces (⎛ ⎜ ⎝ ...) and pads its lines
# like a table; pandas never prints them.
_MATH_PIECES = re.compile("[\u239b-\u23ad]")

_T = TypeVar("_T")


def parse_text_table(text: str) -> Table | None:
    """A DataFrame or Series text repr read back into a Table, or None when `text` is not one.

    Reads column header line(s), the optional index-names line, MultiIndex rows (sparsified
    outer levels), `...` elided rows and columns, frames wrapped into blocks with a `\\` after the
    first line of each block but the last, the `[N rows x M columns]` footer, and Series reprs
    (`Name: x, Length: n, dtype: float64` footer). Conservative: prose, a list of numbers or any
    text whose columns do not line up the way pandas lays them out gives None.
    """
    lines = _trim(text.expandtabs().splitlines())
    if len(lines) < 2 or _MATH_PIECES.search(text):
        return None
    if lines[-1].startswith("Categories ("):  # a categorical Series prints its categories last
        lines = lines[:-1]
    last = lines[-1].strip()
    series = _SERIES_FOOTER.fullmatch(last)
    if series:
        return _series_from_text(_trim([line.rstrip() for line in lines[:-1]]), last, series[1])
    footer = _FRAME_FOOTER.fullmatch(last)
    if footer:
        lines = _trim(lines[:-1])
    blocks = _blocks(lines)
    if blocks is None:
        return None
    parts = [_text_block(block) for block in blocks]
    if len(parts) > 1 and _all_found(parts):  # one index width for all blocks: the narrowest found
        width = min(p["index_end"] for p in parts)
        parts = [
            part if part["index_end"] == width else _text_block(block, width) for part, block in zip(parts, blocks)
        ]
    if not _all_found(parts) or any(p["index"] != parts[0]["index"] for p in parts):
        return None
    levels = {len(p["column_levels"]) for p in parts}
    if len(levels) != 1:
        return None
    column_levels: list[list[str]] = [sum((p["column_levels"][k] for p in parts), []) for k in range(levels.pop())]
    frame = build_frame(
        data=sum((p["data"] for p in parts), []),
        index_levels=parts[0]["index"],
        index_names=parts[0]["index_names"],
        column_levels=[_fill_right(level) for level in column_levels[:-1]] + column_levels[-1:],
        column_names=parts[0]["column_names"],
    )
    elided = any(p["elided"] for p in parts)
    shape = (int(footer[1]), int(footer[2])) if footer else frame.shape
    return Table(frame, shape, "dataframe", elided)


def _all_found(parts: list[_T | None]) -> TypeGuard[list[_T]]:
    """Whether no part is None (`all(parts)` for parts that are never empty or falsy, which
    also tells the type checker)."""
    return all(part is not None for part in parts)


def _trim(lines: list[str]) -> list[str]:
    """Drop blank lines at both ends."""
    start = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    end = next((i for i in range(len(lines), start, -1) if lines[i - 1].strip()), start)
    return lines[start:end]


def _blocks(lines: list[str]) -> list[list[str]] | None:
    """Split a wrapped frame into its blocks (lines right-stripped); None if it is not a frame.

    pandas pads every line of a block to one width, names line included: lines of unequal
    length are some other text. Blocks but the last end their first line with a backslash.
    """
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    if any(len({len(line) for line in block}) > 1 for block in blocks):
        return None
    blocks = [[line.rstrip() for line in block] for block in blocks]
    for block in blocks[:-1]:
        if not block[0].endswith("\\"):
            return None
        block[0] = block[0][:-1].rstrip()
    if blocks[-1][0].endswith("\\"):
        return None
    return blocks


def _is_ellipsis_line(line: str) -> bool:
    """A row pandas put in place of elided rows: only runs of dots (`...`, or `..` when narrow)."""
    words = line.split()
    return bool(words) and all(word.strip(".") == "" for word in words)


def _segments(lines: list[str], lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
    """The [start, end) runs of positions in [lo, hi) that are not blank on every line."""
    hi = max(map(len, lines), default=0) if hi is None else hi
    filled = bytearray(max(hi - lo, 0))
    for line in lines:
        for word in re.finditer(r"\S+", line[lo:hi]):
            filled[word.start() : word.end()] = b"\x01" * (word.end() - word.start())
    runs = [m.span() for m in re.finditer(b"\x01+", bytes(filled))]
    return [(start + lo, end + lo) for start, end in runs]


def _cut(line: str, start: int, end: int) -> str:
    return line[start:end].strip()


def _first_label(line: str) -> int:
    """Where the first column label of a header line starts, past a columns name at position 0."""
    match = re.match(r"\S+\s+" if line[:1].strip() else r"\s*", line)
    return match.end() if match and match.end() < len(line) else -1


def _names_part(line: str, above: str) -> str | None:
    """The index names when `line` is the index-names line under header line `above`, else None.

    Names stop before the first column label above (a blank name is blank: the line may start
    with spaces); past that the line holds at most the `...` of an elided column.
    """
    label = _first_label(above)
    names, rest = line[:label].rstrip(), line[label:].split()
    if label < 0 or not names.strip() or _is_ellipsis_line(line):
        return None
    if any(word != ELLIPSIS for word in rest):
        return None
    return names


def _text_block(lines: list[str], index_limit: int | None = None) -> dict[str, Any] | None:
    """Cells, labels and names of one block of a DataFrame text repr, or None.

    `index_limit` caps the index region: the blocks of a wrapped frame share one index width.
    """
    if len(lines) < 2:
        return None
    for n_head in range(1, min(len(lines), _MAX_HEADER_LINES)):  # the index-names line
        names = _names_part(lines[n_head], lines[n_head - 1])
        if names is not None:
            break
    else:  # no index names: the header lines are those with a blank index region
        if lines[0][:1] != " ":  # (a columns name at position 0 without index names: too vague)
            return None
        names = None
        n_head = next((i for i, line in enumerate(lines) if line[:1] != " "), len(lines))
    body = lines[n_head + (names is not None) :]
    rows = [line for line in body if not _is_ellipsis_line(line)]
    if not n_head or not rows:
        return None
    header, lowest, names = lines[:n_head], lines[n_head - 1], names or ""

    label = _first_label(lowest)
    segments = _segments([lowest, *rows])
    start = next((s for s, e in segments if s <= label < e), -1)
    if start <= 0 or len(names) >= start:
        return None
    end = start if index_limit is None else min(start, index_limit)
    index = _index_segments([names, *rows] if names else rows, end, names)
    if not index:
        return None
    start = next(s for s, e in segments if s >= index[-1][1])  # the first column's left piece
    columns = _columns(segments, start, lowest, rows)
    index_levels = _fill_down([[_cut(row, s, e) for s, e in index] for row in rows])
    if columns is None or index_levels is None:
        return None

    data = [[_cut(row, s, e) for row in rows] for s, e in columns]
    labels = [_cut(lowest, s, e) for s, e in columns]
    keep = [j for j, col in enumerate(data) if not (labels[j] == ELLIPSIS and _all_ellipsis(col))]
    upper = [_upper_labels(line, columns) for line in header[:-1]]
    return {
        "index": [list(level) for level in zip(*index_levels)],
        "index_end": index[-1][1],
        "index_names": [_cut(names, s, e) or None for s, e in index],
        "column_levels": [[level[j] for j in keep] for level in [*upper, labels]],
        "column_names": [_columns_name(line, start) for line in header],
        "data": [data[j] for j in keep],
        "elided": len(rows) < len(body) or len(keep) < len(columns),
    }


def _all_ellipsis(values: list[str]) -> bool:
    return all(value.strip(".") == "" for value in values)


def _columns(segments: list[tuple[int, int]], start: int, lowest: str, rows: list[str]) -> list[tuple[int, int]] | None:
    """Data columns from the segments right of `start`, or None when they do not line up.

    Values are right-aligned under a header label; pieces without a label or without values
    are joined to the segment on their right. (Old pandas wrote some labels left-aligned and
    kept trailing spaces of strings, so only most values must end at the edge.)
    """
    columns: list[tuple[int, int]] = []
    piece = None  # the start of a piece with no header label or no values, joined to its right
    for s, e in segments:
        if s < start:
            continue
        lo = s if piece is None else piece
        if _cut(lowest, s, e) and any(_cut(row, s, e) for row in rows):
            columns.append((lo, e))
            piece = None
        else:
            piece = lo
    if piece is not None or not columns:
        return None
    for s, e in columns:  # a value in every row, most of them flush with the right edge
        if not all(_cut(row, s, e) for row in rows):
            return None
        if 2 * sum(row[e - 1 : e] not in ("", " ") for row in rows) <= len(rows):
            return None
    return columns


def _index_segments(lines: list[str], end: int, names: str) -> list[tuple[int, int]]:
    """The index levels left of `end`, as [start, end) segments.

    A MultiIndex shows itself by sparsified rows (blank outer levels) or by several names. Each
    name starts a level; without names each segment is one, but a segment whose value repeats on
    consecutive rows is part of a label with spaces, not a level. Otherwise the index is one
    level: the first segment and those after it one space apart and with text on every row (a
    piece further off, blank on some rows or after integer labels is the left part of a wide
    first column).
    """
    rows = lines[1:] if names else lines
    segments = _segments(lines, 0, end)
    if not segments or segments[0][0] != 0:
        return []
    starts = {word.start() for word in re.finditer(r"\S+", names)}
    if len(starts) > 1:
        return [
            (s, next((t for t, _ in segments[k + 1 :] if t in starts), segments[-1][1]))
            for k, (s, _) in enumerate(segments)
            if s in starts
        ]
    if not any(row[:1] == " " for row in rows):
        label_end = segments[0][1]
        if all(INT.fullmatch(_cut(row, 0, label_end)) for row in rows):
            return [(0, label_end)]  # a positional index: what follows is data
        for s, e in segments[1:]:
            if s - label_end > 1 or not all(_cut(row, s, e) for row in rows):
                break
            label_end = e
        return [(0, label_end)]
    merged = True
    while merged and len(segments) > 1:
        merged = False
        for k in range(len(segments) - 1):
            values = [_cut(row, *segments[k]) for row in rows]
            outer = [[_cut(row, *level) for level in segments[:k]] for row in rows]
            if any(v and v == values[i - 1] and not any(outer[i]) for i, v in enumerate(values) if i):
                segments[k : k + 2] = [(segments[k][0], segments[k + 1][1])]
                merged = True
                break
    return segments


def _fill_down(rows: list[list[str]]) -> list[list[str]] | None:
    """Fill sparsified outer index levels (blank up to the first label) from the row above.

    Blanks after the first label stay blank (a margins row such as ("All", "")); a row with no
    label, or a first row that starts blank, means this is not an index: None.
    """
    filled: list[list[str]] = []
    for row in rows:
        first = next((k for k, value in enumerate(row) if value), None)
        if first is None or (first and not filled):
            return None
        filled.append(filled[-1][:first] + row[first:] if first else row)
    return filled


def _fill_right(labels: list[str]) -> list[str]:
    """Fill the blanks of an upper column level from the label on their left (its group)."""
    out: list[str] = []
    for label in labels:
        out.append(label or (out[-1] if out else ""))
    return out


def _upper_labels(line: str, columns: list[tuple[int, int]]) -> list[str]:
    """Labels of an upper column level: each is right-aligned on the first column of its group.

    A label may be wider than its column and reach left over the index region; it stops at two
    spaces or at the previous column, so a columns name at position 0 is not taken along.
    """
    labels = []
    for j, (_, e) in enumerate(columns):
        if len(line) < e or line[e - 1] == " ":
            labels.append("")
            continue
        bound = columns[j - 1][1] if j else 0
        s = e - 1
        while s > bound and (line[s - 1] != " " or (s - 2 >= bound and line[s - 2] != " ")):
            s -= 1
        labels.append(line[s:e].strip())
    return labels


def _columns_name(line: str, start: int) -> str | None:
    """The name of a column level: the text pandas writes at position 0 above the index."""
    match = re.match(r"\S+(?: \S+)*", line[:start])
    return match[0] if match else None


def _series_from_text(lines: list[str], footer: str, dtype: str) -> Table | None:
    """A Series repr: index levels left-aligned, values right-aligned to one edge.

    Old pandas aligned the rows above and below the `...` of elided rows each on their own, so
    every run of rows between `...` lines is cut into index and value separately.
    """
    runs: list[list[str]] = [[]]
    for line in lines:
        if _is_ellipsis_line(line):
            runs.append([])
        else:
            runs[-1].append(line)
    runs = [run for run in runs if run]
    if not runs:
        return None
    names = ""
    head = runs[0]
    if len(head) > 1 and len(head[0]) < _segments(head[1:])[-1][0]:  # no value: index names
        names, runs[0] = head[0], head[1:]
    rows = [row for run in runs for row in run]
    multi = len(names.split()) > 1 or any(row[:1] == " " for row in rows)
    numeric = bool(_NUMERIC_DTYPE.fullmatch(dtype))
    cut = [_series_run(run, "" if k else names, multi or numeric) for k, run in enumerate(runs)]
    if not _all_found(cut) or len({len(c[0][0]) for c in cut}) != 1:
        return None
    labels = _fill_down([label for c in cut for label in c[0]])
    if labels is None:
        return None
    name_match = _SERIES_NAME.search(footer)
    name = name_match[1] if name_match else None
    frame = build_frame(
        data=[[value for c in cut for value in c[1]]],
        index_levels=[list(level) for level in zip(*labels)],
        index_names=cut[0][2],
        column_levels=[[name if name is not None else "0"]],
        column_names=[None],
    )
    length = _SERIES_LENGTH.search(footer + ", ")
    shape = (int(length[1]) if length else len(frame), 1)
    return Table(frame, shape, "series", len(runs) > 1 or len(rows) + bool(names) < len(lines))


def _series_run(
    rows: list[str], names: str, value_is_last: bool
) -> tuple[list[list[str]], list[str], list[str | None]] | None:
    """Index labels, values and index names of rows aligned together; None if they are not.

    The value is the last segment when it is one word (a numeric dtype) or the index has several
    levels; otherwise it may hold spaces and the index is the first segment.
    """
    end = max(map(len, rows))
    segments = _segments(rows)
    if len(segments) < 2 or any(len(row) < end for row in rows):
        return None
    start = segments[-1 if value_is_last else 1][0]
    if len(names) >= start:
        return None
    lines = [names, *rows] if names else rows
    index = _index_segments(lines, start, names)
    if len(index) == 1:  # one level: all that is left of the value
        index = [(0, max(e for s, e in _segments(lines, 0, start)))]
    if not index:
        return None
    labels = [[_cut(row, s, e) for s, e in index] for row in rows]
    values = [_cut(row, start, end) for row in rows]
    return labels, values, [_cut(names, s, e) or None for s, e in index]

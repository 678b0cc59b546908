"""Tables: DataFrame outputs saved in notebooks, read back into pandas and into searchable text.

A notebook keeps a DataFrame only as it was displayed: an HTML table (`text/html`) and a
fixed-width text repr (`text/plain`, also what `print(df)` writes to stdout). This module holds
the `Table`, reads the HTML back into a pandas DataFrame (`parse_html_table`; the text repr is
read by `cellar.ingest.text_tables.parse_text_table`), turns displayed strings into typed
columns (`build_frame`) and a parsed table into the text that is searched (`table_text`): a
Markdown table of the first rows with the column dtypes, then one sentence of statistics
computed from every row that was saved.

pandas is imported inside the functions, never at module level: importing it costs seconds in
Pyodide and most callers of `cellar.ingest.tables` only need it once a table turns up.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from cellar.ingest.documents.markup import LinearHTMLParser, open_brackets_as_text
from cellar.text import shortened

if TYPE_CHECKING:
    import pandas as pd

ELLIPSIS = "..."


# A frozen dataclass would compare and hash its fields, and a DataFrame has no truth value or
# hash: identity comparison (eq=False) keeps a Table usable in sets and `==` without surprises.
@dataclass(frozen=True, eq=False)
class Table:
    """A DataFrame (or Series) recovered from a notebook output.

    `frame` holds the rows and columns as displayed, with the `...` rows and columns that pandas
    put in place of elided data removed. `shape` is the full (rows, columns) of the original
    object: from the footer pandas prints under a truncated table when there is one, else
    `frame.shape`. A Series becomes a one-column frame (`Series.to_frame()`: the column is its
    name, or 0 when it has none) with `kind == "series"`.
    """

    frame: pd.DataFrame
    shape: tuple[int, int]
    kind: Literal["dataframe", "series"] = "dataframe"
    elided: bool = False


# --------------------------------------------------------------------------------------------
# HTML: pandas' `to_html` / `_repr_html_` and Styler output.
#
# pd.read_html needs lxml, BeautifulSoup or html5lib, none of which exist in Pyodide, so this is
# a compact reader on the standard library's html.parser: it collects the cells of top-level
# tables, lays out colspan/rowspan on a grid and reads pandas' header conventions from there.
# --------------------------------------------------------------------------------------------

# ASCII digits, a count's worth: `\d` takes any script's digits, and int() refuses a string of
# 4,300 of them (a notebook's footer of 5,000 nines had rejected the whole notebook).
_SHAPE_FOOTER = re.compile(r"(?<![0-9])([0-9]{1,15})\s+rows\s*[×x]\s*([0-9]{1,15})\s+columns")
_COUNT = re.compile(r"[0-9]{1,9}")
_MAX_SPAN = 1000  # bounds a malformed colspan/rowspan; pandas never writes more than a page
# A table's slots, its spans counted (a DataFrame's repr shows 60 rows by 20 columns; a whole
# to_html() of 50,000 rows by 20 still fits): past it the output is read as text, not a table.
MAX_SLOTS = 1_000_000


@dataclass
class _Cell:
    tag: str
    parts: list[str]
    colspan: int = 1
    rowspan: int = 1

    @property
    def text(self) -> str:
        """The cell's text: markup line breaks folded, the value's own spacing kept."""
        return re.sub(r"\s*\n\s*", " ", "".join(self.parts)).strip()  # strip() takes &nbsp;


@dataclass
class _RawTable:
    classes: list[str]
    rows: list[tuple[str | None, list[_Cell]]]  # (thead | tbody | tfoot | None, cells)
    after: list[str]  # text between this table's end and the next table: pandas' shape footer


def _span(attrs: dict[str, str | None], name: str) -> int:
    value = attrs.get(name) or "1"
    return min(int(value), _MAX_SPAN) if _COUNT.fullmatch(value) and int(value) > 0 else 1  # not `²`


class _TableReader(LinearHTMLParser):
    """Collects every top-level <table>; nested tables are part of a cell's markup, not data."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[_RawTable] = []
        self._depth = 0
        self._section: str | None = None
        self._row: list[_Cell] | None = None
        self._cell: _Cell | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._depth += 1
            if self._depth == 1:
                classes = (dict(attrs).get("class") or "").split()
                self.tables.append(_RawTable(classes, [], []))
                self._section, self._row, self._cell = None, None, None
            return
        if self._depth != 1:
            return
        if tag in ("thead", "tbody", "tfoot"):
            self._section = tag
        elif tag == "tr":
            self._row, self._cell = [], None
            self.tables[-1].rows.append((self._section, self._row))
        elif tag in ("th", "td"):
            if self._row is None:  # a cell outside <tr>: HTML opens the row implicitly
                self.handle_starttag("tr", [])
                assert self._row is not None  # the "tr" branch above opened it
            named = dict(attrs)
            self._cell = _Cell(tag, [], _span(named, "colspan"), _span(named, "rowspan"))
            self._row.append(self._cell)
        elif tag == "br" and self._cell is not None:
            self._cell.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._depth = max(self._depth - 1, 0)
        elif self._depth == 1 and tag in ("th", "td"):
            self._cell = None
        elif self._depth == 1 and tag == "tr":
            self._row, self._cell = None, None

    def handle_data(self, data: str) -> None:
        if self._depth == 0 and self.tables:
            self.tables[-1].after.append(data)
        elif self._depth == 1 and self._cell is not None:
            self._cell.parts.append(data)


def _grid(rows: list[list[_Cell]]) -> list[list[_Cell]] | None:
    """Lay rows out on a grid: a cell fills every slot its colspan and rowspan cover, a rowspan
    no further than the rows there are. None past MAX_SLOTS slots: sixteen cells spanning 1,000
    by 1,000 in a 1 KB output had taken 2.5 GB."""
    grid: list[list[_Cell]] = []
    carried: dict[tuple[int, int], _Cell] = {}  # slots filled from a rowspan above
    slots = 0
    for r, row in enumerate(rows):
        out: list[_Cell] = []
        for cell in [*row, None]:
            while (r, len(out)) in carried:
                out.append(carried.pop((r, len(out))))
            if cell is None:
                break
            down = min(cell.rowspan, len(rows) - r)
            slots += cell.colspan * down
            if slots > MAX_SLOTS:
                return None
            for _ in range(cell.colspan):
                for below in range(1, down):
                    carried[(r + below, len(out))] = cell
                out.append(cell)
        grid.append(out)
    return grid


def parse_html_table(html: str) -> Table | None:
    """The first DataFrame table in a pandas HTML repr, or None when the HTML holds no data table.

    Reads `to_html()` / `_repr_html_()` output (possibly wrapped in a <div> with a <style scoped>
    block, possibly several tables: the first `dataframe` table is taken), including MultiIndex
    columns (several header rows with colspan), the index-names row, MultiIndex rows (rowspan)
    and elided `...` rows and columns. Without a `dataframe` table, the first table that has a
    header row and data cells is read the same way (pandas Styler output, hand-made tables).
    """
    reader = _TableReader()
    reader.feed(open_brackets_as_text(html))  # linear time on markup that never closes
    reader.close()
    marked = [table for table in reader.tables if "dataframe" in table.classes]
    for raw in marked or reader.tables:
        table = _table_from_html(raw, require_header=not marked)
        if table is not None:
            return table
    return None


def _table_from_html(raw: _RawTable, require_header: bool) -> Table | None:
    """One collected table read the pandas way: <th> cells that start body rows are the index,
    header rows above the data are column levels, a last header row blank over the data holds
    the index names."""
    head_rows = [cells for section, cells in raw.rows if section == "thead"]
    body_rows = [cells for section, cells in raw.rows if section != "thead" and cells]
    if not head_rows:  # no <thead>: leading rows made only of <th> are the header
        while body_rows and all(cell.tag == "th" for cell in body_rows[0]):
            head_rows.append(body_rows.pop(0))
    body, head_grid = _grid(body_rows), _grid(head_rows)
    if body is None or head_grid is None:  # too large to lay out: the output is read as text
        return None
    if require_header and not (head_rows and any(c.tag == "td" for row in body for c in row)):
        return None
    head = [[cell.text for cell in row] for row in head_grid]
    if body:  # the index: the <th> cells that start a body row
        n_index = next((i for i, cell in enumerate(body[0]) if cell.tag != "th"), len(body[0]))
    else:  # an empty frame: the header cells left blank above the (absent) index
        blank = [next((i for i, text in enumerate(row) if text), len(row)) for row in head]
        n_index = max(blank, default=0)
    cells = [[cell.text for cell in row] for row in body]
    width = max(map(len, head + cells), default=0)
    if width <= n_index:
        return None
    head = [row + [""] * (width - len(row)) for row in head]
    cells = [row + [""] * (width - len(row)) for row in cells]

    index_names: list[str | None] = [None] * n_index
    if n_index and head and not any(head[-1][n_index:]) and any(head[-1][:n_index]):
        index_names = [name or None for name in head.pop()[:n_index]]
    # pandas writes a column level's name in the last header cell above the index
    column_names = [next((t for t in reversed(row[:n_index]) if t), None) for row in head]

    data_rows = [row for row in cells if any(t != ELLIPSIS for t in row[n_index:])]
    keep = [j for j in range(n_index, width) if not (cells and all(row[j] == ELLIPSIS for row in cells))]
    elided = len(data_rows) < len(cells) or len(keep) < width - n_index
    frame = build_frame(
        data=[[row[j] for row in data_rows] for j in keep],
        index_levels=[[row[i] for row in data_rows] for i in range(n_index)],
        index_names=index_names,
        column_levels=[[row[j] for j in keep] for row in head],
        column_names=column_names,
    )
    footer = _SHAPE_FOOTER.search(" ".join(raw.after))
    shape = (int(footer[1]), int(footer[2])) if footer else frame.shape
    return Table(frame, shape, "dataframe", elided)


# --------------------------------------------------------------------------------------------
# Displayed strings back to typed columns.
# --------------------------------------------------------------------------------------------

_MISSING = frozenset({"", "NaN", "nan", "None", "NaT", "<NA>"})
INT = re.compile(r"[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?")
_INT64_DIGITS = 18  # longer integers may not fit in int64: read them as floats


def _convert(values: list[str]) -> Any:
    """Displayed strings as numbers, booleans or datetimes when every value converts, else as is.

    The missing markers pandas prints (NaN, None, NaT, <NA>) count as missing; a column that
    converts with missing values becomes float (numbers) or stays object (booleans).
    """
    present = [v for v in values if v not in _MISSING]
    if not present:  # all NaN: a float column; all empty strings: strings
        return [math.nan] * len(values) if any(values) else values
    if all(v in ("True", "False") for v in present):
        return [None if v in _MISSING else v == "True" for v in values]
    if all(INT.fullmatch(v) and len(v.lstrip("+-")) <= _INT64_DIGITS for v in present):
        if len(present) == len(values):
            return [int(v) for v in values]
        return [math.nan if v in _MISSING else float(v) for v in values]
    if all(_FLOAT.fullmatch(v) for v in present):
        return [math.nan if v in _MISSING else float(v) for v in values]
    if all(_DATETIME.fullmatch(v) for v in present):
        pd = _pandas()
        try:
            with warnings.catch_warnings():  # mixed time zones: a FutureWarning, then objects
                warnings.simplefilter("ignore")
                stamps = pd.to_datetime([None if v in _MISSING else v for v in values], format="ISO8601")
        except (ValueError, TypeError, OverflowError):  # impossible dates, out of range
            return values
        return values if stamps.dtype == object else stamps
    return values


def _pandas() -> Any:
    import pandas

    return pandas


def _numpy() -> Any:
    import numpy

    return numpy


def build_frame(
    data: list[list[str]],
    index_levels: list[list[str]],
    index_names: list[str | None],
    column_levels: list[list[str]],
    column_names: list[str | None],
) -> pd.DataFrame:
    """A DataFrame from displayed strings: typed columns, index and column labels."""
    pd = _pandas()
    n_rows = len(index_levels[0]) if index_levels else len(data[0]) if data else 0
    if not index_levels:
        index = pd.RangeIndex(n_rows)
    elif len(index_levels) == 1:
        index = pd.Index(_convert(index_levels[0]), name=index_names[0])
    else:
        index = pd.MultiIndex.from_arrays([_convert(lv) for lv in index_levels], names=index_names)
    if not column_levels:
        columns = pd.RangeIndex(len(data))
    elif len(column_levels) == 1:
        columns = pd.Index(_convert(column_levels[0]), name=column_names[0])
    else:
        columns = pd.MultiIndex.from_arrays([_convert(level) for level in column_levels], names=column_names)
    frame = pd.DataFrame({j: _convert(column) for j, column in enumerate(data)}, index=index)
    frame.columns = columns
    return frame


# --------------------------------------------------------------------------------------------
# Searchable text.
# --------------------------------------------------------------------------------------------

_CELL_CHARS = 200  # a cell longer than this is cut: one long string must not drown the table


def table_text(table: Table, max_rows: int = 20) -> str:
    """The searched text of a table: Markdown of the first `max_rows` rows, then one summary.

    The header names each column with its dtype (`| tank | volume_m3 (float64) |`); the summary
    sentence gives the full shape and, computed over every saved row, the mean, min and max of
    each numeric column with the row labels of the extremes (and the range of datetime columns).
    A default positional index (unnamed 0, 1, 2, ...) is left out of the Markdown.
    """
    frame = table.frame
    positional = _is_positional(frame.index)
    head = frame.head(max_rows)
    header = [] if positional else [_cell(n) if n is not None else "" for n in frame.index.names]
    header += [f"{_cell(label)} ({dtype})" for label, dtype in zip(frame.columns, frame.dtypes)]
    lines = [_markdown_row(header), _markdown_row(["---"] * len(header))]
    labels = [] if positional else list(head.index)
    for i, values in enumerate(head.itertuples(index=False, name=None)):
        row = [] if positional else list(labels[i]) if frame.index.nlevels > 1 else [labels[i]]
        lines.append(_markdown_row([_cell(v) for v in [*row, *values]]))
    return "\n".join(lines) + "\n\n" + _summary(table, max_rows)


def _is_positional(index: pd.Index) -> bool:
    """An unnamed index of increasing integers: pandas' default, with elided rows taken out."""
    return (
        index.nlevels == 1
        and index.name is None
        and index.dtype.kind in "iu"
        and (len(index) == 0 or index.is_monotonic_increasing and index.is_unique and index[0] >= 0)
    )


def _summary(table: Table, max_rows: int) -> str:
    """One sentence: the shape, then per numeric column mean, min and max with their row labels."""
    frame = table.frame
    rows, cols = table.shape
    listed = min(len(frame), max_rows)
    sentence = f"Table of {rows} rows x {cols} columns"
    if len(frame) < rows:
        sentence += f" ({len(frame)} rows saved"
        sentence += f", first {listed} listed)" if listed < len(frame) else ")"
    elif listed < rows:
        sentence += f" (first {listed} listed)"
    positional = _is_positional(frame.index)

    def at(position: int) -> str:
        label = frame.index[position]
        return f"row {label}" if positional else _cell(label)

    stats = []
    for label, column in frame.items():
        kind = column.dtype.kind
        if kind in "iuf":
            values = column.to_numpy(dtype=float, na_value=math.nan)
            if all(map(math.isnan, values)):
                continue
            low, high = _argextremes(values)
            with warnings.catch_warnings():  # inf and -inf have no mean: NumPy's warning names no file
                warnings.simplefilter("ignore", RuntimeWarning)
                mean = float(values[values == values].mean())
            stats.append(
                f"{_cell(label)}: mean {_number(mean)}, "
                f"min {_number(values[low])} ({at(low)}), max {_number(values[high])} ({at(high)})"
            )
        elif kind == "M" and column.notna().any():
            low, high = int(column.argmin(skipna=True)), int(column.argmax(skipna=True))
            stats.append(
                f"{_cell(label)}: from {_cell(column.iloc[low])} ({at(low)}) to {_cell(column.iloc[high])} ({at(high)})"
            )
    return sentence + "".join(f"; {stat}" for stat in stats) + "."


def _argextremes(values: Any) -> tuple[int, int]:
    """Positions of the smallest and largest value, NaN skipped (NumPy's nanargmin/nanargmax)."""
    np = _numpy()
    return int(np.nanargmin(values)), int(np.nanargmax(values))


def _number(x: float) -> str:
    """A compact number: integers as such, else about five significant digits, no float noise."""
    if not math.isfinite(x):
        return str(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    if 1e-4 <= abs(x) < 1e15:
        digits = max(0, 4 - math.floor(math.log10(abs(x))))
        return f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return f"{x:.4g}"


def _cell(value: Any) -> str:
    """One value or label as Markdown cell text."""
    if isinstance(value, tuple):
        return " / ".join(_cell(v) for v in value)
    if isinstance(value, float):
        text = "NaN" if math.isnan(value) else format(value, ".10g")
    elif hasattr(value, "isoformat") and hasattr(value, "hour"):  # Timestamp / datetime
        text = str(value)
        text = text[: -len(" 00:00:00")] if text.endswith(" 00:00:00") else text
    else:
        text = str(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return shortened(text, _CELL_CHARS)


def _markdown_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"

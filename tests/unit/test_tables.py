"""cellar.ingest.tables and text_tables: DataFrame outputs read back from HTML and text reprs, and
their searched text.

The fixtures are made here by real pandas (`to_html`, `_repr_html_`, `repr`, Styler) under the
display options that truncate and wrap; the corpus tests read every DataFrame output saved in
../shared/corpus and count the HTML tables' rows and columns independently.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cellar.ingest.tables import Table, parse_html_table, table_text
from cellar.ingest.text_tables import parse_text_table


def tanks() -> pd.DataFrame:
    """Five kinds of column, a named index, a string column whose values share a space."""
    return pd.DataFrame(
        {
            "volume_m3": [412.1, 2106.3, 1284.7],
            "frames": [12, 40, 28],
            "ballast": [True, False, True],
            "sounded": pd.to_datetime(["2024-03-01", "2024-03-02", "2024-03-05"]),
            "note": ["fore peak", "mid ship", "aft"],
        },
        index=pd.Index(["forepeak", "midship", "aftpeak"], name="tank"),
    )


def multi() -> pd.DataFrame:
    """MultiIndex rows and columns, both named."""
    columns = pd.MultiIndex.from_product([["ballast", "fuel"], ["volume_m3", "mass_t"]], names=["system", "quantity"])
    index = pd.MultiIndex.from_product([["fore", "aft"], [1, 2, 3]], names=["zone", "tank"])
    return pd.DataFrame(np.arange(24).reshape(6, 4) * 1.5, index=index, columns=columns)


def long_frame(rows: int = 100, cols: int = 12) -> pd.DataFrame:
    values = np.arange(rows * cols).reshape(rows, cols) / 4
    return pd.DataFrame(values, columns=[f"frame_{j}" for j in range(cols)])


def assert_same(table: Table | None, expected: pd.DataFrame) -> None:
    assert table is not None
    pd.testing.assert_frame_equal(table.frame, expected)


# ------------------------------------------------------------------------------------ HTML


def test_html_round_trip_keeps_values_dtypes_and_index_name():
    table = parse_html_table(tanks().to_html())
    assert_same(table, tanks())
    assert table.shape == (3, 5) and table.kind == "dataframe" and not table.elided


def test_notebook_repr_html_with_style_block_reads_the_same():
    html = tanks()._repr_html_()
    assert "<style scoped>" in html
    assert_same(parse_html_table(html), tanks())


def test_html_multiindex_columns_and_rows_with_names():
    assert_same(parse_html_table(multi().to_html()), multi())


def test_html_unnamed_multiindex_rows_from_rowspan():
    frame = multi().rename_axis(index=[None, None], columns=[None, None])
    assert 'rowspan="3"' in frame.to_html()
    assert_same(parse_html_table(frame.to_html()), frame)


def test_html_elided_rows_and_columns_are_dropped_and_the_footer_gives_the_shape():
    frame = long_frame()
    with pd.option_context("display.max_rows", 6, "display.min_rows", 6, "display.max_columns", 4):
        html = frame._repr_html_()
    table = parse_html_table(html)
    shown = frame.iloc[[0, 1, 2, 97, 98, 99], [0, 1, 10, 11]]
    assert_same(table, shown)
    assert table.shape == (100, 12) and table.elided


def test_html_takes_the_first_dataframe_table():
    layout = "<table><tr><th>legend</th></tr><tr><td>x</td></tr></table>"
    html = layout + multi().to_html() + tanks().to_html()
    assert_same(parse_html_table(html), multi())


def test_styler_output_is_read_like_a_dataframe_table():
    pytest.importorskip("jinja2", reason="DataFrame.style needs jinja2")
    assert_same(parse_html_table(tanks().style.to_html()), tanks())
    assert_same(parse_html_table(multi().style.to_html()), multi())


def test_class_less_table_with_header_cells():
    html = (
        "<table><tr><th>tank</th><th>volume_m3</th></tr>"
        "<tr><th>forepeak</th><td>412.1</td></tr><tr><th>aftpeak</th><td>1284.7</td></tr></table>"
    )
    expected = pd.DataFrame({"volume_m3": [412.1, 1284.7]}, index=["forepeak", "aftpeak"])
    expected.columns.name = "tank"  # the cell above the index names the column level
    assert_same(parse_html_table(html), expected)


def test_empty_frame_keeps_its_columns():
    frame = tanks().iloc[:0]
    table = parse_html_table(frame.to_html())
    assert table.frame.shape == (0, 5) and list(table.frame.columns) == list(frame.columns)
    assert parse_html_table(pd.DataFrame().to_html()) is None


@pytest.mark.parametrize(
    "html",
    [
        "<p>no table here</p>",
        "",
        "<table><tr><td>a layout cell</td><td>another</td></tr></table>",
        "<img src='data:image/png;base64,iVBOR'>",
    ],
)
def test_html_without_a_data_table_is_none(html):
    assert parse_html_table(html) is None


# ------------------------------------------------------------------------------------ text


def test_text_round_trip_of_a_frame_with_index_name_and_spaced_strings():
    table = parse_text_table(repr(tanks()))
    assert_same(table, tanks())
    assert table.shape == (3, 5)


def test_text_multiindex_columns_and_rows_with_names():
    assert_same(parse_text_table(repr(multi())), multi())


def test_text_unnamed_multiindex_rows_are_sparsified():
    frame = multi().rename_axis(index=[None, None], columns=[None, None])
    assert "\n     2 " in repr(frame)  # the outer level is blank on the following rows
    assert_same(parse_text_table(repr(frame)), frame)


def test_text_wide_label_of_an_upper_column_level():
    top = "AVeryLongTopLabel"
    columns = pd.MultiIndex.from_tuples([(top, "x"), (top, "y"), ("b", "z")])
    frame = pd.DataFrame([[1, 2, 3], [4, 5, 6]], columns=columns)
    assert_same(parse_text_table(repr(frame)), frame)


def test_text_datetime_index_with_times_is_one_label():
    frame = pd.DataFrame(
        {"power_kw": [642.5, 441.0, 658.5]},
        index=pd.to_datetime(["2014-01-01 00:00", "2014-01-01 00:10", "2014-01-01 00:20"]),
    )
    assert_same(parse_text_table(repr(frame)), frame)


def test_text_first_column_wider_than_its_label_after_a_positional_index():
    frame = pd.DataFrame({"t": pd.timedelta_range("1D", periods=3), "n": [1, 2, 3]})
    expected = frame.assign(t=["1 days", "2 days", "3 days"])  # timedeltas stay text
    assert_same(parse_text_table(repr(frame)), expected)


def test_text_elided_rows_and_the_footer_shape():
    frame = long_frame(cols=3)
    with pd.option_context("display.max_rows", 6, "display.min_rows", 6):
        text = repr(frame)
    table = parse_text_table(text)
    assert_same(table, frame.iloc[[0, 1, 2, 97, 98, 99]])
    assert table.shape == (100, 3) and table.elided


def test_text_wrapped_wide_frame_joins_its_blocks():
    frame = long_frame(rows=4, cols=12)
    with pd.option_context("display.width", 40, "display.max_columns", None):
        text = repr(frame)
    assert text.count("\\\n") >= 2  # three or more blocks
    assert_same(parse_text_table(text), frame)


def test_text_wrapped_and_elided_frame():
    frame = long_frame()
    with pd.option_context("display.width", 50, "display.max_rows", 4, "display.min_rows", 4, "display.max_columns", 6):
        text = repr(frame)
    table = parse_text_table(text)
    assert_same(table, frame.iloc[[0, 1, 98, 99], [0, 1, 2, 9, 10, 11]])
    assert table.shape == (100, 12) and table.elided


def test_printed_frame_in_a_stream_parses():
    from contextlib import redirect_stdout
    from io import StringIO

    out = StringIO()
    with redirect_stdout(out):
        print(multi())
    assert_same(parse_text_table(out.getvalue()), multi())


def test_series_with_index_name_and_name():
    series = tanks()["volume_m3"]
    table = parse_text_table(repr(series))
    assert_same(table, series.to_frame())
    assert table.kind == "series" and table.shape == (3, 1)


def test_unnamed_series_and_object_values_with_spaces():
    numbers = pd.Series([632, 1638, 569])
    names = pd.Series(["Allen, Miss. Elisabeth Walton", "Hale, Mr. Reginald"], index=[41, 1061])
    assert_same(parse_text_table(repr(numbers)), numbers.to_frame())
    assert_same(parse_text_table(repr(names)), names.to_frame())


def test_multiindex_series():
    series = multi()[("fuel", "mass_t")].rename("mass_t")
    assert_same(parse_text_table(repr(series)), series.to_frame())


def test_elided_series_gives_its_length():
    series = pd.Series(np.arange(100) * 0.5, name="draught_m")
    with pd.option_context("display.max_rows", 6, "display.min_rows", 6):
        table = parse_text_table(repr(series))
    assert_same(table, series.iloc[[0, 1, 2, 97, 98, 99]].to_frame())
    assert table.shape == (100, 1) and table.elided


@pytest.mark.parametrize(
    "text",
    [
        "The ballast tanks were sounded on arrival.\nAll values are in cubic metres and were\n"
        "checked against the capacity plan.",
        "1\n2\n3\n4",
        "10 20 30\n40 50 60\n70 80 90",
        "   indented prose that goes on\n   for a second line",
        repr(np.arange(12).reshape(3, 4)),
        repr({"forepeak": 412.1, "midship": 2106.3}),
        "array([1, 2, 3])",
        "Optimization terminated successfully.\n         Current function value: 21.375000\n         Iterations: 79",
        "",
        "412.1",
        "  expr1\r\n* master\r\n",  # git branch, printed
        "Epoch 1/2\n1719/1719 [====] - 6s 3ms/step - loss: 3.2189\n"
        "Epoch 2/2\n1719/1719 [====] - 5s 3ms/step - loss: 0.7280\n",
        "     \u239b 2\u239e\nx + O\u239dx \u23a0",  # SymPy's pretty print of x + O(x**2)
    ],
)
def test_text_that_is_not_a_table_is_none(text):
    assert parse_text_table(text) is None


@pytest.mark.parametrize("make", [tanks, multi, lambda: tanks()["note"]])
def test_every_prefix_of_a_repr_reads_or_is_none(make):
    """Truncated or damaged output never raises: it reads as some table or as none."""
    for text in (repr(make()), make().to_html() if hasattr(make(), "to_html") else ""):
        for end in range(0, len(text), 3):
            parse_text_table(text[:end])
            parse_html_table(text[:end])


# ------------------------------------------------------------------------------- table_text


def test_table_text_is_markdown_with_dtypes_and_a_summary_with_extremes():
    text = table_text(parse_html_table(tanks().to_html()))
    lines = text.splitlines()
    assert lines[0] == (
        "| tank | volume_m3 (float64) | frames (int64) | ballast (bool) | sounded (datetime64[ns]) | note (object) |"
    )
    assert lines[2] == "| forepeak | 412.1 | 12 | True | 2024-03-01 | fore peak |"
    summary = lines[-1]
    assert summary.startswith("Table of 3 rows x 5 columns;")
    assert "volume_m3: mean 1267.7, min 412.1 (forepeak), max 2106.3 (midship)" in summary
    assert "frames: mean 26.667, min 12 (forepeak), max 40 (midship)" in summary
    assert "sounded: from 2024-03-01 (forepeak) to 2024-03-05 (aftpeak)" in summary
    assert "ballast:" not in summary and "note:" not in summary


def test_large_table_lists_the_first_rows_and_summarises_all():
    frame = pd.DataFrame({"level_m": np.r_[np.ones(499), 7.5]})
    frame.loc[250, "level_m"] = -2.25
    text = table_text(Table(frame, frame.shape), max_rows=20)
    assert text.count("\n| ") == 1 + 20  # the separator line and 20 rows
    assert "Table of 500 rows x 1 columns (first 20 listed)" in text
    assert "min -2.25 (row 250), max 7.5 (row 499)" in text
    assert "| level_m (float64) |" in text  # the positional index is left out


def test_summary_of_an_elided_table_names_the_saved_rows():
    frame = long_frame()
    with pd.option_context("display.max_rows", 6, "display.min_rows", 6):
        table = parse_text_table(repr(frame))
    assert "Table of 100 rows x 12 columns (6 rows saved)" in table_text(table)


def test_numbers_are_compact():
    frame = pd.DataFrame({"x": [0.1 + 0.2, 1 / 3, 123456789.123]}, index=["a", "b", "c"])
    text = table_text(Table(frame, frame.shape))
    assert "0.30000000000000004" not in text and "0.3333333333" not in text.split("\n\n")[1]
    assert "| 123456789.1 |" in text  # cells keep ten significant digits
    assert "mean 41152263, min 0.3 (a), max 123456789 (c)" in text  # the summary about five


def test_multiindex_labels_are_joined():
    text = table_text(parse_text_table(repr(multi())))
    assert text.splitlines()[0].startswith("| zone | tank | ballast / volume_m3 (float64) |")
    assert "fuel / mass_t: mean 19.5, min 4.5 (fore / 1), max 34.5 (aft / 3)" in text


def test_importing_cellar_tables_does_not_import_pandas():
    code = "import sys, cellar.ingest.tables, cellar.ingest.text_tables; print('pandas' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# ---------------------------------------------------------------------------------- corpus

DATAFRAME_TABLE = re.compile(r"<table[^>]*class=\"[^\"]*dataframe[^\"]*\".*?</table>", re.S)


def notebook_outputs(path: Path):
    """Every execute_result / display_data of a notebook as {mime: text} (nbformat 3 and 4)."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = notebook.get("cells") or [
        cell for sheet in notebook.get("worksheets", []) for cell in sheet.get("cells", [])
    ]
    for cell in cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") not in ("execute_result", "display_data", "pyout"):
                continue
            data = output.get("data", output)
            found = {}
            for mime, v3 in (("text/html", "html"), ("text/plain", "text")):
                value = data.get(mime, data.get(v3))
                if value is not None:
                    found[mime] = "".join(value) if isinstance(value, list) else value
            yield found


def html_body_shape(html: str) -> tuple[int, int]:
    """Body rows x data cells of the first dataframe table, `...` rows and columns not counted."""
    table = DATAFRAME_TABLE.search(html)[0]
    body = table[table.find("<tbody") :]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in re.findall(r"<tr.*?</tr>", body, re.S)]
    rows = [row for row in rows if row and not all(cell.strip() == "..." for cell in row)]
    if rows:
        return len(rows), sum(cell.strip() != "..." for cell in rows[0])
    header = re.findall(r"<th[^>]*>(.*?)</th>", re.search(r"<tr.*?</tr>", table, re.S)[0], re.S)
    return 0, sum(bool(cell.strip()) for cell in header)


@pytest.fixture(scope="module")
def corpus_outputs(shared_corpus):
    manifest = (shared_corpus / "manifest.tsv").read_text(encoding="utf-8").splitlines()
    header = manifest[0].split("\t")
    rows = [dict(zip(header, line.split("\t"))) for line in manifest[1:]]
    outputs = {
        row["path"]: list(notebook_outputs(shared_corpus / row["path"]))
        for row in rows
        if row["nbformat"].startswith(("3", "4"))
    }
    expected = sum(int(row["n_dataframe_outputs"]) for row in rows)
    return outputs, expected


def test_corpus_html_dataframes_parse_with_the_displayed_shape(corpus_outputs):
    outputs, expected = corpus_outputs
    html = [
        o["text/html"] for found in outputs.values() for o in found if DATAFRAME_TABLE.search(o.get("text/html", ""))
    ]
    assert len(html) == expected == 343  # the manifest's count, found by this walk
    matched = 0
    for text in html:
        table = parse_html_table(text)
        matched += table is not None and table.frame.shape == html_body_shape(text)
    print(f"\nHTML DataFrame outputs parsed with the displayed shape: {matched}/{len(html)}")
    assert matched / len(html) >= 0.95


def test_corpus_text_reprs_agree_with_their_html(corpus_outputs):
    """The text/plain beside each single-table HTML output reads back into the same frame."""
    outputs, _ = corpus_outputs
    pairs = [
        (parse_html_table(o["text/html"]), o["text/plain"])
        for found in outputs.values()
        for o in found
        if DATAFRAME_TABLE.search(o.get("text/html", "")) and "text/plain" in o and o["text/html"].count("<table") == 1
    ]
    pairs = [(table, text) for table, text in pairs if table is not None and len(table.frame)]
    agreed = 0
    for from_html, text in pairs:
        from_text = parse_text_table(text)
        if from_text is None:
            continue
        try:
            pd.testing.assert_frame_equal(from_text.frame, from_html.frame, check_dtype=False)
        except AssertionError:
            continue
        agreed += from_text.shape == from_html.shape
    print(f"\ntext/plain equal to its (non-empty, single) HTML table: {agreed}/{len(pairs)}")
    assert agreed / len(pairs) >= 0.95


def looks_like_pandas_repr(text: str) -> bool:
    """Independent of the parser: several lines that are not an array, list, dict, tuple, object
    repr or Categorical; a Series by its dtype footer, a DataFrame by its blank-indented header
    or by the trailing padding of its index-names line."""
    lines = text.rstrip().splitlines()
    if len(lines) < 2 or text.startswith(("<", "[", "(", "{", "array(", "MultiIndex(", "Index(")):
        return False
    if any(line.startswith(("Levels (", "Categories (")) for line in lines):
        return False
    series = lines[-1].split(", ")[-1].startswith("dtype: ")
    return series or lines[0].startswith(" ") or lines[1] != lines[1].rstrip()


def test_corpus_text_only_dataframes_of_the_fonnesbeck_tutorial(corpus_outputs):
    outputs, _ = corpus_outputs
    texts = [
        o["text/plain"]
        for path, found in outputs.items()
        for o in found
        if path.startswith("fonnesbeck__") and "text/html" not in o and "text/plain" in o
    ]
    candidates = [text for text in texts if looks_like_pandas_repr(text)]
    tables = [(text, parse_text_table(text)) for text in candidates]
    parsed = [(text, table) for text, table in tables if table is not None]
    print(
        f"\nfonnesbeck text-only DataFrame/Series reprs parsed: {len(parsed)}/{len(candidates)}"
        f" ({len(texts)} text/plain results)"
    )
    assert len(candidates) > 150
    assert len(parsed) / len(candidates) >= 0.9
    for text, table in parsed:  # every row label read is one that was printed
        labels = table.frame.index.get_level_values(-1)
        assert all(str(label) in text for label in labels if isinstance(label, (str, int)))
    others = [text for text in texts if text.startswith(("<", "[", "array("))]
    assert others and all(parse_text_table(text) is None for text in others)

"""cellar.ingest.chunking and the modules it draws on (windows, code_facts, metadata, discovery,
chunks, outputs): word windows, the coverage audit, and typed chunks that cite exact characters."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest

from cellar.ingest.chunking import chunk_document, chunk_file, chunk_notebook, coverage, headings
from cellar.ingest.chunks import original_text
from cellar.ingest.code_facts import code_facts, python_source
from cellar.ingest.discovery import find_documents
from cellar.ingest.documents.lines import markdown_units
from cellar.ingest.metadata import document_meta, parse_rules
from cellar.ingest.notebook import NotebookError, NotebookWarning, load_notebook, read_notebook
from cellar.ingest.provenance import snapshot
from cellar.ingest.windows import audit, span_coverage, window_ranges, word_windows
from cellar.records import KINDS

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NOTEBOOKS = FIXTURES / "notebooks"
BASE64 = re.compile(r"data:[\w/+.-]+;base64|[A-Za-z0-9+/]{100,}")
EIGHT = "aft  peak\ttank holds\n\n1284.6 m3 of  ballast"  # 8 words, irregular whitespace


def fixture(name: str):
    return load_notebook(NOTEBOOKS / name, NOTEBOOKS)


def chunks_of(name: str):
    return chunk_notebook(fixture(name)).chunks


# -- word windows -------------------------------------------------------------------------------


def test_eight_words_in_windows_of_four_overlapping_by_one():
    document = snapshot({"id": "tanks", "title": "Tanks", "text": EIGHT})
    windows = word_windows(document, 4, 1)
    assert [(w.word_start, w.word_end) for w in windows] == [(0, 4), (3, 7), (6, 8)]
    assert [w.id for w in windows] == ["tanks:0", "tanks:3", "tanks:6"]
    assert [w.text for w in windows] == ["aft  peak\ttank holds", "holds\n\n1284.6 m3 of", "of  ballast"]
    for window in windows:
        assert window.text == EIGHT[window.start : window.end]
        assert (window.doc_id, window.revision) == ("tanks", document["revision"])


@pytest.mark.parametrize(
    ("words", "size", "overlap", "ranges"),
    [
        (8, 4, 0, [(0, 4), (4, 8)]),  # no tail made only of overlap
        (7, 4, 1, [(0, 4), (3, 7)]),
        (3, 4, 1, [(0, 3)]),
        (3, 1, 0, [(0, 1), (1, 2), (2, 3)]),
        (5, 3, 2, [(0, 3), (1, 4), (2, 5)]),
        (0, 4, 1, []),
    ],
)
def test_window_ranges(words, size, overlap, ranges):
    assert window_ranges(words, size, overlap) == ranges


@pytest.mark.parametrize(
    ("size", "overlap", "message"),
    [
        (0, 0, "window size must be at least 1"),
        (4, 4, "overlap must be at least 0 and less than the size 4"),
        (4, -1, "overlap must be at least 0"),
        (4.0, 1, "size must be an integer"),
        (True, 0, "size must be an integer"),
        (4, None, "overlap must be an integer"),
    ],
)
def test_bad_window_arguments_are_value_errors(size, overlap, message):
    document = snapshot({"id": "tanks", "title": "Tanks", "text": EIGHT})
    with pytest.raises(ValueError, match=message):
        word_windows(document, size, overlap)


# -- coverage audit -----------------------------------------------------------------------------


def test_audit_of_the_example():
    document = snapshot({"id": "tanks", "title": "Tanks", "text": EIGHT})
    report = audit(document, word_windows(document, 4, 1))
    assert (report.total_words, report.covered_words, report.occurrences) == (8, 8, 10)
    assert (report.coverage, report.duplication, report.missing) == (1.0, 1.25, ())


def test_audit_names_the_missing_words():
    document = snapshot({"id": "tanks", "title": "Tanks", "text": EIGHT})
    first, _, last = word_windows(document, 4, 1)
    report = audit(document, [first, last])
    assert report.missing == (4, 5)
    assert (report.covered_words, report.occurrences, report.coverage) == (6, 6, 0.75)
    empty = audit(document, [])
    assert (empty.coverage, empty.duplication, empty.missing) == (0.0, None, tuple(range(8)))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"text": "aft  peak\ttank HOLDS"}, "its text is not the document's text"),
        ({"revision": "0" * 64}, "its revision is not the document's revision"),
        ({"start": 1, "text": "ft  peak\ttank holds"}, "its character offsets do not match"),
        ({"word_end": 9}, r"word range \[0, 9\) is outside 0..8"),
        ({"doc_id": "other", "id": "other:0"}, "belongs to document 'other'"),
        ({"id": "tanks:1"}, "its id does not name its first word"),
    ],
)
def test_audit_rejects_a_chunk_that_does_not_match(change, message):
    document = snapshot({"id": "tanks", "title": "Tanks", "text": EIGHT})
    windows = word_windows(document, 4, 1)
    forged = dataclasses.replace(windows[0], **change)
    with pytest.raises(ValueError, match=rf"chunk .*: {message}"):
        audit(document, [forged, *windows[1:]])


def test_audit_rejects_a_document_whose_revision_is_stale():
    document = snapshot({"id": "tanks", "title": "Tanks", "text": EIGHT})
    with pytest.raises(ValueError, match="tanks: its revision does not match its text"):
        audit({**document, "text": EIGHT + " extra"}, [])


def test_span_coverage_counts_words_held_whole():
    report = span_coverage("one two three", [(0, 7), (4, 13), (8, 10)])
    assert (report.covered_words, report.occurrences, report.missing) == (3, 4, ())


# -- IPython syntax and what code defines ----------------------------------------------------------


def test_magics_are_blanked_with_every_offset_kept():
    source = "%matplotlib inline\nfiles = !ls data\nfor f in files:\n    !wc -l $f\ntank_mass?\n??tank_mass\nx = 1"
    python = python_source(source)
    assert len(python) == len(source)
    assert [len(line) for line in python.split("\n")] == [len(line) for line in source.split("\n")]
    tree = ast.parse(python)
    assert isinstance(tree.body[-1], ast.Assign)
    assert code_facts(source).defines == ((19, "files"), (36, "f"), (89, "x"))


def test_a_non_python_cell_magic_is_blanked_whole_a_timing_one_keeps_its_body():
    assert python_source("%%bash\nls -l | wc\n").strip() == ""
    assert code_facts("\n%%time\ntotal = sum(range(9))\n").defines == ((8, "total"),)


def test_code_facts_names_definitions_imports_and_the_last_expression():
    source = (
        "import numpy as np\nfrom fluids.units import u, nearest_pipe\n"
        "class Tank:\n    volume = 1\n"
        "def mass(v):\n    inner = v\n    return inner\n"
        "with open('t.csv') as handle:\n    a, (b, *c) = 1, (2, 3)\n"
        "for i in range(3):\n    total += i\n"
        "self.x: float = 2\n"
        "mass(3)"
    )
    facts = code_facts(source)
    names = [name for _, name in facts.defines]
    assert names == ["np", "u", "nearest_pipe", "class Tank", "mass()", "handle", "a", "b", "c", "i", "total", "self.x"]
    assert [name for _, name in facts.imports] == ["numpy", "fluids.units"]
    assert facts.last_expression == "mass(3)"
    assert all(
        source[at:].startswith(("import", "from", "class", "def", "with", "a,", "for", "total", "self"))
        for at, _ in facts.defines
    )


def test_each_code_window_names_what_its_statements_define_and_import():
    # many windows, with nested definitions and imports out of the code's order of lines
    source = "".join(
        f"def f{i}(x):\n    import m{i}\n    return x\n" if i % 3 else f"import top{i}\nv{i} = {i}\n"
        for i in range(3000)
    )
    cell = {"cell_type": "code", "id": "c", "metadata": {}, "source": source, "outputs": [], "execution_count": 1}
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}
    chunked = chunk_notebook(read_notebook(json.dumps(notebook).encode(), "m.ipynb"))
    chunks = [c for c in chunked.chunks if c.kind == "code"]
    facts = code_facts(source)
    assert len(chunks) > 10
    for n, chunk in enumerate(chunks):
        for found, field in ((facts.defines, "defines"), (facts.imports, "imports")):
            expected = list(
                dict.fromkeys(name for at, name in found if (n == 0 or at >= chunk.start) and at < chunk.end)
            )
            assert chunk.meta.get(field, []) == expected, (n, field)


def test_python_2_code_falls_back_to_a_line_based_guess():
    facts = code_facts("print 'KG', 7.9\nKG = 7.9\ndef f(x):\n    y = 2\nKG")
    assert [name for _, name in facts.defines] == ["KG", "f()"]
    assert facts.last_expression == "KG"


# -- Markdown headings ----------------------------------------------------------------------------


def test_headings_atx_and_setext_outside_fences():
    text = (FIXTURES / "documents" / "stability_notes.md").read_text()
    found = headings(text)
    assert [(level, title) for _, level, title in found] == [
        (1, "Stability notes"), (2, "Free surface"), (2, "Setext headings count too"),
    ]  # fmt: skip
    assert all(text[offset:].lstrip("# ").startswith(title) for offset, _, title in found)


# -- typed chunks of a notebook -------------------------------------------------------------------


def test_every_quote_is_the_original_at_its_offsets_and_ids_are_unique():
    for name in ("ballast_v4.ipynb", "stability_v3.ipynb"):
        notebook = fixture(name)
        chunks = chunk_notebook(notebook).chunks
        assert len({chunk.id for chunk in chunks}) == len(chunks)
        for chunk in chunks:
            assert chunk.kind in KINDS
            assert chunk.quote == original_text(notebook, chunk)[chunk.start : chunk.end]
            assert (chunk.path, chunk.revision) == (name, notebook.revision)
            assert not BASE64.search(chunk.text) and "\x1b" not in chunk.text


def test_the_kinds_of_the_ballast_notebook():
    kinds = [(chunk.cell, chunk.output, chunk.kind) for chunk in chunks_of("ballast_v4.ipynb")]
    assert kinds == [
        (0, None, "markdown"), (1, None, "code"), (1, 0, "stream"), (2, None, "code"), (2, 0, "table"),
        (3, None, "code"), (3, 0, "scalar"), (4, None, "code"), (4, 0, "stream"), (4, 1, "stream"),
        (5, None, "code"), (6, None, "code"), (6, 0, "table"), (7, None, "markdown"), (8, None, "code"),
        (8, 0, "plot"), (9, None, "code"), (9, 0, "error"), (10, None, "code"),
        (11, None, "code"), (11, 0, "scalar"), (12, None, "code"), (12, 0, "scalar"),
    ]  # fmt: skip


def test_a_scalar_names_the_expression_that_produced_it():
    scalar = next(chunk for chunk in chunks_of("ballast_v4.ipynb") if chunk.kind == "scalar")
    assert scalar.text.startswith("ballast_total = 3803.0\n")
    assert "def tank_mass(volume, density=1.025):" in scalar.text  # the source, as context
    assert (scalar.quote, scalar.meta["field"], scalar.meta["expression"]) == ("3803.0", "text/plain", "ballast_total")


def test_code_is_searched_with_a_prefix_of_what_it_defines():
    code = {chunk.cell: chunk for chunk in chunks_of("ballast_v4.ipynb") if chunk.kind == "code"}
    assert code[3].text.startswith("# defines: tank_mass(), ballast_total\ndef tank_mass(")
    assert code[1].text.startswith("# defines: np, pd; imports: numpy, pandas\n%matplotlib inline")
    assert code[1].meta["defines"] == ["np", "pd"]
    assert code[4].meta["defines"] == ["name", "row"]  # under %%time


def test_dataframe_outputs_become_tables():
    tables = [chunk for chunk in chunks_of("ballast_v4.ipynb") if chunk.kind == "table"]
    html, printed = tables
    assert html.meta["shape"] == printed.meta["shape"] == [4, 2]
    assert (html.meta["parsed_from"], html.meta["field"]) == ("html", "text/plain")
    assert (printed.meta["parsed_from"], printed.meta["field"]) == ("text", "text")
    assert html.text.startswith("tanks\n") and "| forepeak | 412.1 |" in html.text
    assert "1284.6" in printed.text and "aftpeak" in printed.text


def test_a_plot_is_described_by_its_labels_and_the_markdown_above():
    plot = next(chunk for chunk in chunks_of("ballast_v4.ipynb") if chunk.kind == "plot")
    for words in (
        "title: GZ curve",
        "x axis: heel [deg]",
        "y axis: GZ [m]",
        "legend: loaded, ballast",
        "The righting lever against heel angle",
    ):
        assert words in plot.text
    assert plot.quote.startswith("ax.plot(") and plot.quote.endswith("ax.set_ylabel(f'GZ [m]')")
    assert (plot.meta["mime"], plot.meta["field"], plot.output) == ("image/png", "source", 0)
    v3_plot = next(chunk for chunk in chunks_of("stability_v3.ipynb") if chunk.kind == "plot")
    assert v3_plot.quote == "plt.title('Lightship weight')"


def test_errors_and_streams_lose_their_terminal_colours():
    chunks = chunks_of("ballast_v4.ipynb")
    error = next(chunk for chunk in chunks if chunk.kind == "error")
    assert (
        error.text == "NameError: name 'area' is not defined\nCell In[8], line 1\n----> 1 draft = ballast_total / area"
    )
    assert (error.meta["error"], error.meta["ename"], error.quote) == (True, "NameError", "name 'area' is not defined")
    stderr = next(chunk for chunk in chunks if chunk.meta.get("name") == "stderr")
    assert stderr.text == "CPU times: user 1 ms" and stderr.quote.startswith("\x1b[31m")


def test_widgets_and_unknown_types_are_skipped_and_counted():
    assert chunk_notebook(fixture("ballast_v4.ipynb")).skipped == {
        "widget view": 1, "unknown MIME application/javascript": 1,
    }  # fmt: skip
    with pytest.warns(NotebookWarning):
        future = fixture("future_4_99.ipynb")
    assert chunk_notebook(future).skipped == {"unknown cell type hologram": 1, "unknown output type telepathy": 1}


def test_markdown_chunks_carry_their_heading_path():
    chunks = chunks_of("ballast_v4.ipynb")
    gz = next(chunk for chunk in chunks if chunk.cell == 7)
    assert gz.meta["headings"] == ["Ballast plan", "Tank volumes", "GZ curve"]
    assert gz.text.startswith("Ballast plan > Tank volumes\n### GZ curve")
    assert next(chunk for chunk in chunks if chunk.cell == 8).meta["headings"][-1] == "GZ curve"


def test_long_markdown_is_windowed_under_the_heading_of_each_window():
    source = "# Tanks\n\n" + "forepeak " * 200 + "\n\n## Double bottom\n\n" + "db1 " * 200
    cell = {"cell_type": "markdown", "metadata": {}, "source": source}
    data = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}).encode()
    notebook = read_notebook(data, "long.ipynb")
    chunks = chunk_notebook(notebook).chunks
    assert len(chunks) > 3
    assert [chunk.meta["headings"] for chunk in chunks][-1] == ["Tanks", "Double bottom"]
    assert chunks[-1].text.startswith("Tanks > Double bottom\n")
    assert coverage(chunk_notebook(notebook)).missing == ()


def test_notebook_metadata_and_rules_reach_every_chunk():
    chunks = chunks_of("ballast_v4.ipynb")
    expected = {
        "project": "17-042",
        "author": "J. de Vries",
        "year": 2017,
        "vessel_class": "130 m general cargo",
        "tags": ["ballast", "stability"],
        "deprecated": False,
    }
    assert all(expected.items() <= chunk.meta.items() for chunk in chunks)
    rules = parse_rules([
        {"pattern": r"(^|/)(?P<year>(19|20)\d\d)/", "meta": {"tags": ["archive"]}},
        {"pattern": r"^2015/", "meta": {"project": "15-007", "deprecated": True}},
    ])  # fmt: skip
    meta = document_meta("2015/tanks.ipynb", {"cellar": {"project": "15-008", "tags": ["tanks"]}}, rules)
    assert meta == {"year": 2015, "tags": ["archive", "tanks"], "project": "15-008", "deprecated": True}


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ({"pattern": "x"}, "rules must be a JSON array"),
        ([{"meta": {}}], r"rule 0: must be an object with a \"pattern\" string"),
        ([{"pattern": "("}], "rule 0: bad pattern"),
        ([{"pattern": "(?P<decade>x)"}], "rule 0: group 'decade' is not one of"),
        ([{"pattern": "x", "meta": {"year": "2015"}}], r"rule 0\.meta\.year must be a year \(1 to 9999\)"),
        ([{"pattern": "x", "extra": 1}], "rule 0: unknown key"),
    ],
)
def test_bad_rules_are_value_errors(rules, message):
    with pytest.raises(ValueError, match=message):
        parse_rules(rules)


def test_mistyped_cellar_metadata_rejects_the_notebook():
    with pytest.raises(NotebookError, match=r"^x\.ipynb: metadata\.cellar\.tags must be an array of at most 100"):
        document_meta("x.ipynb", {"cellar": {"tags": "ballast"}})


def test_cellar_metadata_is_bounded_and_a_bad_value_is_shown_cut():
    """Every chunk carries its document's meta and the site's boot table every notebook's: a 15 MB
    project made a 345 MB container, and the error for a million bad tags was a 9 MB line."""
    assert document_meta("x.ipynb", {"cellar": {"project": "p" * 200, "tags": ["t"] * 100}})["project"] == "p" * 200
    for meta in ({"project": "p" * 201}, {"author": "a" * 10**6}, {"tags": ["t"] * 101}, {"tags": ["t" * 201]}):
        with pytest.raises(NotebookError, match=r"must be (a string|an array) of at most"):
            document_meta("x.ipynb", {"cellar": meta})
    with pytest.raises(NotebookError) as raised:
        document_meta("x.ipynb", {"cellar": {"tags": [1] * 10**6}})
    assert len(str(raised.value)) < 250 and str(raised.value).endswith(", 1, 1,…")


def test_ids_are_stable_when_other_cells_change():
    """A note inserted at the top and one edited cell: every other chunk keeps its id."""
    data = json.loads((NOTEBOOKS / "ballast_v4.ipynb").read_text())
    before = chunk_notebook(read_notebook(json.dumps(data).encode(), "b.ipynb")).chunks
    data["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": "New note at the top."})
    data["cells"][4]["source"] = "ballast_total = 3803.5\nballast_total"
    after = chunk_notebook(read_notebook(json.dumps(data).encode(), "b.ipynb")).chunks
    old = {(chunk.cell, chunk.output, chunk.kind, chunk.start): chunk.id for chunk in before}
    moved = {(chunk.cell - 1, chunk.output, chunk.kind, chunk.start): chunk.id for chunk in after if chunk.cell}
    unchanged = [key for key in old if key[0] != 3]
    assert len(unchanged) == len(before) - 2
    assert all(old[key] == moved[key] for key in unchanged)
    assert old[3, None, "code", 0] != moved[3, None, "code", 0]
    renamed = chunk_notebook(read_notebook(json.dumps(data).encode(), "other.ipynb")).chunks
    assert not {chunk.id for chunk in renamed} & {chunk.id for chunk in after}


def test_identical_cells_get_distinct_ids():
    chunks = chunks_of("ballast_v4.ipynb")
    repeated = [chunk for chunk in chunks if chunk.quote == "tanks.volume_m3.sum()"]
    assert len(repeated) == 2 and repeated[0].id != repeated[1].id


# -- plain documents ------------------------------------------------------------------------------


def test_plain_documents_become_text_chunks():
    md = chunk_file(FIXTURES / "documents" / "stability_notes.md", FIXTURES)
    txt = chunk_file(FIXTURES / "documents" / "forepeak.txt", FIXTURES)
    for chunked in (md, txt):
        assert {chunk.kind for chunk in chunked.chunks} == {"text"}
        for chunk in chunked.chunks:
            assert chunk.quote == chunked.source[chunk.start : chunk.end]
            assert chunk.cell is None and chunk.output is None
        assert coverage(chunked).coverage == 1.0
    assert md.chunks[0].path == "documents/stability_notes.md"
    assert txt.chunks[0].quote.startswith("Plain text: the forepeak tank holds 412.1 m3")
    with pytest.raises(ValueError, match=r"^notes\.txt: not UTF-8 text"):
        chunk_document(b"\xff ballast", "notes.txt")


def test_find_documents_skips_hidden_folders(tmp_path):
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "a-checkpoint.ipynb").write_text("{}")
    (tmp_path / "b.ipynb").write_text("{}")
    (tmp_path / "c.md").write_text("# c")
    (tmp_path / "d.csv").write_text("x")
    assert [Path(name).name for name in find_documents(tmp_path)] == ["b.ipynb", "c.md"]


def test_importing_chunking_does_not_import_pandas():
    code = "import sys, cellar.ingest.chunking; print('pandas' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# -- the shared corpus ----------------------------------------------------------------------------

DATAFRAME = re.compile(r"<table[^>]*class=\"[^\"]*dataframe", re.IGNORECASE)
SHAPE_FOOTER = re.compile(r"(\d+) rows\s*(?:×|x|&times;)\s*(\d+) columns")
SERIES_FOOTER = re.compile(r"(?:Name: .*, )?(?:Length: \d+, )?dtype: \w+|\[\d+ rows x \d+ columns\]")


@pytest.fixture(scope="module")
def corpus(shared_corpus):
    """Every readable corpus notebook and its chunks (the invalid edge files are left out)."""
    result = []
    for file in sorted(shared_corpus.rglob("*.ipynb")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotebookWarning)
            try:
                notebook = load_notebook(file, shared_corpus)
            except NotebookError:
                assert "/edge/" in file.as_posix()
                continue
        result.append((notebook, chunk_notebook(notebook)))
    return result


def html_shape(markup: str) -> tuple[int, int]:
    """The shape of a pandas HTML table read with regular expressions: the footer pandas writes
    under a truncated table, else the body rows and the data cells of the first row."""
    footer = SHAPE_FOOTER.search(markup)
    if footer:
        return int(footer[1]), int(footer[2])
    body = re.search(r"<tbody>(.*?)</tbody>", markup, re.S)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body[1], re.S) if body else []
    if rows:
        return len(rows), len(re.findall(r"<td", rows[0]))
    header = re.findall(r"<tr[^>]*>(.*?)</tr>", re.search(r"<thead>(.*?)</thead>", markup, re.S)[1], re.S)
    return 0, len(re.findall(r"<th", header[0])) - 1  # less the index column's corner


def test_every_valid_corpus_notebook_chunks(corpus):
    assert len(corpus) >= 210
    counts = Counter(chunk.kind for _, chunked in corpus for chunk in chunked.chunks)
    assert set(counts) == set(KINDS)  # raw cells give text chunks
    assert sum(chunked.skipped.get("widget view", 0) for _, chunked in corpus) == 73


def test_every_corpus_quote_is_the_original_at_its_offsets(corpus):
    for notebook, chunked in corpus:
        for chunk in chunked.chunks:
            assert chunk.quote == original_text(notebook, chunk)[chunk.start : chunk.end], chunk.id


def test_no_searched_text_holds_base64_or_terminal_escapes(corpus):
    for _, chunked in corpus:
        for chunk in chunked.chunks:
            assert not BASE64.search(chunk.text), (chunk.path, chunk.cell, chunk.output)
            assert "\x1b" not in chunk.text, (chunk.path, chunk.cell, chunk.output)


def test_windowed_text_is_covered_whole(corpus):
    for _, chunked in corpus:
        report = coverage(chunked)
        # Only progress text that a carriage return overwrote may go missing.
        assert report.total_words - report.covered_words <= 0.01 * report.total_words, chunked.chunks[0].path


def test_chunk_ids_are_unique_and_identical_across_two_runs(corpus, shared_corpus):
    ids = [chunk.id for _, chunked in corpus for chunk in chunked.chunks]
    assert len(set(ids)) == len(ids)
    again = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotebookWarning)
        for notebook, _ in corpus:
            fresh = load_notebook(shared_corpus / notebook.path, shared_corpus)
            again += [chunk.id for chunk in chunk_notebook(fresh).chunks]
    assert again == ids


def test_html_dataframes_become_tables_of_the_same_shape(corpus):
    total, matched, misses = 0, 0, []
    for notebook, chunked in corpus:
        tables = {(chunk.cell, chunk.output): chunk for chunk in chunked.chunks if chunk.kind == "table"}
        for cell in notebook.cells:
            for output in cell.outputs:
                markup = output.data.get("text/html", "")
                if output.output_type in ("execute_result", "display_data") and DATAFRAME.search(markup):
                    total += 1
                    table = tables.get((cell.index, output.index))
                    if table and tuple(table.meta["shape"]) == html_shape(markup):
                        matched += 1
                    else:
                        misses.append((notebook.path, cell.index, output.index))
    assert total == 343
    assert matched / total >= 0.95, misses


def test_fonnesbeck_text_only_dataframes_become_tables(corpus):
    """DataFrame and Series reprs saved without HTML: pandas pads every line of a block to one
    width, and a Series ends in its dtype line."""
    total, tables, misses = 0, 0, []
    for notebook, chunked in corpus:
        if not notebook.path.startswith("fonnesbeck__"):
            continue
        kinds = {(chunk.cell, chunk.output): chunk.kind for chunk in chunked.chunks}
        for cell in notebook.cells:
            for output in cell.outputs:
                plain = output.data.get("text/plain")
                if plain is None or set(output.data) != {"text/plain"} or not looks_like_pandas(plain):
                    continue
                total += 1
                if kinds.get((cell.index, output.index)) == "table":
                    tables += 1
                else:
                    misses.append(plain[:80])
    assert total >= 150
    assert tables / total >= 0.85, misses


def looks_like_pandas(text: str) -> bool:
    lines = text.strip("\n").split("\n")
    if SERIES_FOOTER.fullmatch(lines[-1].strip()):
        return True
    blocks = [block.split("\n") for block in re.split(r"\n\s*\n", text.strip("\n"))]
    return all(len(block) >= 2 and len({len(line) for line in block}) == 1 for block in blocks)


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("## Ballast volumes ##  ", (2, "Ballast volumes")),
        ("# Title#", (1, "Title#")),
        ("# C# and F#", (1, "C# and F#")),
        ("### a <b>bold</b> `x` *y* ###\r\n", (3, "a bold x y")),
        ("####### seven", None),
        ("#hashtag", None),
        ("    # indented code", None),
    ],
)
def test_atx_headings_are_read_as_commonmark_reads_them(line, heading):
    assert headings(line) == ([] if heading is None else [(0, *heading)])
    units = markdown_units(line)
    assert [(u.level, u.title) for u in units if u.kind == "heading"] == ([] if heading is None else [heading])


def test_hostile_heading_lines_are_read_in_one_pass():
    # Found by a hostile archive: a lazy regular expression backtracked over 100,000 spaces (minutes
    # per line), and a run of "<" was scanned to its end from each one; both with a long table row.
    spaces = "# a" + " " * 100_000 + "x\n\nbody text\n"
    assert headings(spaces) == [(0, 1, "a x")]
    assert [u.title for u in markdown_units(spaces) if u.kind == "heading"] == ["a x"]
    less_than = "# " + "<" * 400_000 + "\n\nbody\n"
    assert headings(less_than) == [(0, 1, "<" * 400_000)]
    row = "|" * 50_000 + " " * 50_000 + "x"
    assert [u.kind for u in markdown_units(row)] == ["paragraph"]

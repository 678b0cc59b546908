"""Hostile archives: every file is either read or reported with its name and the reason, nothing
blocks, nothing is read without bound, nothing outside the archive is read, and the batch finishes.

The cases of issue 13: a FIFO or a socket named like a notebook, links to /dev/zero and
/etc/passwd, links inside the archive, dangling links and loops, a linked folder, a file over the
size limit, a file name that is not UTF-8, a lone surrogate, JSON nested 100,000 deep, an integer
literal past Python's digit limit, code nested too deeply for `ast`, a text past MAX_TEXT_CHARS.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import warnings
from pathlib import Path

import pytest
from tests.unit.conftest import deadline

from cellar.cli import main
from cellar.ingest import chunking, discovery
from cellar.ingest.chunking import chunk_file
from cellar.ingest.discovery import FileRefused, find_documents, read_document
from cellar.ingest.documents.extract import extract
from cellar.ingest.notebook import NotebookError, NotebookWarning, read_notebook
from cellar.rerender import batch, vfs
from cellar.rerender.batch import find_notebooks
from cellar.rerender.blob_store import BlobStore
from cellar.rerender.environment import imported_modules
from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.index import build_index_from_directory

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "tests" / "fixtures" / "notebooks" / "ballast_v4.ipynb"


def notebook(source: str = "print(1)", **cell: object) -> dict:
    return {
        "nbformat": 4,
        "nbformat_minor": 4,
        "metadata": {},
        "cells": [{"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": 1, **cell}],
    }


def refusal(path: Path, root: Path) -> str:
    with deadline():
        with pytest.raises(ValueError) as caught:
            chunk_file(path, root)
    return str(caught.value)


@pytest.fixture()
def archive(tmp_path: Path) -> Path:
    folder = tmp_path / "archive"
    folder.mkdir()
    shutil.copy(GOOD, folder / "good.ipynb")
    return folder


def test_a_fifo_named_like_a_notebook_is_refused_without_blocking(archive):
    os.mkfifo(archive / "x.ipynb")
    message = refusal(archive / "x.ipynb", archive)
    assert message == "x.ipynb: a FIFO (named pipe), not a regular file: not opened"
    os.mkfifo(archive / "notes.md")
    assert refusal(archive / "notes.md", archive).startswith("notes.md: a FIFO")


def test_a_socket_is_refused(archive):
    server = socket.socket(socket.AF_UNIX)
    place = archive / "s.ipynb"
    try:
        server.bind(str(place))
    except OSError as error:  # a path too long for AF_UNIX
        pytest.skip(f"cannot make a socket here: {error}")
    try:
        assert refusal(place, archive) == "s.ipynb: a socket, not a regular file: not opened"
    finally:
        server.close()


def test_links_out_of_the_archive_are_not_followed(archive):
    (archive / "zero.ipynb").symlink_to("/dev/zero")
    (archive / "passwd.txt").symlink_to("/etc/passwd")
    (archive / "up.md").symlink_to(archive.parent / "elsewhere.md")
    (archive.parent / "elsewhere.md").write_text("# secret\n")
    assert refusal(archive / "zero.ipynb", archive) == (
        "zero.ipynb: a symbolic link to /dev/zero, outside the archive: not followed"
    )
    assert "passwd.txt: a symbolic link to /etc/passwd, outside the archive" in refusal(archive / "passwd.txt", archive)
    assert "outside the archive" in refusal(archive / "up.md", archive)


def test_links_inside_the_archive_are_followed_to_regular_files_only(archive):
    (archive / "latest.ipynb").symlink_to("good.ipynb")
    chunked = chunk_file(archive / "latest.ipynb", archive)
    assert chunked.chunks and chunked.chunks[0].path == "latest.ipynb"
    os.mkfifo(archive / "pipe")
    (archive / "pipe.ipynb").symlink_to("pipe")
    assert refusal(archive / "pipe.ipynb", archive) == (
        "pipe.ipynb: a symbolic link to a FIFO (named pipe), not a regular file: not opened"
    )
    (archive / "gone.ipynb").symlink_to("nothing-here.ipynb")
    assert "gone.ipynb: cannot read the file: a dangling symbolic link" in refusal(archive / "gone.ipynb", archive)
    (archive / "a.ipynb").symlink_to("b.ipynb")
    (archive / "b.ipynb").symlink_to("a.ipynb")
    assert "a.ipynb: cannot read the file: a symbolic link loop" in refusal(archive / "a.ipynb", archive)


def test_a_linked_folder_is_listed_and_reported_not_walked(archive):
    (archive / "sub").mkdir()
    shutil.copy(GOOD, archive / "sub" / "inner.ipynb")
    (archive / "again").symlink_to("sub")
    (archive / "etc").symlink_to("/etc")
    found = [os.path.relpath(path, archive) for path in find_documents(archive)]
    assert found == ["again", "etc", "good.ipynb", os.path.join("sub", "inner.ipynb")]
    assert refusal(archive / "again", archive) == (
        "again: a symbolic link to a folder, not a regular file: folders are walked without following links"
    )
    assert "outside the archive" in refusal(archive / "etc", archive)


def test_a_file_over_the_limit_is_refused_unread(archive, monkeypatch):
    monkeypatch.setattr(discovery, "MAX_FILE_BYTES", 1000)
    (archive / "big.ipynb").write_text(json.dumps(notebook("x = 1\n" * 500)))
    message = refusal(archive / "big.ipynb", archive)
    assert message.startswith("big.ipynb: ") and message.endswith("over the 1000 bytes limit for one file: not read")
    assert read_document(GOOD, GOOD.parent, limit=10**9)  # the limit is a parameter too
    with pytest.raises(FileRefused, match="over the 10 bytes limit"):
        read_document(GOOD, GOOD.parent, limit=10)


def test_a_file_named_on_a_command_line_is_read_only_as_a_regular_file_within_its_limit(tmp_path):
    """`read_regular`, what gold sets, blobs to add and files to hash are read with: through the
    links they were named by, but never a FIFO, a device or a folder, and never past the limit."""
    (tmp_path / "gold.jsonl").write_bytes(b"12345")
    (tmp_path / "link").symlink_to(tmp_path / "gold.jsonl")
    os.mkfifo(tmp_path / "fifo")
    assert discovery.read_regular(tmp_path / "link") == b"12345"
    assert discovery.read_regular(tmp_path / "gold.jsonl", limit=5) == b"12345"
    with pytest.raises(OSError, match="^.*5 bytes, over the limit of 4 for one file: not read$"):
        discovery.read_regular(tmp_path / "gold.jsonl", limit=4)
    for other in (tmp_path / "fifo", Path("/dev/zero"), tmp_path):
        with deadline(10), pytest.raises(OSError) as refused:
            discovery.read_regular(other)
        assert refused.value.strerror == discovery.NOT_REGULAR


def test_a_file_name_that_is_not_utf8_is_refused_and_printable(archive):
    name = os.fsdecode(b"bad\xff.ipynb")
    (archive / name).write_text(json.dumps(notebook()))
    message = refusal(archive / name, archive)
    assert message == "bad\\xff.ipynb: the file name is not valid UTF-8: rename the file"
    message.encode("utf-8")  # printable and storable as it is


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (json.dumps(notebook()).replace('"print(1)"', '"print(\\ud800)"'), "lone surrogate ('\\ud800')"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
        (json.dumps(notebook()).replace('"execution_count": 1', '"execution_count": ' + "9" * 5000), "digits"),
        ('{"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [], "x": "\\udc80\\ud800"}', "surrogate"),
    ],
    ids=["lone-surrogate", "deep-array", "deep-object", "long-integer", "surrogate-elsewhere"],
)
def test_json_hazards_are_clear_notebook_errors(text, problem):
    with deadline():
        with pytest.raises(NotebookError) as caught:
            read_notebook(text.encode("utf-8"), "2020/odd.ipynb")
    assert str(caught.value).startswith("2020/odd.ipynb: ") and problem in str(caught.value)


def test_a_paired_surrogate_escape_is_read():
    text = json.dumps(notebook("print('\U0001f600')"))  # ensure_ascii writes the pair \ud83d\ude00
    assert "\\ud83d" in text
    assert read_notebook(text.encode(), "a.ipynb").cells[0].source == "print('\U0001f600')"


def test_code_nested_too_deeply_for_ast_is_chunked_without_its_facts(archive):
    deep = "x = " + "1+" * 100_000 + "1\n"
    parens = "y = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    (archive / "deep.ipynb").write_text(json.dumps(notebook(deep + parens + "import numpy\n")))
    with deadline(60):
        chunked = chunk_file(archive / "deep.ipynb", archive)
        assert chunked.chunks
        assert imported_modules([deep, parens, "import numpy\n"]) == {"numpy"}
        assert imported_modules(["\0 import os"]) == set()


def test_a_text_past_the_limit_is_cut_with_a_warning(archive, monkeypatch):
    monkeypatch.setattr(chunking, "MAX_TEXT_CHARS", 1000)
    long = "word " * 1000
    nb = notebook(long, outputs=[{"output_type": "stream", "name": "stdout", "text": long}])
    nb["cells"].append({"cell_type": "markdown", "metadata": {}, "source": "short"})
    (archive / "long.ipynb").write_text(json.dumps(nb))
    (archive / "long.md").write_text(long)
    # a text's blocks are found in what is indexed only: splitting costs many times the text's size
    split = []
    monkeypatch.setattr(chunking, "extract", lambda data, path: split.append(len(data)) or extract(data, path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chunked = chunk_file(archive / "long.ipynb", archive)
        document = chunk_file(archive / "long.md", archive)
    messages = [str(warning.message) for warning in caught]
    assert messages == [
        "long.ipynb: cells[0].outputs[0].text has 5,000 characters; only the first 1,000 are indexed",
        "long.ipynb: cells[0].source has 5,000 characters; only the first 1,000 are indexed",
        "long.md: the text has 5,000 characters; only the first 1,000 are indexed",
    ]
    assert all(caught_warning.category is NotebookWarning for caught_warning in caught)
    assert max(chunk.end for chunk in chunked.chunks + document.chunks) <= 1000
    assert any(chunk.cell == 1 for chunk in chunked.chunks)
    # the document is one paragraph the cut runs through: indexed up to the cut (its last word,
    # the space after it aside), not left empty
    assert max(chunk.end for chunk in document.chunks) == 999
    assert document.document["blocks"][-1]["end"] == 999
    assert split == [1000]


def test_a_huge_note_is_cut_on_its_own_and_the_notes_after_it_are_indexed(archive):
    """One pasted log of 3 MB in a service note took the whole text a file is indexed up to, and
    the notes after it were lost with a warning that named none of them."""
    huge = "pump log line " * 250_000
    (archive / "s.records.csv").write_text(f"id,text\nN1,seal leak\nN2,{huge}\nN3,bearing noise\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chunked = chunk_file(archive / "s.records.csv", archive)
    assert [block["citation"] for block in chunked.document["blocks"]] == ["N1", "N2", "N3"]
    assert any("bearing noise" in chunk.text for chunk in chunked.chunks)
    assert [str(warning.message) for warning in caught] == [
        "s.records.csv: 1 note(s) have a text of more than 100,000 characters, the first on line 3: each keeps "
        "its first 100,000"
    ]


def test_blocks_past_a_documents_cut_are_named(archive, monkeypatch):
    monkeypatch.setattr(chunking, "MAX_TEXT_CHARS", 1000)
    (archive / "s.records.jsonl").write_text(
        "".join(json.dumps({"id": f"N{n}", "text": "word " * 100}) + "\n" for n in range(4))
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chunked = chunk_file(archive / "s.records.jsonl", archive)
    assert [block["citation"] for block in chunked.document["blocks"]] == ["N0", "N1"]
    assert [str(warning.message) for warning in caught][-1] == (
        "s.records.jsonl: blocks 3 to 4 (N2 on) lie past the cut and are not indexed"
    )


def _output_cell(*outputs: dict) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": "show()", "outputs": list(outputs), "execution_count": 1}


def _html(html: str) -> dict:
    return {"output_type": "display_data", "metadata": {}, "data": {"text/html": html}}


def test_outputs_that_cost_quadratic_time_or_gigabytes_are_read_in_linear_time(archive):
    """Found by an audit: each of these took minutes to hours (or 2.5 GB for a 1 KB table) before;
    each notebook is read whole now, its markdown cell with it."""
    spans = '<td colspan="1000" rowspan="1000">x</td>' * 16
    cells = {
        "blank-line": _output_cell({"output_type": "stream", "name": "stdout", "text": "x\n" + " " * 1_000_000}),
        "carriage-return": {"cell_type": "markdown", "metadata": {}, "source": "a" * 1_000_000 + "\r\nb"},
        "open-tables": _output_cell(_html("<table" * 200_000), _html('<table class="' * 100_000)),
        "spans": _output_cell(
            _html(
                f'<table class="dataframe"><thead><tr><th>a</th></tr></thead><tbody><tr><th>i</th>{spans}</tr></tbody></table>'
            )
        ),
        "labels": {**_output_cell(), "source": "".join(f"plt.title('t{i}')\n" for i in range(30_000))},
        "one-line": {**_output_cell(), "source": "x_" * 900_000},
    }
    for name, cell in cells.items():
        nb = notebook()
        nb["cells"] = [{"cell_type": "markdown", "metadata": {}, "source": "# Ballast pump report"}, cell]
        (archive / f"{name}.ipynb").write_text(json.dumps(nb))
        with deadline(60):
            chunked = chunk_file(archive / f"{name}.ipynb", archive)
        assert any(chunk.cell == 0 for chunk in chunked.chunks), name


def test_markup_and_number_runs_that_cost_quadratic_time_are_read_in_linear_time(archive):
    """Found by an audit (2026-12-06): comments that html.parser of Python 3.11 never ends
    (`<!--a>` many times, then `--!>`: 360 KB took 54 s, 1 MB never ended), in a page and in a
    notebook's HTML output; a run of digits and commas, in a question (100 KB never ended) and in
    a block a value question is asked of (40 KB took 18 s)."""
    from cellar.retrieval.analysis import Analyzer
    from cellar.retrieval.blocks import Asked, holds_quantity

    comments = "<!--a>" * 170_000 + "--!>"
    (archive / "report.html").write_text(f"<h1>Report</h1><p>ballast</p>{comments}<p>end</p>")
    nb = notebook()
    nb["cells"] = [{"cell_type": "markdown", "metadata": {}, "source": "# Pumps"}, _output_cell(_html(comments))]
    (archive / "comments.ipynb").write_text(json.dumps(nb))
    for name in ("report.html", "comments.ipynb"):
        with deadline(60):
            chunked = chunk_file(archive / name, archive)
        assert chunked.chunks, name
    run = "1" + ",111" * 25_000 + "1"
    with deadline(60):
        assert len(Analyzer().query_terms(run)) > 1000
    with deadline(60):
        assert not holds_quantity("1," * 100_000 + "1!", Asked(measure=True), Analyzer().terms)


def test_a_long_heading_is_carried_cut_by_every_block_under_it(archive):
    """Every block carries its heading path, in its searched text and its citation: a 208 KB
    heading over 2,000 paragraphs (a 216 KB file) made 1.4 GB of chunks, and an article's title
    likewise. The heading's own block still quotes it whole."""
    title = "Ballast " + "x" * 100_000
    (archive / "report.md").write_text(f"# {title}\n\n" + "".join(f"para {i}\n\n" for i in range(500)))
    articles = "".join(
        f'<article number="{i}" title="{title}"><item label="a">text {i}</item></article>' for i in range(9)
    )
    (archive / "std.clauses.xml").write_text(f'<clauses designation="CVS 1">{articles}</clauses>')
    for name in ("report.md", "std.clauses.xml"):
        chunked = chunk_file(archive / name, archive)
        sizes = sorted(len(json.dumps(chunk.record())) for chunk in chunked.chunks)
        assert sizes[-2] < 5_000, name  # the largest: the block that quotes the heading itself
    assert chunk_file(archive / "report.md", archive).chunks[-1].meta["citation"].endswith("xxx…, paragraph 500")


def test_a_folder_too_deep_to_list_is_reported_not_silently_skipped(archive, tmp_path, capsys):
    """A path longer than the system allows (4,096 bytes here) cannot be walked: the folder is
    named with the reason and the index exits 1, where before its files were left out unsaid."""
    folder = os.open(archive, os.O_RDONLY)
    try:
        for _ in range(40):  # made one step at a time, from a descriptor: no path is that long
            os.mkdir("d" * 120, dir_fd=folder)
            inner = os.open("d" * 120, os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder = inner
        with os.fdopen(os.open("deep.md", os.O_WRONLY | os.O_CREAT, dir_fd=folder), "w") as deep:
            deep.write("# Deep\n\ndeep words\n")
    finally:
        os.close(folder)
    assert main(["index", str(archive), "--out", str(tmp_path / "shard"), "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert "cannot read the file: its path is longer than this system allows" in err
    shutil.rmtree(archive / ("d" * 120))  # rmtree walks by descriptors too


def test_a_notebook_of_endless_cells_or_printed_tables_is_indexed_up_to_its_caps(archive, monkeypatch):
    """Each cell's texts are bounded, the cells are not, nor the frames one output prints (each
    read through pandas): past MAX_FILE_CHUNKS the cells left are named in a warning, past
    MAX_PRINTED_TABLES an output's frames are its text only."""
    from cellar.ingest import outputs

    monkeypatch.setattr(chunking, "MAX_FILE_CHUNKS", 100)
    monkeypatch.setattr(outputs, "MAX_PRINTED_TABLES", 3)
    frames = "".join(f"   a  b\n0  {i}  2\n1  3  4\n\n" for i in range(10))
    nb = notebook()
    nb["cells"] = [_output_cell({"output_type": "stream", "name": "stdout", "text": frames})]
    nb["cells"] += [{"cell_type": "markdown", "metadata": {}, "source": f"note {i}"} for i in range(300)]
    (archive / "many.ipynb").write_text(json.dumps(nb))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chunked = chunk_file(archive / "many.ipynb", archive)
    assert [str(warning.message) for warning in caught] == [
        "many.ipynb: cells[0].outputs[0] prints more than 3 tables; the rest are indexed as its text",
        "many.ipynb: 100 chunks by cell 96, over 100: cells 96 to 300 are not indexed",
    ]
    assert sum(chunk.kind == "table" for chunk in chunked.chunks) == 3
    assert len(chunked.chunks) == 100 and any("0  9  2" in chunk.text for chunk in chunked.chunks)


def test_a_document_of_endless_blocks_is_indexed_up_to_the_same_cap(archive, monkeypatch):
    """A document's blocks too: 200,000 code fences of a 2 MB Markdown file took 53 s and 1 GB;
    past MAX_FILE_CHUNKS the blocks left are named in a warning, those before are indexed."""
    monkeypatch.setattr(chunking, "MAX_FILE_CHUNKS", 100)
    (archive / "fences.md").write_text("# Fences\n\n" + "".join(f"```\nx{i}\n```\n\n" for i in range(300)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chunked = chunk_file(archive / "fences.md", archive)
    assert [str(warning.message) for warning in caught] == [
        "fences.md: 100 chunks by block 100 (Fences, paragraph 101), over 100: blocks 100 to 299 are not indexed"
    ]
    assert len(chunked.chunks) == 100 and "x99" in chunked.chunks[-1].text


@pytest.mark.parametrize(
    "html",
    [
        '<table class="dataframe"><tr><th>a</th></tr><tr><td>1</td></tr></table><p>'
        + "9" * 5000
        + " rows × 3 columns</p>",
        '<table class="dataframe"><tr><th>a</th></tr><tr><td colspan="²">1</td></tr></table>',
        '<table class="dataframe"><tr><th>a</th></tr><tr><td rowspan="' + "9" * 5000 + '">1</td></tr></table>',
    ],
    ids=["footer-of-5000-digits", "superscript-span", "span-of-5000-digits"],
)
def test_a_table_with_counts_no_int_can_read_is_read_not_refused(archive, html):
    """int() refuses 4,300 digits and `²` (which str.isdigit takes): such a count had rejected
    the whole notebook, with a message that did not name it."""
    nb = notebook()
    nb["cells"] = [{"cell_type": "markdown", "metadata": {}, "source": "# Ballast"}, _output_cell(_html(html))]
    (archive / "t.ipynb").write_text(json.dumps(nb))
    assert any(chunk.cell == 0 for chunk in chunk_file(archive / "t.ipynb", archive).chunks)


def test_a_table_of_infinities_is_read_without_a_warning_that_names_no_file(archive):
    html = '<table class="dataframe"><thead><tr><th></th><th>a</th></tr></thead><tbody>'
    html += "<tr><th>0</th><td>1e999</td></tr><tr><th>1</th><td>-1e999</td></tr></tbody></table>"
    nb = notebook()
    nb["cells"] = [_output_cell({**_html(html), "output_type": "execute_result", "execution_count": 1})]
    (archive / "t.ipynb").write_text(json.dumps(nb))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's "invalid value encountered in reduce" among them
        chunked = chunk_file(archive / "t.ipynb", archive)
    assert any(chunk.kind == "table" for chunk in chunked.chunks)


def test_a_year_no_index_column_holds_is_refused_naming_the_notebook(archive):
    """Every notebook with a year: the index keeps them as 64-bit integers, and a year of 10**30
    had stopped the whole build, writing nothing."""
    for name, year in (("a.ipynb", 10**30), ("b.ipynb", 2020)):
        nb = notebook()
        nb["metadata"] = {"cellar": {"year": year}}
        (archive / name).write_text(json.dumps(nb))
    (archive / "good.ipynb").unlink()
    built = build_index_from_directory(archive, load_model(default_model_dir()))
    assert [nb["path"] for nb in built.index.notebooks] == ["b.ipynb"]
    assert built.problems == [f"a.ipynb: metadata.cellar.year must be a year (1 to 9999), not {10**30}"]


def test_a_file_read_but_holding_no_text_is_reported_not_left_out_without_a_word(archive):
    """An empty Markdown file, a notebook without cells, a page of script alone: each is read, and
    has no entry in the shard; the build says so, naming it."""
    (archive / "empty.md").write_text("  \n")
    (archive / "script.html").write_text("<script>x()</script>")
    (archive / "blank.ipynb").write_text(json.dumps({**notebook(), "cells": []}))
    built = build_index_from_directory(archive, load_model(default_model_dir()))
    assert [nb["path"] for nb in built.index.notebooks] == ["good.ipynb"]
    assert sorted(built.problems) == [
        f"{name}: nothing to index: it holds no text" for name in ("blank.ipynb", "empty.md", "script.html")
    ]


def test_a_title_of_a_megabyte_is_cut_in_the_table_fetched_at_boot(archive):
    nb = notebook()
    nb["metadata"] = {"title": "Ballast " * 125_000}
    (archive / "good.ipynb").write_text(json.dumps(nb))
    built = build_index_from_directory(archive, load_model(default_model_dir()))
    title = built.index.notebooks[0]["title"]
    assert len(title) == 300 and title.startswith("Ballast Ballast") and title.endswith("…")


def test_a_problem_raised_deep_in_a_reader_names_the_file(archive, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise ValueError("a parser's own words")

    monkeypatch.setattr(chunking, "chunk_notebook", broken)
    assert main(["chunk", str(archive / "good.ipynb")]) == 1
    assert "good.ipynb: a parser's own words" in capsys.readouterr().err


def hostile_archive(archive: Path) -> set[str]:
    """Every hazard at once beside good.ipynb; returns the names that must be reported."""
    os.mkfifo(archive / "fifo.ipynb")
    (archive / "zero.ipynb").symlink_to("/dev/zero")
    (archive / "passwd.md").symlink_to("/etc/passwd")
    (archive / "linked").symlink_to(".")
    (archive / "surrogate.ipynb").write_text(json.dumps(notebook()).replace("print(1)", "\\udfff"))
    (archive / "deep.ipynb").write_text("[" * 100_000)
    (archive / "int.ipynb").write_text(
        json.dumps(notebook()).replace('"execution_count": 1', '"execution_count": ' + "1" * 4500)
    )
    (archive / os.fsdecode(b"caf\xe9.ipynb")).write_text(json.dumps(notebook()))
    (archive / "deep.clauses.json").write_text("[" * 100_000 + "]" * 100_000)
    (archive / "deep.records.jsonl").write_text('{"id": "A", "text": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    return {
        "fifo.ipynb",
        "zero.ipynb",
        "passwd.md",
        "linked",
        "surrogate.ipynb",
        "deep.ipynb",
        "int.ipynb",
        "caf\\xe9.ipynb",
        "deep.clauses.json",
        "deep.records.jsonl",
    }


def test_the_index_batch_reports_every_hazard_and_indexes_the_rest(archive):
    expected = hostile_archive(archive)
    with deadline(120):
        built = build_index_from_directory(archive, load_model(default_model_dir()))
    assert [nb["path"] for nb in built.index.notebooks] == ["good.ipynb"]
    assert (built.files, built.skipped) == (1, len(expected))
    assert {problem.split(": ")[0] for problem in built.problems} == expected
    assert not any("root:" in record["text"] for record in built.index.notebook_chunks(0))  # /etc/passwd stays out


def test_the_chunk_command_reports_every_hazard_and_finishes(archive, capsys):
    expected = hostile_archive(archive)
    with deadline(60):
        status = main(["chunk", str(archive), "--jsonl"])
    out, err = capsys.readouterr()
    assert status == 1
    reported = {line.split(": ")[0] for line in err.splitlines() if ": " in line and not line.startswith("cellar")}
    assert expected <= reported
    assert f"1 file read, {len(expected)} rejected" in err
    assert {json.loads(line)["path"] for line in out.splitlines()} == {"good.ipynb"}


def test_the_rerender_batch_lists_the_same_names_and_reads_them_safely(archive):
    expected = hostile_archive(archive)
    found = {os.path.relpath(path, archive) for path in find_notebooks(archive)}
    names = {name for name in expected if "\\" not in name and not name.endswith((".md", ".json", ".jsonl"))}
    assert found == {"good.ipynb", os.fsdecode(b"caf\xe9.ipynb")} | names


def test_a_blob_that_is_a_fifo_or_a_link_out_of_the_store_is_refused_not_read(tmp_path):
    store = BlobStore(tmp_path)
    good = store.write(b"1,2,3\n")
    assert store.read(good) == b"1,2,3\n"
    fifo_id, zero_id = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    fifo, zero = Path(store.location(fifo_id)), Path(store.location(zero_id))
    fifo.parent.mkdir(parents=True, exist_ok=True)
    zero.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    with deadline():
        with pytest.raises(vfs.BlobCorrupt, match="a FIFO"):
            store.read(fifo_id)
        with pytest.raises(vfs.BlobCorrupt, match="a symbolic link to /dev/zero, outside the archive"):
            store.read(zero_id)
    with pytest.raises(vfs.BlobNotFound):
        store.read("sha256:" + "c" * 64)


DEEP = "[" * 100_000 + "]" * 100_000  # nested past what Python's json reader recurses into


def test_archive_settings_nested_too_deeply_are_errors_naming_the_file(archive, tmp_path, capsys):
    """An archive's own settings (its path map, rerender.json, glossary.json) and a gold file:
    each a clear error that names it, not a RecursionError's traceback."""
    from cellar.rerender.report import Settings
    from cellar.retrieval.evaluation import read_gold

    (archive / "pathmap.json").write_text('{"a": ' + DEEP + "}")
    with pytest.raises(vfs.PathMapError, match=f"{archive / 'pathmap.json'}: not a valid path map: maximum recursion"):
        vfs.load_pathmap(archive / "pathmap.json")
    (archive / "rerender.json").write_text('{"a": ' + DEEP + "}")
    with pytest.raises(ValueError, match=f"{archive / 'rerender.json'}: maximum recursion"):
        Settings.from_json(batch.archive_text(archive, "rerender.json") or "", str(archive / "rerender.json"))
    with pytest.raises(ValueError, match="gold.jsonl:2: not a gold question"):
        read_gold(['{"query": "q", "expect": []}', DEEP], "gold.jsonl")
    (archive / "pathmap.json").unlink()
    (archive / "rerender.json").unlink()
    (archive / "glossary.json").write_text(DEEP)
    assert main(["index", str(archive), "--out", str(tmp_path / "shard"), "--no-cache"]) == 2
    assert capsys.readouterr().err.startswith(
        f"cellar index: {archive / 'glossary.json'}: not valid JSON (maximum recursion"
    )


@pytest.mark.parametrize(
    ("glossary", "problem"),
    [
        ({"!!!": "x", "kk": "kortsluiting"}, "glossary key(s) without word characters: ['!!!']"),
        ({"brg": 5}, "glossary entry 'brg' -> 5: both sides must be non-empty strings"),
        (["kk"], "the glossary must be a JSON object of abbreviation -> expansion"),
        (
            {"kk": "kort\ud800sluiting"},
            "glossary entry 'kk' -> 'kort\\ud800sluiting': a lone surrogate is no character",
        ),
        # each `xq` of a question would add 20,000 words (a hundred of them took 18 s and 1.1 GB)
        (
            {"xq": "pump " * 20000},
            "glossary entry 'xq': an abbreviation and its expansion are at most 200 characters each, not 2 and 100,000",
        ),
    ],
)
def test_a_bad_archive_glossary_is_an_error_naming_it(archive, tmp_path, capsys, glossary, problem):
    (archive / "glossary.json").write_text(json.dumps(glossary))
    assert main(["index", str(archive), "--out", str(tmp_path / "shard"), "--no-cache"]) == 2
    assert capsys.readouterr().err == f"cellar index: {archive / 'glossary.json'}: {problem}\n"


def test_an_archive_glossary_that_links_out_of_the_archive_is_not_read(archive, tmp_path, capsys):
    outside = tmp_path / "elsewhere.json"
    outside.write_text('{"kk": "kortsluiting"}')
    (archive / "glossary.json").symlink_to(outside)
    assert main(["index", str(archive), "--out", str(tmp_path / "shard"), "--no-cache"]) == 2
    assert capsys.readouterr().err == (
        f"cellar index: glossary.json: a symbolic link to {outside}, outside the archive: not followed\n"
    )


@pytest.mark.parametrize("kind", ["fifo", "folder", "dangling link"])
def test_an_archive_glossary_that_is_no_file_is_refused_not_taken_for_none(archive, tmp_path, capsys, kind):
    """A glossary.json that is a FIFO, a folder or a dangling link was silently ignored: the
    index was built without the archive's abbreviations, exit 0 (a hostile-input sweep)."""
    glossary = archive / "glossary.json"
    {"fifo": os.mkfifo, "folder": os.mkdir, "dangling link": lambda path: path.symlink_to("gone.json")}[kind](glossary)
    with deadline(60):
        assert main(["index", str(archive), "--out", str(tmp_path / "shard"), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cellar index: glossary.json: ") and not (tmp_path / "shard").exists(), err


def test_a_file_name_with_control_characters_is_reported_without_them(archive, tmp_path, capsys):
    # an escape sequence in a name would recolour or clear the terminal; a carriage return hide the line
    (archive / "red\x1b[31m\rname.ipynb").write_text("{not a notebook")
    assert main(["index", str(archive), "--out", str(tmp_path / "shard"), "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert "red\\x1b[31m\\rname.ipynb: " in err and "\x1b" not in err and "\r" not in err
    assert main(["chunk", str(archive / "red\x1b[31m\rname.ipynb")]) == 1
    err = capsys.readouterr().err
    assert "red\\x1b[31m\\rname.ipynb: " in err and "\x1b" not in err and "\r" not in err
    # and search prints a found file's name and text so too (an OSC sequence sets the window title)
    (archive / "title\x1b]0;pwned\x07.md").write_text("# Escapes\n\nescapeword \x1b[2J cleared\n")
    assert main(["index", str(archive), "--out", str(tmp_path / "shard2"), "--no-cache"]) == 1
    capsys.readouterr()
    main(["search", str(tmp_path / "shard2"), "escapeword"])
    out = capsys.readouterr().out
    assert "title\\x1b]0;pwned\\x07.md" in out and "\\x1b[2J" in out and "\x1b" not in out and "\x07" not in out
    # and a right-to-left override, which shows `invoice\u202efdp.md` as `invoicedm.pdf`
    (archive / "invoice\u202efdp.md").write_text("# Override\n\noverrideword here\n")
    main(["index", str(archive), "--out", str(tmp_path / "shard3"), "--no-cache"])
    capsys.readouterr()
    main(["search", str(tmp_path / "shard3"), "overrideword"])
    out = capsys.readouterr().out
    assert "invoice\\u202efdp.md" in out and "\u202e" not in out

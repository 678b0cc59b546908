"""Output chunks: one notebook output turned into the chunks that search it.

In: a `ChunkMaker` positioned on a code cell, one of the cell's outputs, the cell's `CodeFacts`
and the Markdown above it. Out: chunks added to the maker, chosen by what the output holds:
table (a DataFrame, through `cellar.ingest.tables` and `cellar.ingest.text_tables`), scalar,
stream (windowed text), plot, or error; widget views, unknown output types and unknown MIME types
are counted as skipped. The table modules are imported on first use: pandas comes with a table.
"""

from __future__ import annotations

import re
import warnings
from typing import TYPE_CHECKING, Any

from cellar.ingest.chunks import ANSI, ChunkMaker, clean_text
from cellar.ingest.code_facts import LABEL_NAMES, CodeFacts
from cellar.ingest.documents.markup import LinearHTMLParser, open_brackets_as_text
from cellar.ingest.notebook import Cell, NotebookWarning, Output
from cellar.ingest.windows import PROSE_WINDOW, window_ranges, word_spans

if TYPE_CHECKING:  # cellar.ingest.tables itself is imported on first use: it brings pandas
    from cellar.ingest.tables import Table

SCALAR_MAX = (200, 3)  # a result at most this many characters and lines is a scalar
CONTEXT_WORDS = 100  # how much of the cell's source a scalar carries as context
# Printed DataFrames read as tables in one output, each through pandas: past it the rest are its
# text only (100,000 small frames in one stream took 118 s).
MAX_PRINTED_TABLES = 200
# Inside one tag (no `<` or `>` crossed): `[^>]*` rescanned the rest of the output from every
# `<table` of one that never closes (100,000 characters of `<table`: 14 s).
DATAFRAME_HTML = re.compile(r"<table\b[^<>]*\bclass=\"[^\"<>]*\bdataframe\b", re.IGNORECASE)
PLACEHOLDER = re.compile(r"<[\w.]+ (?:object|at 0x[0-9a-fA-F]+)>")
NOT_FRAMES = ("array(", "matrix(", "[", "{", "<", "'", '"')  # reprs that are never a DataFrame
WIDGET = "application/vnd.jupyter.widget-view+json"
FIGURE_CHARS = 1500  # the most of a figure description that is indexed (the sandbox writes <= 1200)
IMAGES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif", "image/webp", "application/pdf")


def chunk_output(
    maker: ChunkMaker, cell: Cell, output: Output, facts: CodeFacts, above: str, fresh: bool = False
) -> None:
    """Chunks of one output, chosen by what it holds; what cannot be searched is counted. `fresh`:
    the output comes from a re-render, so a plot's figure description is read from its metadata."""
    if output.output_type == "stream":
        assert output.text is not None  # the notebook loader sets a stream's text
        if not _whole_table(maker, output, output.text, "text", None):
            _text_output(maker, output, output.text, "text", None, name=output.name)
        return
    if output.output_type == "error":
        _error(maker, output)
        return
    if output.output_type not in ("execute_result", "display_data"):
        maker.skip(f"unknown output type {output.output_type}")
        return
    data = output.data
    if WIDGET in data:
        maker.skip("widget view")
        return
    image = next((mime for mime in IMAGES if mime in data), None)
    if image:
        _plot(maker, cell, output, image, facts, above, fresh)
        return
    expression = facts.last_expression if output.output_type == "execute_result" else None
    plain, markup = data.get("text/plain"), data.get("text/html")
    if plain is not None and len(data) > 1 and PLACEHOLDER.fullmatch(plain.strip()):
        plain = None  # `<IPython.core.display.Markdown object>` stands in for the richer type
    if markup and DATAFRAME_HTML.search(markup):
        table = _tables().parse_html_table(markup)
        if table is not None:
            place = "text/plain" if plain is not None else "text/html"
            original = data[place]
            _table(maker, output, original, place, 0, len(original), table, expression, "html")
            return
    if plain is not None:
        if _whole_table(maker, output, plain, "text/plain", expression):
            return
        if _short(plain):
            _scalar(maker, cell, output, plain, markup, expression)
        else:
            _text_output(maker, output, plain, "text/plain", expression)
        return
    for mime in ("text/markdown", "text/latex"):
        if mime in data:
            _text_output(maker, output, data[mime], mime, expression)
            return
    if markup is not None:
        words = _html_text(markup).split()
        if words:
            text = " ".join(words[: PROSE_WINDOW[0]])
            maker.add("stream", markup, 0, len(markup), clean_text(text), output, "text/html")
        else:
            maker.skip("HTML without text")
        return
    unknown = sorted(set(data) - {"text/plain"})  # a placeholder text/plain says nothing
    maker.skip(f"unknown MIME {', '.join(unknown)}" if unknown else "empty output")


def _tables() -> Any:
    """`cellar.ingest.tables`, imported on first use: it brings pandas, which costs seconds in Pyodide."""
    from cellar.ingest import tables

    return tables


def _text_tables() -> Any:
    """`cellar.ingest.text_tables`, imported on first use, like `cellar.ingest.tables`."""
    from cellar.ingest import text_tables

    return text_tables


def _table(maker: ChunkMaker, output: Output, original: str, place: str, start: int, end: int,
           table: Table, expression: str | None, parsed_from: str) -> None:  # fmt: skip
    text = _tables().table_text(table)
    text = f"{expression}\n{text}" if expression else text
    rows, columns = table.shape
    maker.add("table", original, start, end, clean_text(text), output, place,
              shape=[int(rows), int(columns)], expression=expression,
              parsed_from=parsed_from, output_type=output.output_type)  # fmt: skip


def _short(text: str) -> bool:
    text = text.strip()
    return len(text) <= SCALAR_MAX[0] and text.count("\n") < SCALAR_MAX[1]


def _scalar(maker: ChunkMaker, cell: Cell, output: Output, plain: str, markup: str | None,
            expression: str | None) -> None:  # fmt: skip
    """`expression = value`, the value as shown in HTML if that differs, and the source's tail."""
    value = plain.strip()
    lines = [f"{expression} = {value}" if expression else value]
    shown = " ".join(_html_text(markup).split()) if markup else ""
    if shown and shown != value and len(shown) <= SCALAR_MAX[0]:
        lines.append(shown)
    spans = word_spans(cell.source)
    context = cell.source[spans[-CONTEXT_WORDS][0] :] if len(spans) > CONTEXT_WORDS else cell.source
    lines.append(context.strip())
    start = len(plain) - len(plain.lstrip())
    maker.add("scalar", plain, start, start + len(value), clean_text("\n".join(lines)), output,
              "text/plain", expression=expression, output_type=output.output_type)  # fmt: skip


def _whole_table(maker: ChunkMaker, output: Output, original: str, place: str,
                 expression: str | None) -> bool:  # fmt: skip
    """Add a table chunk if the whole text is a printed DataFrame or Series; say whether it was."""
    table = _text_tables().parse_text_table(original) if _looks_like_frame(original) else None
    if table is not None:
        end = len(original.rstrip())
        _table(maker, output, original, place, 0, end, table, expression, "text")
    return table is not None


def _text_output(maker: ChunkMaker, output: Output, original: str, place: str,
                 expression: str | None, **meta: Any) -> None:  # fmt: skip
    """A stream or long text result, windowed; printed tables inside it also become tables."""
    blocks = _blocks(original)
    if len(blocks) > 1:
        read = 0
        for start, end in blocks:
            if _looks_like_frame(original[start:end]):
                if read == MAX_PRINTED_TABLES:
                    warnings.warn(
                        f"{maker.path}: cells[{maker.cell}].outputs[{output.index}] prints more than "
                        f"{MAX_PRINTED_TABLES} tables; the rest are indexed as its text",
                        NotebookWarning,
                        stacklevel=2,
                    )
                    break
                table = _text_tables().parse_text_table(original[start:end])
                read += 1
                if table is not None:
                    _table(maker, output, original, place, start, end, table, None, "text")
    spans = word_spans(original)
    prefix = f"{expression} =\n" if expression else ""
    for first, last in window_ranges(len(spans), *PROSE_WINDOW):
        start, end = spans[first][0], spans[last - 1][1]
        body = clean_text(original[start:end])
        if body.strip():
            maker.add("stream", original, start, end, prefix + body, output, place,
                      expression=expression, output_type=output.output_type, **meta)  # fmt: skip


def _looks_like_frame(text: str) -> bool:
    """Whether pandas should be asked to parse `text` as a printed DataFrame or Series: at least
    two lines, and not the repr of an array, list, dict, string or object."""
    text = text.strip()
    return "\n" in text and not text.startswith(NOT_FRAMES)


def _blocks(text: str) -> list[tuple[int, int]]:
    """Spans of the runs of non-blank lines; a pandas repr wrapped into column blocks (its lines
    ending in a backslash) stays one block. Read line by line: a regex over the runs rescanned a
    line of blanks from every position in it (100,000 spaces: 50 s)."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    end = position = 0
    for line in text.split("\n"):
        if line.strip():
            start = position if start is None else start
            end = position + len(line.rstrip())
        elif start is not None:
            runs.append((start, end))
            start = None
        position += len(line) + 1
    if start is not None:
        runs.append((start, end))
    blocks: list[tuple[int, int]] = []
    for start, end in runs:
        if blocks and text[blocks[-1][0] : blocks[-1][1]].split("\n", 1)[0].rstrip().endswith("\\"):
            blocks[-1] = (blocks[-1][0], end)
        else:
            blocks.append((start, end))
    return blocks


def _error(maker: ChunkMaker, output: Output) -> None:
    """`ename: evalue` and the last frame of the traceback, without terminal colours."""
    ename, evalue = output.ename or "", output.evalue or ""
    frames = [ANSI.sub("", entry).strip() for entry in output.traceback]
    frames = [frame for frame in frames if frame]
    if frames and frames[-1].startswith(ename):
        frames.pop()  # the closing `ename: evalue` line, already in the text
    last = "\n".join(frames[-1].splitlines()[-20:]) if frames else ""
    place, original = ("evalue", evalue) if evalue else ("ename", ename)
    maker.add("error", original, 0, len(original), clean_text(f"{ename}: {evalue}\n{last}"), output,
              place, error=True, ename=ename)  # fmt: skip


def _plot(maker: ChunkMaker, cell: Cell, output: Output, mime: str, facts: CodeFacts, above: str, fresh: bool) -> None:
    """An image, described by its code's labels and its caption (the heading path and the
    Markdown above) and, for a re-rendered output, by the figure's own description; it quotes
    the lines of code that label it (or the whole source)."""
    lines = [f"Plot ({mime})"]
    for role, name in LABEL_NAMES.items():
        if role in facts.labels:
            lines.append(f"{name}: {', '.join(facts.labels[role])}")
    if maker.headings:
        lines.append(" > ".join(maker.headings))
    if above:
        lines.append(above)
    figure = figure_text(output) if fresh else ""
    if figure:
        lines.append(figure)
    source = cell.source
    start, end = facts.label_span or (0, len(source.rstrip()))
    extra = {"figure": figure} if figure else {}
    maker.add("plot", source, start, end, clean_text("\n".join(lines)), output, "source",
              mime=mime, labels=facts.labels, output_type=output.output_type, **extra)  # fmt: skip


def figure_text(output: Output) -> str:
    """The figure description the sandbox put in a re-rendered output's metadata
    (`{"cellar": {"figure": text}}`, cellar.rerender.figures), cleaned and cut to FIGURE_CHARS;
    "" when there is none. The text came from running archive code: it is searched and shown as
    text, never as markup."""
    note = output.metadata.get("cellar") if isinstance(output.metadata, dict) else None
    text = note.get("figure") if isinstance(note, dict) else None
    if not isinstance(text, str):
        return ""
    return clean_text(text)[:FIGURE_CHARS].strip()


class _TextOfHTML(LinearHTMLParser):
    """The visible text of an HTML fragment: script and style contents dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hidden += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self.hidden -= tag in ("script", "style") and self.hidden > 0

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def _html_text(markup: str) -> str:
    parser = _TextOfHTML()
    parser.feed(open_brackets_as_text(markup))  # linear time on markup that never closes
    parser.close()
    return " ".join(" ".join(parser.parts).split())

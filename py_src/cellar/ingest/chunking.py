"""Chunking: the typed, citable chunks of a notebook or a plain document.

In: a notebook (`cellar.ingest.notebook`), a plain document's bytes, or a file to read, and the
per-corpus metadata rules. Out: a `Chunked` (`cellar.ingest.chunks`): the chunks in document
order, the skip counts, and what was chunked; `coverage` says how the windowed chunks cover it.

Every chunk points back at the exact characters it came from: `quote == original[start:end]`,
where `original` is a cell's source or an output's text (`cellar.ingest.chunks.original_text`
finds it), so a hit can be cited down to the character and checked against the revision. What
is searched (`text`) may add a prefix or be derived (a Markdown table, a plot description), but
never holds base64 data or terminal escape codes.

Kinds: markdown (prose windows under their heading path), code (the source with a prefix naming
what it defines, from `cellar.ingest.code_facts`), and the kinds of outputs
(`cellar.ingest.outputs`): table (DataFrame outputs), scalar (a short result, as
`expression = value`), stream (printed text and long text results, windowed), plot (an image,
described by the labels in its code and the Markdown above, and, when the notebook was
re-rendered, by what the figure itself holds), error (exception, value and last
frame); text (plain documents and raw cells). Widget views and unknown MIME types are skipped and
counted. pandas is imported only when a table is met, through `cellar.ingest.tables`.
"""

from __future__ import annotations

import os
import re
import warnings
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from cellar.ingest.chunks import Chunk, Chunked, ChunkMaker, clean_text
from cellar.ingest.code_facts import CodeFacts, code_facts
from cellar.ingest.discovery import read_document
from cellar.ingest.documents.blocks import Block, search_prefix, utf8_text
from cellar.ingest.documents.extract import extract
from cellar.ingest.documents.lines import atx_heading, heading_title
from cellar.ingest.documents.notes import record_year
from cellar.ingest.documents.view import document_view
from cellar.ingest.metadata import Rule, document_meta
from cellar.ingest.notebook import Cell, Notebook, NotebookWarning, Output, load_notebook, relative_path
from cellar.ingest.outputs import IMAGES, chunk_output
from cellar.ingest.provenance import revision
from cellar.ingest.windows import (
    CODE_WINDOW,
    PROSE_WINDOW,
    Coverage,
    combine,
    span_coverage,
    window_ranges,
    word_spans,
)

ABOVE_WORDS = 60  # how much of the Markdown above describes a plot
# The most characters of one text that are chunked: a cell's source, a stream's text, an error's
# value, a plain document. Past it the text is cut (its first MAX_TEXT_CHARS are indexed, offsets
# unchanged) and a warning names the file and the field; a rich output value (HTML, Markdown,
# plain text of a result) past it is not indexed at all, as a cut table or markup means nothing.
# Chunking costs about 0.5 s and 50 MB per million characters; the file limit is
# `cellar.ingest.discovery.MAX_FILE_BYTES`.
MAX_TEXT_CHARS = 2_000_000
# A file's chunks: each cell's or block's text is bounded, their number is not (300,000 markdown
# cells, a 19 MB notebook, took 73 s and 1.45 GB to index; 200,000 code fences, a 2 MB Markdown
# file, 53 s and 1 GB). A long real notebook has a few thousand, a report of 1,000 pages some 20,000.
MAX_FILE_CHUNKS = 50_000
# The documents whose text is the file's own (Markdown, plain text): cut to the limit before they
# are split into blocks, as splitting takes many times the text's size (an 88 MB text of short
# paragraphs had taken 6 GB and 85 s before its cut).
OWN_TEXT = (".md", ".markdown", ".txt")

SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*\r?\n?")


# -- notebooks ------------------------------------------------------------------------------------


def chunk_notebook(notebook: Notebook, rules: Sequence[Rule] = (), *, fresh: bool = False) -> Chunked:
    """The typed chunks of a notebook, in cell order, and the outputs skipped (reason -> count).
    Texts past MAX_TEXT_CHARS are cut or left out, and cells once MAX_FILE_CHUNKS are made,
    with a NotebookWarning naming the place.

    `fresh`: the notebook's outputs come from a re-render (`cellar rerender`'s fresh notebook),
    so a plot's figure description in its output metadata is indexed with it
    (`cellar.ingest.outputs`); a saved notebook's plots keep their caption only."""
    meta = document_meta(notebook.path, notebook.metadata, rules)
    maker = ChunkMaker(notebook.path, notebook.revision, meta)
    outline = _Outline()
    above = ""  # the nearest Markdown above, to describe plots
    seen: Counter[tuple[str, str]] = Counter()  # identical cells get distinct, stable ids
    for cell in _bounded(notebook.path, notebook.cells):
        if len(maker.chunks) >= MAX_FILE_CHUNKS:
            warnings.warn(
                f"{notebook.path}: {len(maker.chunks):,} chunks by cell {cell.index}, over {MAX_FILE_CHUNKS:,}: "
                f"cells {cell.index} to {len(notebook.cells) - 1} are not indexed",
                NotebookWarning,
                stacklevel=2,
            )
            break
        seen[cell.cell_type, cell.source] += 1
        maker.start_cell(cell, seen[cell.cell_type, cell.source])
        if cell.cell_type == "markdown":
            _prose(maker, "markdown", cell.source, outline, markdown=True)
            if cell.source.strip():
                above = clean_text(_first_words(cell.source, ABOVE_WORDS))
        elif cell.cell_type == "raw":
            _prose(maker, "text", cell.source, outline, markdown=False)
        elif cell.cell_type == "code":
            _code(maker, cell, outline, above, fresh)
        else:
            maker.skip(f"unknown cell type {cell.cell_type}")
    return Chunked(tuple(maker.chunks), dict(maker.skipped), notebook)


def chunk_document(data: bytes, path: str, rules: Sequence[Rule] = ()) -> Chunked:
    """The chunks of a document beside the notebooks (`cellar.ingest.documents.extract`: .md,
    .txt, .html, .pdf, .docx, clause collections, records): one per block, cited by its path
    (`meta.citation`), a block longer than a prose window cut into windows under the same
    citation. `Chunked.source` is the extracted text the offsets point into (for .md and .txt,
    the file's own text); a FileRefused (a ValueError) names the file and the problem."""
    if PurePosixPath(path).suffix.lower() in OWN_TEXT:  # cut before it is split into blocks (bounded work)
        extracted = extract(_cut(path, "the text", utf8_text(data, path)).encode(), path)
    else:
        extracted = extract(data, path)
    meta = document_meta(path, {}, rules)
    maker = ChunkMaker(path, revision(data), {**meta, "source": extracted.source})
    maker.start_document(extracted.text)
    text = _cut(path, "the text", extracted.text)
    blocks = extracted.blocks
    if len(text) < len(extracted.text):
        # Blocks past the cut are left out; one the cut runs through is kept up to the cut (a file
        # that is one long paragraph or table is indexed as far as the warning says, not left
        # empty). Only past a cut: an empty last block (a note without text) starts at the end.
        kept = tuple(b if b.end <= len(text) else replace(b, end=len(text)) for b in blocks if b.start < len(text))
        if len(kept) < len(blocks):  # say which: a records file's notes are cited one by one
            warnings.warn(
                f"{path}: blocks {len(kept) + 1} to {len(blocks)} ({blocks[len(kept)].citation} on) lie past the "
                "cut and are not indexed",
                NotebookWarning,
                stacklevel=2,
            )
        blocks = kept
        extracted = replace(extracted, blocks=blocks)
    place = "source" if extracted.format in ("markdown", "text") else "extracted"
    # (a records file's notes are bounded by their own count, notes.MAX_NOTES: one a block)
    limit = MAX_FILE_CHUNKS if extracted.source != "records" else None
    for number, block in enumerate(blocks):
        if limit is not None and len(maker.chunks) >= limit:
            warnings.warn(
                f"{path}: {len(maker.chunks):,} chunks by block {number} ({block.citation}), over "
                f"{MAX_FILE_CHUNKS:,}: blocks {number} to {len(blocks) - 1} are not indexed",
                NotebookWarning,
                stacklevel=2,
            )
            break
        _block(maker, text, block, place, extracted.designation)
    view = document_view(path, maker.revision, extracted, text)
    return Chunked(tuple(maker.chunks), dict(maker.skipped), text, extracted.title, view)


def _block(maker: ChunkMaker, text: str, block: Block, place: str, designation: str | None) -> None:
    """The chunks of one block: the block whole, or its prose windows when it is longer."""
    maker.headings = list(block.headings)
    kind = "table" if block.kind == "table" else "text"
    fields = dict(block.fields)
    facts: dict[str, Any] = {
        "citation": block.citation, "block": block.kind, "page": block.page, "entry": block.entry,
        "fields": fields, "designation": designation, "year": record_year(fields) if fields else None,
    }  # fmt: skip
    spans = word_spans(text[block.start : block.end])
    prefix = search_prefix(block)
    for first, last in window_ranges(len(spans), *PROSE_WINDOW) or [(0, 0)]:
        start = block.start + (spans[first][0] if spans else 0)
        end = block.start + (spans[last - 1][1] if spans else 0)
        body = clean_text(text[start:end])
        maker.add(kind, text, start, end, f"{prefix}\n{body}" if prefix else body, place=place, **facts)


def naming(path: str, error: ValueError) -> str:
    """A file's problem as `path: problem`: a reader's own ValueError (NotebookError, FileRefused)
    names the file already; one raised deeper, by a parser or int(), does not."""
    message = str(error)
    return message if message.startswith(f"{path}: ") else f"{path}: {message}"


def chunk_file(file_path: str | os.PathLike[str], root: str | os.PathLike[str],
               rules: Sequence[Rule] = ()) -> Chunked:  # fmt: skip
    """Read and chunk one file (a notebook, else a plain document) whose record path is relative
    to `root`; a problem with the file is a ValueError (NotebookError for notebooks) naming it."""
    if os.fspath(file_path).lower().endswith(".ipynb"):
        return chunk_notebook(load_notebook(file_path, root), rules)
    data = read_document(file_path, root)  # a FileRefused (a ValueError) names the file and why
    return chunk_document(data, relative_path(file_path, root), rules)


def _cut(path: str, where: str, text: str) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    warnings.warn(
        f"{path}: {where} has {len(text):,} characters; only the first {MAX_TEXT_CHARS:,} are indexed",
        NotebookWarning,
        stacklevel=3,
    )
    return text[:MAX_TEXT_CHARS]


def _bounded(path: str, cells: Iterable[Cell]) -> Iterable[Cell]:
    """The cells, each text cut to MAX_TEXT_CHARS and rich output values past it left out (with
    a warning for each): a cut keeps the offsets of what is indexed the same."""
    for cell in cells:
        where = f"cells[{cell.index}]"
        outputs = tuple(_bounded_output(path, f"{where}.outputs[{output.index}]", output) for output in cell.outputs)
        source = _cut(path, f"{where}.source", cell.source)
        if source is cell.source and all(new is old for new, old in zip(outputs, cell.outputs)):
            yield cell
        else:
            yield replace(cell, source=source, outputs=outputs)


def _bounded_output(path: str, where: str, output: Output) -> Output:
    big = [mime for mime, value in output.data.items() if len(value) > MAX_TEXT_CHARS and mime not in IMAGES]
    traceback = sum(len(line) for line in output.traceback) > MAX_TEXT_CHARS
    texts = [(name, getattr(output, name)) for name in ("text", "evalue")]
    if not big and not traceback and all(value is None or len(value) <= MAX_TEXT_CHARS for _, value in texts):
        return output
    changes: dict = {name: _cut(path, f"{where}.{name}", value) for name, value in texts if value is not None}
    for mime in big:
        warnings.warn(
            f"{path}: {where}.data[{mime!r}] has {len(output.data[mime]):,} characters, over "
            f"{MAX_TEXT_CHARS:,}: not indexed",
            NotebookWarning,
            stacklevel=3,
        )
    changes["data"] = {mime: value for mime, value in output.data.items() if mime not in big}
    if traceback:
        warnings.warn(f"{path}: {where}.traceback is too long: only its last frame is indexed", NotebookWarning, 3)
        changes["traceback"] = tuple(line[-MAX_TEXT_CHARS:] for line in output.traceback[-1:])
    return replace(output, **changes)


def coverage(chunked: Chunked) -> Coverage:
    """How the windowed chunks cover the words of what was chunked: a notebook's cell sources and
    stream texts, or a plain document's text."""
    if isinstance(chunked.source, str):
        return span_coverage(chunked.source, [(chunk.start, chunk.end) for chunk in chunked.chunks])
    return _notebook_coverage(chunked.source, chunked.chunks)


def _notebook_coverage(notebook: Notebook, chunks: Iterable[Chunk]) -> Coverage:
    spans: dict[tuple[int, int | None], list[tuple[int, int]]] = {}
    for chunk in chunks:
        assert chunk.cell is not None  # every chunk of a notebook names its cell
        if chunk.meta["field"] in ("source", "text"):
            spans.setdefault((chunk.cell, chunk.output), []).append((chunk.start, chunk.end))
    parts = []
    for cell in notebook.cells:
        if cell.cell_type in ("markdown", "raw", "code"):
            parts.append(span_coverage(cell.source, spans.get((cell.index, None), ())))
        for output in cell.outputs:
            if output.output_type == "stream":
                assert output.text is not None  # the notebook loader sets a stream's text
                parts.append(span_coverage(output.text, spans.get((cell.index, output.index), ())))
    return combine(parts)


# -- Markdown and prose ---------------------------------------------------------------------------


class _Outline:
    """The heading path in effect: a stack of (level, title)."""

    def __init__(self) -> None:
        self.stack: list[tuple[int, str]] = []

    def enter(self, level: int, title: str) -> None:
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, title))

    def path(self) -> list[str]:
        return [title for _, title in self.stack]


def headings(markdown: str) -> list[tuple[int, int, str]]:
    """The headings of a Markdown text as (offset, level, title), ATX (`## Title`) and setext
    (a line underlined with === or ---), outside fenced code blocks."""
    found = []
    fence = ""
    offset = 0
    previous: tuple[int, str] | None = None  # the last line of a paragraph, for setext
    for line in markdown.splitlines(keepends=True):
        stripped = line.strip()
        if fence:
            fence = "" if stripped.startswith(fence) else fence
            previous = None
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            previous = None
        elif atx := atx_heading(line):
            title = heading_title(atx[1])
            if title:
                found.append((offset, atx[0], title))
            previous = None
        elif previous and SETEXT.fullmatch(line):
            found.append((previous[0], 1 if stripped[0] == "=" else 2, heading_title(previous[1])))
            previous = None
        else:
            previous = (offset, line) if stripped else None
        offset += len(line)
    return found


def _prose(maker: ChunkMaker, kind: str, source: str, outline: _Outline, markdown: bool) -> None:
    """Word windows of a text, each under the heading path at its start; the headings of a
    Markdown text move `outline` on."""
    marks = headings(source) if markdown else []
    spans = word_spans(source)
    next_mark = 0
    for first, last in window_ranges(len(spans), *PROSE_WINDOW):
        start, end = spans[first][0], spans[last - 1][1]
        while next_mark < len(marks) and marks[next_mark][0] <= start:
            outline.enter(*marks[next_mark][1:])
            next_mark += 1
        # The path above the chunk; a window that opens with a heading lives under it, and
        # its text already holds that heading.
        maker.headings = outline.path()
        opens = next_mark and source[marks[next_mark - 1][0] : start].strip() == ""
        prefix = " > ".join(maker.headings[:-1] if opens else maker.headings)
        body = clean_text(source[start:end])
        maker.add(kind, source, start, end, f"{prefix}\n{body}" if prefix else body)
    for _, level, title in marks[next_mark:]:
        outline.enter(level, title)
    maker.headings = outline.path()


def _first_words(text: str, count: int) -> str:
    spans = word_spans(text)
    return text[: spans[min(count, len(spans)) - 1][1]] if spans else ""


# -- code -----------------------------------------------------------------------------------------


class _Placed:
    """Names (`code_facts`' defines or imports: (offset, name) in the code's order) found by where
    their statements start: a cell of a million one-line statements has as many names and a
    window every few hundred, so a scan of all the names per window took minutes."""

    def __init__(self, items: Sequence[tuple[int, str]]) -> None:
        self.items = items
        self.order = sorted(range(len(items)), key=lambda i: items[i][0])
        self.starts = [items[i][0] for i in self.order]

    def within(self, start: int, end: int, first: bool) -> list[str]:
        """Names whose statements start inside [start, end) (or before it, for the first window),
        in the code's order."""
        low = 0 if first else bisect_left(self.starts, start)
        picked = sorted(self.order[low : bisect_left(self.starts, end)])
        return list(dict.fromkeys(self.items[i][1] for i in picked))


def _code(maker: ChunkMaker, cell: Cell, outline: _Outline, above: str, fresh: bool = False) -> None:
    maker.headings = outline.path()
    source = cell.source
    images = any(mime in output.data for output in cell.outputs for mime in IMAGES)
    facts = code_facts(source, images) if source.strip() else CodeFacts((), (), None, {}, None)
    spans = word_spans(source)
    defined, imported = _Placed(facts.defines), _Placed(facts.imports)
    for first, last in window_ranges(len(spans), *CODE_WINDOW):
        start, end = spans[first][0], spans[last - 1][1]
        defines = defined.within(start, end, first == 0)
        imports = imported.within(start, end, first == 0)
        prefix = "; ".join(
            part for part in (
                f"defines: {', '.join(defines)}" if defines else "",
                f"imports: {', '.join(imports)}" if imports else "",
            ) if part
        )  # fmt: skip
        body = clean_text(source[start:end])
        maker.add("code", source, start, end, f"# {prefix}\n{body}" if prefix else body,
                  defines=defines, imports=imports)  # fmt: skip
    for output in cell.outputs:
        chunk_output(maker, cell, output, facts, above, fresh)

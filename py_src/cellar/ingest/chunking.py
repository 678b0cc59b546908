"""Chunking: word windows with exact offsets, a coverage audit, and typed chunks of notebooks.

Every chunk points back at the exact characters it came from: `quote == original[start:end]`,
where `original` is a cell's source or an output's text (`original_text` finds it), so a hit can be
cited down to the character and checked against the revision. What is searched (`text`) may add
a prefix or be derived (a Markdown table, a plot description), but never holds base64 data or
terminal escape codes.

Kinds: markdown (prose windows under their heading path), code (the source with a prefix naming
what it defines), table (DataFrame outputs, through `cellar.ingest.tables`), scalar (a short result, as
`expression = value`), stream (printed text and long text results, windowed), plot (an image,
described by the labels in its code and the Markdown above), error (exception, value and last
frame) and text (plain documents and raw cells). Widget views and unknown MIME types are skipped and
counted. pandas is imported only when a table is met, through `cellar.ingest.tables`.
"""

from __future__ import annotations

import ast
import hashlib
import html.parser
import os
import re
import warnings
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from keyword import iskeyword
from typing import TYPE_CHECKING, Any

from cellar.ingest.notebook import Cell, Notebook, NotebookError, Output, load_notebook, relative_path
from cellar.ingest.provenance import revision

if TYPE_CHECKING:  # cellar.ingest.tables itself is imported on first use: it brings pandas
    from cellar.ingest.tables import Table

DOCUMENT_SUFFIXES = (".ipynb", ".md", ".markdown", ".txt")
KINDS = ("markdown", "code", "table", "scalar", "stream", "plot", "error", "text")
PROSE_WINDOW = (150, 30)  # words per window, words of overlap: markdown, text, streams
CODE_WINDOW = (200, 40)
SCALAR_MAX = (200, 3)  # a result at most this many characters and lines is a scalar
CONTEXT_WORDS = 100  # how much of the cell's source a scalar carries as context
ABOVE_WORDS = 60  # how much of the Markdown above describes a plot
ID_HEX = 16

WORD = re.compile(r"\S+")
LINE_BREAK = re.compile(r"\r\n|\r|\n")
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
OVERWRITTEN = re.compile(r"[^\r\n]*\r(?!\n)")  # text a carriage return sends the cursor back over
# A data URI (with the long lines of a wrapped payload) or any long run of base64 characters.
BASE64 = re.compile(
    r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]*(?:\r?\n[A-Za-z0-9+/=]{60,})*|[A-Za-z0-9+/]{120,}={0,2}"
)
ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*\r?\n?")
SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*\r?\n?")
TAG = re.compile(r"<[^>]*>")
DATAFRAME_HTML = re.compile(r"<table[^>]*\bclass=\"[^\"]*\bdataframe\b", re.IGNORECASE)
PLACEHOLDER = re.compile(r"<[\w.]+ (?:object|at 0x[0-9a-fA-F]+)>")
NOT_FRAMES = ("array(", "matrix(", "[", "{", "<", "'", '"')  # reprs that are never a DataFrame
WIDGET = "application/vnd.jupyter.widget-view+json"
IMAGES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif", "image/webp", "application/pdf")
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "memit", "mprun"}
META_FIELDS = {
    "project": ("a string", lambda value: isinstance(value, str)),
    "author": ("a string", lambda value: isinstance(value, str)),
    "year": ("an integer", lambda value: isinstance(value, int) and not isinstance(value, bool)),
    "vessel_class": ("a string", lambda value: isinstance(value, str)),
    "tags": (
        "an array of strings",
        lambda value: isinstance(value, list) and all(isinstance(tag, str) for tag in value),
    ),
    "deprecated": ("a boolean", lambda value: isinstance(value, bool)),
}
GROUP_FIELDS = ("project", "author", "year", "vessel_class")  # what a rule's named groups may set
LABEL_CALLS = {
    "title": "title", "set_title": "title", "suptitle": "title",
    "xlabel": "x", "set_xlabel": "x", "ylabel": "y", "set_ylabel": "y",
    "zlabel": "z", "set_zlabel": "z",
}  # fmt: skip
LABEL_KEYWORDS = {"title": "title", "xlabel": "x", "ylabel": "y", "zlabel": "z", "label": "legend"}
LABEL_NAMES = {"title": "title", "x": "x axis", "y": "y axis", "z": "z axis", "legend": "legend"}


# -- word windows -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """A run of words of a document: `text == source[start:end]`, words [word_start, word_end)."""

    id: str
    doc_id: str
    revision: str
    word_start: int
    word_end: int
    start: int
    end: int
    text: str


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans (start, end) of the words of `text`: its runs of non-whitespace."""
    return [match.span() for match in WORD.finditer(text)]


def window_ranges(n_words: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Word ranges [start, end) of windows of `size` words overlapping by `overlap`.

    A window starts every `size - overlap` words; the last one is the first that takes in the
    last word, so no window is made only of overlap. No words, no windows.
    """
    for name, value in (("n_words", n_words), ("size", size), ("overlap", overlap)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{name} must be an integer, not {value!r}")
    if size < 1:
        raise ValueError(f"window size must be at least 1, not {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"overlap must be at least 0 and less than the size {size}, not {overlap}")
    if n_words < 0:
        raise ValueError(f"n_words must not be negative, not {n_words}")
    ranges = []
    start = 0
    while start < n_words:
        end = min(start + size, n_words)
        ranges.append((start, end))
        if end == n_words:
            break
        start += size - overlap
    return ranges


def word_windows(document: Mapping[str, str], size: int, overlap: int) -> list[Window]:
    """Windows of a document snapshot (`cellar.ingest.provenance.snapshot`: id, text, revision)."""
    text = document["text"]
    spans = word_spans(text)
    windows = []
    for first, last in window_ranges(len(spans), size, overlap):
        start, end = spans[first][0], spans[last - 1][1]
        windows.append(
            Window(f"{document['id']}:{first}", document["id"], document["revision"],
                   first, last, start, end, text[start:end])
        )  # fmt: skip
    return windows


# -- coverage audit -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Coverage:
    """How the chunks of a text cover its words: `occurrences` counts every stored word."""

    total_words: int
    covered_words: int
    occurrences: int
    missing: tuple[int, ...]  # indices of the words no chunk holds

    @property
    def coverage(self) -> float | None:
        """covered / total; None for a text without words."""
        return self.covered_words / self.total_words if self.total_words else None

    @property
    def duplication(self) -> float | None:
        """occurrences / covered; None when nothing is covered."""
        return self.occurrences / self.covered_words if self.covered_words else None


def audit(document: Mapping[str, str], chunks: Iterable[Window]) -> Coverage:
    """Coverage of a document by its windows, after re-checking every window against it.

    A window whose document id, revision, offsets, word range or text does not match the
    document is a ValueError naming the window and the problem.
    """
    text = document["text"]
    if revision(text) != document["revision"]:
        raise ValueError(f"document {document['id']}: its revision does not match its text")
    spans = word_spans(text)
    counts = [0] * len(spans)
    for chunk in chunks:
        problem = _window_problem(document, spans, chunk)
        if problem:
            raise ValueError(f"chunk {chunk.id}: {problem}")
        for index in range(chunk.word_start, chunk.word_end):
            counts[index] += 1
    return _coverage(counts)


def _window_problem(
    document: Mapping[str, str], spans: Sequence[tuple[int, int]], chunk: Window
) -> str:
    text = document["text"]
    if chunk.doc_id != document["id"]:
        return f"belongs to document {chunk.doc_id!r}, not {document['id']!r}"
    if chunk.revision != document["revision"]:
        return "its revision is not the document's revision"
    if chunk.id != f"{chunk.doc_id}:{chunk.word_start}":
        return "its id does not name its first word"
    if not 0 <= chunk.word_start < chunk.word_end <= len(spans):
        return f"word range [{chunk.word_start}, {chunk.word_end}) is outside 0..{len(spans)}"
    if (chunk.start, chunk.end) != (spans[chunk.word_start][0], spans[chunk.word_end - 1][1]):
        return "its character offsets do not match its word range"
    if text[chunk.start : chunk.end] != chunk.text:
        return "its text is not the document's text at its offsets"
    return ""


def span_coverage(text: str, spans: Iterable[tuple[int, int]]) -> Coverage:
    """Coverage of the words of `text` by character spans [start, end): a word counts as held by
    a span that contains it whole."""
    words = word_spans(text)
    starts = [start for start, _ in words]
    counts = [0] * len(words)
    for start, end in spans:
        index = bisect_left(starts, start)
        while index < len(words) and words[index][1] <= end:
            counts[index] += 1
            index += 1
    return _coverage(counts)


def _coverage(counts: Sequence[int]) -> Coverage:
    missing = tuple(index for index, count in enumerate(counts) if count == 0)
    return Coverage(len(counts), len(counts) - len(missing), sum(counts), missing)


# -- chunk records --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    """One searchable, citable unit: the chunk record contract of DESIGN.md.

    `cell` is None for plain documents, `output` None for a cell's own source; `meta["field"]`
    names the original string that `quote` slices (see `original_text`).
    """

    id: str
    kind: str
    path: str
    cell: int | None
    output: int | None
    revision: str
    quote: str
    start: int
    end: int
    text: str
    meta: dict[str, Any]

    def record(self) -> dict[str, Any]:
        """The chunk as a plain dict in contract order: a line of `cellar chunk --jsonl`."""
        return {
            "id": self.id, "kind": self.kind, "path": self.path, "cell": self.cell,
            "output": self.output, "revision": self.revision, "quote": self.quote,
            "start": self.start, "end": self.end, "text": self.text, "meta": self.meta,
        }  # fmt: skip


@dataclass(frozen=True)
class Chunked:
    """The chunks of one document, what was skipped (reason -> count), and what was chunked:
    the notebook, or a plain document's text."""

    chunks: tuple[Chunk, ...]
    skipped: dict[str, int]
    source: Notebook | str


@dataclass(frozen=True)
class Rule:
    """A per-corpus rule: documents whose path matches `pattern` get `meta`, plus the pattern's
    named groups (`(?P<year>\\d{4})` gives `year`)."""

    pattern: re.Pattern[str]
    meta: dict[str, Any]


def parse_rules(raw: Any) -> tuple[Rule, ...]:
    """Rules from decoded JSON: a list of {"pattern": regex, "meta": {...}}; ValueError if bad."""
    if not isinstance(raw, list):
        raise ValueError("rules must be a JSON array of {\"pattern\", \"meta\"} objects")
    rules = []
    for number, item in enumerate(raw):
        where = f"rule {number}"
        if not isinstance(item, dict) or not isinstance(item.get("pattern"), str):
            raise ValueError(f"{where}: must be an object with a \"pattern\" string")
        unknown = set(item) - {"pattern", "meta"}
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        try:
            pattern = re.compile(item["pattern"])
        except re.error as error:
            raise ValueError(f"{where}: bad pattern: {error}") from None
        for group in pattern.groupindex:
            if group not in GROUP_FIELDS:
                allowed = ", ".join(GROUP_FIELDS)
                raise ValueError(f"{where}: group {group!r} is not one of {allowed}")
        rules.append(Rule(pattern, _checked_meta(item.get("meta", {}), where + ".meta")))
    return tuple(rules)


def document_meta(
    path: str, metadata: Mapping[str, Any], rules: Sequence[Rule] = ()
) -> dict[str, Any]:
    """The project, author, year, vessel class, tags and `deprecated` flag of a document.

    Matching rules apply in order, then the notebook's own `metadata.cellar`, which wins; tags
    accumulate. A ValueError names the document and a mistyped field.
    """
    meta: dict[str, Any] = {}
    for rule in rules:
        match = rule.pattern.search(path)
        if match:
            groups = {key: value for key, value in match.groupdict().items() if value is not None}
            if "year" in groups:
                if not groups["year"].isdigit():
                    year = groups["year"]
                    raise ValueError(f"{path}: the year {year!r} that a rule matched is not a number")
                groups["year"] = int(groups["year"])
            meta = _merged(meta, {**rule.meta, **groups})
    own = metadata.get("cellar")
    if own is not None:
        try:
            meta = _merged(meta, _checked_meta(own, "metadata.cellar"))
        except ValueError as error:
            raise NotebookError(path, str(error)) from None
    return meta


def _checked_meta(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be an object")
    for key, value in raw.items():
        if key in META_FIELDS and not META_FIELDS[key][1](value):
            raise ValueError(f"{where}.{key} must be {META_FIELDS[key][0]}, not {value!r}")
    return {key: value for key, value in raw.items() if key in META_FIELDS}


def _merged(meta: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    tags = list(dict.fromkeys([*meta.get("tags", []), *more.get("tags", [])]))
    merged = {**meta, **more}
    if tags:
        merged["tags"] = tags
    return merged


def original_text(notebook: Notebook, chunk: Chunk) -> str:
    """The string that a notebook chunk's quote slices: a cell's source, or an output's text,
    MIME data, error value or name, as `chunk.meta["field"]` says. (A plain document's chunks
    slice the document's text.)"""
    cell = notebook.cells[chunk.cell]
    where = chunk.meta["field"]
    if chunk.output is None or where == "source":
        return cell.source
    output = cell.outputs[chunk.output]
    if where in ("text", "ename", "evalue"):
        return getattr(output, where)
    return output.data[where]


# -- notebooks ------------------------------------------------------------------------------------


def chunk_notebook(notebook: Notebook, rules: Sequence[Rule] = ()) -> Chunked:
    """The typed chunks of a notebook, in cell order, and the outputs skipped (reason -> count)."""
    meta = document_meta(notebook.path, notebook.metadata, rules)
    maker = _Maker(notebook.path, notebook.revision, meta)
    outline = _Outline()
    above = ""  # the nearest Markdown above, to describe plots
    seen: Counter[tuple[str, str]] = Counter()  # identical cells get distinct, stable ids
    for cell in notebook.cells:
        seen[cell.cell_type, cell.source] += 1
        maker.start_cell(cell, seen[cell.cell_type, cell.source])
        if cell.cell_type == "markdown":
            _prose(maker, "markdown", cell.source, outline, markdown=True)
            if cell.source.strip():
                above = _clean(_first_words(cell.source, ABOVE_WORDS))
        elif cell.cell_type == "raw":
            _prose(maker, "text", cell.source, outline, markdown=False)
        elif cell.cell_type == "code":
            _code(maker, cell, outline, above)
        else:
            maker.skip(f"unknown cell type {cell.cell_type}")
    return Chunked(tuple(maker.chunks), dict(maker.skipped), notebook)


def chunk_document(data: bytes, path: str, rules: Sequence[Rule] = ()) -> Chunked:
    """`text` chunks of a plain document (.md, .txt); Markdown headings give `meta.headings`."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text (byte {error.start}: {error.reason})") from None
    maker = _Maker(path, revision(data), document_meta(path, {}, rules))
    maker.start_document(text)
    _prose(maker, "text", text, _Outline(), markdown=path.lower().endswith((".md", ".markdown")))
    return Chunked(tuple(maker.chunks), dict(maker.skipped), text)


def chunk_file(file_path: str | os.PathLike[str], root: str | os.PathLike[str],
               rules: Sequence[Rule] = ()) -> Chunked:  # fmt: skip
    """Read and chunk one file (a notebook, else a plain document) whose record path is relative
    to `root`; a problem with the file is a ValueError (NotebookError for notebooks) naming it."""
    if os.fspath(file_path).lower().endswith(".ipynb"):
        return chunk_notebook(load_notebook(file_path, root), rules)
    path = relative_path(file_path, root)
    try:
        with open(file_path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise ValueError(f"{path}: cannot read the file: {error.strerror or error}") from None
    return chunk_document(data, path, rules)


def find_documents(directory: str | os.PathLike[str]) -> list[str]:
    """The notebooks and plain documents below `directory`, sorted; hidden files and folders
    (`.ipynb_checkpoints`, `.git`) are left out."""
    found = []
    for folder, folders, files in os.walk(directory):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        found += [
            os.path.join(folder, name)
            for name in sorted(files)
            if name.lower().endswith(DOCUMENT_SUFFIXES) and not name.startswith(".")
        ]
    return found


def coverage(chunked: Chunked) -> Coverage:
    """How the windowed chunks cover the words of what was chunked: a notebook's cell sources and
    stream texts, or a plain document's text."""
    if isinstance(chunked.source, str):
        return span_coverage(chunked.source, [(chunk.start, chunk.end) for chunk in chunked.chunks])
    return _notebook_coverage(chunked.source, chunked.chunks)


def _notebook_coverage(notebook: Notebook, chunks: Iterable[Chunk]) -> Coverage:
    spans: dict[tuple[int, int | None], list[tuple[int, int]]] = {}
    for chunk in chunks:
        if chunk.meta["field"] in ("source", "text"):
            spans.setdefault((chunk.cell, chunk.output), []).append((chunk.start, chunk.end))
    parts = []
    for cell in notebook.cells:
        if cell.cell_type in ("markdown", "raw", "code"):
            parts.append(span_coverage(cell.source, spans.get((cell.index, None), ())))
        for output in cell.outputs:
            if output.output_type == "stream":
                parts.append(span_coverage(output.text, spans.get((cell.index, output.index), ())))
    return combine(parts)


def combine(parts: Iterable[Coverage]) -> Coverage:
    """Coverage of several texts together; word indices of `missing` run on across the texts."""
    total = covered = occurrences = 0
    missing: list[int] = []
    for part in parts:
        missing += [total + index for index in part.missing]
        total += part.total_words
        covered += part.covered_words
        occurrences += part.occurrences
    return Coverage(total, covered, occurrences, tuple(missing))


class _Maker:
    """Collects the chunks of one document: stable ids, shared meta, skip counts."""

    def __init__(self, path: str, file_revision: str, meta: dict[str, Any]) -> None:
        self.path, self.revision, self.meta = path, file_revision, meta
        self.chunks: list[Chunk] = []
        self.skipped: Counter[str] = Counter()
        self.cell: int | None = None
        self.cell_key = ""
        self.headings: list[str] = []
        self.digests: dict[tuple[int | None, str], str] = {}

    def start_cell(self, cell: Cell, occurrence: int) -> None:
        self.cell = cell.index
        self.digests = {}
        # Path, content and the rank among identical cells: not the cell index or file revision,
        # so that editing another cell leaves these ids alone.
        self.cell_key = _digest(self.path, cell.cell_type, cell.source, str(occurrence))

    def start_document(self, text: str) -> None:
        self.cell = None
        self.cell_key = _digest(self.path, "document", text)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def add(self, kind: str, original: str, start: int, end: int, text: str,
            output: Output | None = None, place: str = "source", **meta: Any) -> None:  # fmt: skip
        """Add a chunk quoting `original[start:end]`, which is the cell source or `place` of
        `output`; empty values in `meta` are left out."""
        text = text.strip()
        if not text:
            return
        number = None if output is None else output.index
        if (number, place) not in self.digests:
            self.digests[number, place] = "" if output is None else _digest(place, original)
        content = self.digests[number, place]
        chunk_id = _digest(self.cell_key, kind, str(number), content, str(start), str(end))[:ID_HEX]
        meta = {**self.meta, "field": place, "headings": list(self.headings), **meta}
        meta = {key: value for key, value in meta.items() if value not in (None, [], {}, "")}
        self.chunks.append(
            Chunk(chunk_id, kind, self.path, self.cell, number, self.revision,
                  original[start:end], start, end, text, meta)
        )  # fmt: skip


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


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
        elif atx := ATX.fullmatch(line):
            title = _title(atx[2] or "")
            if title:
                found.append((offset, len(atx[1]), title))
            previous = None
        elif previous and SETEXT.fullmatch(line):
            found.append((previous[0], 1 if stripped[0] == "=" else 2, _title(previous[1])))
            previous = None
        else:
            previous = (offset, line) if stripped else None
        offset += len(line)
    return found


def _title(text: str) -> str:
    return " ".join(TAG.sub("", text).replace("*", "").replace("`", "").split())


def _prose(maker: _Maker, kind: str, source: str, outline: _Outline, markdown: bool) -> None:
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
        body = _clean(source[start:end])
        maker.add(kind, source, start, end, f"{prefix}\n{body}" if prefix else body)
    for _, level, title in marks[next_mark:]:
        outline.enter(level, title)
    maker.headings = outline.path()


def _first_words(text: str, count: int) -> str:
    spans = word_spans(text)
    return text[: spans[min(count, len(spans)) - 1][1]] if spans else ""


def _clean(text: str) -> str:
    """Searchable form of a text: no terminal escapes, no overwritten progress, no base64."""
    if "\x1b" in text:
        text = ANSI.sub("", text)
    if "\r" in text:
        text = OVERWRITTEN.sub("", text)
    return BASE64.sub("[data]", text)


# -- code -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeFacts:
    """What a code cell's source tells: names it defines (with their offsets), modules it imports,
    its last expression (what an execute_result shows), and plot labels in its calls."""

    defines: tuple[tuple[int, str], ...]
    imports: tuple[tuple[int, str], ...]
    last_expression: str | None
    labels: dict[str, list[str]]
    label_span: tuple[int, int] | None  # the lines that hold the labels


def python_source(source: str) -> str:
    """`source` with IPython syntax blanked out, every offset kept: `%magic`, `%%cell magic`,
    `!shell`, `x = !shell` and `obj?` help lines become the expression `0` padded with spaces, and
    the body of a non-Python cell magic (`%%bash`, `%%html`, ...) becomes blank."""
    lines = LINE.findall(source)
    first = next((number for number, line in enumerate(lines) if line.strip()), 0)
    if lines and lines[first].lstrip().startswith("%%"):
        name = (lines[first].strip()[2:].split() or [""])[0]
        upto = first + 1 if name in PYTHON_CELL_MAGICS else len(lines)
        lines = [_blank(line) for line in lines[:upto]] + lines[upto:]
    result = []
    for line in lines:
        body = line.rstrip("\r\n")
        indent = len(body) - len(body.lstrip())
        rest = body[indent:]
        assigned = re.match(r"([\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*)[%!]", rest)
        if assigned:
            indent += assigned.end() - 1
            rest = body[indent:]
        if rest.startswith(("%", "!", "?")) or (rest.endswith("?") and not rest.startswith("#")):
            line = body[:indent] + "0".ljust(len(rest)) + line[len(body) :]
        result.append(line)
    return "".join(result)


def _blank(line: str) -> str:
    body = line.rstrip("\r\n")
    return " " * len(body) + line[len(body) :]


def code_facts(source: str, labels: bool = True) -> CodeFacts:
    """Parse `source` (IPython magics blanked if needed) and collect its `CodeFacts` (plot labels
    only if `labels`: they cost a walk over the whole tree). A cell that still does not parse
    (Python 2, say) falls back to a line-based guess at its definitions."""
    tree, python = _parse(source)
    if tree is None:
        return _guessed_facts(source)
    starts = _line_starts(source)
    defines: list[tuple[int, str]] = []
    imports: list[tuple[int, str]] = []
    _collect(tree.body, source, starts, defines, imports)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = _segment(source, python, tree.body[-1])
    found, lines = _plot_labels(tree) if labels else ({}, [])
    span = (starts[min(lines) - 1], _line_end(source, starts, max(lines))) if lines else None
    return CodeFacts(tuple(defines), tuple(imports), last, found, span)


def _parse(source: str) -> tuple[ast.Module | None, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # old notebooks' invalid escapes warn on every parse
        for python in (source, python_source(source)):
            try:
                return ast.parse(python), python
            except (SyntaxError, ValueError):
                continue
    return None, source


def _line_starts(source: str) -> list[int]:
    """Offsets where Python's lines 1..n start (index 0 is line 1), then the end of the text.
    Lines end at \\n, \\r\\n or \\r, as for the tokenizer (not at the other breaks of
    `str.splitlines`)."""
    return [0] + [match.end() for match in LINE_BREAK.finditer(source)] + [len(source)]


def _line_end(source: str, starts: list[int], line: int) -> int:
    """Offset of the end of 1-based `line`, before its line break."""
    return starts[line - 1] + len(source[starts[line - 1] : starts[line]].rstrip("\r\n"))


def _statement_at(source: str, starts: list[int], node: ast.stmt) -> int:
    """Offset of the first character of the statement's line after its indentation."""
    line = source[starts[node.lineno - 1] : starts[node.lineno]]
    return starts[node.lineno - 1] + len(line) - len(line.lstrip())


def _collect(
    body: list[ast.stmt], source: str, starts: list[int], defines: list, imports: list
) -> None:
    """Names bound at the cell's top level (including inside if/for/with/try blocks)."""
    for node in body:
        at = _statement_at(source, starts, node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defines.append((at, f"{node.name}()"))
            continue
        if isinstance(node, ast.ClassDef):
            defines.append((at, f"class {node.name}"))
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                imports.append((at, alias.name))
                defines.append((at, alias.asname or alias.name.split(".")[0]))
        elif isinstance(node, ast.ImportFrom):
            imports.append((at, "." * node.level + (node.module or "")))
            defines += [(at, alias.asname or alias.name) for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                defines += [(at, name) for name in _target_names(target)]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            defines += [(at, name) for name in _target_names(node.target)]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    defines += [(at, name) for name in _target_names(item.optional_vars)]
        for block in ("body", "orelse", "finalbody"):
            _collect(getattr(node, block, []), source, starts, defines, imports)
        for handler in getattr(node, "handlers", []):
            _collect(handler.body, source, starts, defines, imports)


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return [f"{target.value.id}.{target.attr}"]
    return []


def _segment(source: str, python: str, node: ast.AST) -> str | None:
    """Source text of `node`; for a blanked magic line, the original line."""
    segment = ast.get_source_segment(python, node)
    if segment is None:
        return None
    if python is not source:
        lines = LINE.findall(source)[node.lineno - 1 : node.end_lineno]
        if lines != LINE.findall(python)[node.lineno - 1 : node.end_lineno]:
            segment = "".join(lines)
    return " ".join(segment.split())


def _plot_labels(tree: ast.Module) -> tuple[dict[str, list[str]], list[int]]:
    """Titles, axis labels and legend labels given to plotting calls, with their line numbers."""
    labels: dict[str, list[str]] = {}
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
        found = []
        if name in LABEL_CALLS and node.args:
            found += [(LABEL_CALLS[name], text) for text in _strings(node.args[0])]
        if name == "legend" and node.args:
            found += [("legend", text) for text in _strings(node.args[0])]
        for keyword in node.keywords:
            if keyword.arg in LABEL_KEYWORDS:
                found += [(LABEL_KEYWORDS[keyword.arg], text) for text in _strings(keyword.value)]
            elif keyword.arg == "labels" and name == "legend":
                found += [("legend", text) for text in _strings(keyword.value)]
        for role, text in found:
            if text not in labels.setdefault(role, []):
                labels[role].append(text)
        if found:
            lines += [node.lineno, node.end_lineno or node.lineno]
    return labels, lines


def _strings(node: ast.expr) -> list[str]:
    """The literal text of a string, f-string (its constant parts) or list/tuple of strings."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value.strip()] if node.value.strip() else []
    if isinstance(node, ast.JoinedStr):
        parts = [value.value for value in node.values if isinstance(value, ast.Constant)]
        text = " ".join(" ".join(parts).split())
        return [text] if text else []
    if isinstance(node, (ast.List, ast.Tuple)):
        return [text for element in node.elts for text in _strings(element)]
    return []


GUESS_DEFINE = re.compile(
    r"^(?:(def|class)[ \t]+(\w+)|([A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*)[ \t]*=(?!=))", re.M
)
GUESS_IMPORT = re.compile(r"^(?:import[ \t]+([\w.]+)|from[ \t]+([\w.]+)[ \t]+import)", re.M)


def _guessed_facts(source: str) -> CodeFacts:
    """Definitions of an unparseable cell from its unindented lines: defs, classes, assignments."""
    defines = []
    for match in GUESS_DEFINE.finditer(source):
        if match[1]:
            label = f"class {match[2]}" if match[1] == "class" else f"{match[2]}()"
            defines.append((match.start(), label))
        else:
            defines += [(match.start(), name.strip()) for name in match[3].split(",")]
    imports = [(match.start(), match[1] or match[2]) for match in GUESS_IMPORT.finditer(source)]
    lines = [line for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    last = lines[-1].strip() if lines and not lines[-1][0].isspace() else None
    if last and (GUESS_DEFINE.match(last) or iskeyword(last.split()[0]) or last.startswith("print ")):
        last = None  # a statement, not an expression
    return CodeFacts(tuple(defines), tuple(imports), last, {}, None)


def _names_within(items: Iterable[tuple[int, str]], start: int, end: int, first: bool) -> list[str]:
    """Names whose statements start inside [start, end) (or before it, for the first window)."""
    return list(dict.fromkeys(name for at, name in items if (first or at >= start) and at < end))


def _code(maker: _Maker, cell: Cell, outline: _Outline, above: str) -> None:
    maker.headings = outline.path()
    source = cell.source
    images = any(mime in output.data for output in cell.outputs for mime in IMAGES)
    facts = code_facts(source, images) if source.strip() else CodeFacts((), (), None, {}, None)
    spans = word_spans(source)
    for first, last in window_ranges(len(spans), *CODE_WINDOW):
        start, end = spans[first][0], spans[last - 1][1]
        defines = _names_within(facts.defines, start, end, first == 0)
        imports = _names_within(facts.imports, start, end, first == 0)
        prefix = "; ".join(
            part for part in (
                f"defines: {', '.join(defines)}" if defines else "",
                f"imports: {', '.join(imports)}" if imports else "",
            ) if part
        )  # fmt: skip
        body = _clean(source[start:end])
        maker.add("code", source, start, end, f"# {prefix}\n{body}" if prefix else body,
                  defines=defines, imports=imports)  # fmt: skip
    for output in cell.outputs:
        _output(maker, cell, output, facts, above)


# -- outputs --------------------------------------------------------------------------------------


def _output(maker: _Maker, cell: Cell, output: Output, facts: CodeFacts, above: str) -> None:
    """Chunks of one output, chosen by what it holds; what cannot be searched is counted."""
    if output.output_type == "stream":
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
        _plot(maker, cell, output, image, facts, above)
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
            maker.add("stream", markup, 0, len(markup), _clean(text), output, "text/html")
        else:
            maker.skip("HTML without text")
        return
    unknown = sorted(set(data) - {"text/plain"})  # a placeholder text/plain says nothing
    maker.skip(f"unknown MIME {', '.join(unknown)}" if unknown else "empty output")


def _tables() -> Any:
    """`cellar.ingest.tables`, imported on first use: it brings pandas, which costs seconds in Pyodide."""
    from cellar.ingest import tables

    return tables


def _table(maker: _Maker, output: Output, original: str, place: str, start: int, end: int,
           table: Table, expression: str | None, parsed_from: str) -> None:  # fmt: skip
    text = _tables().table_text(table)
    text = f"{expression}\n{text}" if expression else text
    rows, columns = table.shape
    maker.add("table", original, start, end, _clean(text), output, place,
              shape=[int(rows), int(columns)], expression=expression,
              parsed_from=parsed_from, output_type=output.output_type)  # fmt: skip


def _short(text: str) -> bool:
    text = text.strip()
    return len(text) <= SCALAR_MAX[0] and text.count("\n") < SCALAR_MAX[1]


def _scalar(maker: _Maker, cell: Cell, output: Output, plain: str, markup: str | None,
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
    maker.add("scalar", plain, start, start + len(value), _clean("\n".join(lines)), output,
              "text/plain", expression=expression, output_type=output.output_type)  # fmt: skip


def _whole_table(maker: _Maker, output: Output, original: str, place: str,
                 expression: str | None) -> bool:  # fmt: skip
    """Add a table chunk if the whole text is a printed DataFrame or Series; say whether it was."""
    table = _tables().parse_text_table(original) if _looks_like_frame(original) else None
    if table is not None:
        end = len(original.rstrip())
        _table(maker, output, original, place, 0, end, table, expression, "text")
    return table is not None


def _text_output(maker: _Maker, output: Output, original: str, place: str, expression: str | None,
                 **meta: Any) -> None:  # fmt: skip
    """A stream or long text result, windowed; printed tables inside it also become tables."""
    blocks = _blocks(original)
    if len(blocks) > 1:
        for start, end in blocks:
            if _looks_like_frame(original[start:end]):
                table = _tables().parse_text_table(original[start:end])
                if table is not None:
                    _table(maker, output, original, place, start, end, table, None, "text")
    spans = word_spans(original)
    prefix = f"{expression} =\n" if expression else ""
    for first, last in window_ranges(len(spans), *PROSE_WINDOW):
        start, end = spans[first][0], spans[last - 1][1]
        body = _clean(original[start:end])
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
    ending in a backslash) stays one block."""
    blocks: list[tuple[int, int]] = []
    for match in re.finditer(r"(?:[^\n]*\S[^\n]*(?:\n|\Z))+", text):
        start, end = match.start(), len(match.group().rstrip()) + match.start()
        if blocks and text[blocks[-1][0] : blocks[-1][1]].split("\n", 1)[0].rstrip().endswith("\\"):
            blocks[-1] = (blocks[-1][0], end)
        else:
            blocks.append((start, end))
    return blocks


def _error(maker: _Maker, output: Output) -> None:
    """`ename: evalue` and the last frame of the traceback, without terminal colours."""
    ename, evalue = output.ename or "", output.evalue or ""
    frames = [ANSI.sub("", entry).strip() for entry in output.traceback]
    frames = [frame for frame in frames if frame]
    if frames and frames[-1].startswith(ename):
        frames.pop()  # the closing `ename: evalue` line, already in the text
    last = "\n".join(frames[-1].splitlines()[-20:]) if frames else ""
    place, original = ("evalue", evalue) if evalue else ("ename", ename)
    maker.add("error", original, 0, len(original), _clean(f"{ename}: {evalue}\n{last}"), output,
              place, error=True, ename=ename)  # fmt: skip


def _plot(
    maker: _Maker, cell: Cell, output: Output, mime: str, facts: CodeFacts, above: str
) -> None:
    """An image, described by its code's labels and the Markdown above; it quotes the lines of
    code that label it (or the whole source)."""
    lines = [f"Plot ({mime})"]
    for role, name in LABEL_NAMES.items():
        if role in facts.labels:
            lines.append(f"{name}: {', '.join(facts.labels[role])}")
    if maker.headings:
        lines.append(" > ".join(maker.headings))
    if above:
        lines.append(above)
    source = cell.source
    start, end = facts.label_span or (0, len(source.rstrip()))
    maker.add("plot", source, start, end, _clean("\n".join(lines)), output, "source",
              mime=mime, labels=facts.labels, output_type=output.output_type)  # fmt: skip


class _TextOfHTML(html.parser.HTMLParser):
    """The visible text of an HTML fragment: script and style contents dropped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
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
    parser.feed(markup)
    parser.close()
    return " ".join(" ".join(parser.parts).split())

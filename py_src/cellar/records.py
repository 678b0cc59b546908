"""The records other parts rely on (the contracts of DESIGN.md), as typed dicts.

They are plain JSON-shaped dicts at run time: what `cellar chunk --jsonl`, `cellar search --json`,
the shard's manifest and `cellar rerender`'s report.json hold, and what crosses the worker
boundary to a page. The types document each field once, here, for the modules that build and
read them; nothing is checked at run time.

    ChunkRecord      one searchable, citable unit (cellar.ingest.chunks)
    NotebookEntry    a notebook of a shard's notebooks table (cellar.retrieval.index)
    Answer           the answer contract (cellar.retrieval.search), made of NotebookResult,
                     Hit and NeighbourhoodEntry
    ReportEntry      one notebook of a re-render report (cellar.rerender.report)
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

# Chunk kinds, in the order of their codes (a shard's postings and clusters carry a code per
# chunk, its notebook table a bitmask of them per notebook; the manifest lists the names, so a
# page reads them from the shard it opened).
KINDS = ("markdown", "code", "table", "scalar", "stream", "plot", "error", "text")

# Re-render statuses: the sandbox's verdicts, and `unchecked` for a notebook indexed with its
# saved outputs without a re-render.
RERENDER_STATUSES = ("clean", "drifted", "stale")
STATUSES = (*RERENDER_STATUSES, "unchecked")


class ChunkRecord(TypedDict):
    """A chunk: `quote == original[start:end]`, where the original is the cell source or output
    text named by `cell`/`output` (`meta["field"]` says which); `text` is what is searched."""

    id: str  # stable across builds for unchanged input
    kind: str  # one of KINDS
    path: str  # relative to the corpus root, `/` separators
    cell: int | None  # 0-based cell index (nbformat 3 worksheets flattened); None for documents
    output: int | None  # 0-based output index, or None for the cell's own source
    revision: str  # SHA-256 hex of the file's bytes
    quote: str
    start: int
    end: int
    text: str
    meta: dict[str, Any]


class NotebookEntry(TypedDict):
    """A row of the shard's notebooks table: its chunks are rows `start:end` of the arrays."""

    path: str
    revision: str  # SHA-256 of the archive file; every hit cites it
    title: str
    meta: dict[str, Any]  # project, author, year, vessel_class, tags, deprecated (when known)
    status: str  # one of STATUSES
    reason: str | None  # why a stale notebook failed to re-run
    rendered: str | None  # SHA-256 of the fresh notebook indexed instead of the saved one
    start: int
    end: int
    cells: int
    entry: NotRequired[str]  # a record's id: each note of a records file is an entry of its own


class Hit(TypedDict):
    chunk_id: str
    kind: str
    cell: int | None
    output: int | None
    score: float
    quote: str
    start: int
    end: int
    source: NotRequired[str]  # a document's: document | clauses | records (absent: a notebook)
    citation: NotRequired[str]  # a document block's path: `NEN 3140:2018 §6.3.2 b`, a note's id


class NeighbourhoodEntry(TypedDict):
    cell: int | None
    kind: str
    text: str  # the chunk's quote, cut at a length limit
    output: NotRequired[int]  # an output's entry; absent for a cell's source
    citation: NotRequired[str]  # a document block's citation (a document's context)
    start: NotRequired[int]  # a document block's offsets in the extracted text (the viewer opens there)
    end: NotRequired[int]


class NotebookResult(TypedDict):
    """One notebook of an answer, with its best hits and the neighbourhood of the first."""

    path: str
    revision: str
    score: float
    status: str
    title: str
    meta: dict[str, Any]
    hits: list[Hit]
    neighbourhood: list[NeighbourhoodEntry]
    entry: NotRequired[str]  # a service note's id: one entry of its records file
    warning: NotRequired[str]  # a stale notebook: its saved outputs may be out of date
    note: NotRequired[str]  # a drifted notebook: these are its fresh outputs


class Answer(TypedDict):
    """The answer contract: the notebooks that answer, or a refusal that says what is missing."""

    query: str
    refused: bool
    refusal_reason: str | None
    notebooks: list[NotebookResult]  # empty when refused
    timings_ms: dict[str, float]
    mode: str
    terms: list[str]  # the query's analysed terms
    evidence: dict[str, Any]  # coverage, known_coverage, numbers, similarity, missing
    warnings: list[str]
    closest: NotRequired[list[NotebookResult]]  # a refusal: what came nearest
    route: NotRequired[dict[str, Any]]  # a routed search: rule, sources searched, fields, fell_back, deprecated
    cut: NotRequired[dict[str, int]]  # a question cut to its first read_chars: asked_chars, read_chars


class OutputDiffRecord(TypedDict):
    status: str  # same | changed | missing | new
    kind: str  # stream:stdout, stream:stderr, result, image/png, error
    saved: int | None
    fresh: int | None
    diff: str


class CellDiffRecord(TypedDict):
    cell: int
    outputs: list[OutputDiffRecord]


class ReportEntry(TypedDict):
    """One notebook of a re-render report."""

    path: str
    status: str  # one of RERENDER_STATUSES
    reason: str | None
    revision: str  # SHA-256 of the archive file that ran
    seconds: float | None
    cells: list[CellDiffRecord]  # the cells whose outputs differ

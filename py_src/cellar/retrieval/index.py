"""The index: everything a search needs, in memory, built from chunk records.

Chunks are grouped contiguously per notebook (notebook ``n`` owns rows ``start:end``), so a
notebook's chunks are one slice of every per-chunk array and one fragment file in the shard.
Per chunk: BM25 terms (``cellar.retrieval.analysis``) in a score matrix (``cellar.retrieval.bm25``), an int8 embedding
with one float32 scale per row (``cellar.retrieval.embedding``), and its notebook, cell, output and kind as
small integer arrays that the query path filters and groups with NumPy alone.

``build_index`` is pure (records in, an Index out); ``build_index_from_directory`` is the edge
that reads files, reports the bad ones and goes on.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import PurePath, PurePosixPath
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from cellar.records import KINDS, STATUSES, ChunkRecord, NotebookEntry
from cellar.retrieval.analysis import Analyzer, AnalyzerSettings
from cellar.retrieval.bm25 import BM25
from cellar.retrieval.embedding import StaticModel, quantise_rows
from cellar.retrieval.incremental import Render, embedded_text

if TYPE_CHECKING:  # chunking is imported where files are read: the query path does not need it
    from cellar.ingest.chunks import Chunked
    from cellar.retrieval.incremental import Part

# An entry's catalogue: a notebook's metadata; a document's source kind (document, clauses,
# records: absent for a notebook) and a record's structured fields, which the filters read.
NOTEBOOK_META = ("project", "author", "year", "vessel_class", "tags", "deprecated", "source", "fields")

# Files below an archive's root that describe or serve the archive rather than belong to it,
# as patterns on the path relative to the root (``/`` separators; ``*`` also crosses folders):
# its top-level read-me and requirements, and the content-addressed input files of re-rendering
# (``blobs/``, which the path map points into). A read-me deeper down is a document like any other.
EXCLUDE = ("README.md", "README.txt", "requirements.txt", "blobs/*")

# progress(done, total, what): called as long work moves on, e.g. to draw a progress bar.
Progress = Callable[[int, int, str], None]


@dataclass
class Index:
    """A searchable index. ``notebooks[n]`` is the NotebookEntry of notebook ``n`` (its chunks are
    rows ``start:end``). ``chunks`` holds the chunk records in row order, or is None when they
    stay in the shard's fragment files until needed."""

    notebooks: list[NotebookEntry]
    bm25: BM25
    vectors: np.ndarray  # int8 (n_chunks, dims)
    scales: np.ndarray  # float32 (n_chunks,): embedding = vectors * scales[:, None]
    chunk_notebook: np.ndarray  # int32 notebook number per chunk
    chunk_cell: np.ndarray  # int32 cell index, -1 for a plain document
    chunk_output: np.ndarray  # int32 output index, -1 for a cell's source
    chunk_kind: np.ndarray  # uint8 index into KINDS
    analyzer: AnalyzerSettings
    model_id: str
    model_sha256: str
    chunks: list[ChunkRecord] | None = None
    calibration: dict[str, Any] = field(default_factory=dict)
    _dense: np.ndarray | None = field(default=None, init=False, repr=False)

    @property
    def n_chunks(self) -> int:
        return int(self.chunk_kind.shape[0])

    def dense(self) -> np.ndarray:
        """The embeddings as float32 rows, made once on first use (a query is one mat-vec)."""
        if self._dense is None:
            self._dense = self.vectors.astype(np.float32) * self.scales[:, None]
        return self._dense

    def notebook_chunks(self, n: int) -> list[ChunkRecord]:
        """The chunk records of notebook ``n`` (only when the index holds them)."""
        if self.chunks is None:
            raise ValueError("this index keeps its chunk records in shard fragments")
        entry = self.notebooks[n]
        return self.chunks[entry["start"] : entry["end"]]


def build_index(
    records: Iterable[Mapping[str, Any]],
    model: StaticModel,
    analyzer: AnalyzerSettings | None = None,
    *,
    cell_counts: Mapping[str, int] | None = None,
    renders: Mapping[str, Render] | None = None,
    titles: Mapping[str, str] | None = None,
    k1: float = 1.2,
    b: float = 0.75,
    progress: Progress | None = None,
) -> Index:
    """An Index of chunk records (the chunk record contract); records of one path may come in
    any order relative to other paths and keep their own order. ``cell_counts``, ``renders``
    and ``titles`` are per path; the defaults are the highest cell + 1, ``Render()`` (unchecked),
    and the first heading (or the file name)."""
    settings = analyzer or AnalyzerSettings()
    groups: dict[str, list[ChunkRecord]] = {}
    for record in records:
        # Records follow the chunk record contract (nothing checks them at run time).
        groups.setdefault(record["path"], []).append(cast(ChunkRecord, dict(record)))
    rows = [record for path in sorted(groups) for record in groups[path]]
    if not rows:
        raise ValueError("nothing to index: no chunk records")
    renders = renders or {}
    bad = {path: render.status for path, render in renders.items() if render.status not in STATUSES}
    if bad:
        raise ValueError(f"unknown status(es) {bad}; choose from {list(STATUSES)}")
    notebooks, start = [], 0
    for path in sorted(groups):
        for group in entry_groups(groups[path]):
            notebooks.append(_notebook_entry(path, group, start, cell_counts, renders.get(path, Render()), titles))
            start += len(group)
    report = progress or (lambda done, total, what: None)
    text_analyzer = Analyzer(settings)
    analyse = text_analyzer.terms
    terms = []
    for number, record in enumerate(rows):
        terms.append(analyse(record["text"]))
        if number % 500 == 0:
            report(number, len(rows), "analysing")
    report(len(rows), len(rows), "analysing")
    batch = 1000
    embedded = []
    for first in range(0, len(rows), batch):
        embedded.append(model.encode([embedded_text(record, text_analyzer) for record in rows[first : first + batch]]))
        report(min(first + batch, len(rows)), len(rows), "embedding")
    return _assemble(rows, notebooks, terms, np.concatenate(embedded), model, settings, k1, b)


def _assemble(
    rows: list[ChunkRecord],
    notebooks: list[NotebookEntry],
    terms: list[list[str]],
    embeddings: np.ndarray,
    model: StaticModel,
    settings: AnalyzerSettings,
    k1: float,
    b: float,
) -> Index:
    """The Index of chunk rows (grouped by notebook, in path order) and their terms and float32
    embeddings, however these were made."""
    bm25 = BM25.build(terms, k1=k1, b=b)
    vectors, scales = quantise_rows(embeddings)
    owner = np.repeat(np.arange(len(notebooks), dtype=np.int32), [nb["end"] - nb["start"] for nb in notebooks])
    return Index(
        notebooks=notebooks,
        bm25=bm25,
        vectors=vectors,
        scales=scales,
        chunk_notebook=owner,
        chunk_cell=np.array([_or_minus(r["cell"]) for r in rows], dtype=np.int32),
        chunk_output=np.array([_or_minus(r["output"]) for r in rows], dtype=np.int32),
        chunk_kind=np.array([KINDS.index(r["kind"]) for r in rows], dtype=np.uint8),
        analyzer=settings,
        model_id=model.id,
        model_sha256=model.sha256,
        chunks=rows,
    )


def index_from_parts(
    parts: Iterable[Part], model: StaticModel, analyzer: AnalyzerSettings, *, k1: float = 1.2, b: float = 0.75
) -> Index:
    """The Index of prepared parts (``cellar.retrieval.incremental``): the same, byte for byte,
    as ``build_index`` of their records, as terms and embeddings are per chunk."""
    chosen = sorted((part for part in parts if part.error is None and part.records), key=lambda part: part.path)
    if not chosen:
        raise ValueError("nothing to index: no chunk records")
    rows: list[ChunkRecord] = []
    terms: list[list[str]] = []
    notebooks: list[NotebookEntry] = []
    for part in chosen:
        render = Render(*part.render) if part.render else Render()
        if render.status not in STATUSES:
            raise ValueError(f"unknown status {render.status!r}; choose from {list(STATUSES)}")
        counts = {part.path: part.cell_count} if part.cell_count is not None else None
        titles = {part.path: part.title} if part.title else None
        for group in entry_groups(part.records):
            notebooks.append(_notebook_entry(part.path, group, len(rows), counts, render, titles))
            rows += group
        terms += part.terms
    embeddings = np.concatenate([part.embeddings for part in chosen])
    return _assemble(rows, notebooks, terms, embeddings, model, analyzer, k1, b)


def entry_groups(records: Sequence[ChunkRecord]) -> list[list[ChunkRecord]]:
    """A file's records cut into index entries, in order: one for a notebook or a document, one
    per note of a records file (its chunks carry ``meta.entry``, the note id), so that each note
    has its own row in the notebooks table, with its fields as entry-level metadata."""
    groups: list[list[ChunkRecord]] = []
    current: object = None
    for record in records:
        entry = record.get("meta", {}).get("entry")
        if not groups or entry != current:
            groups.append([])
            current = entry
        groups[-1].append(record)
    return groups


def _or_minus(value: int | None) -> int:
    return -1 if value is None else value


def _notebook_entry(
    path: str,
    group: Sequence[Mapping[str, Any]],
    start: int,
    cell_counts: Mapping[str, int] | None,
    render: Render,
    titles: Mapping[str, str] | None,
) -> NotebookEntry:
    revisions = {record["revision"] for record in group}
    if len(revisions) != 1:
        raise ValueError(f"{path}: chunk records from {len(revisions)} revisions")
    first_meta = group[0].get("meta", {})
    cells = [record["cell"] for record in group if record["cell"] is not None]
    heading = next((r["meta"]["headings"][0] for r in group if r.get("meta", {}).get("headings")), None)
    entry = first_meta.get("entry")
    title = f"{first_meta.get('citation', entry)}" if entry else None
    result: NotebookEntry = {
        "path": path,
        "revision": revisions.pop(),
        "title": title or (titles or {}).get(path) or heading or PurePosixPath(path).stem,
        "meta": {key: first_meta[key] for key in NOTEBOOK_META if key in first_meta},
        "status": render.status,
        "reason": render.reason,
        "rendered": render.rendered,
        "start": start,
        "end": start + len(group),
        "cells": (cell_counts or {}).get(path, max(cells) + 1 if cells else 0),
    }
    if entry:
        result["entry"] = entry
    return result


@dataclass(frozen=True)
class DirectoryBuild:
    """What ``build_index_from_directory`` made: the index, how many files were read and
    skipped, the problems (``path: reason``) of the files that were skipped or read with a caveat,
    and what the cache gave: paths ``reused`` as they were, ``moved`` (the same bytes at a new
    path: chunked again, terms and embeddings reused), ``redone`` and ``removed`` since the last
    build (all empty but ``redone`` without a cache)."""

    index: Index
    files: int
    skipped: int
    problems: list[str]
    reused: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    redone: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def build_index_from_directory(
    corpus_dir: str | os.PathLike[str],
    model: StaticModel | str | os.PathLike[str],
    *,
    rules: Sequence[Any] = (),
    glossary: Mapping[str, str] | None = None,
    exclude: Sequence[str] = EXCLUDE,
    rerendered: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    cache: str | os.PathLike[str] | None = None,
    scheduler: str = "local",
    workers: int | None = None,
) -> DirectoryBuild:
    """Chunk every notebook and document (``cellar.ingest.documents``) below ``corpus_dir`` and index the chunks,
    except the files whose path relative to ``corpus_dir`` matches a pattern of ``exclude``.

    With ``rerendered``, the output folder of ``cellar rerender`` for this corpus, a notebook's
    outputs are its fresh ones when it re-rendered clean or drifted, and its saved ones when it
    is stale (``Render`` says which); its chunks still cite the archive file's revision. Without
    it, every notebook is indexed with its saved outputs, unchecked.

    A file that cannot be read or parsed is reported as ``path: reason`` and skipped.
    ``model`` is a StaticModel or a model directory; ``rules`` come from
    ``cellar.ingest.metadata.parse_rules``. With ``cache`` (a folder), the work of every file
    whose bytes and pipeline are unchanged is taken from it (``cellar.retrieval.incremental``).
    The per-file work runs on ``scheduler`` (``cellar.retrieval.scheduler``) with ``workers``
    processes (default: the machine's cores; with a model object rather than a folder, in this
    process). The index is the same whatever the cache, scheduler and workers.
    """
    from cellar.ingest.discovery import find_documents, read_document, relative_path
    from cellar.retrieval import scheduler as schedulers
    from cellar.retrieval.embedding import load_model
    from cellar.retrieval.incremental import Cache, Part, Task, pipeline_version, prepare, prepare_batch, task_key

    if not os.path.isdir(corpus_dir):
        raise ValueError(f"{corpus_dir}: not a folder")
    schedulers.check_scheduler(scheduler)
    report_entries = None
    if rerendered is not None:
        from cellar.rerender.report import read_report

        report_entries = read_report(rerendered)
    model_dir = None if isinstance(model, StaticModel) else os.path.abspath(model)
    model = model if isinstance(model, StaticModel) else load_model(model)
    files = [
        path
        for path in find_documents(corpus_dir)
        if not any(fnmatch(PurePath(os.path.relpath(path, corpus_dir)).as_posix(), pattern) for pattern in exclude)
    ]
    report = progress or (lambda done, total, what: None)
    settings = AnalyzerSettings(glossary=tuple((glossary or {}).items()))
    pipeline = pipeline_version(model, settings, rules)
    store = Cache(cache) if cache is not None else None
    previous = store.last_build() if store is not None else {}
    parts: dict[int, Part] = {}  # by file number
    todo: list[tuple[int, Task]] = []
    moves: list[tuple[int, Task, Part]] = []
    reused: list[str] = []
    for number, file_path in enumerate(files):
        try:
            path = relative_path(file_path, corpus_dir)
            data = read_document(file_path, corpus_dir)
        except ValueError as error:  # FileRefused: names the file and why
            parts[number] = Part(getattr(error, "path", str(file_path)), "", error=str(error))
            continue
        task = _task(path, data, pipeline, report_entries, rerendered, task_key)
        cached = store.get(task.key) if store is not None else None
        if cached is not None and cached.path == path:
            parts[number] = cached
            reused.append(path)
        elif cached is not None and cached.error is None:
            moves.append((number, task, cached))
        else:
            todo.append((number, task))
        if number % 200 == 0:
            report(len(parts), len(files), "reading")
    done = len(parts)
    analyzer = Analyzer(settings)
    for number, task, cached in moves:
        parts[number] = prepare(task, rules, analyzer, model, reuse=cached)
    done += len(moves)
    report(done, len(files), "notebooks")
    numbers = {task.path: number for number, task in todo}

    def finished(batch: list[Part]) -> None:
        nonlocal done
        for part in batch:
            parts[numbers[part.path]] = part
            if store is not None:
                store.put(part)
        done += len(batch)
        report(done, len(files), "notebooks")

    tasks = [task for _, task in todo]
    small = scheduler == "local" and sum(len(task.data) for task in tasks) < schedulers.SMALL_WORK
    if model_dir is None or not tasks or small:
        finished([prepare(task, rules, analyzer, model) for task in tasks])
    else:
        work = schedulers.batches(tasks, lambda task: len(task.data) + 2000, workers or schedulers.default_workers())
        schedulers.run(
            prepare_batch,
            work,
            finished,
            scheduler=scheduler,
            workers=workers,
            rules=tuple(rules),
            settings=settings.to_dict(),
            model_dir=model_dir,
        )
    ordered = [parts[number] for number in sorted(parts)]
    problems: list[str] = []
    for part in ordered:
        problems += [part.error] if part.error is not None else part.problems
    index = index_from_parts(ordered, model, settings)
    current = {part.path: part.key for part in ordered if part.key}
    removed = sorted(set(previous) - set(current))
    if store is not None:
        store.finish(current)
    skipped = sum(part.error is not None for part in ordered)
    moved = sorted(task.path for _, task, _ in moves)
    redone = sorted(task.path for _, task in todo)
    return DirectoryBuild(index, len(files) - skipped, skipped, problems, sorted(reused), moved, redone, removed)


def _task(
    path: str,
    data: bytes,
    pipeline: str,
    entries: Mapping[str, Any] | None,
    rerendered: str | os.PathLike[str] | None,
    task_key: Callable[..., str],
) -> Any:
    """The task of one file, keyed by its bytes, the pipeline and (with a re-render report) its
    report entry and fresh notebook."""
    from cellar.retrieval.incremental import Task

    if entries is None or not path.lower().endswith(".ipynb"):
        return Task(path, data, task_key(pipeline, data))
    entry = entries.get(path)
    fresh_file = os.fspath(PurePath(rerendered or "", path))
    fresh, problem = _read_fresh(fresh_file) if entry is not None else (None, None)
    fresh_hash = None if fresh is None else hashlib.sha256(fresh).hexdigest()
    key = task_key(pipeline, data, [entry, fresh_hash, problem, fresh_file])
    return Task(path, data, key, True, entry, fresh, problem, fresh_file)


def with_render(
    chunked: Chunked,
    entry: Mapping[str, Any] | None,
    rerendered: str | os.PathLike[str],
    rules: Sequence[Any] = (),
) -> tuple[Chunked, Render, str | None]:
    """``cellar.retrieval.incremental.with_fresh`` for a notebook whose fresh copy is read from
    ``rerendered``, the output folder of ``cellar rerender``."""
    from cellar.retrieval.incremental import with_fresh

    fresh_file = os.fspath(PurePath(rerendered, getattr(chunked.source, "path", "")))
    fresh, problem = _read_fresh(fresh_file) if entry is not None else (None, None)
    return with_fresh(chunked, entry, fresh, problem, fresh_file, rules)


def _read_fresh(fresh_file: str) -> tuple[bytes | None, str | None]:
    """The bytes of a fresh notebook that `cellar rerender` wrote, or why they cannot be read."""
    try:
        with open(fresh_file, "rb") as handle:
            return handle.read(), None
    except OSError as error:
        return None, str(error)

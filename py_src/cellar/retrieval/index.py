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

import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatch
from pathlib import PurePath, PurePosixPath
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from cellar.records import KINDS, STATUSES, ChunkRecord, NotebookEntry
from cellar.retrieval.analysis import Analyzer, AnalyzerSettings
from cellar.retrieval.bm25 import BM25
from cellar.retrieval.embedding import StaticModel, quantise_rows

if TYPE_CHECKING:  # chunking is imported where files are read: the query path does not need it
    from cellar.ingest.chunks import Chunked

NOTEBOOK_META = ("project", "author", "year", "vessel_class", "tags", "deprecated")

# Files below an archive's root that describe or serve the archive rather than belong to it,
# as patterns on the path relative to the root (``/`` separators; ``*`` also crosses folders):
# its top-level read-me and requirements, and the content-addressed input files of re-rendering
# (``blobs/``, which the path map points into). A read-me deeper down is a document like any other.
EXCLUDE = ("README.md", "README.txt", "requirements.txt", "blobs/*")

# progress(done, total, what): called as long work moves on, e.g. to draw a progress bar.
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Render:
    """How a document's outputs stand: its re-render ``status`` (one of STATUSES), the ``reason``
    for drifted or stale, and ``rendered``, the revision of the fresh notebook the re-render wrote
    (None when it was not re-rendered)."""

    status: str = "unchecked"
    reason: str | None = None
    rendered: str | None = None


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
        group = groups[path]
        notebooks.append(_notebook_entry(path, group, start, cell_counts, renders.get(path, Render()), titles))
        start += len(group)
    report = progress or (lambda done, total, what: None)
    analyse = Analyzer(settings).terms
    terms = []
    for number, record in enumerate(rows):
        terms.append(analyse(record["text"]))
        if number % 500 == 0:
            report(number, len(rows), "analysing")
    report(len(rows), len(rows), "analysing")
    bm25 = BM25.build(terms, k1=k1, b=b)
    batch = 1000
    embedded = []
    for first in range(0, len(rows), batch):
        embedded.append(model.encode([record["text"] for record in rows[first : first + batch]]))
        report(min(first + batch, len(rows)), len(rows), "embedding")
    vectors, scales = quantise_rows(np.concatenate(embedded))
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
    return {
        "path": path,
        "revision": revisions.pop(),
        "title": (titles or {}).get(path) or heading or PurePosixPath(path).stem,
        "meta": {key: first_meta[key] for key in NOTEBOOK_META if key in first_meta},
        "status": render.status,
        "reason": render.reason,
        "rendered": render.rendered,
        "start": start,
        "end": start + len(group),
        "cells": (cell_counts or {}).get(path, max(cells) + 1 if cells else 0),
    }


@dataclass(frozen=True)
class DirectoryBuild:
    """What ``build_index_from_directory`` made: the index, how many files were read and
    skipped, and the problems (``path: reason``) of the files that were skipped or read with a caveat."""

    index: Index
    files: int
    skipped: int
    problems: list[str]


def build_index_from_directory(
    corpus_dir: str | os.PathLike[str],
    model: StaticModel | str | os.PathLike[str],
    *,
    rules: Sequence[Any] = (),
    glossary: Mapping[str, str] | None = None,
    exclude: Sequence[str] = EXCLUDE,
    rerendered: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
) -> DirectoryBuild:
    """Chunk every notebook and .md/.txt document below ``corpus_dir`` and index the chunks,
    except the files whose path relative to ``corpus_dir`` matches a pattern of ``exclude``.

    With ``rerendered``, the output folder of ``cellar rerender`` for this corpus, a notebook's
    outputs are its fresh ones when it re-rendered clean or drifted, and its saved ones when it
    is stale (``Render`` says which); its chunks still cite the archive file's revision. Without
    it, every notebook is indexed with its saved outputs, unchecked.

    A file that cannot be read or parsed is reported as ``path: reason`` and skipped.
    ``model`` is a StaticModel or a model directory; ``rules`` come from
    ``cellar.ingest.metadata.parse_rules``.
    """
    from cellar.ingest.chunking import chunk_file
    from cellar.ingest.discovery import find_documents
    from cellar.retrieval.embedding import load_model

    if not os.path.isdir(corpus_dir):
        raise ValueError(f"{corpus_dir}: not a folder")
    report_entries = None
    if rerendered is not None:
        from cellar.rerender.report import read_report

        report_entries = read_report(rerendered)
    model = model if isinstance(model, StaticModel) else load_model(model)
    files = [
        path
        for path in find_documents(corpus_dir)
        if not any(fnmatch(PurePath(os.path.relpath(path, corpus_dir)).as_posix(), pattern) for pattern in exclude)
    ]
    report = progress or (lambda done, total, what: None)
    records: list[ChunkRecord] = []
    cell_counts: dict[str, int] = {}
    titles: dict[str, str] = {}
    renders: dict[str, Render] = {}
    problems: list[str] = []
    skipped = 0
    for number, file_path in enumerate(files, 1):
        report(number - 1, len(files), f"chunking {file_path}")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                chunked = chunk_file(file_path, corpus_dir, rules)
        except ValueError as error:  # NotebookError too: its message names the file
            problems.append(str(error))
            skipped += 1
            continue
        problems += [str(warning.message) for warning in caught]
        source = chunked.source
        if report_entries is not None and not isinstance(source, str):
            assert rerendered is not None  # report_entries was read from it
            chunked, renders[source.path], problem = with_render(
                chunked, report_entries.get(source.path), rerendered, rules
            )
            problems += [problem] if problem else []
        records += [chunk.record() for chunk in chunked.chunks]
        if chunked.chunks and not isinstance(source, str):
            path = chunked.chunks[0].path
            cell_counts[path] = len(source.cells)
            title = source.metadata.get("title")
            if isinstance(title, str) and title.strip():
                titles[path] = title.strip()
    report(len(files), len(files), "chunked")
    settings = AnalyzerSettings(glossary=tuple((glossary or {}).items()))
    index = build_index(
        records, model, settings, cell_counts=cell_counts, renders=renders, titles=titles, progress=progress
    )
    return DirectoryBuild(index, len(files) - skipped, skipped, problems)


def with_render(
    chunked: Chunked,
    entry: Mapping[str, Any] | None,
    rerendered: str | os.PathLike[str],
    rules: Sequence[Any] = (),
) -> tuple[Chunked, Render, str | None]:
    """The chunks to index for a notebook (``chunked``, its saved outputs), given its entry in the
    re-render report: the fresh notebook's chunks, citing the archive file's revision, when it
    re-rendered clean or drifted; the saved ones when it is stale. Anything that keeps the fresh
    outputs from being trusted (no entry, a file changed since, a missing fresh notebook) keeps the
    saved ones, unchecked, with a problem (``path: what``) to report."""
    from cellar.ingest.chunking import chunk_notebook
    from cellar.ingest.notebook import Notebook, NotebookError, read_notebook

    saved = chunked.source
    assert isinstance(saved, Notebook)  # only a notebook is re-rendered
    path = saved.path
    if entry is None:
        return chunked, Render(), f"{path}: not in the re-render report; its saved outputs are indexed unchecked"
    if entry.get("revision") != saved.revision:
        return (
            chunked,
            Render(),
            (
                f"{path}: changed since it was re-rendered (revision {str(entry.get('revision'))[:7]}, "
                f"now {saved.revision[:7]}); its saved outputs are indexed unchecked"
            ),
        )
    fresh_file = PurePath(rerendered, path)
    fresh, unreadable = None, None
    try:
        with open(fresh_file, "rb") as handle:
            fresh = read_notebook(handle.read(), path)
    except (OSError, NotebookError) as error:
        unreadable = error
    if entry["status"] == "stale":
        return chunked, Render("stale", entry.get("reason"), fresh.revision if fresh is not None else None), None
    if fresh is None or len(fresh.cells) != len(saved.cells):
        why = f"cannot be read ({unreadable})" if fresh is None else "has other cells than the archive's"
        return chunked, Render(), f"{path}: its fresh notebook {fresh_file} {why}; saved outputs indexed unchecked"
    render = Render(entry["status"], entry.get("reason"), fresh.revision)
    return chunk_notebook(replace(fresh, revision=saved.revision), rules), render, None

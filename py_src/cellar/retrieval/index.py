"""The index: everything a search needs, in memory, built from chunk records.

Chunks are grouped contiguously per notebook (notebook ``n`` owns rows ``start:end``), so a
notebook's chunks are one slice of every per-chunk array and one container in the shard. Per
chunk: BM25 terms (``cellar.retrieval.analysis``) in a score matrix (``cellar.retrieval.bm25``),
an int8 embedding with one float32 scale per row (``cellar.retrieval.embedding``), and its
notebook, cell, output and kind as small integer arrays that the query path filters and groups
with NumPy alone. The chunk records stay packed in their notebook's container until a search
needs them: a large archive's build holds compact arrays, not millions of dicts.

``build_index`` is pure (records in, an Index out); ``build_index_from_directory`` is the edge
that reads files, reports the bad ones and goes on.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatch
from pathlib import PurePath
from typing import Any, cast

import numpy as np

from cellar.records import STATUSES, ChunkRecord, NotebookEntry
from cellar.retrieval.analysis import Analyzer, AnalyzerSettings
from cellar.retrieval.bm25 import BM25
from cellar.retrieval.embedding import StaticModel
from cellar.retrieval.incremental import (
    Part,
    Render,
    analysed_part,
    part_records,
)
from cellar.retrieval.packing import container_records

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
    rows ``start:end``) and ``containers[n]`` its container (``cellar.retrieval.packing``: the
    chunk records and their vectors, compressed, as the shard stores them)."""

    notebooks: list[NotebookEntry]
    bm25: BM25
    vectors: np.ndarray  # int8 (n_chunks, dims)
    scales: np.ndarray  # float32 (n_chunks,): embedding = vectors * scales[:, None]
    chunk_notebook: np.ndarray  # int32 notebook number per chunk
    chunk_kind: np.ndarray  # uint8 index into KINDS
    analyzer: AnalyzerSettings
    model_id: str
    model_sha256: str
    containers: list[bytes]
    pseudo_questions: np.ndarray  # float32 (n, dims): question-like vectors (``pseudo_questions``)
    documents: dict[str, bytes] = field(default_factory=dict)  # path -> published view (gzip JSON)
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
        """The chunk records of notebook ``n``, unpacked from its container."""
        return container_records(self.containers[n])


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
    report = progress or (lambda done, total, what: None)
    text_analyzer = Analyzer(settings)
    parts = []
    for number, path in enumerate(sorted(groups)):
        part = analysed_part(
            path, "", groups[path], text_analyzer, model, (cell_counts or {}).get(path), (titles or {}).get(path)
        )
        render = (renders or {}).get(path)
        part.render = (render.status, render.reason, render.rendered) if render else None
        parts.append(part)
        report(number + 1, len(groups), "embedding")
    return index_from_parts(parts, model, settings, k1=k1, b=b)


NAMED_PROBLEMS = 5  # of the files that gave nothing, how many an error names


def nothing_to_index(parts: Sequence[Part]) -> str:
    """Why no index can be made of ``parts``, none of which gave a chunk: what went wrong with
    the first few files (an archive whose only notebook has no cells, whose documents are all
    scans), so that the user learns which file to look at, not only that nothing came of it."""
    said = [problem for part in parts for problem in ([part.error] if part.error is not None else part.problems)]
    if not parts:
        return "nothing to index: no chunk records (no notebook or document found)"
    if not said:
        return f"nothing to index: no chunk records in {len(parts)} file(s)"
    more = f"; and {len(said) - NAMED_PROBLEMS} more" if len(said) > NAMED_PROBLEMS else ""
    return f"nothing to index: no chunk records in {len(parts)} file(s): {'; '.join(said[:NAMED_PROBLEMS])}{more}"


def index_from_parts(
    parts: Iterable[Part], model: StaticModel, analyzer: AnalyzerSettings, *, k1: float = 1.2, b: float = 0.75
) -> Index:
    """The Index of prepared parts (``cellar.retrieval.incremental``), in path order: the same,
    byte for byte, however the parts were made (cold, cached, in whatever process), as every
    part's terms and vectors are its own chunks'."""
    parts = list(parts)
    chosen = sorted((part for part in parts if part.error is None and part.n_chunks), key=lambda part: part.path)
    if not chosen:
        raise ValueError(nothing_to_index(parts))
    notebooks: list[NotebookEntry] = []
    containers: list[bytes] = []
    start = 0
    for part in chosen:
        render = Render(*part.render) if part.render else Render()
        if render.status not in STATUSES:
            raise ValueError(f"{part.path}: unknown status {render.status!r}; choose from {list(STATUSES)}")
        for described in part.entries:  # one for a notebook or a document, one per note of a records file
            table = described["notebook"]
            entry: NotebookEntry = {
                "path": part.path,
                "revision": table["revision"],
                "title": table["title"],
                "meta": table["meta"],
                "status": render.status,
                "reason": render.reason,
                "rendered": render.rendered,
                "start": start,
                "end": start + described["chunks"],
                "cells": table["cells"],
            }
            if table.get("entry"):
                entry["entry"] = table["entry"]
            notebooks.append(entry)
            containers.append(described["container"])
            start += described["chunks"]
    return Index(
        notebooks=notebooks,
        bm25=BM25.build([terms for part in chosen for terms in part.terms], k1=k1, b=b),
        pseudo_questions=pseudo_questions(chosen, model),
        vectors=np.concatenate([part.vectors for part in chosen]),
        scales=np.concatenate([part.scales for part in chosen]),
        chunk_notebook=np.repeat(
            np.arange(len(notebooks), dtype=np.int32), [entry["end"] - entry["start"] for entry in notebooks]
        ),
        chunk_kind=np.concatenate([part.kinds for part in chosen]),
        analyzer=analyzer,
        model_id=model.id,
        model_sha256=model.sha256,
        containers=containers,
        documents={part.path: part.document for part in chosen if part.document is not None},
    )


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
    The per-file work runs on ``scheduler`` (``cellar.ingest.scheduler``) with ``workers``
    processes (default: the machine's cores; with a model object rather than a folder, in this
    process). The index is the same whatever the cache, scheduler and workers.
    """
    from cellar.ingest import scheduler as schedulers
    from cellar.ingest.discovery import MAX_FILE_BYTES, find_documents, read_document, relative_path
    from cellar.retrieval.embedding import load_model
    from cellar.retrieval.incremental import Cache, Part, Task, copy_key, pipeline_version, prepare, prepare_batch
    from cellar.retrieval.stamps import Stamps

    if not os.path.isdir(corpus_dir):
        raise ValueError(f"{corpus_dir}: not a folder")
    schedulers.check_scheduler(scheduler)
    report_entries = None
    if rerendered is not None:
        from cellar.rerender.report import read_report

        report_entries = read_report(rerendered)
    model_dir = None if isinstance(model, StaticModel) else os.path.abspath(model)
    model = model if isinstance(model, StaticModel) else load_model(model)
    found = find_documents(corpus_dir)
    names = dict(zip(found, _relative_names(found, corpus_dir, relative_path)))
    files = [path for path in found if not any(fnmatch(names[path], pattern) for pattern in exclude)]
    report = progress or (lambda done, total, what: None)
    settings = AnalyzerSettings(glossary=tuple((glossary or {}).items()))
    pipeline = pipeline_version(model, settings, rules)
    store = Cache(cache) if cache is not None else None
    previous = store.last_build() if store is not None else {}
    stamps = Stamps(cache) if cache is not None else None
    parts: dict[int, Part] = {}  # by file number
    todo: list[tuple[int, Task]] = []
    moves: list[tuple[int, Task, Part]] = []
    reused: list[str] = []
    claimed: dict[str, str] = {}  # a key -> the first path of this build whose bytes it keys

    def own(task: Task) -> Task:
        """``task``, or for a copy of an earlier path's bytes, the task under its own key."""
        first = claimed.setdefault(task.key, task.path)
        return task if first == task.path else replace(task, key=copy_key(task.key, task.path))

    for number, file_path in enumerate(files):
        checked = time.time_ns()  # before the file is stat'ed and read (cellar.retrieval.stamps)
        try:
            path = names[file_path]
            info = _lstat(file_path)
            known = _known_digest(stamps, path, info, MAX_FILE_BYTES)
            if known is not None:  # unchanged since the last build: its part, if cached, needs no read
                assert store is not None
                shared = _task(path, b"", known, pipeline, report_entries, rerendered)
                task = own(shared)
                cached = store.find(task.key, shared.key)
                if cached is not None and cached.path == path:
                    parts[number] = _shared_terms(cached)
                    reused.append(path)
                    continue
            data = read_document(file_path, corpus_dir)
        except ValueError as error:  # FileRefused: names the file and why
            parts[number] = Part(getattr(error, "path", str(file_path)), "", error=str(error))
            continue
        digest = hashlib.sha256(data).hexdigest()
        if stamps is not None and info is not None:
            stamps.note(path, info, digest, checked)
        shared = _task(path, data, digest, pipeline, report_entries, rerendered)
        task = own(shared)
        cached = store.find(task.key, shared.key) if store is not None else None
        if cached is not None and cached.path == path:
            parts[number] = _shared_terms(cached)
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
        if store is not None:  # under its own path now: reused from the next build on, not moved again
            store.put(parts[number])
    done += len(moves)
    report(done, len(files), "notebooks")
    numbers = {task.path: number for number, task in todo}

    def finished(batch: list[Part]) -> None:
        nonlocal done
        for part in batch:
            parts[numbers[part.path]] = _shared_terms(part)
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
        del work
    moved = sorted(task.path for _, task, _ in moves)
    redone = sorted(task.path for _, task in todo)
    del todo, tasks, moves  # the files' bytes: a large archive's would stay in memory to the end
    ordered = [parts[number] for number in sorted(parts)]
    problems: list[str] = []
    for part in ordered:
        problems += [part.error] if part.error is not None else part.problems
    index = index_from_parts(ordered, model, settings)
    current = {part.path: part.key for part in ordered if part.key}
    removed = sorted(set(previous) - set(current))
    if store is not None:
        store.finish(current)
    if stamps is not None:
        stamps.save()
    skipped = sum(part.error is not None for part in ordered)
    return DirectoryBuild(index, len(files) - skipped, skipped, problems, sorted(reused), moved, redone, removed)


# How many, and how many words each. Each costs an exact search at build; fewer are a noisy
# measure: at 41,000 notebooks, 200 drawn again and again asked for 10 to 47 clusters, 500 for 12
# to 31.
PSEUDO_QUESTIONS = 1000
PSEUDO_WORDS = 6
# A question's length at most: a chunk that is one giant word (2 MB of dots, of `&amp;`) drawn
# hundreds of times was embedded whole each time (97 s for one 2 MB file)
PSEUDO_CHARS = 200


def pseudo_questions(parts: Sequence[Part], model: StaticModel, seed: int = 0) -> np.ndarray:
    """Question-like vectors, to choose how many IVF clusters a query must probe (cellar.retrieval.ivf):
    six-word windows of chunks, each of a file drawn at random (the same for the same parts),
    embedded as a question is.

    A file is drawn, then one of its chunks, because a question is asked about a notebook: one
    with 3,000 output chunks is not asked about 100 times as often as one with 30, and windows
    drawn by chunk came mostly from such long, repetitive files, whose copies sit together (at
    41,000 notebooks they asked for 6 clusters, and a second archive's held-out questions had
    .907 there). A chunk's own vector is no stand-in either: in an archive of near-copies its 50
    nearest rows are its copies, in its own cluster, while a question's are spread wide."""
    rng = np.random.default_rng(seed)
    asked = np.flatnonzero([part.n_chunks for part in parts])
    if not len(asked):
        return np.zeros((0, model.dims), dtype=np.float32)
    owners = rng.choice(asked, PSEUDO_QUESTIONS)  # with replacement: a small archive is asked again
    texts = []
    for owner, times in zip(*np.unique(owners, return_counts=True)):
        records = part_records(parts[owner])
        for _ in range(times):
            words = records[int(rng.integers(len(records)))]["text"].split()
            first = int(rng.integers(max(1, len(words) - PSEUDO_WORDS + 1)))
            texts.append(" ".join(words[first : first + PSEUDO_WORDS])[:PSEUDO_CHARS])
    return model.encode(texts)


def _shared_terms(part: Part) -> Part:
    """The part with its terms interned: a term is one string however many chunks hold it (the
    parts of a large archive come from worker processes or the cache, each with its own copies)."""
    part.terms = [list(map(sys.intern, terms)) for terms in part.terms]
    return part


def _relative_names(found: Sequence[str], root: str | os.PathLike[str], relative_path: Callable[..., str]) -> list[str]:
    """The paths of ``found`` (``find_documents(root)``) relative to ``root`` with ``/``
    separators: cut off as strings (at 41,000 files, ``relative_path``'s PurePath per file took
    seconds), and by ``relative_path`` where a path does not start with the root as given."""
    prefix = os.path.join(os.fspath(root), "")
    return [
        path[len(prefix) :].replace(os.sep, "/") if path.startswith(prefix) else relative_path(path, root)
        for path in found
    ]


def _lstat(file_path: str) -> os.stat_result | None:
    try:
        return os.lstat(file_path)
    except OSError:
        return None  # read_document says what is wrong, in its own words


def _known_digest(stamps: Any, path: str, info: os.stat_result | None, limit: int) -> str | None:
    """The SHA-256 of an archive file from the previous build's stamps (``cellar.retrieval.stamps``)
    when it is a regular file within the size limit, with a UTF-8 name, that has not changed
    since; None: read it (``read_document`` checks it and says what is wrong)."""
    if stamps is None or info is None or info.st_size > limit:
        return None
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return cast(str | None, stamps.digest(path, info))


def _task(
    path: str,
    data: bytes,
    digest: str,
    pipeline: str,
    entries: Mapping[str, Any] | None,
    rerendered: str | os.PathLike[str] | None,
) -> Any:
    """The task of one file, keyed by its bytes' SHA-256 (``digest``), the pipeline and (with a
    re-render report) its report entry and fresh notebook."""
    from cellar.retrieval.incremental import Task, digest_key

    if entries is None or not path.lower().endswith(".ipynb"):
        return Task(path, data, digest_key(pipeline, digest))
    entry = entries.get(path)
    fresh_file = os.fspath(PurePath(rerendered or "", path))
    fresh, problem = _read_fresh(fresh_file) if entry is not None else (None, None)
    fresh_hash = None if fresh is None else hashlib.sha256(fresh).hexdigest()
    key = digest_key(pipeline, digest, [entry, fresh_hash, problem, fresh_file])
    return Task(path, data, key, True, entry, fresh, problem, fresh_file)


def _read_fresh(fresh_file: str) -> tuple[bytes | None, str | None]:
    """The bytes of a fresh notebook that `cellar rerender` wrote, or why they cannot be read."""
    try:
        with open(fresh_file, "rb") as handle:
            return handle.read(), None
    except OSError as error:
        return None, str(error)

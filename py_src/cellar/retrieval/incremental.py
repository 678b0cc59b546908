"""Incremental index builds: the per-notebook work (chunk, analyse, embed) and its cache.

In: an archive file's bytes (read and checked in the main process), the pipeline's settings.
Out: a ``Part``: that file's chunk records with their BM25 terms and float32 embeddings, its cell
count, title and problems; ``cellar.retrieval.index`` assembles parts into an Index in path order,
so an index made from cached parts is the same, byte for byte, as one made cold.

The cache is addressed by content: ``key`` is the SHA-256 of the file's bytes, the pipeline's
version (``pipeline_version``: the cellar version, the SHA-256 of the chunking and analysis source
code, the model's SHA-256, the analyser settings with the glossary, the metadata rules) and, for
a notebook indexed with its fresh outputs, its re-render report entry and the fresh notebook's
bytes. An entry is ``<dir>/<key[:2]>/<key>.json`` (records, terms, cell count, title, problems)
plus ``<key>.npy`` (the embeddings). An unchanged notebook is read from it; a moved one (the same
bytes at another path) is chunked again, as its chunk ids and rule metadata depend on its path,
but reuses the terms and embeddings of every chunk whose text is unchanged. ``last-build.json``
lists the previous build's paths, to count what left the archive; entries no build uses any more
are removed after each build.

``prepare_batch`` is what a worker runs (a local process or a Dask worker): it loads the model
once per process and keeps it.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cellar import __version__
from cellar.records import ChunkRecord
from cellar.retrieval.analysis import Analyzer, AnalyzerSettings
from cellar.retrieval.embedding import StaticModel, load_model

if TYPE_CHECKING:  # the query path imports Render from here, not the chunker
    from cellar.ingest.metadata import Rule

CACHE_FORMAT = 2
SEPARATOR = "\x00"  # between the terms of a chunk in a cache entry
LAST_BUILD = "last-build.json"
_PACKAGE = Path(__file__).resolve().parents[1]
# The source files whose code decides what a notebook's chunks, terms and embeddings are.
PIPELINE_SOURCES = (
    "records.py",
    "ingest/*.py",
    "ingest/documents/*.py",
    "rerender/report.py",
    "retrieval/analysis.py",
    "retrieval/embedding.py",
    "retrieval/incremental.py",
)


@dataclass(frozen=True)
class Render:
    """How a document's outputs stand: its re-render ``status`` (one of STATUSES), the ``reason``
    for drifted or stale, and ``rendered``, the revision of the fresh notebook the re-render wrote
    (None when it was not re-rendered)."""

    status: str = "unchecked"
    reason: str | None = None
    rendered: str | None = None


@dataclass(frozen=True)
class Task:
    """One file to prepare: its path relative to the archive, its bytes and cache key; for a
    notebook indexed with fresh outputs, its report entry and the fresh notebook's bytes."""

    path: str
    data: bytes
    key: str
    rendered: bool = False  # a re-render report was given
    entry: Mapping[str, Any] | None = None
    fresh: bytes | None = None
    fresh_problem: str | None = None
    fresh_file: str = ""


@dataclass
class Part:
    """What one file contributes to the index (``error`` set: the file is skipped)."""

    path: str
    key: str
    records: list[ChunkRecord] = field(default_factory=list)
    terms: list[list[str]] = field(default_factory=list)
    embeddings: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    cell_count: int | None = None
    title: str | None = None
    render: tuple[str, str | None, str | None] | None = None  # (status, reason, rendered)
    problems: list[str] = field(default_factory=list)
    error: str | None = None


def pipeline_version(model: StaticModel, settings: AnalyzerSettings, rules: Sequence[Rule]) -> str:
    """The SHA-256 of everything besides a file's bytes that decides its part."""
    digest = hashlib.sha256()
    for pattern in PIPELINE_SOURCES:
        for path in sorted(_PACKAGE.glob(pattern)):
            if path.name != "synth.py":
                digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    described = {
        "cache": CACHE_FORMAT,
        "cellar": __version__,
        "code": digest.hexdigest(),
        "model": [model.id, model.sha256, model.max_tokens],
        "analyzer": settings.to_dict(),
        "rules": [[rule.pattern.pattern, rule.meta] for rule in rules],
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def task_key(pipeline: str, data: bytes, render: Any = None) -> str:
    return hashlib.sha256(
        json.dumps([pipeline, hashlib.sha256(data).hexdigest(), render], sort_keys=True).encode()
    ).hexdigest()


# -- the work -------------------------------------------------------------------------------------

_MODELS: dict[str, StaticModel] = {}


def prepare_batch(
    tasks: Sequence[Task], rules: Sequence[Rule], settings: Mapping[str, Any], model_dir: str
) -> list[Part]:
    """Prepare each task (a worker's entry point); the model is loaded once per process."""
    model = _MODELS.get(model_dir)
    if model is None:
        model = _MODELS[model_dir] = load_model(model_dir)
    analyzer = Analyzer(AnalyzerSettings.from_dict(settings))
    return [prepare(task, rules, analyzer, model) for task in tasks]


def prepare(
    task: Task, rules: Sequence[Rule], analyzer: Analyzer, model: StaticModel, reuse: Part | None = None
) -> Part:
    """Chunk, analyse and embed one file. With ``reuse`` (a cached part of the same bytes at
    another path), chunks whose text it holds take its terms and embedding."""
    part = Part(task.path, task.key)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            chunked = _chunk(task, rules, part)
    except ValueError as error:  # NotebookError too: its message names the file
        part.error = str(error)
        return part
    part.problems = [str(warning.message) for warning in caught] + part.problems
    part.records = [chunk.record() for chunk in chunked.chunks]
    source = chunked.source
    if isinstance(source, str) and chunked.title:
        part.title = chunked.title
    if chunked.chunks and not isinstance(source, str):
        part.cell_count = len(source.cells)
        title = source.metadata.get("title")
        if isinstance(title, str) and title.strip():
            part.title = title.strip()
    known: dict[str, int] = {}
    if reuse is not None:
        known = {record["text"]: number for number, record in enumerate(reuse.records)}
    texts = [record["text"] for record in part.records]
    missing = [record for record in part.records if record["text"] not in known]
    fresh_rows = iter(model.encode([embedded_text(r, analyzer) for r in missing])) if missing else iter(())
    rows, terms = [], []
    for text in texts:
        if text in known:
            assert reuse is not None
            rows.append(reuse.embeddings[known[text]])
            terms.append(reuse.terms[known[text]])
        else:
            rows.append(next(fresh_rows))
            terms.append(analyzer.terms(text))
    part.terms = terms
    part.embeddings = np.array(rows, dtype=np.float32).reshape(len(rows), model.dims)
    return part


def embedded_text(record: Mapping[str, Any], analyzer: Analyzer) -> str:
    """What a chunk is embedded from: its searched text; a service note's, with the glossary's
    expansions of its abbreviations after it. BM25 gets the expansions from the analyser; the
    static model would otherwise see `brg lkg repl` as noise (measured on the demo's gold notes:
    similarity .28-.46 to questions that name them in full, below every notebook answer)."""
    text = record["text"]
    if record.get("meta", {}).get("source") != "records":
        return text
    words = analyzer.glossary_words(text)
    return f"{text}\n{' '.join(words)}" if words else text


def _chunk(task: Task, rules: Sequence[Rule], part: Part) -> Any:
    from cellar.ingest.chunking import chunk_document, chunk_notebook
    from cellar.ingest.notebook import read_notebook

    if not task.path.lower().endswith(".ipynb"):
        return chunk_document(task.data, task.path, rules)
    chunked = chunk_notebook(read_notebook(task.data, task.path), rules)
    if task.rendered:
        chunked, render, problem = with_fresh(
            chunked, task.entry, task.fresh, task.fresh_problem, task.fresh_file, rules
        )
        part.render = (render.status, render.reason, render.rendered)
        part.problems += [problem] if problem else []
    return chunked


def with_fresh(
    chunked: Any,
    entry: Mapping[str, Any] | None,
    fresh_data: bytes | None,
    fresh_problem: str | None,
    fresh_file: str,
    rules: Sequence[Rule] = (),
) -> tuple[Any, Render, str | None]:
    """The chunks to index for a notebook (``chunked``, its saved outputs), given its entry in the
    re-render report and the bytes of its fresh notebook (None: ``fresh_problem`` says why): the
    fresh notebook's chunks, citing the archive file's revision, when it re-rendered clean or
    drifted; the saved ones when it is stale. Anything that keeps the fresh outputs from being
    trusted (no entry, a file changed since, a missing fresh notebook) keeps the saved ones,
    unchecked, with a problem (``path: what``) to report."""
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
    fresh, unreadable = None, fresh_problem
    if fresh_data is not None:
        try:
            fresh = read_notebook(fresh_data, path)
        except NotebookError as error:
            unreadable = str(error)
    if entry["status"] == "stale":
        return chunked, Render("stale", entry.get("reason"), fresh.revision if fresh is not None else None), None
    if fresh is None or len(fresh.cells) != len(saved.cells):
        why = f"cannot be read ({unreadable})" if fresh is None else "has other cells than the archive's"
        return chunked, Render(), f"{path}: its fresh notebook {fresh_file} {why}; saved outputs indexed unchecked"
    render = Render(entry["status"], entry.get("reason"), fresh.revision)
    return chunk_notebook(replace(fresh, revision=saved.revision), rules), render, None


# -- the cache ------------------------------------------------------------------------------------


class Cache:
    """Parts on disk by key (see the module's docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _files(self, key: str) -> tuple[Path, Path]:
        folder = self.directory / key[:2]
        return folder / f"{key}.json", folder / f"{key}.npy"

    def get(self, key: str) -> Part | None:
        meta_file, array_file = self._files(key)
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
            embeddings = np.load(array_file, allow_pickle=False) if meta["error"] is None else None
        except (OSError, ValueError, KeyError):
            return None  # absent or damaged: the work is redone
        if meta.get("key") != key or (embeddings is not None and embeddings.shape[0] != len(meta["records"])):
            return None
        terms = [text.split(SEPARATOR) if text else [] for text in meta["terms"]] if meta["joined"] else meta["terms"]
        part = Part(meta["path"], key, meta["records"], terms, cell_count=meta["cell_count"])
        part.title, part.problems, part.error = meta["title"], meta["problems"], meta["error"]
        part.render = tuple(meta["render"]) if meta["render"] else None
        if embeddings is not None:
            part.embeddings = embeddings.astype(np.float32, copy=False)
        return part

    def put(self, part: Part) -> None:
        meta_file, array_file = self._files(part.key)
        meta_file.parent.mkdir(parents=True, exist_ok=True)
        joined = all(term and SEPARATOR not in term for terms in part.terms for term in terms)
        meta = {
            "key": part.key,
            "path": part.path,
            "records": part.records,
            # One string per chunk rather than a list of terms: decoding millions of small JSON
            # strings was most of the time a fully cached build spent reading the cache.
            "joined": joined,
            "terms": [SEPARATOR.join(terms) for terms in part.terms] if joined else part.terms,
            "cell_count": part.cell_count,
            "title": part.title,
            "render": list(part.render) if part.render else None,
            "problems": part.problems,
            "error": part.error,
        }
        if part.error is None:
            temporary = array_file.with_name(f".{array_file.name}.{os.getpid()}.tmp")
            with open(temporary, "wb") as handle:
                np.save(handle, part.embeddings, allow_pickle=False)
            os.replace(temporary, array_file)
        temporary = meta_file.with_name(f".{meta_file.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
        os.replace(temporary, meta_file)  # written last: an entry is whole or absent

    def last_build(self) -> dict[str, str]:
        try:
            data = json.loads((self.directory / LAST_BUILD).read_text(encoding="utf-8"))
            return dict(data["paths"])
        except (OSError, ValueError, KeyError, TypeError):
            return {}

    def finish(self, paths: Mapping[str, str]) -> int:
        """Record this build's paths and keys, and remove the entries it did not use; the
        number of entries removed."""
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.directory / f".{LAST_BUILD}.{os.getpid()}.tmp"
        temporary.write_text(json.dumps({"paths": dict(sorted(paths.items()))}), encoding="utf-8")
        os.replace(temporary, self.directory / LAST_BUILD)
        keep = set(paths.values())
        removed = 0
        for folder in self.directory.iterdir():
            if not folder.is_dir() or len(folder.name) != 2:
                continue
            for entry in folder.iterdir():
                if entry.name.split(".")[0] not in keep:
                    entry.unlink(missing_ok=True)
                    removed += entry.suffix == ".json"
        return removed

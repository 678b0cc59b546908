"""Incremental index builds: the per-notebook work (chunk, analyse, embed) and its cache.

In: an archive file's bytes (read and checked in the main process), the pipeline's settings.
Out: a ``Part``: that file's chunk records packed in its shard container, their BM25 terms, int8
vectors and kinds, its notebook-table fields and problems; ``cellar.retrieval.index`` assembles parts into an Index in path order,
so an index made from cached parts is the same, byte for byte, as one made cold.

The cache is addressed by content: ``key`` is the SHA-256 of the file's bytes, the pipeline's
version (``pipeline_version``: the cellar version, the SHA-256 of the chunking and analysis source
code, the model's SHA-256, the analyser settings with the glossary, the metadata rules) and, for
a notebook indexed with its fresh outputs, its re-render report entry and the fresh notebook's
bytes. An entry is one file, ``<dir>/<key[:2]>/<key>.bin`` (``cellar.retrieval.packing``'s
format: the part's arrays and its entries' containers as raw bytes, the rest in the header). An
unchanged notebook is read from it; a moved one (the same bytes at another path) is chunked
again, as its chunk ids and rule metadata depend on its path, but reuses the terms and embeddings of every chunk whose text is unchanged. ``last-build.json``
lists the previous build's paths, to count what left the archive; the entries a build did not use
are removed after it, but for the temporary files of a build writing beside it (two archives
indexed at once with one cache only cost each other their entries, never a build).

A folder is a cache when it holds ``CACHE_TAG`` (the Cache Directory Tagging Specification's
``CACHEDIR.TAG``, which backup tools read too), written when cellar makes it. A build removes the
entries it did not use, so a folder that is not a cache is refused, never taken for one
(``--cache ~/notes`` had every file of its two-letter folders removed; ``--cache`` of the archive
removed notebooks). An entry ends with the CRC-32 of its bytes: one that does not match (a bit
flipped on the disk, a copy that did not finish) is redone, never used (a flipped bit in a term
went into every later shard, and one in a container stopped every later build).

``prepare_batch`` is what a worker runs (a local process or a Dask worker): it loads the model
once per process and keeps it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import time
import warnings
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import numpy as np

from cellar import __version__
from cellar.records import KINDS, ChunkRecord
from cellar.retrieval.analysis import Analyzer, AnalyzerSettings
from cellar.retrieval.bilingual import Reading, Translator, english_reading, question_translator
from cellar.retrieval.bm25 import reading as bm25_reading
from cellar.retrieval.embedding import StaticModel, load_model, quantise_rows
from cellar.retrieval.packing import canonical, compress, container, container_records, pack, unpack
from cellar.retrieval.stamps import RECORD as STAMPS
from cellar.text import shortened

if TYPE_CHECKING:  # the query path imports Render from here, not the chunker
    from cellar.ingest.metadata import Rule

CACHE_FORMAT = 7  # 7: an entry ends with its CRC-32
# characters of an entry's title in the table of every entry, fetched at boot (a notebook's
# metadata may name itself in megabytes)
MAX_TITLE = 300
# An entry's catalogue: a notebook's metadata; a document's source kind (document, clauses,
# records: absent for a notebook), a record's structured fields, which the filters read, and a
# standard's designation (``NEN 3140:2018``), which its citations start with.
NOTEBOOK_META = ("project", "author", "year", "vessel_class", "tags", "deprecated", "source", "fields", "designation")
NO_READING = Reading()  # a chunk of a file not read as Dutch
PROSE_KINDS = ("markdown", "text")  # the chunks whose words tell a file's language
SEPARATOR = "\x00"  # between the terms of a chunk in a cache entry
LAST_BUILD = "last-build.json"
SHARD_STATE = "shard-state.bin"  # what a build leaves for the next to reuse (cellar.retrieval.publish)
CACHE_TAG = "CACHEDIR.TAG"
CACHE_TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by cellar (cellar index --cache).\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
# What a cache folder holds: entry folders (a key's first two hex digits), the files above, and
# their temporaries while they are written (``.<name>.<pid>.tmp``).
_CACHE_FILES = (LAST_BUILD, STAMPS, SHARD_STATE, CACHE_TAG)
_ENTRY_FOLDER = re.compile(r"[0-9a-f]{2}")
_ENTRY = re.compile(r"\.?[0-9a-f]{64}\.bin(?:\.\d+\.tmp)?")
_CACHE_FILE = re.compile(r"\.?(?:" + "|".join(re.escape(name) for name in _CACHE_FILES) + r")(?:\.\d+\.tmp)?")
# A cache's temporary entry older than this was left by a build that died; a younger one may be
# another build's, writing beside this one into the same cache (two archives, one --cache).
STALE_TEMPORARY_SECONDS = 3600
_PACKAGE = Path(__file__).resolve().parents[1]
# The source files whose code decides what a notebook's chunks, terms and embeddings are.
PIPELINE_SOURCES = (
    "records.py",
    "ingest/*.py",
    "ingest/documents/*.py",
    "rerender/report.py",
    "retrieval/analysis.py",
    "retrieval/models/en-spelling/british-american.tsv",  # the analyser's spellings
    "retrieval/bilingual.py",  # a Dutch file's English reading, and its tables:
    "retrieval/models/nld-eng/nld-eng.tsv",
    "retrieval/models/nld-eng-technical/technical.tsv",
    "retrieval/embedding.py",
    "retrieval/incremental.py",
    "retrieval/packing.py",  # a container's bytes
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
    """What one file contributes to the index (``error`` set: the file is skipped): per chunk, its
    BM25 terms, int8 vector and scale, and kind code; and its ``entries``, the rows
    it adds to the notebooks table (``make_part``): one for a notebook or a document, one per note
    of a records file (``entry_groups``). An entry is ``{"notebook": its table fields, "container":
    its chunk records and vectors (``cellar.retrieval.packing.container``, compressed bytes),
    "chunks": how many}``, its chunks being consecutive rows of the part: the records themselves
    are only in the containers, so a large archive's records never sit in a build's memory as
    Python objects."""

    path: str
    key: str
    terms: list[list[str]] = field(default_factory=list)
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int8))
    scales: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    kinds: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))  # codes into KINDS
    entries: list[dict[str, Any]] = field(default_factory=list)
    render: tuple[str, str | None, str | None] | None = None  # (status, reason, rendered)
    document: bytes | None = None  # a document's published view, gzip JSON (cellar.ingest.documents.view)
    problems: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def n_chunks(self) -> int:
        return len(self.kinds)


def make_part(
    path: str,
    key: str,
    records: Sequence[ChunkRecord],
    terms: list[list[str]],
    vectors: np.ndarray,
    scales: np.ndarray,
    cell_count: int | None = None,
    title: str | None = None,
) -> Part:
    """The part of one file's chunk records (all of one revision), their terms and int8 vectors
    with scales (``cellar.retrieval.embedding.quantise_rows``). A notebook or a document is one
    entry: its ``cell_count`` defaults to the highest cell + 1, its ``title`` to the first
    heading, then the file name; a records file's notes are an entry each, titled by citation."""
    revisions = {record["revision"] for record in records}
    if len(revisions) != 1:
        raise ValueError(f"{path}: chunk records from {len(revisions)} revisions")
    file_revision = revisions.pop()
    cells = [record["cell"] for record in records if record["cell"] is not None]
    first_meta = records[0].get("meta", {})
    groups = entry_groups(records)
    if len(groups) > 1 or first_meta.get("entry"):  # a records file: each note an entry, titled by its citation
        metas = [group[0].get("meta", {}) for group in groups]
        own = [
            {"title": shortened(str(m.get("citation", m.get("entry"))), MAX_TITLE), "cells": 0, "entry": m.get("entry")}
            for m in metas
        ]
    else:
        heading = next((r["meta"]["headings"][0] for r in records if r.get("meta", {}).get("headings")), None)
        highest = max(cells) + 1 if cells else 0
        own = [
            {
                "title": shortened(title or heading or PurePosixPath(path).stem, MAX_TITLE),
                "cells": cell_count if cell_count is not None else highest,
            }
        ]
    entries, at = [], 0
    for group, fields in zip(groups, own):
        rows = slice(at, at + len(group))
        meta = group[0].get("meta", {})
        fields = {
            "revision": file_revision,
            "meta": {name: meta[name] for name in NOTEBOOK_META if name in meta},
            **fields,
        }
        packed = container(path, file_revision, group, vectors[rows], scales[rows])
        entries.append({"notebook": fields, "container": packed, "chunks": len(group)})
        at += len(group)
    return Part(
        path,
        key,
        terms,
        vectors,
        scales,
        np.array([KINDS.index(record["kind"]) for record in records], dtype=np.uint8),
        entries,
    )


def part_records(part: Part) -> list[ChunkRecord]:
    """A part's chunk records, in row order, unpacked from its entries' containers."""
    return [record for entry in part.entries for record in container_records(entry["container"])]


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


def _entries(described: Sequence[Mapping[str, Any]], arrays: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """A cached part's entries: their table fields and chunk counts, with their containers cut
    back out of the one array they were stored in."""
    blob, at, entries = arrays["entry_containers"].tobytes(), 0, []
    for entry, size in zip(described, arrays["entry_sizes"].tolist()):
        entries.append({"notebook": entry["notebook"], "container": blob[at : at + size], "chunks": entry["chunks"]})
        at += size
    return entries


def _split(arrays: Mapping[str, np.ndarray]) -> list[list[str]]:
    """The terms of each chunk from a cache entry's joined string and per-chunk counts."""
    text = arrays["terms"].tobytes().decode("utf-8")
    flat = text.split(SEPARATOR) if text else []
    terms, start = [], 0
    for count in arrays["term_counts"].tolist():
        terms.append(flat[start : start + count])
        start += count
    return terms


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


def digest_key(pipeline: str, digest: str, render: Any = None) -> str:
    """A file's cache key: the pipeline, the SHA-256 of its bytes (``digest``, known without
    reading the file when its stamp holds: ``cellar.retrieval.stamps``) and its re-render."""
    return hashlib.sha256(json.dumps([pipeline, digest, render], sort_keys=True).encode()).hexdigest()


def copy_key(key: str, path: str) -> str:
    """The key of a file whose bytes (``key``) an earlier path of the archive holds too (a template
    copied into every project): each copy keeps an entry of its own, for chunk ids and rule
    metadata depend on the path (under one key the copies took turns, and every copy but one was
    chunked again on every build)."""
    return hashlib.sha256(f"{key}\x00{path}".encode()).hexdigest()


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
    except ValueError as error:  # NotebookError too
        from cellar.ingest.chunking import naming

        part.error = naming(task.path, error)
        return part
    except Exception as error:  # a damage no reader foresaw (a library's own error): this file's, not the batch's
        part.error = f"{task.path}: could not be read ({type(error).__name__}: {error})"
        return part
    problems = [str(warning.message) for warning in caught] + part.problems
    if not chunked.chunks:  # read, but silently absent from the shard it would be
        return replace(part, problems=[*problems, f"{task.path}: nothing to index: it holds no text"])
    records = [chunk.record() for chunk in chunked.chunks]
    source = chunked.source
    cell_count, title = None, chunked.title if isinstance(source, str) else None
    if not isinstance(source, str):
        cell_count = len(source.cells)
        named = source.metadata.get("title")
        title = named.strip() if isinstance(named, str) and named.strip() else None
    made = analysed_part(task.path, task.key, records, analyzer, model, cell_count, title, reuse)
    view = getattr(chunked, "document", None)
    document = compress(canonical(view)) if view is not None else None
    return replace(made, render=part.render, problems=problems, document=document)


def analysed_part(
    path: str,
    key: str,
    records: Sequence[ChunkRecord],
    analyzer: Analyzer,
    model: StaticModel,
    cell_count: int | None = None,
    title: str | None = None,
    reuse: Part | None = None,
) -> Part:
    """The part of one file's chunk records: their BM25 terms and int8 vectors (``make_part``),
    a Dutch file's with its English reading (``english_readings``). With ``reuse`` (a cached
    part of the same bytes at another path), chunks whose text it holds take its terms and
    embedding. The one path from records to terms and vectors, for a cold build from records
    (``index.build_index``) and for a file prepared for the cache (``prepare``)."""
    known: dict[str, int] = {}
    if reuse is not None:
        known = {record["text"]: number for number, record in enumerate(part_records(reuse))}
    fresh_rows = [row for row, record in enumerate(records) if record["text"] not in known]
    readings = dict(zip(fresh_rows, english_readings(records, analyzer, translator_for(analyzer, model), fresh_rows)))
    missing = [embedded_text(records[row], analyzer, readings[row]) for row in fresh_rows]
    vectors = np.zeros((len(records), model.dims), dtype=np.int8)
    scales = np.zeros(len(records), dtype=np.float32)
    # Quantisation is per row, so rows quantised apart equal rows quantised together.
    vectors[fresh_rows], scales[fresh_rows] = quantise_rows(
        model.encode(missing) if missing else np.zeros((0, model.dims))
    )
    terms = []
    for row, record in enumerate(records):
        if row in readings:
            terms.append(chunk_terms(record["text"], analyzer, readings[row]))
        else:  # a chunk of the reused part's
            assert reuse is not None
            earlier = known[record["text"]]
            vectors[row], scales[row] = reuse.vectors[earlier], reuse.scales[earlier]
            terms.append(reuse.terms[earlier])
    return make_part(path, key, records, terms, vectors, scales, cell_count, title)


def embedded_text(record: Mapping[str, Any], analyzer: Analyzer, reading: Reading = NO_READING) -> str:
    """What a chunk is embedded from: its searched text; a service note's, with the glossary's
    expansions of its abbreviations after it (the static model would otherwise see `brg lkg repl`
    as noise: measured on the demo's gold notes, similarity .28-.46 to questions that name them
    in full, below every notebook answer); a chunk of a Dutch file, by its English reading in
    its place (``english_readings``: the model is English; on the tuning sets, refusal recall
    rose against embedding both). BM25 gets both from ``chunk_terms``."""
    text = reading.every_sense or record["text"]
    words = analyzer.glossary_words(record["text"]) if record.get("meta", {}).get("source") == "records" else []
    return f"{text}\n{' '.join(words)}" if words else text


def chunk_terms(text: str, analyzer: Analyzer, reading: Reading = NO_READING) -> list[str]:
    """A chunk's BM25 terms: its text's (with the glossary's expansions), then the terms of its
    English reading, each once, marked so that BM25 counts them at half weight
    (``bm25.reading``)."""
    return [*analyzer.terms(text), *map(bm25_reading, reading.terms)]


def english_readings(
    records: Sequence[ChunkRecord], analyzer: Analyzer, translator: Translator, rows: Sequence[int] | None = None
) -> list[Reading]:
    """The English reading (``bilingual.english_reading``) of each chunk, or of those at ``rows``
    (the file's language is judged on all of them), when its file's prose is Dutch
    (``Analyzer.prose_language`` over its markdown and text chunks), else none: so that an
    English question meets a Dutch notebook's cells (``short-circuit current`` its
    ``kortsluitstroom``), as a Dutch question meets English cells through its own reading. The
    model is distilled from an English encoder and BM25 matches words, so without it an English
    question over a Dutch notebook found nothing and was refused. The translator leaves a word
    the English vocabulary holds whole as it is, so code and English words add nothing."""
    rows = range(len(records)) if rows is None else rows
    if records and records[0].get("meta", {}).get("source") == "records":
        # Service notes are written one by one, by whoever did the job, in either language: each
        # note is judged on its own words, one Dutch stop word enough in a note of a line
        # (`hpu pomp 2 maakt lawaai; koppeling tussen motor en pomp versleten` among English ones).
        notes = [records[row]["text"] for row in rows]
        return [
            english_reading(note, analyzer, translator)
            if analyzer.prose_language([note], at_least=1) == "dutch"
            else NO_READING
            for note in notes
        ]
    prose = (record["text"] for record in records if record["kind"] in PROSE_KINDS)
    if analyzer.prose_language(prose) != "dutch":
        return [NO_READING] * len(rows)
    return [english_reading(records[row]["text"], analyzer, translator) for row in rows]


_TRANSLATORS: dict[tuple[str, bool], Translator] = {}


def translator_for(analyzer: Analyzer, model: StaticModel) -> Translator:
    """The translator of a model and an analyser's stop words, made once per process."""
    key = (model.sha256, analyzer.settings.stopwords)
    if key not in _TRANSLATORS:
        _TRANSLATORS[key] = question_translator(analyzer, model.tokenizer.vocab)
    return _TRANSLATORS[key]


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
    return chunk_notebook(replace(fresh, revision=saved.revision), rules, fresh=True), render, None


# -- the cache ------------------------------------------------------------------------------------


class Cache:
    """Parts on disk by key (see the module's docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        """The cache in ``directory``, made (and tagged) when it does not exist; a ValueError
        naming it when it is not a folder or is a folder of something else (``foreign``)."""
        self.directory = Path(directory)
        if not self.directory.is_dir():
            if self.directory.exists() or self.directory.is_symlink():
                raise ValueError(f"{directory}: --cache is not a folder")
            self.directory.mkdir(parents=True)
        if not (self.directory / CACHE_TAG).is_file():
            stranger = foreign(self.directory)
            if stranger is not None:
                raise ValueError(
                    f"{directory}: not a cellar cache (it holds {stranger}, and no {CACHE_TAG}): not used, "
                    "nothing in it touched; give --cache a new or empty folder"
                )
            (self.directory / CACHE_TAG).write_text(CACHE_TAG_TEXT, encoding="utf-8")

    def _file(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.bin"

    def get(self, key: str) -> Part | None:
        try:
            meta, arrays = unpack(_opened(self._file(key).read_bytes()))
            if meta["key"] != key:
                return None
            part = Part(meta["path"], key, problems=meta["problems"], error=meta["error"])
            part.render = tuple(meta["render"]) if meta["render"] else None
            if part.error is None:
                part.vectors, part.scales = arrays["vectors"], arrays["scales"]
                part.kinds = arrays["kinds"]
                part.terms = meta["terms"] if meta["terms"] is not None else _split(arrays)
                part.entries = _entries(meta["entries"], arrays)
                part.document = arrays["document"].tobytes() if meta.get("document") else None
                if not len(part.terms) == len(part.vectors) == len(part.scales) == part.n_chunks:
                    return None
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent or damaged: the work is redone
        return part

    def find(self, key: str, shared: str) -> Part | None:
        """The part under ``key``; for a copy's own key (``copy_key``) not written yet, the part
        of its bytes under ``shared``, another path's (reused as a move's)."""
        part = self.get(key)
        return self.get(shared) if part is None and shared != key else part

    def put(self, part: Part) -> None:
        file = self._file(part.key)
        file.parent.mkdir(parents=True, exist_ok=True)
        # Every chunk's terms as one string, when no term holds the separator: decoding millions of
        # small JSON strings was most of the time a fully cached build spent reading the cache.
        joined = all(term and SEPARATOR not in term for terms in part.terms for term in terms)
        arrays: dict[str, np.ndarray] = {}
        if part.error is None:
            arrays = {
                # the entries' containers one after another
                "entry_containers": np.frombuffer(b"".join(e["container"] for e in part.entries), np.uint8),
                "entry_sizes": np.array([len(e["container"]) for e in part.entries], dtype=np.int64),
                "vectors": part.vectors,
                "scales": part.scales,
                "kinds": part.kinds,
                "terms": np.frombuffer(SEPARATOR.join(t for terms in part.terms for t in terms).encode(), np.uint8),
                "term_counts": np.array([len(terms) for terms in part.terms], dtype=np.int32),
            }
            if part.document is not None:
                arrays["document"] = np.frombuffer(part.document, np.uint8)
        meta = {
            "key": part.key,
            "path": part.path,
            "terms": None if joined else part.terms,
            "render": list(part.render) if part.render else None,
            "entries": [{"notebook": e["notebook"], "chunks": e["chunks"]} for e in part.entries],
            "problems": part.problems,
            "error": part.error,
            "document": part.document is not None,
        }
        temporary = file.with_name(f".{file.name}.{os.getpid()}.tmp")
        temporary.write_bytes(_sealed(pack(arrays, meta)))
        os.replace(temporary, file)  # an entry is whole or absent

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
            if folder.name.startswith(".") and _CACHE_FILE.fullmatch(folder.name) and _stale(folder):
                folder.unlink()  # the temporary of stamps.json, last-build.json or the state a killed build left
                continue
            if not folder.is_dir() or folder.is_symlink() or not _ENTRY_FOLDER.fullmatch(folder.name):
                continue  # a link is never followed to remove what it leads to
            for entry in folder.iterdir():
                if not _ENTRY.fullmatch(entry.name):
                    continue  # nothing but entries is ever removed
                if entry.name.startswith(".") and not _stale(entry):
                    continue  # another build, sharing the cache, is writing it
                if entry.name.split(".")[0] not in keep:
                    entry.unlink(missing_ok=True)
                    removed += entry.suffix == ".bin"
        return removed


def foreign(directory: Path) -> str | None:
    """The first thing in ``directory`` that a cache does not hold (a folder holding only what
    cellar writes is one an older cellar made, before caches were tagged), or None."""
    for entry in sorted(directory.iterdir()):
        folder = entry.is_dir() and not entry.is_symlink()
        if folder and _ENTRY_FOLDER.fullmatch(entry.name):
            inside = next((f for f in sorted(entry.iterdir()) if not _ENTRY.fullmatch(f.name) or not f.is_file()), None)
            if inside is None:
                continue
            return f"{entry.name}/{inside.name}"
        if not (_CACHE_FILE.fullmatch(entry.name) and entry.is_file() and not entry.is_symlink()):
            return entry.name + ("/" if folder else "")
    return None


def _sealed(data: bytes) -> bytes:
    """An entry's bytes with their CRC-32 after them (damage, not forgery, is what it finds: anyone
    who may write the cache may write the shard)."""
    return data + struct.pack("<I", zlib.crc32(data))


def _opened(data: bytes) -> bytes:
    """The bytes ``_sealed`` sealed; a ValueError when they do not match their CRC-32."""
    if len(data) < 4 or struct.unpack("<I", data[-4:])[0] != zlib.crc32(data[:-4]):
        raise ValueError("a cache entry damaged or cut short")
    return data[:-4]


def _stale(temporary: Path) -> bool:
    """Whether a temporary entry was left by a build that died (``STALE_TEMPORARY_SECONDS`` old:
    a part is written in milliseconds), rather than being written by one running beside this."""
    try:
        return time.time() - temporary.stat().st_mtime > STALE_TEMPORARY_SECONDS
    except OSError:
        return False  # already renamed into place or removed

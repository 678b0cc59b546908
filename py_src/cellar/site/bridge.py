"""The JSON glue the pages call through the worker (`cellar.call("cellar.site.bridge", name, ...)`).

Every function takes and returns plain JSON data and holds no logic of its own: it shapes what
the library computes (cellar.lessons, cellar.ingest, cellar.retrieval, cellar.rerender) into what
a page shows. Bad input that a learner can type (an empty text, an overlap as large as the
window) comes back as a message, not an exception, so a widget can show it.

Files come from the page: it has the worker fetch them into Python's (in-memory) file system
(`callWith({files})`), so a function here reads a directory such as `/shard`. The embedding
model is the one installed with the cellar wheel (cellar.retrieval.embedding.default_model).

Each function imports what it needs: the search page's first answer waits for every module the
bridge imports, and Pyodide imports from a zip archive several times slower than CPython.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from cellar.retrieval.embedding import default_model

# Output a runaway print loop could pile up before the time limit stops it: keep the start
# and say how much was cut, so the tab never has to draw megabytes of text.
OUTPUT_LIMIT = 100_000


def lesson_page(files: Mapping[str, str], lang: str) -> dict[str, Any]:
    """One language's view of the lesson made of `files` (name -> text, as fetched)."""
    from cellar.lessons import lesson as lessons

    lesson = lessons.lesson_from_files(files)
    if lang not in lesson.pages:
        raise ValueError(f"the lesson has no language {lang!r} (it has {', '.join(lesson.pages)})")
    page = lesson.pages[lang]
    return {
        "id": lesson.id,
        "number": lesson.number,
        "lang": lang,
        "title": page.title,
        "module": page.module,
        "minutes": lesson.minutes,
        "prerequisites": list(lesson.prerequisites),
        "next": lesson.next,
        "prose": page.body,
        "examples": page.examples,
        "checkpoints": [
            {"id": c.id, "title": c.title[lang], "task": c.task[lang], "hint": c.hint[lang]}
            for c in lesson.checkpoints
        ],
        "starter": lesson.starter,
        "solution": lesson.solution,
    }


def run_code(source: str, filename: str | None = None) -> dict[str, Any]:
    """Run learner code as `filename` (default: the lesson's LEARNER_FILE): what it printed, and
    where it stopped if it failed."""
    from cellar.lessons import lesson as lessons

    run = lessons.run_learner_code(source, filename=filename or lessons.LEARNER_FILE)
    return {
        "stdout": _clipped(run.stdout),
        "stderr": _clipped(run.stderr),
        "traceback": run.traceback,
        "error": run.error,
    }


def _clipped(text: str) -> str:
    if len(text) <= OUTPUT_LIMIT:
        return text
    return text[:OUTPUT_LIMIT] + f"\n… ({len(text) - OUTPUT_LIMIT:,} more characters not shown)\n"


def check_code(files: Mapping[str, str], checkpoint_id: str, source: str) -> dict[str, Any]:
    """The verdict of one checkpoint on the learner's source: passed, or the first failure."""
    from cellar.lessons import lesson as lessons

    verdict = lessons.check(lessons.lesson_from_files(files), checkpoint_id, source)
    return {"passed": verdict.passed, "message": verdict.message}


def chunk_explorer(text: str, window: int, overlap: int, document_id: str = "d") -> dict[str, Any]:
    """Word windows of `text` with their character ranges, and the coverage audit of them.

    A text or settings that cellar refuses give {"error": message} instead.
    """
    from cellar.ingest.provenance import snapshot
    from cellar.ingest.windows import audit, word_windows

    try:
        document = snapshot({"id": document_id, "title": document_id, "text": text})
        windows = word_windows(document, window, overlap)
        found = audit(document, windows)
    except ValueError as error:
        return {"error": str(error)}
    return {
        "error": None,
        "revision": document["revision"],
        "passages": [
            {"id": w.id, "word_start": w.word_start, "word_end": w.word_end,
             "start": w.start, "end": w.end, "text": w.text}
            for w in windows
        ],
        "total_words": found.total_words,
        "covered_words": found.covered_words,
        "word_occurrences": found.occurrences,
        "coverage": found.coverage,
        "duplication_factor": found.duplication,
        "missing_word_indices": list(found.missing),
    }


def embedding_lab(passages: Sequence[Mapping[str, str]], query: str, fusion_k: int = 60) -> dict[str, Any]:
    """The lab's view of `passages` ({id, title, text}) and a query, with the packaged model.

    similarity: the cosine matrix of the passages (rows and columns in the passages' order);
    embedding / bm25 / fused: every passage with a score for the query, best first (ties: the
    earlier passage first), fused by reciprocal rank fusion with constant `fusion_k`.
    """
    import numpy as np

    from cellar.retrieval.analysis import Analyzer
    from cellar.retrieval.bm25 import BM25
    from cellar.retrieval.fusion import reciprocal_rank_fusion

    model = default_model()
    ids = [passage["id"] for passage in passages]
    vectors = model.encode([passage["text"] for passage in passages])
    query_vector = model.encode([query])[0]
    analyzer = Analyzer()
    bm25 = BM25.build([analyzer.terms(passage["text"]) for passage in passages])
    cosine = vectors @ query_vector
    bm25_rows, bm25_scores = bm25.top_k(analyzer.query_terms(query), k=len(ids))
    embedding_rows = np.lexsort((np.arange(len(ids)), -cosine))
    fused = reciprocal_rank_fusion((embedding_rows.tolist(), bm25_rows.tolist()), fusion_k)
    return {
        "model": model.id,
        "ids": ids,
        "similarity": np.round(vectors @ vectors.T, 4).tolist(),
        "embedding": [{"id": ids[row], "score": round(float(cosine[row]), 4)} for row in embedding_rows],
        "bm25": [{"id": ids[row], "score": round(float(score), 4)}
                 for row, score in zip(bm25_rows.tolist(), bm25_scores.tolist())],
        "fused": [{"id": ids[row], "score": round(score, 5)} for row, score in fused],
        "query_tokens": len(model.token_ids(query)),
    }


# -- the search page ----------------------------------------------------------------------------

_WORD = re.compile(r"\w+(?:[.\-]\w+)*")


@lru_cache(maxsize=2)
def _opened(shard_dir: str) -> tuple[Any, Any]:
    """The Searcher and Shard of `shard_dir`, opened and checked once per worker (the manifest and
    the boot files against it, the manifest against the model). A file the page has not fetched
    yet is absent from `shard_dir`: asking for it raises NeedFiles (see `search`)."""
    from cellar.retrieval.search import Searcher
    from cellar.retrieval.shard import open_shard

    model = default_model()
    shard = open_shard(shard_dir, model, present=lambda name: os.path.exists(os.path.join(shard_dir, name)))
    return Searcher(shard, model), shard


@lru_cache(maxsize=2)
def _router(shard_dir: str) -> Any:
    """The search's router (``cellar.retrieval.routing``: a question naming a machine id asks its
    notes first), its field values read once from the notebook table."""
    from cellar.retrieval.routing import Router

    return Router(_opened(shard_dir)[0])


def search_open(shard_dir: str) -> dict[str, Any]:
    """Open the shard in `shard_dir` (only its manifest and boot files need be there: `search` asks
    for the rest); its size, model, and chunk kinds with their counts."""
    searcher, shard = _opened(shard_dir)
    return {
        "notebooks": len(shard.notebooks),
        "chunks": shard.n_chunks,
        "kinds": dict(shard.manifest["counts"]["kinds"]),
        "model": searcher.model.id,
    }


def search_filters(shard_dir: str) -> dict[str, Any]:
    """What the page's filters can offer for the shard in `shard_dir` (``catalogue``). A call of its
    own, apart from `search_open`: at 41,000 notebooks it is 4,000 projects, which the page draws
    after the first answer rather than before it."""
    return catalogue(_opened(shard_dir)[1].notebooks)


def catalogue(table: Any) -> dict[str, Any]:
    """What the notebook table (a cellar.retrieval.table.NotebookTable) offers the page's filters,
    from its columns' distinct values: the range of years; the projects, each with its first
    notebook's title to tell them apart; the sources the entries come from (notebook, document,
    clauses, records: in that order); and per structured field of the records but the date
    (which the year filters), the values it takes."""
    from cellar.retrieval.filters import SOURCES

    years = [year for year, _ in table.distinct("meta.year") if isinstance(year, int)]
    projects = {project: table.value("title", n) for project, n in table.distinct("meta.project") if project}
    present = {source or "notebook" for source, _ in table.distinct("meta.source")}
    fields: dict[str, set[str]] = {}
    for values, _ in table.distinct("meta.fields"):
        for key, value in (values or {}).items():
            if key != "date":
                fields.setdefault(key, set()).add(value)
    return {
        "years": [min(years), max(years)] if years else None,
        "projects": sorted(projects.items()),
        "sources": [source for source in SOURCES if source in present],
        "fields": {key: sorted(values) for key, values in sorted(fields.items())},
    }


def search(query: str, options: Mapping[str, Any], shard_dir: str) -> dict[str, Any]:
    """The answer contract for `query`, or `{"fetch": [file names]}`: the shard files (relative to
    `shard_dir`) that the search needs next and the page has not fetched yet; it fetches them into
    `shard_dir` and asks again. The first round names the postings partitions of the query's
    terms and the clusters its vector probes; the second, the containers of the top notebooks.
    So the page downloads what the query needs, never the whole shard.

    options: k (notebooks, default 3), mode (hybrid | bm25 | dense), year_from, year_to,
    project, path_prefix, kinds (list), include_deprecated, sources (list: notebook, document,
    clauses, records), fields ({key: value} of a record's structured fields); an unknown option,
    or one of the wrong type, is a ValueError naming it. Each hit and neighbourhood entry
    gets `marks` ([start, end] character ranges of its text that hold a query term), and a
    table hit the chunk's searched text as `table` (the expression that made it, a Markdown
    table and a summary sentence), which the page draws as a table; a plot hit of a re-rendered
    notebook its figure's description as `figure` (plain text, cellar.rerender.figures), which
    the page shows under the plot's code.
    """
    from cellar.retrieval.filters import OPTIONS, Filters
    from cellar.retrieval.shard import NeedFiles

    if not isinstance(query, str) or not isinstance(options, Mapping):
        raise ValueError("search takes a question (a string) and its options (an object)")
    unknown = sorted(set(options) - {"k", "mode", *OPTIONS})
    if unknown:  # a misspelt filter would otherwise be no filter at all
        raise ValueError(f"unknown search option(s) {unknown}; choose from {['k', 'mode', *OPTIONS]}")
    filters = Filters.of_options(options)
    searcher, shard = _opened(shard_dir)
    try:
        ranking, route = _router(shard_dir).rank(query, options.get("k", 3), filters, options.get("mode", "hybrid"))
        answer = searcher.answer(ranking)
        answer["route"] = route
    except NeedFiles as need:
        return {"fetch": need.names}
    marks = TermMarks(searcher.analyzer, set(answer["terms"]))
    # The notebooks shown (or, for a refusal, the closest one) are those of ranking.needs, in order.
    for n, notebook in zip(ranking.needs, (*answer["notebooks"], *answer.get("closest", ()))):
        records = {record["id"]: record for record in shard.fragment(n)}
        for hit in notebook["hits"]:
            hit["marks"] = marks(hit["quote"])
            record = records[hit["chunk_id"]]
            if hit["kind"] == "table":
                hit["table"] = record["text"]
            figure = record.get("meta", {}).get("figure") if hit["kind"] == "plot" else None
            if isinstance(figure, str):
                hit["figure"] = figure
        for entry in notebook["neighbourhood"]:
            entry["marks"] = marks(entry["text"])
    return answer


def heap_bytes() -> int | None:
    """The size of the worker's WebAssembly memory (Python's heap and everything Pyodide holds in
    it; it grows and never shrinks); None outside Pyodide. What the search benchmark reads."""
    try:
        import pyodide_js
    except ImportError:
        return None
    return int(pyodide_js._module.HEAPU8.length)


class TermMarks:
    """[start, end] ranges of the words in a text whose analysed terms meet `terms` (the query's):
    what the page highlights. Words are analysed one at a time, as the index analysed them, so
    `Tanks` meets the query's `tank` and `tanks_17042c` meets it through its part `tanks`. Each
    distinct word is analysed once per answer: its hits and their neighbourhoods repeat most of
    their words, and analysing every occurrence took about 12 ms of a question in the tab."""

    def __init__(self, analyzer: Any, terms: set[str]) -> None:
        self._analyzer, self._terms = analyzer, terms
        self._meets: dict[str, bool] = {}

    def _meet(self, word: str) -> bool:
        if word not in self._meets:
            self._meets[word] = not self._terms.isdisjoint(self._analyzer.terms(word))
        return self._meets[word]

    def __call__(self, text: str) -> list[list[int]]:
        return [[m.start(), m.end()] for m in _WORD.finditer(text) if self._meet(m.group())]


# -- the viewer ---------------------------------------------------------------------------------

def notebook_view(file: str, path: str) -> dict[str, Any]:
    """The notebook in `file` (its archive `path` names it) as plain JSON for the viewer: read by
    cellar.ingest.notebook, so cells are numbered as the index numbers them (nbformat 3 worksheets
    flattened), with the revision of the file's bytes; terminal colour codes are stripped from
    streams and tracebacks. A file that is not a notebook raises NotebookError naming it."""
    from cellar.ingest.notebook import read_notebook

    notebook = read_notebook(Path(file).read_bytes(), path)
    return {
        "path": notebook.path,
        "revision": notebook.revision,
        "nbformat": ".".join(map(str, notebook.nbformat)),
        "metadata": notebook.metadata,
        "cells": [
            {
                "index": cell.index,
                "cell_type": cell.cell_type,
                "source": cell.source,
                "attachments": cell.attachments,
                "outputs": [_output_view(output) for output in cell.outputs],
            }
            for cell in notebook.cells
        ],
    }


def document_view(path: str, shard_dir: str) -> dict[str, Any]:
    """The published view of the document `path` (``cellar.retrieval.published``: its extracted
    text and blocks with their citations, offsets, pages and a note's fields), or ``{"fetch":
    [name]}``: the shard file that holds it, which the page fetches into `shard_dir` (beside the
    manifest) before it asks again. The manifest and the file are checked; a damaged or replaced
    file raises ShardError naming it."""
    from cellar.retrieval.published import document_file, published_document
    from cellar.retrieval.shard import MANIFEST, checked_manifest

    folder = Path(shard_dir)
    name = document_file(checked_manifest((folder / MANIFEST).read_bytes(), shard_dir), path, shard_dir)
    if not (folder / name).exists():
        return {"fetch": [name]}
    return published_document(lambda file: (folder / file).read_bytes(), path, shard_dir)


def _output_view(output: Any) -> dict[str, Any]:
    """One cellar.ingest.notebook Output as the viewer draws it, terminal colour codes stripped."""
    from cellar.ingest.chunks import ANSI

    return {
        "index": output.index,
        "output_type": output.output_type,
        "data": output.data,
        "text": ANSI.sub("", output.text) if output.text is not None else None,
        "name": output.name,
        "ename": output.ename,
        "evalue": ANSI.sub("", output.evalue) if output.evalue is not None else None,
        "traceback": [ANSI.sub("", line) for line in output.traceback],
        "execution_count": output.execution_count,
    }


# -- re-rendering in the tab --------------------------------------------------------------------
#
# The viewer's Re-render button runs the notebook with the code `cellar rerender` runs in Node
# (cellar.rerender.report.rerender_notebook), with the sandbox itself in place of a Node worker.
# The page fetches the archive's small text files (pathmap.json, requirements.txt, rerender.json:
# each may be absent, then None), asks `rerender_plan` what to load, has the worker load those
# Pyodide packages and fetch the blobs, and calls `rerender_notebook`.


def _tab_environment(requirements: str | None, lock_file: str) -> Any:
    """The archive's environment as this site can provide it: the Pyodide packages its lock lists
    (the site ships exactly those); a requirement beyond them has no build here."""
    import json

    from cellar.rerender import environment

    lock = json.loads(Path(lock_file).read_text(encoding="utf-8"))
    return environment.sort_requirements(
        environment.parse_requirements(requirements or ""), environment.runtime_builds(lock),
        lambda requirement: "no WebAssembly build shipped with this site (it is not among the site's Pyodide packages)")


def _pathmap(text: str | None) -> Any:
    from cellar.rerender import vfs

    return vfs.parse_pathmap(text.encode("utf-8")) if text else vfs.PathMap.empty()


def _settings(text: str | None) -> Any:
    from cellar.rerender.report import Settings

    return Settings.from_json(text or "{}")


def rerender_plan(texts: Mapping[str, str | None], lock_file: str) -> dict[str, Any]:
    """What the worker must provide before `rerender_notebook` (`texts` as there): the Pyodide
    packages to load (the sandbox's own and the archive's requirements), the blob files to fetch
    (paths relative to the archive folder; each is checked against its hash when read), the
    requirements this site cannot provide with the reason, and the time limits."""
    from cellar.rerender import vfs

    env = _tab_environment(texts.get("requirements"), lock_file)
    blob_ids = sorted({blob for _, blob in _pathmap(texts.get("pathmap")).files.values()})
    return {"packages": env.packages, "blobs": [vfs.blob_path(blob) for blob in blob_ids],
            "unavailable": env.unavailable, "limits": _settings(texts.get("settings")).limits()}


@lru_cache(maxsize=1)
def rerender_prepare() -> float:
    """Set up the sandbox once per worker (IPython shell, pandas, matplotlib inline); the seconds
    it took the first time. The page calls it before the timed `rerender_notebook`, so that the
    notebook's time limit does not pay for imports."""
    from cellar.rerender import sandbox

    return sandbox.prepare()


def rerender_notebook(file: str, path: str, archive_dir: str, texts: Mapping[str, str | None],
                      lock_file: str) -> dict[str, Any]:
    """Re-run the notebook in `file` (archive `path`) against the blobs under `archive_dir`, as
    `cellar rerender` does, and compare: the notebook's status (clean | drifted | stale) and reason,
    and per code cell its fresh outputs, a badge (same | drifted | failed | not run) and the
    output diffs. `texts` holds the archive's `pathmap`, `requirements` and `settings`
    (rerender.json) texts or None; `ipynb` is the fresh notebook's text, byte for byte what
    `cellar rerender` writes for it."""
    from cellar.ingest.notebook import read_notebook
    from cellar.rerender import report, sandbox
    from cellar.rerender.batch import load_blobs

    saved = read_notebook(Path(file).read_bytes(), path)
    settings = _settings(texts.get("settings"))
    pathmap = _pathmap(texts.get("pathmap"))

    def run(sources: list[str]) -> dict[str, Any]:
        rerender_prepare()
        return sandbox.run_notebook(sources, pathmap, load_blobs(Path(archive_dir), pathmap),
                                    report.notebook_cwd(path), sandbox.Limits(**settings.limits()))

    fresh, entry = report.rerender_notebook(saved, _tab_environment(texts.get("requirements"), lock_file), settings, run)
    ipynb = report.dump_notebook(fresh)
    return _side_by_side(saved, read_notebook(ipynb, path), entry, ipynb)


def rendered_view(saved_file: str, fresh_text: str, path: str, settings: str | None) -> dict[str, Any]:
    """The same view as `rerender_notebook`, of the fresh notebook that `cellar rerender` wrote
    when the site was built (`fresh_text`, from the site's rendered/ folder) rather than of a run
    in the tab: its status and reason are the build's, its diffs computed again here with the
    archive's sanitisers (`settings`: the rerender.json text or None)."""
    from cellar.ingest.notebook import read_notebook
    from cellar.rerender import compare

    saved = read_notebook(Path(saved_file).read_bytes(), path)
    ipynb = fresh_text.encode("utf-8")
    fresh = read_notebook(ipynb, f"rendered/{path}")
    outcome = fresh.metadata.get("cellar_rerender") or {}
    if "status" not in outcome:
        raise ValueError(f"rendered/{path}: not a notebook written by `cellar rerender` (no metadata.cellar_rerender)")
    comparison = compare.compare_notebooks(saved, fresh, compare.compile_sanitizers(_settings(settings).sanitizers))
    entry = {"status": outcome["status"], "reason": outcome.get("reason"), "seconds": None,
             "cells": comparison.to_dict()["cells"]}
    return _side_by_side(saved, fresh, entry, ipynb)


def _side_by_side(saved: Any, fresh: Any, entry: Mapping[str, Any], ipynb: bytes) -> dict[str, Any]:
    """Per code cell: its fresh outputs, its badge and output diffs (cellar.rerender.report.cell_badges);
    with the notebook's status, reason and fresh text."""
    from cellar.rerender.report import cell_badges

    cells = [{**verdict, "outputs": [_output_view(o) for o in fresh.cells[verdict["index"]].outputs]}
             for verdict in cell_badges(saved, fresh, entry)]
    return {"path": saved.path, "status": entry["status"], "reason": entry["reason"], "seconds": entry["seconds"],
            "cells": cells, "ipynb": ipynb.decode("utf-8")}

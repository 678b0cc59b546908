"""The JSON glue the pages call through the worker (`cellar.call("cellar.web", name, ...)`).

Every function takes and returns plain JSON data and holds no logic of its own: it shapes
what cellar.lessons, cellar.chunking, cellar.embedding, cellar.analysis, cellar.bm25,
cellar.search and cellar.notebook compute into what a page shows. Bad input that a learner can
type (an empty text, an overlap as large as the window) comes back as a message, not an
exception, so a widget can show it.

Files come from the page: it has the worker fetch them into Python's (in-memory) file system
(`callWith({files})`), so a function here reads a directory such as `/shard` or `/models/...`.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from cellar import lessons
from cellar.chunking import audit, word_windows
from cellar.provenance import snapshot

# Output a runaway print loop could pile up before the time limit stops it: keep the start
# and say how much was cut, so the tab never has to draw megabytes of text.
OUTPUT_LIMIT = 100_000


def lesson_page(files: Mapping[str, str], lang: str) -> dict[str, Any]:
    """One language's view of the lesson made of `files` (name -> text, as fetched)."""
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


def run_code(source: str, filename: str = lessons.LEARNER_FILE) -> dict[str, Any]:
    """Run learner code as `filename`: what it printed, and where it stopped if it failed."""
    run = lessons.run_learner_code(source, filename=filename)
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
    verdict = lessons.check(lessons.lesson_from_files(files), checkpoint_id, source)
    return {"passed": verdict.passed, "message": verdict.message}


def chunk_explorer(text: str, window: int, overlap: int, document_id: str = "d") -> dict[str, Any]:
    """Word windows of `text` with their character ranges, and the coverage audit of them.

    A text or settings that cellar refuses give {"error": message} instead.
    """
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


@lru_cache(maxsize=2)
def _model(directory: str) -> Any:
    """The model from the files present in `directory`: the page fetches only those that
    inference reads. Loading checks 8 MB against model.json's hashes: once per worker."""
    from cellar.embedding import StaticModel

    files = {path.name: path.read_bytes() for path in Path(directory).iterdir() if path.is_file()}
    return StaticModel.from_files(files, source=directory)


def embedding_lab(
    passages: Sequence[Mapping[str, str]], query: str, model_dir: str, fusion_k: int = 60
) -> dict[str, Any]:
    """The lab's view of `passages` ({id, title, text}) and a query, with the model in `model_dir`.

    similarity: the cosine matrix of the passages (rows and columns in the passages' order);
    embedding / bm25 / fused: every passage with a score for the query, best first (ties: the
    earlier passage first), fused by reciprocal rank fusion with constant `fusion_k`.
    """
    import numpy as np

    from cellar.analysis import Analyzer
    from cellar.bm25 import BM25

    model = _model(model_dir)
    ids = [passage["id"] for passage in passages]
    vectors = model.encode([passage["text"] for passage in passages])
    query_vector = model.encode([query])[0]
    analyzer = Analyzer()
    bm25 = BM25.build([analyzer.terms(passage["text"]) for passage in passages])
    cosine = vectors @ query_vector
    bm25_rows, bm25_scores = bm25.top_k(analyzer.query_terms(query), k=len(ids))
    embedding_rows = np.lexsort((np.arange(len(ids)), -cosine))
    fused: dict[int, float] = {}
    for ranking in (embedding_rows.tolist(), bm25_rows.tolist()):
        for rank, row in enumerate(ranking, 1):
            fused[row] = fused.get(row, 0.0) + 1.0 / (fusion_k + rank)
    return {
        "model": model.id,
        "ids": ids,
        "similarity": np.round(vectors @ vectors.T, 4).tolist(),
        "embedding": [{"id": ids[row], "score": round(float(cosine[row]), 4)} for row in embedding_rows],
        "bm25": [{"id": ids[row], "score": round(float(score), 4)}
                 for row, score in zip(bm25_rows.tolist(), bm25_scores.tolist())],
        "fused": [{"id": ids[row], "score": round(score, 5)}
                  for row, score in sorted(fused.items(), key=lambda item: -item[1])],
        "query_tokens": len(model.token_ids(query)),
    }


# -- the search page ----------------------------------------------------------------------------

# What a notebook shown in an answer reads before its fragment is in the file system: enough
# for the Searcher to shape a (discarded) answer and so name every fragment it would read.
_STAND_IN = {"id": "", "kind": "text", "cell": None, "output": None, "quote": "", "start": 0, "end": 0, "meta": {}}
_WORD = re.compile(r"\w+(?:[.\-]\w+)*")


class _Absent(Exception):
    """A fragment that the page has not fetched into the file system yet."""


@lru_cache(maxsize=2)
def _opened(shard_dir: str, model_dir: str) -> tuple[Any, Any]:
    """The Searcher and Shard of `shard_dir`, opened and checked once per worker (the shard's
    array files against its manifest, the manifest against the model)."""
    from cellar.search import Searcher
    from cellar.shard import open_shard

    model = _model(model_dir)
    shard = open_shard(shard_dir, model)
    return Searcher(shard.index, model, shard.fragment), shard


def search_open(shard_dir: str, model_dir: str) -> dict[str, Any]:
    """Open the shard in `shard_dir` with the model in `model_dir` (its fragments may be absent:
    `search` asks for them); what the page's filters can offer."""
    import numpy as np

    from cellar.index import KINDS

    searcher, shard = _opened(shard_dir, model_dir)
    kinds, counts = np.unique(searcher.index.chunk_kind, return_counts=True)
    return {
        "notebooks": len(searcher.index.notebooks),
        "chunks": int(searcher.index.n_chunks),
        "kinds": {KINDS[kind]: int(count) for kind, count in zip(kinds.tolist(), counts.tolist())},
        "model": searcher.model.id,
    }


def search(query: str, options: Mapping[str, Any], shard_dir: str, model_dir: str) -> dict[str, Any]:
    """The answer contract for `query`, or `{"fetch": [file names]}`: the fragments (relative to
    `shard_dir`) that the answer needs and the page has not fetched yet; it fetches them into
    `shard_dir` and asks again. So the page downloads the fragments of the notebooks it shows,
    never the whole shard.

    options: k (notebooks, default 3), mode (hybrid | bm25 | dense), year_from, year_to,
    project, path_prefix, kinds (list), include_deprecated. Each hit and neighbourhood entry
    gets `marks` ([start, end] character ranges of its text that hold a query term), and a
    table hit the chunk's searched text as `table` (the expression that made it, a Markdown
    table and a summary sentence), which the page draws as a table.
    """
    from cellar.search import Filters
    from cellar.shard import fragment_name

    searcher, shard = _opened(shard_dir, model_dir)
    filters = Filters(
        year_from=options.get("year_from"),
        year_to=options.get("year_to"),
        project=options.get("project") or None,
        path_prefix=options.get("path_prefix") or None,
        kinds=tuple(options.get("kinds") or ()),
        include_deprecated=bool(options.get("include_deprecated")),
    )
    args = (query, int(options.get("k", 3)), filters, options.get("mode", "hybrid"))

    def present(n: int) -> bool:
        return os.path.exists(os.path.join(shard_dir, fragment_name(n)))

    def fetched_only(n: int) -> list[dict[str, Any]]:
        if not present(n):
            raise _Absent(n)
        return shard.fragment(n)

    try:
        answer = _with_fragments(searcher, fetched_only).search(*args)
    except _Absent:
        # A dry run with stand-ins names every fragment at once: one round trip, not one per notebook.
        absent: list[int] = []

        def stand_in(n: int) -> list[dict[str, Any]]:
            if present(n):
                return shard.fragment(n)
            absent.append(n)
            entry = searcher.index.notebooks[n]
            return [_STAND_IN] * (entry["end"] - entry["start"])

        _with_fragments(searcher, stand_in).search(*args)
        return {"fetch": [fragment_name(n) for n in dict.fromkeys(absent)]}
    numbers = {entry["path"]: n for n, entry in enumerate(searcher.index.notebooks)}
    terms = set(answer["terms"])
    for notebook in (*answer["notebooks"], *answer.get("closest", ())):
        records = {record["id"]: record for record in shard.fragment(numbers[notebook["path"]])}
        for hit in notebook["hits"]:
            hit["marks"] = term_marks(searcher.analyzer, hit["quote"], terms)
            if hit["kind"] == "table":
                hit["table"] = records[hit["chunk_id"]]["text"]
        for entry in notebook["neighbourhood"]:
            entry["marks"] = term_marks(searcher.analyzer, entry["text"], terms)
    return answer


def _with_fragments(searcher: Any, fragment: Any) -> Any:
    """The same Searcher (index, model, calibration) reading fragments through `fragment`."""
    twin = copy.copy(searcher)
    twin.fragment = fragment
    return twin


def term_marks(analyzer: Any, text: str, terms: set[str]) -> list[list[int]]:
    """[start, end] ranges of the words in `text` whose analysed terms meet `terms` (the query's):
    what the page highlights. Words are analysed one at a time, as the index analysed them, so
    `Tanks` meets the query's `tank` and `tanks_17042c` meets it through its part `tanks`."""
    return [[m.start(), m.end()] for m in _WORD.finditer(text) if terms.intersection(analyzer.terms(m.group()))]


# -- the viewer ---------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def notebook_view(file: str, path: str) -> dict[str, Any]:
    """The notebook in `file` (its archive `path` names it) as plain JSON for the viewer: read by
    cellar.notebook, so cells are numbered as the index numbers them (nbformat 3 worksheets
    flattened), with the revision of the file's bytes; terminal colour codes are stripped from
    streams and tracebacks. A file that is not a notebook raises NotebookError naming it."""
    from cellar.notebook import read_notebook

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
                "outputs": [
                    {
                        "index": output.index,
                        "output_type": output.output_type,
                        "data": output.data,
                        "text": _ANSI.sub("", output.text) if output.text is not None else None,
                        "name": output.name,
                        "ename": output.ename,
                        "evalue": _ANSI.sub("", output.evalue) if output.evalue is not None else None,
                        "traceback": [_ANSI.sub("", line) for line in output.traceback],
                        "execution_count": output.execution_count,
                    }
                    for output in cell.outputs
                ],
            }
            for cell in notebook.cells
        ],
    }

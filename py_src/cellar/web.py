"""The JSON glue the pages call through the worker (`cellar.call("cellar.web", name, ...)`).

Every function takes and returns plain JSON data and holds no logic of its own: it shapes
what cellar.lessons, cellar.chunking, cellar.embedding, cellar.analysis and cellar.bm25
compute into what a page shows. Bad input that a learner can type (an empty text, an overlap
as large as the window) comes back as a message, not an exception, so a widget can show it.
"""

from __future__ import annotations

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

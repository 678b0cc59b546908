"""Word windows with exact offsets, and the audit of how windows or chunks cover a text.

In: a text, or a document snapshot (`cellar.ingest.provenance.snapshot`: id, text, revision).
Out: the character spans of its words, `Window`s of a given size and overlap (each one
`text == source[start:end]`), and a `Coverage` of its words by windows or by character spans,
re-checked against the text. Also the window sizes the chunkers use.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cellar.ingest.provenance import revision

PROSE_WINDOW = (150, 30)  # words per window, words of overlap: markdown, text, streams
CODE_WINDOW = (200, 40)

WORD = re.compile(r"\S+")


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


def _window_problem(document: Mapping[str, str], spans: Sequence[tuple[int, int]], chunk: Window) -> str:
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

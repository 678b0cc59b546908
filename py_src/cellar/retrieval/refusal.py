"""Refusal: whether the evidence that the best notebook answers a question (``cellar.retrieval.evidence``)
clears the calibrated thresholds (``evaluation.calibrate``), and the reason a refusal gives. The
rule alone, pure, shared by the search and by the calibration that fits its thresholds; why it
is this rule is in ``cellar.retrieval.search``'s docstring (step 4)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cellar.text import shortened

REASON_QUERY = 200  # characters of the question a refusal's reason quotes
NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")
VALUE_WORDS = {"value", "how", "much", "many", "result", "get", "got", "hoeveel", "hoe", "groot", "welke", "number"}
MEANING_WORDS = {"mean", "means", "meaning", "define", "definition", "betekent", "betekenis", "what's"}


def refuses(evidence: Mapping[str, Any], thresholds: Mapping[str, float]) -> bool:
    """Whether ``evidence`` (``cellar.retrieval.evidence``) falls below any calibrated threshold; the
    similarity only counts when the dense ranker ran, and then a notebook that holds every
    query term the archive knows passes the coverage test, and one whose single chunk holds
    every word of the question passes the similarity test (see the docstring of
    cellar.retrieval.search)."""
    similarity = evidence.get("similarity")
    return (
        (evidence["coverage"] < thresholds["min_coverage"] and not WAIVERS["coverage"](evidence))
        or evidence["numbers"] < thresholds["min_numbers"]
        or evidence.get("known", 1.0) < thresholds.get("min_known", 0.0)
        or evidence.get("quantity", 1.0) < thresholds.get("min_quantity", 0.0)
        or (
            similarity is not None and similarity < thresholds["min_similarity"] and not WAIVERS["similarity"](evidence)
        )
    )


def unknown_words_left_to_meaning(evidence: Mapping[str, Any]) -> bool:
    """Whether the coverage test is waived: the dense ranker ran and the best notebook holds
    every query term the archive knows (and it knows at least one)."""
    return evidence.get("similarity") is not None and evidence.get("known_coverage", 0.0) >= 1.0


def held_in_one_chunk(evidence: Mapping[str, Any]) -> bool:
    """Whether the similarity test is waived: one chunk of the best entry holds every word of the
    question, its asking words aside (``chunk_coverage``)."""
    return evidence.get("chunk_coverage", 0.0) >= 1.0


# The tests a piece of evidence passes whatever its value, and when: ``refuses`` applies them, and
# the calibration reads them to fit the thresholds by the same rule.
WAIVERS: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "coverage": unknown_words_left_to_meaning,
    "similarity": held_in_one_chunk,
}


def refusal_reason(
    query: str,
    evidence: Mapping[str, Any],
    shown: Sequence[Mapping[str, Any]],
    min_similarity: float,
    analyse: Callable[[str], list[str]],
) -> str:
    """What a refusal says: what was looked for, what kind of source is missing (prose for a
    meaning, an output for a value), the question's words the best entry lacks, and the closest
    of the entries ``shown`` (its coverage, and its similarity when below ``min_similarity``)."""
    words = set(re.findall(r"[\w']+", query.lower()))
    source = (
        "no markdown text explains"
        if words & MEANING_WORDS
        else "no table or output mentions"
        if words & VALUE_WORDS or any(NUMBER.match(w) for w in words)
        else "no cell or output mentions"
    )
    # a pasted page of a question is named by its start, and so is a word of a pasted megabyte
    asked, said = shortened(query, REASON_QUERY), said_words(query, evidence["missing"], analyse)[:6]
    if evidence.get("filtered_out"):
        return f"looked for {asked!r}: no notebook or document passes the filters"
    if not evidence["missing"] and not evidence["coverage"]:  # no term to look for, held or not
        return f"looked for {asked!r}: it holds no word to search for, only common words or symbols"
    # with no word missing, what failed is the closeness in meaning (or a document's quantity)
    missing = ", ".join(shortened(word, REASON_QUERY // 4) for word in said) or "it, though each of its words occurs"
    reason = f"looked for {asked!r}: {source} {missing}"
    if shown:
        best = shown[0]
        hit = best["hits"][0] if best["hits"] else None
        place = f", cell {hit['cell']} ({hit['kind']})" if hit and hit["cell"] is not None else ""
        reason += (
            f"; the closest is {best['path']}{place}, which covers {evidence['coverage']:.0%} of the query's weight"
        )
        similarity = evidence["similarity"]
        if similarity is not None and similarity < min_similarity:
            reason += f" but is not close in meaning (similarity {similarity:.2f})"
    return reason


def said_words(query: str, terms: Sequence[str], analyse: Callable[[str], list[str]]) -> list[str]:
    """The question's own words behind the analysed ``terms`` (`salary`, `CEO`; not the stems
    `salari`, `ceo`), in the question's order; a term no single word gives (a translation's)
    is named as it is."""
    wanted = set(terms)
    said: dict[str, None] = {}  # the words, in order, each once
    for word in re.findall(r"[\w'-]+", query):
        found = wanted.intersection(analyse(word))
        if found:
            said[word] = None
            wanted -= found
    return [*said, *(term for term in terms if term in wanted)]

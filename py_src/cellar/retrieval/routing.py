"""Routing: a question sent to one source first, and to all of them when that source refuses.

A small rule, read off the question and the archive's own catalogue (no model):

- ``field``: the question names the value of a record's structured field that the notebooks
  table holds (a machine id ``T2-0457``, a fault code ``E217``: a value with a digit, four
  characters or more, written as a word of the question): the records, filtered by that field;
- ``normative``: the question asks what is required (shall, must, minimum, allowed, safety, a
  standard; Dutch alike): the clause collections;
- otherwise no route: every source at once, as ``Searcher.rank`` does.

A routed search that its source's thresholds refuse falls back: a normative question to every
source, a field question to the other sources (the notes of a machine the question did not name
answer nothing about the one it did; with no other source, the refusal stands). The answer says
what was done (``route``: the rule, the sources searched in order, whether it fell back).

Deprecated notebooks are left out unless the filters ask for them, and are the last fall-back of
every search: when nothing current answers and a superseded notebook does, it answers, and the
route says so (``deprecated``), so the page shows a superseded table as such rather than
refusing a question the archive does answer (`table of block coefficients of the coaster hull
variants`, whose one notebook the firm superseded in 2019).

Every search takes the field rule (``DEFAULT_RULES``: the site, ``cellar search`` and ``cellar
eval``): a question that names a machine asks about that machine's notes, and on the tuning sets
it found one such note and lost nothing. The normative rule is asked for (``--route``: ``RULES``),
as it cost the demo's notebook questions one first place (README, "Documents beside notebooks").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cellar.records import Answer
from cellar.retrieval.filters import SOURCES, Filters
from cellar.retrieval.search import Ranking, Searcher
from cellar.retrieval.table import NotebookTable

NORMATIVE = re.compile(
    r"\b(?:shall|must|required?|requirements?|minimum|maximum|allowed|permitted|may\s+an?|safety|standard|"
    r"moet|moeten|vereist|verplicht|minimaal|maximaal|toegestaan|mag|veiligheid|norm)\b",
    re.IGNORECASE,
)
FIELD_VALUE = re.compile(r"(?=.*\d)[\w-]{4,}")  # a field value worth routing on: a code with a digit
RULES = ("field", "normative")
DEFAULT_RULES = ("field",)


@dataclass(frozen=True)
class Route:
    """Where a question goes first: ``sources`` and record ``fields`` (none: every source)."""

    rule: str  # field | normative | none
    sources: tuple[str, ...] = ()
    fields: tuple[tuple[str, str], ...] = ()


def field_values(fields: Iterable[Mapping[str, Any] | None]) -> dict[str, tuple[str, str]]:
    """The routable values of the records' ``fields`` (each note's structured fields, None for an
    entry that is no note): casefolded value -> (field, value as written)."""
    values: dict[str, tuple[str, str]] = {}
    for named in fields:
        for key, value in (named or {}).items():
            if key != "date" and isinstance(value, str) and FIELD_VALUE.fullmatch(value):
                values.setdefault(value.casefold(), (key, value))
    return values


def route(
    query: str, values: Mapping[str, tuple[str, str]], sources: Sequence[str], rules: Sequence[str] = RULES
) -> Route:
    """The route of ``query`` over an archive whose entries come from ``sources`` and whose
    records hold the field ``values`` (``field_values``), by the ``rules`` asked for."""
    words = {word.casefold() for word in re.findall(r"[\w-]+", query)}
    named = sorted(values[word] for word in words if word in values)
    if "field" in rules and named and "records" in sources:
        return Route("field", ("records",), tuple(named[:1]))
    if "normative" in rules and NORMATIVE.search(query) and "clauses" in sources:
        return Route("normative", ("clauses",))
    return Route("none")


def _catalogue(notebooks: Any, key: str) -> list[Any]:
    """The values of a catalogue entry (``fields``, ``source``) over the searcher's entries: a
    shard's notebook table gives a column's distinct values without reading an entry (at 41,000
    notebooks the tab keeps no object per notebook), an in-memory index entry by entry."""
    if isinstance(notebooks, NotebookTable):
        return [value for value, _ in notebooks.distinct(f"meta.{key}")]
    return [entry.get("meta", {}).get(key) for entry in notebooks]


class Router:
    """Routes the questions of one searcher: its catalogue's field values and sources, read once."""

    def __init__(self, searcher: Searcher, rules: Sequence[str] = DEFAULT_RULES) -> None:
        unknown = sorted(set(rules) - set(RULES))
        if unknown:
            raise ValueError(f"unknown routing rule(s) {unknown}; choose from {list(RULES)}")
        self.searcher = searcher
        self.rules = tuple(rules)
        self.values = field_values(_catalogue(searcher.notebooks, "fields"))
        present = {source or "notebook" for source in _catalogue(searcher.notebooks, "source")}
        self.sources = tuple(source for source in SOURCES if source in present)
        self.has_deprecated = any(_catalogue(searcher.notebooks, "deprecated"))

    def rank(
        self,
        query: str,
        k: int = 3,
        filters: Filters | None = None,
        mode: str = "hybrid",
        refused: Callable[[Ranking], bool] | None = None,
    ) -> tuple[Ranking, dict[str, Any]]:
        """The ranking of the routed search, or of the plain one when the route's source refuses
        (``refused``: the verdict to use, default the searcher's own), or of the deprecated
        notebooks when only one of them answers; and what was done."""
        judge = refused or (lambda ranking: ranking.refused)
        ranking, said, filters = self._routed(query, k, filters or Filters(), mode, judge)
        if judge(ranking) and self.has_deprecated and not filters.include_deprecated:
            superseded = self.searcher.rank(query, k, replace(filters, include_deprecated=True), mode)
            if not judge(superseded) and self.searcher.notebooks[superseded.notebooks[0][0]]["meta"].get("deprecated"):
                return superseded, {**said, "deprecated": True}
        return ranking, said

    def _routed(
        self, query: str, k: int, filters: Filters, mode: str, judge: Callable[[Ranking], bool]
    ) -> tuple[Ranking, dict[str, Any], Filters]:
        """``rank`` but for the deprecated notebooks' fall-back; the filters of the search whose
        ranking it returns."""
        allowed = [source for source in self.sources if not filters.sources or source in filters.sources]
        chosen = route(query, self.values, allowed, self.rules)  # never into a source the filters leave out
        others = [source for source in allowed if source not in chosen.sources]  # all, without a route
        if chosen.rule != "none":
            narrowed = replace(filters, sources=chosen.sources, fields=(*filters.fields, *chosen.fields))
            ranking = self.searcher.rank(query, k, narrowed, mode)
            if not judge(ranking):
                return ranking, _said(chosen, list(chosen.sources), False), narrowed
            if chosen.fields:
                # The notes of another machine answer no question about this one: the fall-back
                # searches the other sources (a report on that machine), or none, and then the
                # routed search's refusal stands.
                if not others:
                    return ranking, _said(chosen, list(chosen.sources), False), narrowed
                filters = replace(filters, sources=tuple(others))
        ranking = self.searcher.rank(query, k, filters, mode)
        return ranking, _said(chosen, [*chosen.sources, *others], chosen.rule != "none"), filters

    def search(self, query: str, k: int = 3, filters: Filters | None = None, mode: str = "hybrid") -> Answer:
        """``Searcher.search`` routed: the answer with ``route`` saying what was searched."""
        ranking, said = self.rank(query, k, filters, mode)
        answer = self.searcher.answer(ranking)
        answer["route"] = said
        return answer


def _said(chosen: Route, searched: list[str], fell_back: bool) -> dict[str, Any]:
    return {
        "rule": chosen.rule,
        "sources": searched,
        "fields": dict(chosen.fields),
        "fell_back": fell_back,
        "deprecated": False,
    }

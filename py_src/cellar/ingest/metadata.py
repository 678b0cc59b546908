"""Document metadata: the project, author, year, vessel class, tags and `deprecated` flag.

In: per-corpus rules (decoded JSON: `[{"pattern": regex, "meta": {...}}]`, read by
`parse_rules`), a document's path and a notebook's own `metadata`. Out: the meta dict that every
chunk of the document carries (`document_meta`); mistyped fields are errors naming the document.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cellar.ingest.notebook import NotebookError
from cellar.text import shortened

# Every chunk of a document carries its meta, and the boot table of the site every notebook's:
# a 15 MB project name had made a 345 MB container, a million tags a 10 MB table.
MAX_META_CHARS = 200  # of a project, author, vessel class or tag
MAX_TAGS = 100
SHOWN_CHARS = 80  # of a bad value, in the error that names it


def _text(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= MAX_META_CHARS


TEXT = f"a string of at most {MAX_META_CHARS} characters"
META_FIELDS = {
    "project": (TEXT, _text),
    "author": (TEXT, _text),
    # a year, not any integer: the index keeps years in a 64-bit column (10**30 stopped a whole build)
    "year": ("a year (1 to 9999)", lambda value: type(value) is int and 1 <= value <= 9999),
    "vessel_class": (TEXT, _text),
    "tags": (
        f"an array of at most {MAX_TAGS} strings of at most {MAX_META_CHARS} characters",
        lambda value: isinstance(value, list) and len(value) <= MAX_TAGS and all(map(_text, value)),
    ),
    "deprecated": ("a boolean", lambda value: isinstance(value, bool)),
}
GROUP_FIELDS = ("project", "author", "year", "vessel_class")  # what a rule's named groups may set


@dataclass(frozen=True)
class Rule:
    """A per-corpus rule: documents whose path matches `pattern` get `meta`, plus the pattern's
    named groups (`(?P<year>\\d{4})` gives `year`)."""

    pattern: re.Pattern[str]
    meta: dict[str, Any]


def parse_rules(raw: Any) -> tuple[Rule, ...]:
    """Rules from decoded JSON: a list of {"pattern": regex, "meta": {...}}; ValueError if bad."""
    if not isinstance(raw, list):
        raise ValueError('rules must be a JSON array of {"pattern", "meta"} objects')
    rules = []
    for number, item in enumerate(raw):
        where = f"rule {number}"
        if not isinstance(item, dict) or not isinstance(item.get("pattern"), str):
            raise ValueError(f'{where}: must be an object with a "pattern" string')
        unknown = set(item) - {"pattern", "meta"}
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        try:
            pattern = re.compile(item["pattern"])
        except re.error as error:
            raise ValueError(f"{where}: bad pattern: {error}") from None
        for group in pattern.groupindex:
            if group not in GROUP_FIELDS:
                allowed = ", ".join(GROUP_FIELDS)
                raise ValueError(f"{where}: group {group!r} is not one of {allowed}")
        rules.append(Rule(pattern, _checked_meta(item.get("meta", {}), where + ".meta")))
    return tuple(rules)


def document_meta(path: str, metadata: Mapping[str, Any], rules: Sequence[Rule] = ()) -> dict[str, Any]:
    """The project, author, year, vessel class, tags and `deprecated` flag of a document.

    Matching rules apply in order, then the notebook's own `metadata.cellar`, which wins; tags
    accumulate. A ValueError names the document and a mistyped field.
    """
    meta: dict[str, Any] = {}
    for rule in rules:
        match = rule.pattern.search(path)
        if match:
            groups = {key: value for key, value in match.groupdict().items() if value is not None}
            if "year" in groups:
                year = groups["year"]
                if not (re.fullmatch(r"[0-9]{1,4}", year) and META_FIELDS["year"][1](int(year))):
                    raise ValueError(f"{path}: the year {year!r} that a rule matched is not a year (1 to 9999)")
                groups["year"] = int(year)
            meta = _merged(meta, {**rule.meta, **groups})
    own = metadata.get("cellar")
    if own is not None:
        try:
            meta = _merged(meta, _checked_meta(own, "metadata.cellar"))
        except ValueError as error:
            raise NotebookError(path, str(error)) from None
    return meta


def _checked_meta(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be an object")
    for key, value in raw.items():
        if key in META_FIELDS and not META_FIELDS[key][1](value):
            shown = shortened(repr(value), SHOWN_CHARS)
            raise ValueError(f"{where}.{key} must be {META_FIELDS[key][0]}, not {shown}")
    return {key: value for key, value in raw.items() if key in META_FIELDS}


def _merged(meta: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    tags = list(dict.fromkeys([*meta.get("tags", []), *more.get("tags", [])]))
    merged = {**meta, **more}
    if tags:
        merged["tags"] = tags
    return merged

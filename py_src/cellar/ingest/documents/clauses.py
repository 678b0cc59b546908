"""Clause collections (a standard cut into articles, sub-articles, items and notes) into blocks.

Given as XML or JSON, with the same tree:

    XML   <clauses designation="NEN 3140:2018" title="...">
            <article number="6" title="Earthing">
              <text>...</text>
              <article number="6.3" title="...">          (sub-articles nest, any depth)
                <item label="b">...</item>               (a sub-item, cited `§6.3 b`)
                <note>...</note>                          (cited `§6.3 note 1`)
    JSON  {"designation": ..., "title": ..., "articles": [{"number", "title", "text",
           "items": [{"label", "text"}], "notes": [str], "articles": [...]}]}

One block per clause, cited by its full path the way it is read aloud: `NEN 3140:2018 §6.3.2`
for an article's text, `NEN 3140:2018 §6.3.2 b` for its item b, `NEN 3140:2018 §6.3.2 note 1`.
XML is parsed with defusedxml, which refuses entity declarations and external references
before anything expands: a billion-laughs bomb or an `<!ENTITY x SYSTEM "file:///...">` is
refused with a clear error naming the file, never expanded into memory or read from disk.

The extracted text is the collection written out, clause after clause (`6.3.2 Title` on a line,
then its text; `b) ...`; `NOTE 1 ...`), one blank line between; offsets point into it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cellar.ingest.discovery import FileRefused
from cellar.ingest.documents.blocks import Block, Extracted, heading_title, joined, refuse_lone_surrogates

MAX_DEPTH = 12  # article nesting: deeper trees are refused, not recursed into
# Elements (XML) or objects (JSON) a collection may hold, counted before it is parsed into a tree
# of many times its size (80 MB of `<z/>` took 1.9 GB; a standard holds some thousands).
MAX_NODES = 1_000_000
# A citation read aloud (`NEN 3140:2018 §6.3.2 b`), repeated in every block's: a designation of
# 50 MB took 8 s and 565 MB on its own, and would multiply with the clauses
MAX_CITATION = 300


@dataclass(frozen=True)
class Clause:
    """An article or sub-article: its number, title, own text, items (label, text), notes and
    sub-articles."""

    number: str
    title: str
    text: str
    items: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]
    children: tuple[Clause, ...]


def clauses_from_xml(data: bytes, path: str) -> Extracted:
    """The blocks of an XML clause collection; FileRefused for an entity bomb, a file that is
    not well-formed, or one that is not a clause collection."""
    import defusedxml
    from defusedxml.ElementTree import ParseError, fromstring

    _refuse_past_nodes(data.count(b"<"), "elements", path)
    try:
        root = fromstring(data, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except defusedxml.DefusedXmlException as error:
        raise FileRefused(
            path, f"XML with entity declarations or external references, refused unexpanded ({error})"
        ) from None
    except ParseError as error:
        raise FileRefused(path, f"not well-formed XML ({error})") from None
    except (ValueError, LookupError) as error:  # an encoding expat cannot read (UTF-7) or does not know
        raise FileRefused(path, f"not readable XML ({error})") from None
    articles = [child for child in root if child.tag == "article"]
    if not articles:
        raise FileRefused(path, f"not a clause collection: no <article> under <{root.tag}>")
    clauses = tuple(_xml_clause(child, path, 1) for child in articles)
    return _extracted(clauses, root.get("designation"), root.get("title"), "xml", path)


def _refuse_past_nodes(count: int, what: str, path: str) -> None:
    """FileRefused when ``count``, an upper bound of a collection's nodes (its `<` or its `{` and
    `[`, some in its text), passes MAX_NODES."""
    if count > MAX_NODES:
        raise FileRefused(path, f"a clause collection of up to {count:,} {what}, over the limit of {MAX_NODES:,}")


def _words(text: str | None) -> str:
    return " ".join((text or "").split())


def _xml_clause(element: Any, path: str, depth: int) -> Clause:
    number = (element.get("number") or "").strip()
    if not number:
        raise FileRefused(path, f"an <article> without a number (title {element.get('title')!r})")
    if depth > MAX_DEPTH:
        raise FileRefused(path, f"articles nested deeper than {MAX_DEPTH} levels at §{number}")
    own = [_words(element.text)] + [
        _words("".join(child.itertext())) for child in element if child.tag in ("text", "p")
    ]
    items = tuple(
        (_words(child.get("label")) or str(n), _words("".join(child.itertext())))
        for n, child in enumerate((c for c in element if c.tag == "item"), 1)
    )
    notes = tuple(_words("".join(child.itertext())) for child in element if child.tag == "note")
    children = tuple(_xml_clause(child, path, depth + 1) for child in element if child.tag == "article")
    return Clause(number, _words(element.get("title")), "\n".join(t for t in own if t), items, notes, children)


def clauses_from_json(data: bytes, path: str) -> Extracted:
    """The blocks of a JSON clause collection; FileRefused for anything else, naming the field
    of the wrong type (`articles[0].notes must be an array`)."""
    _refuse_past_nodes(data.count(b"{") + data.count(b"["), "objects and arrays", path)
    try:
        source = data.decode("utf-8-sig")
        raw = json.loads(source)
    except (UnicodeDecodeError, ValueError) as error:
        raise FileRefused(path, f"not JSON ({error})") from None
    except RecursionError:
        raise FileRefused(path, "JSON nested too deeply for this reader") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("articles"), list) or not raw["articles"]:
        raise FileRefused(path, 'not a clause collection: a JSON object with a non-empty "articles" array is needed')
    refuse_lone_surrogates(raw, source, path)
    clauses = tuple(_json_clause(item, path, f"articles[{n}]", 1) for n, item in enumerate(raw["articles"]))
    designation, title = _string(raw, "designation", path, ""), _string(raw, "title", path, "")
    return _extracted(clauses, designation or None, title or None, "json", path)


# What a JSON clause's field may be. A number is read as written (`"number": 6`, `"label": 2`);
# anything else of the wrong type is refused naming the field, never written out as Python's
# `str()` of it (`['a']`) or iterated (an integer's items).
TEXT_TYPES = (str,)
NAME_TYPES = (str, int, float)


def _string(item: Mapping[str, Any], key: str, path: str, where: str, types: tuple[type, ...] = TEXT_TYPES) -> str:
    """`item[key]` as text: absent or null is empty; a value of another type is refused."""
    value = item.get(key)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, types):
        kind = "a string or a number" if types == NAME_TYPES else "a string"
        raise FileRefused(path, f"{where}{key} must be {kind}, not {_json_type(value)}")
    if isinstance(value, float) and not math.isfinite(value):  # json reads NaN, Infinity, 1e999: no §NaN
        raise FileRefused(path, f"{where}{key} must be a finite number, not {json.dumps(value)}")
    return value if isinstance(value, str) else json.dumps(value)


def _array(item: Mapping[str, Any], key: str, path: str, where: str) -> list[Any]:
    """`item[key]` as a list: absent or null is empty; a value of another type is refused."""
    value = item.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise FileRefused(path, f"{where}{key} must be an array, not {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    names = {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }
    return names.get(type(value), type(value).__name__)


def _json_clause(item: Any, path: str, where: str, depth: int) -> Clause:
    field = f"{where}."
    if not isinstance(item, Mapping) or not (number := _string(item, "number", path, field, NAME_TYPES).strip()):
        raise FileRefused(path, f'{where}: an article must be an object with a "number"')
    if depth > MAX_DEPTH:
        raise FileRefused(path, f"{where}: articles nested deeper than {MAX_DEPTH} levels")
    items = []
    for n, entry in enumerate(_array(item, "items", path, field), 1):
        if isinstance(entry, Mapping):
            place = f"{where}.items[{n - 1}]."
            label = _string(entry, "label", path, place, NAME_TYPES) or str(n)
            items.append((_words(label), _words(_string(entry, "text", path, place))))
        elif isinstance(entry, str):
            items.append((str(n), _words(entry)))
        else:
            raise FileRefused(path, f"{where}.items[{n - 1}] must be an object or a string, not {_json_type(entry)}")
    notes = []
    for n, note in enumerate(_array(item, "notes", path, field)):
        if isinstance(note, Mapping):
            notes.append(_words(_string(note, "text", path, f"{where}.notes[{n}].")))
        elif isinstance(note, str):
            notes.append(_words(note))
        else:
            raise FileRefused(path, f"{where}.notes[{n}] must be a string or an object, not {_json_type(note)}")
    children = tuple(
        _json_clause(child, path, f"{where}.articles[{n}]", depth + 1)
        for n, child in enumerate(_array(item, "articles", path, field))
    )
    return Clause(number, _words(_string(item, "title", path, field)), _words(_string(item, "text", path, field)),
                  tuple(items), tuple(notes), children)  # fmt: skip


def _flatten(clause: Clause, above: tuple[str, ...]) -> Iterator[tuple[str, str, tuple[str, ...], str, str]]:
    """(kind, place, heading path, prefix, body) of every block of a clause, in reading order:
    `place` is what follows the § in the citation."""
    heading = f"{clause.number} {clause.title}".strip()
    path = (*above, heading_title(heading))
    if clause.text or not (clause.items or clause.notes or clause.children):
        prefix = f"{heading}\n" if clause.text else f"{clause.number} "
        yield "clause", clause.number, path, prefix, clause.text or clause.title or clause.number
    for label, text in clause.items:
        yield "list item", f"{clause.number} {label}", path, f"{label}) ", text
    for n, note in enumerate(clause.notes, 1):
        yield "note", f"{clause.number} note {n}", path, f"NOTE {n} ", note
    for child in clause.children:
        yield from _flatten(child, path)


def _extracted(
    clauses: tuple[Clause, ...], designation: str | None, title: str | None, fmt: str, path: str
) -> Extracted:
    name = f"{designation.strip()} " if designation and designation.strip() else ""
    if len(name) > MAX_CITATION:
        raise FileRefused(path, f"a designation of {len(name) - 1:,} characters, over the limit of {MAX_CITATION:,}")
    flat = [piece for clause in clauses for piece in _flatten(clause, ())]
    if long := next((place for _, place, _, _, _ in flat if len(name) + len(place) > MAX_CITATION), None):
        raise FileRefused(
            path, f"a clause cited by {len(name) + len(long) + 1:,} characters, over the limit of {MAX_CITATION:,}"
        )
    text, spans = joined((prefix, body) for _, _, _, prefix, body in flat)
    blocks = tuple(
        Block(kind, start, end, path, f"{name}§{place}")
        for (kind, place, path, _, _), (start, end) in zip(flat, spans)
        if end > start
    )
    return Extracted(text, blocks, "clauses", fmt, title or designation, designation)

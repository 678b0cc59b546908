"""Notebook reader: nbformat 3 and 4.0-4.5 JSON into a small typed, read-only model.

The reader is pure Python (no `nbformat`, which needs `jsonschema` and friends that Pyodide does
not ship) and follows nbformat's own reading rules, which the tests check file by file against the
`nbformat` library:

- multi-line strings may be stored as a string or a list of lines; both read as one string;
- nbformat 3 worksheets are flattened into one list of cells, heading cells become Markdown
  `# Heading` cells, and v3 outputs take their v4 shapes (`pyout` -> `execute_result`, `pyerr` ->
  `error`, `png` / `html` / `latex` / ... keys -> MIME types under `data`);
- a notebook from a newer 4.x minor version is read with a warning: unknown keys are ignored and
  unknown cell or output types are kept as they are, with empty contents;
- anything else (not UTF-8, bad JSON, nbformat 1 or 2, a missing or mistyped field) is a
  `NotebookError` whose message names the file and the problem.

Extra keys are tolerated in every version (real notebooks carry cell ids under nbformat 4.4, for
one); required keys and the types of the fields the model holds are checked.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from dataclasses import dataclass
from typing import Any

from cellar.ingest.discovery import FileRefused, lone_surrogate, read_document, relative_path
from cellar.ingest.provenance import revision

__all__ = [
    "Cell",
    "Notebook",
    "NotebookError",
    "NotebookWarning",
    "Output",
    "load_notebook",
    "read_notebook",
    "relative_path",
]

NEWEST_MINOR = 5  # the newest nbformat 4 minor version whose shapes this reader knows
CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")  # an escaped surrogate: checked for a pair
V3_MIME = {
    "text": "text/plain",
    "html": "text/html",
    "svg": "image/svg+xml",
    "png": "image/png",
    "jpeg": "image/jpeg",
    "latex": "text/latex",
    "json": "application/json",
    "javascript": "application/javascript",
    "pdf": "application/pdf",
}
# The documented metadata keys (all optional) that a validator checks: what each must be.
CELL_METADATA = {
    "name": ("a string", lambda value: isinstance(value, str)),
    "tags": (
        "an array of strings",
        lambda value: isinstance(value, list) and all(isinstance(tag, str) for tag in value),
    ),
    "collapsed": ("a boolean", lambda value: isinstance(value, bool)),
    "scrolled": ('a boolean or "auto"', lambda value: isinstance(value, bool) or value == "auto"),
    "jupyter": ("an object", lambda value: isinstance(value, dict)),
    "execution": ("an object", lambda value: isinstance(value, dict)),
}
NOTEBOOK_METADATA = {
    "kernelspec": ("an object", lambda value: isinstance(value, dict)),
    "language_info": ("an object", lambda value: isinstance(value, dict)),
    "title": ("a string", lambda value: isinstance(value, str)),
    "authors": ("an array", lambda value: isinstance(value, list)),
}
JSON_NAMES = {
    str: "a string", int: "an integer", bool: "a boolean", dict: "an object", list: "an array",
}  # fmt: skip


class NotebookError(ValueError):
    """A file that is not a notebook this reader accepts; the message names the file and problem."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class NotebookWarning(UserWarning):
    """A notebook that was read, but with a caveat (a newer nbformat minor version)."""


@dataclass(frozen=True)
class Output:
    """One output of a code cell, in nbformat 4 shape.

    `data` maps MIME types to their text (JSON-valued types such as widget views as JSON text);
    `text` and `name` are set for streams; `ename`, `evalue` and `traceback` for errors.
    """

    index: int
    output_type: str
    data: dict[str, str]
    text: str | None
    name: str | None
    ename: str | None
    evalue: str | None
    traceback: tuple[str, ...]
    execution_count: int | None
    metadata: dict[str, Any]


@dataclass(frozen=True)
class Cell:
    """One cell: `source` is the joined text; `outputs` is empty except for code cells."""

    index: int
    cell_type: str
    source: str
    outputs: tuple[Output, ...]
    metadata: dict[str, Any]
    attachments: dict[str, dict[str, str]]


@dataclass(frozen=True)
class Notebook:
    """A notebook read from `path` (relative to the corpus root); `revision` pins the file bytes."""

    path: str
    revision: str
    nbformat: tuple[int, int]
    metadata: dict[str, Any]
    cells: tuple[Cell, ...]


class _Invalid(Exception):
    """A problem found at some place inside the JSON; read_notebook adds the file name."""


def read_notebook(data: bytes, path: str) -> Notebook:
    """Parse notebook `data` (the file's bytes); `path` names it in the model and in errors."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotebookError(path, f"not UTF-8 text (byte {error.start}: {error.reason})") from None
    if not text.strip():
        raise NotebookError(path, "the file is empty")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        problem = f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        raise NotebookError(path, problem) from None
    except RecursionError:
        raise NotebookError(path, "invalid JSON: nested too deeply for this reader") from None
    except ValueError as error:  # an integer literal past Python's int_max_str_digits, say
        raise NotebookError(path, f"invalid JSON: {error}") from None
    if LONE_SURROGATE.search(text):
        _check_surrogates(raw, path)
    try:
        major, minor, metadata, cells = _parse(raw, path)
    except _Invalid as error:
        raise NotebookError(path, str(error)) from None
    return Notebook(path, revision(data), (major, minor), metadata, cells)


def load_notebook(file_path: str | os.PathLike[str], root: str | os.PathLike[str]) -> Notebook:
    """Read the notebook file at `file_path`; its model path is `/`-separated, relative to `root`.
    A file that `cellar.ingest.discovery.read_document` refuses (not a regular file, a link out
    of the archive, too large, a name that is not UTF-8) is a NotebookError with its reason."""
    try:
        data = read_document(file_path, root)
    except FileRefused as error:
        raise NotebookError(error.path, error.problem) from None
    return read_notebook(data, relative_path(file_path, root))


def _check_surrogates(raw: Any, path: str) -> None:
    problem = lone_surrogate(raw)
    if problem:
        raise NotebookError(path, problem)


def _parse(raw: Any, path: str) -> tuple[int, int, dict[str, Any], tuple[Cell, ...]]:
    if not isinstance(raw, dict):
        raise _Invalid(f"the top level must be a JSON object, not {_json_type(raw)}")
    major = _get(raw, "nbformat", int, "")
    if major not in (3, 4):
        raise _Invalid(f"nbformat {major} is not supported (only nbformat 3 and 4)")
    minor = _get(raw, "nbformat_minor", int, "")
    metadata = _get(raw, "metadata", dict, "")
    _check_keys(metadata, NOTEBOOK_METADATA, "metadata")
    if major == 3:
        worksheets = _get(raw, "worksheets", list, "")
        raw_cells = []
        for number, sheet in enumerate(worksheets):
            where = f"worksheets[{number}]"
            raw_cells += _get(_object(sheet, where), "cells", list, where)
        cells = tuple(_v3_cell(cell, index) for index, cell in enumerate(raw_cells))
        return major, minor, metadata, cells
    future = minor > NEWEST_MINOR
    if future:
        warnings.warn(
            f"{path}: nbformat 4.{minor} is newer than 4.{NEWEST_MINOR}; read leniently "
            "(unknown keys ignored, unknown cell and output types kept empty)",
            NotebookWarning,
            stacklevel=3,
        )
    raw_cells = _get(raw, "cells", list, "")
    cells = tuple(_v4_cell(cell, index, future) for index, cell in enumerate(raw_cells))
    return major, minor, metadata, cells


def _v4_cell(raw: Any, index: int, future: bool) -> Cell:
    where = f"cells[{index}]"
    cell = _object(raw, where)
    cell_type = _get(cell, "cell_type", str, where)
    metadata = _get(cell, "metadata", dict, where)
    _check_keys(metadata, CELL_METADATA, f"{where}.metadata")
    if "id" in cell:
        cell_id = _get(cell, "id", str, where)
        if not CELL_ID.fullmatch(cell_id):
            raise _Invalid(f"{where}.id {cell_id!r} must match [a-zA-Z0-9_-]{{1,64}}")
    known = cell_type in ("code", "markdown", "raw")
    if not known and not future:
        raise _Invalid(f"{where}: unknown cell_type {cell_type!r}")
    source = _lines(cell, "source", where, "".join) if known or "source" in cell else ""
    outputs: tuple[Output, ...] = ()
    if cell_type == "code":
        _get(cell, "execution_count", (int, type(None)), where)
        raw_outputs = _get(cell, "outputs", list, where)
        outputs = tuple(
            _v4_output(output, number, f"{where}.outputs[{number}]", future)
            for number, output in enumerate(raw_outputs)
        )
    attachments = {}
    if "attachments" in cell:
        raw_attachments = _get(cell, "attachments", dict, where)
        attachments = {name: _bundle(bundle, f"{where}.attachments.{name}") for name, bundle in raw_attachments.items()}
    return Cell(index, cell_type, source, outputs, metadata, attachments)


def _v4_output(raw: Any, index: int, where: str, future: bool) -> Output:
    output = _object(raw, where)
    kind = _get(output, "output_type", str, where)
    if kind in ("execute_result", "display_data"):
        data = _bundle(_get(output, "data", dict, where), f"{where}.data")
        metadata = _get(output, "metadata", dict, where)
        count = None
        if kind == "execute_result":
            count = _get(output, "execution_count", (int, type(None)), where)
        return Output(index, kind, data, None, None, None, None, (), count, metadata)
    if kind == "stream":
        name = _get(output, "name", str, where)
        text = _lines(output, "text", where, "".join)
        return Output(index, kind, {}, text, name, None, None, (), None, {})
    if kind == "error":
        return _error(output, index, where, kind)
    if not future:
        raise _Invalid(f"{where}: unknown output_type {kind!r}")
    return Output(index, kind, {}, None, None, None, None, (), None, {})


def _v3_cell(raw: Any, index: int) -> Cell:
    where = f"cells[{index}]"
    cell = _object(raw, where)
    cell_type = _get(cell, "cell_type", str, where)
    metadata = _get(cell, "metadata", dict, where) if "metadata" in cell else {}
    if cell_type == "code":
        source = _lines(cell, "input", where, _v3_join)
        _get(cell, "language", str, where)
        if "prompt_number" in cell:
            _get(cell, "prompt_number", (int, type(None)), where)
        if "collapsed" in cell:  # nbformat moves it into the metadata when upgrading to v4
            metadata = {**metadata, "collapsed": _get(cell, "collapsed", bool, where)}
        raw_outputs = _get(cell, "outputs", list, where)
        outputs = tuple(
            _v3_output(output, number, f"{where}.outputs[{number}]") for number, output in enumerate(raw_outputs)
        )
        return Cell(index, "code", source, outputs, metadata, {})
    source = _lines(cell, "source", where, _v3_join)
    if cell_type == "heading":
        level = _get(cell, "level", int, where)
        if level < 1:
            raise _Invalid(f"{where}.level must be 1 or more, not {level}")
        # The form nbformat's v3 -> v4 upgrade writes: one line after the hashes; past Markdown's
        # six levels as six (nbformat writes `level` hashes, which for 10**12 is a terabyte).
        heading = "#" * min(level, 6) + " " + " ".join(source.splitlines())
        return Cell(index, "markdown", heading, (), metadata, {})
    if cell_type in ("markdown", "html"):
        return Cell(index, "markdown", source, (), metadata, {})
    if cell_type == "raw":
        return Cell(index, "raw", source, (), metadata, {})
    raise _Invalid(f"{where}: unknown cell_type {cell_type!r}")


def _v3_output(raw: Any, index: int, where: str) -> Output:
    output = _object(raw, where)
    kind = _get(output, "output_type", str, where)
    if kind in ("pyout", "display_data"):
        count = _get(output, "prompt_number", int, where) if kind == "pyout" else None
        metadata = _get(output, "metadata", dict, where) if "metadata" in output else {}
        data = {}
        for key in output:
            if key not in ("output_type", "prompt_number", "metadata"):
                value = _lines(output, key, where, _v3_join)
                data[V3_MIME.get(key, key)] = value
        new_kind = "execute_result" if kind == "pyout" else "display_data"
        return Output(index, new_kind, data, None, None, None, None, (), count, metadata)
    if kind == "stream":
        name = _get(output, "stream", str, where)
        text = _lines(output, "text", where, _v3_join)
        return Output(index, "stream", {}, text, name, None, None, (), None, {})
    if kind == "pyerr":
        return _error(output, index, where, "error")
    raise _Invalid(f"{where}: unknown output_type {kind!r}")


def _error(output: dict[str, Any], index: int, where: str, kind: str) -> Output:
    ename = _get(output, "ename", str, where)
    evalue = _get(output, "evalue", str, where)
    traceback = _get(output, "traceback", list, where)
    for number, line in enumerate(traceback):
        if not isinstance(line, str):
            raise _Invalid(f"{where}.traceback[{number}] must be a string, not {_json_type(line)}")
    return Output(index, kind, {}, None, None, ename, evalue, tuple(traceback), None, {})


def _bundle(raw: Any, where: str) -> dict[str, str]:
    """A MIME bundle: text types joined into one string, JSON types (`*+json`) as JSON text."""
    bundle = _object(raw, where)
    result = {}
    for mime, value in bundle.items():
        if mime == "application/json" or (mime.startswith("application/") and mime.endswith("+json")):
            result[mime] = value if isinstance(value, str) else json.dumps(value)
        else:
            result[mime] = _lines(bundle, mime, where, "".join)
    return result


def _v3_join(lines: list[str]) -> str:
    """Join v3 lines as nbformat does: lines written by splitlines() lost their line ends."""
    if lines and lines[0].endswith(("\n", "\r")):
        return "".join(lines)
    return "\n".join(lines)


def _lines(raw: dict[str, Any], key: str, where: str, join: Any) -> str:
    """A multi-line string field: a string, or a list of strings joined with `join`."""
    value = _get(raw, key, (str, list), where)
    if isinstance(value, str):
        return value
    for number, line in enumerate(value):
        if not isinstance(line, str):
            raise _Invalid(f"{where}.{key}[{number}] must be a string, not {_json_type(line)}")
    return join(value)


def _get(raw: dict[str, Any], key: str, types: type | tuple[type, ...], where: str) -> Any:
    """The required field `key` of `raw`, checked against the JSON type(s) `types`."""
    place = f"{where}.{key}" if where else key
    if key not in raw:
        raise _Invalid(f"{where + ': ' if where else ''}missing field {key!r}")
    value = raw[key]
    types = types if isinstance(types, tuple) else (types,)
    if not _is_a(value, types):
        expected = " or ".join("null" if kind is type(None) else JSON_NAMES[kind] for kind in types)
        raise _Invalid(f"{place} must be {expected}, not {_json_type(value)}")
    return value


def _check_keys(metadata: dict[str, Any], schema: dict[str, tuple[str, Any]], where: str) -> None:
    """Check the documented metadata keys that are present; other keys pass as they are."""
    for key, (expected, valid) in schema.items():
        if key in metadata and not valid(metadata[key]):
            raise _Invalid(f"{where}.{key} must be {expected}, not {_json_type(metadata[key])}")


def _object(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _Invalid(f"{where} must be an object, not {_json_type(raw)}")
    return raw


def _is_a(value: Any, types: tuple[type, ...]) -> bool:
    # JSON true/false are Python bools, which are also ints: keep them apart.
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a number"
    return JSON_NAMES.get(type(value), type(value).__name__)

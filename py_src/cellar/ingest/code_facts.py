"""Code facts: what a code cell's source tells, read with `ast`.

In: a cell's source, IPython magics and shell lines included. Out: `CodeFacts`: the names it
defines (with their offsets), the modules it imports, its last expression and the titles, axis
labels and legend labels of its plotting calls (with the span of the lines that give them). A
cell that does not parse even with its magics blanked (`python_source`) gets a line-based guess.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from keyword import iskeyword

LINE_BREAK = re.compile(r"\r\n|\r|\n")
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "memit", "mprun"}
LABEL_CALLS = {
    "title": "title", "set_title": "title", "suptitle": "title",
    "xlabel": "x", "set_xlabel": "x", "ylabel": "y", "set_ylabel": "y",
    "zlabel": "z", "set_zlabel": "z",
}  # fmt: skip
LABEL_KEYWORDS = {"title": "title", "xlabel": "x", "ylabel": "y", "zlabel": "z", "label": "legend"}
LABEL_NAMES = {"title": "title", "x": "x axis", "y": "y axis", "z": "z axis", "legend": "legend"}


@dataclass(frozen=True)
class CodeFacts:
    """What a code cell's source tells: names it defines (with their offsets), modules it imports,
    its last expression (what an execute_result shows), and plot labels in its calls."""

    defines: tuple[tuple[int, str], ...]
    imports: tuple[tuple[int, str], ...]
    last_expression: str | None
    labels: dict[str, list[str]]
    label_span: tuple[int, int] | None  # the lines that hold the labels


def python_source(source: str) -> str:
    """`source` with IPython syntax blanked out, every offset kept: `%magic`, `%%cell magic`,
    `!shell`, `x = !shell` and `obj?` help lines become the expression `0` padded with spaces, and
    the body of a non-Python cell magic (`%%bash`, `%%html`, ...) becomes blank."""
    lines = LINE.findall(source)
    first = next((number for number, line in enumerate(lines) if line.strip()), 0)
    if lines and lines[first].lstrip().startswith("%%"):
        name = (lines[first].strip()[2:].split() or [""])[0]
        upto = first + 1 if name in PYTHON_CELL_MAGICS else len(lines)
        lines = [_blank(line) for line in lines[:upto]] + lines[upto:]
    result = []
    for line in lines:
        body = line.rstrip("\r\n")
        indent = len(body) - len(body.lstrip())
        rest = body[indent:]
        assigned = re.match(r"([\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*)[%!]", rest)
        if assigned:
            indent += assigned.end() - 1
            rest = body[indent:]
        if rest.startswith(("%", "!", "?")) or (rest.endswith("?") and not rest.startswith("#")):
            line = body[:indent] + "0".ljust(len(rest)) + line[len(body) :]
        result.append(line)
    return "".join(result)


def _blank(line: str) -> str:
    body = line.rstrip("\r\n")
    return " " * len(body) + line[len(body) :]


def code_facts(source: str, labels: bool = True) -> CodeFacts:
    """Parse `source` (IPython magics blanked if needed) and collect its `CodeFacts` (plot labels
    only if `labels`: they cost a walk over the whole tree). A cell that still does not parse
    (Python 2, say) falls back to a line-based guess at its definitions."""
    tree, python = _parse(source)
    if tree is None:
        return _guessed_facts(source)
    starts = _line_starts(source)
    defines: list[tuple[int, str]] = []
    imports: list[tuple[int, str]] = []
    _collect(tree.body, source, starts, defines, imports)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = _segment(source, python, starts, tree.body[-1])
    found, lines = _plot_labels(tree) if labels else ({}, [])
    span = (starts[min(lines) - 1], _line_end(source, starts, max(lines))) if lines else None
    return CodeFacts(tuple(defines), tuple(imports), last, found, span)


def _parse(source: str) -> tuple[ast.Module | None, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # old notebooks' invalid escapes warn on every parse
        for python in (source, python_source(source)):
            try:
                return ast.parse(python), python
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue  # RecursionError, MemoryError: nested too deeply for the parser
    return None, source


def _line_starts(source: str) -> list[int]:
    """Offsets where Python's lines 1..n start (index 0 is line 1), then the end of the text.
    Lines end at \\n, \\r\\n or \\r, as for the tokenizer (not at the other breaks of
    `str.splitlines`)."""
    return [0] + [match.end() for match in LINE_BREAK.finditer(source)] + [len(source)]


def _line_end(source: str, starts: list[int], line: int) -> int:
    """Offset of the end of 1-based `line`, before its line break."""
    return starts[line - 1] + len(source[starts[line - 1] : starts[line]].rstrip("\r\n"))


def _statement_at(source: str, starts: list[int], node: ast.stmt) -> int:
    """Offset of the first character of the statement's line after its indentation."""
    line = source[starts[node.lineno - 1] : starts[node.lineno]]
    return starts[node.lineno - 1] + len(line) - len(line.lstrip())


def _collect(body: list[ast.stmt], source: str, starts: list[int], defines: list, imports: list) -> None:
    """Names bound at the cell's top level (including inside if/for/with/try blocks)."""
    for node in body:
        at = _statement_at(source, starts, node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defines.append((at, f"{node.name}()"))
            continue
        if isinstance(node, ast.ClassDef):
            defines.append((at, f"class {node.name}"))
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                imports.append((at, alias.name))
                defines.append((at, alias.asname or alias.name.split(".")[0]))
        elif isinstance(node, ast.ImportFrom):
            imports.append((at, "." * node.level + (node.module or "")))
            defines += [(at, alias.asname or alias.name) for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                defines += [(at, name) for name in _target_names(target)]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            defines += [(at, name) for name in _target_names(node.target)]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    defines += [(at, name) for name in _target_names(item.optional_vars)]
        for block in ("body", "orelse", "finalbody"):
            _collect(getattr(node, block, []), source, starts, defines, imports)
        for handler in getattr(node, "handlers", []):
            _collect(handler.body, source, starts, defines, imports)


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return [f"{target.value.id}.{target.attr}"]
    return []


def _segment(source: str, python: str, starts: list[int], node: ast.stmt) -> str | None:
    """Source text of `node`; for a blanked magic line, the original line. (What
    ast.get_source_segment gives, from the line starts known already: it splits the source
    character by character, quadratic on one long line: a cell of 2,000,000 characters on one
    line took minutes.) The blanked text keeps the source's lines and lengths, so `starts` serve
    both; the columns count UTF-8 bytes."""
    if node.end_lineno is None or node.end_col_offset is None:
        return None
    first = python[starts[node.lineno - 1] : starts[node.lineno]].encode()
    if node.lineno == node.end_lineno:
        segment = first[node.col_offset : node.end_col_offset].decode()
    else:
        last = python[starts[node.end_lineno - 1] : starts[node.end_lineno]].encode()
        middle = python[starts[node.lineno] : starts[node.end_lineno - 1]]
        segment = first[node.col_offset :].decode() + middle + last[: node.end_col_offset].decode()
    if python is not source:
        lines = LINE.findall(source)[node.lineno - 1 : node.end_lineno]
        if lines != LINE.findall(python)[node.lineno - 1 : node.end_lineno]:
            segment = "".join(lines)
    return " ".join(segment.split())


def _plot_labels(tree: ast.Module) -> tuple[dict[str, list[str]], list[int]]:
    """Titles, axis labels and legend labels given to plotting calls, with their line numbers."""
    labels: dict[str, dict[str, None]] = {}  # each role's labels, once each, in order (a dict: a
    lines = []  # list's `in` made 100,000 distinct titles take quadratic time)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
        found = []
        if name in LABEL_CALLS and node.args:
            found += [(LABEL_CALLS[name], text) for text in _strings(node.args[0])]
        if name == "legend" and node.args:
            found += [("legend", text) for text in _strings(node.args[0])]
        for keyword in node.keywords:
            if keyword.arg in LABEL_KEYWORDS:
                found += [(LABEL_KEYWORDS[keyword.arg], text) for text in _strings(keyword.value)]
            elif keyword.arg == "labels" and name == "legend":
                found += [("legend", text) for text in _strings(keyword.value)]
        for role, text in found:
            labels.setdefault(role, {})[text] = None
        if found:
            lines += [node.lineno, node.end_lineno or node.lineno]
    return {role: list(texts) for role, texts in labels.items()}, lines


def _strings(node: ast.expr) -> list[str]:
    """The literal text of a string, f-string (its constant parts) or list/tuple of strings."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value.strip()] if node.value.strip() else []
    if isinstance(node, ast.JoinedStr):
        parts = [
            value.value for value in node.values if isinstance(value, ast.Constant) and isinstance(value.value, str)
        ]
        text = " ".join(" ".join(parts).split())
        return [text] if text else []
    if isinstance(node, (ast.List, ast.Tuple)):
        return [text for element in node.elts for text in _strings(element)]
    return []


GUESS_DEFINE = re.compile(
    r"^(?:(def|class)[ \t]+(\w+)|([A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*)[ \t]*=(?!=))", re.M
)
GUESS_IMPORT = re.compile(r"^(?:import[ \t]+([\w.]+)|from[ \t]+([\w.]+)[ \t]+import)", re.M)


def _guessed_facts(source: str) -> CodeFacts:
    """Definitions of an unparseable cell from its unindented lines: defs, classes, assignments."""
    defines = []
    for match in GUESS_DEFINE.finditer(source):
        if match[1]:
            label = f"class {match[2]}" if match[1] == "class" else f"{match[2]}()"
            defines.append((match.start(), label))
        else:
            defines += [(match.start(), name.strip()) for name in match[3].split(",")]
    imports = [(match.start(), match[1] or match[2]) for match in GUESS_IMPORT.finditer(source)]
    lines = [line for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    last = lines[-1].strip() if lines and not lines[-1][0].isspace() else None
    if last and (GUESS_DEFINE.match(last) or iskeyword(last.split()[0]) or last.startswith("print ")):
        last = None  # a statement, not an expression
    return CodeFacts(tuple(defines), tuple(imports), last, {}, None)

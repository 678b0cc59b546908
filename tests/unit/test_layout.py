"""The package's layout: one subpackage per flow, dependencies pointing one way.

Every module's imports of cellar modules (top-level and inside functions, read with `ast`) must
point at its own layer or a lower one, and no two modules may import each other round a cycle.
The layers, lowest first:

    cellar.records                 the contracts, shared by all
    cellar.terminal                text as a terminal may print it, shared by all
    cellar.text                    text cut to a length, shared by all
    cellar.ingest                  archive files -> notebooks -> typed chunks
    cellar.rerender                path map + sandbox -> fresh outputs -> compare -> report
    cellar.retrieval               chunks (+ a re-render report) -> index -> shard -> answers
    cellar.lessons                 lesson files -> learner runs and checks
    cellar.site                    the pages' bridge and the local server
    cellar.cli                     the console script
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "py_src" / "cellar"
LAYERS = ["records", "terminal", "text", "ingest", "rerender", "retrieval", "lessons", "site", "cli"]
MAX_LINES = 700


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str, path: Path) -> set[str]:
    """The cellar modules `path` imports, wherever in the file the import stands."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("cellar")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            if base.startswith("cellar"):
                # `from cellar.rerender import vfs` imports the module cellar.rerender.vfs
                found |= {
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules() else base for alias in node.names
                }
    return found


def layer(name: str) -> int:
    """The layer of a module; `cellar` itself (its version) sits below all, `python -m cellar`
    (cellar.__main__) with the console script."""
    parts = name.split(".")
    if len(parts) == 1:
        return -1
    return LAYERS.index("cli" if parts[1] == "__main__" else parts[1])


def test_every_subpackage_is_a_known_layer_with_a_docstring():
    for name, path in modules().items():
        if name not in ("cellar", "cellar.__main__"):
            assert name.split(".")[1] in LAYERS, f"{name}: not in a known layer ({LAYERS})"
        if path.name == "__init__.py":
            assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), f"{path}: no docstring"


@pytest.mark.parametrize("name", sorted(modules()))
def test_imports_point_down_the_layers(name):
    path = modules()[name]
    upward = sorted(other for other in imported(name, path) if layer(other) > layer(name))
    assert not upward, f"{name} imports from a higher layer: {upward}"


def test_no_import_cycles():
    graph = {name: imported(name, path) & set(modules()) - {name} for name, path in modules().items()}
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for other in sorted(graph[name]):
            if state.get(other) == "open":
                cycle = trail[trail.index(other) :] + [other] if other in trail else [name, other]
                pytest.fail(f"import cycle: {' -> '.join(cycle)}")
            if other not in state:
                visit(other, [*trail, other])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_the_checker_sees_an_upward_import(tmp_path):
    """The graph walk above must be able to fail: an ingest module importing retrieval is caught."""
    bad = PACKAGE / "ingest" / "notebook.py"
    source = bad.read_text(encoding="utf-8") + "\nfrom cellar.retrieval import search\n"
    copy = tmp_path / "notebook.py"
    copy.write_text(source, encoding="utf-8")
    found = imported("cellar.ingest.notebook", copy)
    assert "cellar.retrieval.search" in found
    assert layer("cellar.retrieval.search") > layer("cellar.ingest.notebook")


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_module_grows_past_the_limit(name):
    lines = len(modules()[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{name}: {lines} lines; split it by concern (the README's developer section)"

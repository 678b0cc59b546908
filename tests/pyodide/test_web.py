"""cellar.site.bridge in Pyodide: the chunk explorer and the runner give what CPython gives."""

import json

from cellar.site import bridge

CASES = [("  A  B\nC D E F G H  ", 4, 1), ("one two three four five six seven", 4, 1), ("   ", 4, 1), ("a b", 2, 2)]
SOURCE = "print('a')\nimport sys\nprint('b', file=sys.stderr)\n1 / 0\n"


def test_chunk_explorer_and_run_code_equal_cpython(pyodide):
    code = f"""
import json
from cellar.site import bridge
[[bridge.chunk_explorer(*case) for case in json.loads({json.dumps(json.dumps(CASES))})],
 bridge.run_code({SOURCE!r})]
"""
    expected = [[bridge.chunk_explorer(*case) for case in CASES], bridge.run_code(SOURCE)]
    assert pyodide.run(code) == json.loads(json.dumps(expected))


def test_the_site_wheels_modules_are_imported_from_their_bytecode(pyodide):
    """The site ships its wheels with bytecode compiled by this Pyodide (cellar.site.bytecode), so
    a page imports cellar and snowballstemmer without compiling a source."""
    code = """
import importlib.util, sys
import cellar.site.bridge, cellar.retrieval.search, snowballstemmer
import cellar.rerender.batch  # the tab's re-render imports it (load_blobs): no process pool at import
modules = [
    m for name, m in sys.modules.items()
    if name.split(".")[0] in ("cellar", "snowballstemmer") and getattr(m, "__spec__", None) and m.__spec__.has_location
]  # (a module another test made up in this interpreter has no file)
def from_bytecode(module):
    cached = module.__spec__.cached
    with open(cached, "rb") as pyc:
        header = pyc.read(16)
    source = open(module.__file__, "rb").read()
    return header[:4] == importlib.util.MAGIC_NUMBER and header[8:16] == importlib.util.source_hash(source)
[len(modules), [m.__name__ for m in modules if not from_bytecode(m)]]
"""
    count, compiled_here = pyodide.run(code)
    assert count > 20 and compiled_here == []


def test_the_worker_reports_its_webassembly_memory_and_cpython_has_none(pyodide):
    heap = pyodide.run("from cellar.site import bridge; bridge.heap_bytes()")
    assert heap >= 16 << 20 and heap % 65536 == 0  # WebAssembly pages of 64 KiB
    assert bridge.heap_bytes() is None

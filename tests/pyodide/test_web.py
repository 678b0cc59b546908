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

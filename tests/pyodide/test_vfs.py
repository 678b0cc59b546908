"""cellar.rerender.vfs in Pyodide resolves, refuses and checks blobs exactly as in CPython.

One probe (Python source) runs in both: it resolves a table of real and hostile spellings, lists
folders, computes working directories and reads blobs from a local store (Emscripten's file
system in Pyodide), tampered ones included. Its results must be equal.
"""

from __future__ import annotations

import hashlib
import json

DATA = {"tanks": b"tank,volume_m3\nforepeak,412.1\n", "wells": b"well,depth_m\nA-1,2310\n"}
BLOB = {name: "sha256:" + hashlib.sha256(data).hexdigest() for name, data in DATA.items()}
PATHMAP = {
    "format": 1,
    "files": {
        r"\\srv-calc-01\projects\2017\17-042\inputs\tanks_17042c.csv": BLOB["tanks"],
        r"C:\PGE383\data\wells.csv": BLOB["wells"],
    },
    "trees": {r"\\srv-calc-01\hull": {"2019/README.txt": BLOB["tanks"]}},
}
PROJECT = r"\\srv-calc-01\projects\2017\17-042"
CASES = [
    (r"\\SRV-CALC-01\Projects\2017\17-042\INPUTS\tanks_17042c.csv", None),
    ("//srv-calc-01/projects/2017/17-042/inputs/tanks_17042c.csv", None),
    (r"\\?\UNC\srv-calc-01\projects\2017\17-042\inputs\tanks_17042c.csv", None),
    (r"inputs\..\inputs\.\tanks_17042c.csv", PROJECT),
    (r"data\wells.csv", "C:\\PGE383"),
    (r"\\srv-calc-01\HULL\2019\readme.TXT", None),
    (r"inputs\tanks_17042d.csv", PROJECT),
    (r"..\..\..\..\etc\passwd", PROJECT),
    (r"\\?\C:\..\Windows\win.ini", None),
    (r"\\srv-calc-02\projects\x.csv", None),
    ("/etc/passwd", None),
    ("C:\\PGE383\\data\\wells.csv\x00", None),
    ("con.txt", "C:\\PGE383\\data"),
    (r"C:\PGE383\data\wells.csv:stream", None),
    ("C:\\" + "a\\" * 16_000, None),
    ("~bob/.ssh/id_rsa", None),
    (r"C:\PGE383\data", None),
]

PROBE = r"""
import errno, json
from cellar.rerender import blob_store, vfs

def outcome(call):
    try:
        return ["ok", call()]
    except OSError as error:  # errno numbers differ under Emscripten (EACCES is 2 there): compare names
        return [type(error).__name__, errno.errorcode[error.errno], error.strerror, error.filename]
    except vfs.VfsError as error:
        return [type(error).__name__, str(error)]

def probe(pathmap, cases, data, root):
    pm = vfs.PathMap.from_dict(pathmap)
    results = [outcome(lambda: pm.resolve(path, cwd)) for path, cwd in cases]
    results.append([pm.listdir(r"\\srv-calc-01\projects"), pm.listdir("C:\\"), pm.exists("/etc/passwd")])
    results.append([vfs.chdir(r"\\srv-calc-01\projects", "C:\\PGE383"), vfs.chdir("C:\\PGE383", "..\\x")])
    store = blob_store.BlobStore(root)
    blobs = [store.write(text.encode()) for text in data]
    reads = [blob_store.read_bytes(pm, store, path).decode() for path in (r"c:\pge383\DATA\WELLS.CSV",)]
    with open(store.location(blobs[0]), "wb") as handle:
        handle.write(b"tampered")
    tampered = outcome(lambda: store.read(blobs[0]))
    results.append([blobs, reads, store.ids(), tampered[0], blobs[0] in tampered[1]])
    results.append(outcome(lambda: vfs.verify_blob(blobs[1], b"other bytes")))
    return results
"""


def _call(*values: object) -> str:
    """Source that calls the probe with `values`, each passed through JSON."""
    return f"probe({', '.join(f'json.loads({json.dumps(json.dumps(value))})' for value in values)})"


def test_vfs_in_pyodide_equals_cpython(pyodide, tmp_path) -> None:
    data = [text.decode() for text in DATA.values()]
    namespace: dict = {}
    exec(PROBE, namespace)
    expected = json.loads(json.dumps(namespace["probe"](PATHMAP, CASES, data, str(tmp_path))))
    assert [row[0] for row in expected[: len(CASES)]].count("ok") == 6  # the table is not all refusals
    assert expected[-2][3] == "BlobCorrupt" and expected[-2][4]
    assert pyodide.run(PROBE + "\n" + _call(PATHMAP, CASES, data, "/tmp/cellar-vfs-probe")) == expected

"""The site's pure-Python wheels with their bytecode, compiled by the site's own Python (Pyodide).

Pyodide installs a wheel as it is, so without bytecode every module a page imports is compiled
from source first, in WebAssembly, before the page can answer: at the search page's boot that was
about 0.3 s (snowballstemmer's thirty stemmers 0.2 s, cellar's modules 0.13 s; from bytecode 0.02
and 0.08 s, measured in Pyodide under Node). So the site build (``build.py site``) runs
``with_bytecode`` inside the site's Pyodide, whose magic number and cache tag the bytecode must
carry, and ships the wheels it returns.

The bytecode is checked-hash (PEP 552): an import compares it with the hash of the source beside
it, not with a time stamp, so it serves whenever the wheel was unpacked, and never a source other
than the one it was compiled from.

    python -m cellar.site.bytecode RUNTIME OUT_FOLDER WHEEL...      (what build.py runs)
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import io
import py_compile
import sys
import tempfile
import zipfile
from pathlib import Path

EPOCH = (1980, 1, 1, 0, 0, 0)  # the added entries' zip time: the same wheel always gives the same bytes


def with_bytecode(wheel: bytes, name: str = "wheel") -> bytes:
    """The wheel (its bytes; ``name`` for errors) with the bytecode of each of its ``.py`` files
    beside it (``__pycache__/<module>.<cache tag>.pyc``, this interpreter's) and listed in its
    RECORD. A source that does not compile is a ValueError naming it."""
    source = zipfile.ZipFile(io.BytesIO(wheel))
    records = [entry for entry in source.namelist() if entry.endswith(".dist-info/RECORD")]
    if len(records) != 1:
        raise ValueError(f"{name}: not a wheel (it has {len(records)} RECORD files)")
    added: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory() as folder:
        for entry in source.namelist():
            if not entry.endswith(".py"):
                continue
            path, cached = Path(folder, entry), Path(folder, importlib.util.cache_from_source(entry))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(source.read(entry))
            try:
                py_compile.compile(
                    str(path), str(cached), dfile=entry, doraise=True,
                    invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
                )
            except py_compile.PyCompileError as error:
                raise ValueError(f"{name}: {entry} does not compile ({error.msg.strip()})") from None
            added[cached.relative_to(folder).as_posix()] = cached.read_bytes()
    record = records[0]
    rows = [row for row in source.read(record).decode("utf-8").splitlines() if row and not row.startswith(f"{record},")]
    rows += [f"{entry},sha256={_digest(data)},{len(data)}" for entry, data in sorted(added.items())]
    rows.append(f"{record},,")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            if info.filename != record:
                target.writestr(info, source.read(info))
        for entry, data in sorted(added.items()):
            target.writestr(zipfile.ZipInfo(entry, EPOCH), data, zipfile.ZIP_DEFLATED)
        target.writestr(source.getinfo(record), "\n".join(rows) + "\n", zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _digest(data: bytes) -> str:
    """A RECORD hash: urlsafe base64 of the SHA-256, without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def main(argv: list[str] | None = None) -> int:
    """Compile the wheels in the Pyodide runtime given, into the output folder (same names)."""
    from cellar.rerender.pyodide_host import PyodideHost

    parser = argparse.ArgumentParser(prog="python -m cellar.site.bytecode", description=main.__doc__)
    parser.add_argument("runtime", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("wheels", type=Path, nargs="+")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    files = {"/cellar_bytecode.py": Path(__file__), **{f"/in/{n}.whl": wheel for n, wheel in enumerate(args.wheels)}}
    with PyodideHost(args.runtime, packages=(), files=files) as host:
        for n, wheel in enumerate(args.wheels):
            host.run(
                "import sys; sys.path.insert(0, '/'); from pathlib import Path; from cellar_bytecode import with_bytecode\n"
                f"Path('/out.whl').write_bytes(with_bytecode(Path('/in/{n}.whl').read_bytes(), {wheel.name!r}))"
            )
            (args.out / wheel.name).write_bytes(host.read_file("/out.whl"))
            print(f"bytecode: {wheel.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The site's pure-Python wheels and Pyodide's standard library with their bytecode, compiled by
the site's own Python (Pyodide).

Pyodide installs a wheel as it is, so without bytecode every module a page imports is compiled
from source first, in WebAssembly, before the page can answer: at the search page's boot that was
about 0.3 s (snowballstemmer's thirty stemmers 0.2 s, cellar's modules 0.13 s; from bytecode 0.02
and 0.08 s, measured in Pyodide under Node). So the site build (``build.py site``) runs
``with_bytecode`` inside the site's Pyodide, whose magic number and cache tag the bytecode must
carry, and ships the wheels it returns.

Pyodide's standard library (``python_stdlib.zip``, imported from the zip by zipimport) ships its
sources alone, so the runtime's own boot compiled every module it imports, and every page after
it: ``stdlib_with_bytecode`` adds the bytecode there too (a bare Pyodide + NumPy page in headless
Chromium: ready after 3.3-3.6 s from sources, 2.1-2.3 s from bytecode; the zip grows from 2.4 to
6.4 MB).

The bytecode is checked-hash (PEP 552): an import compares it with the hash of the source beside
it, not with a time stamp, so it serves whenever the wheel was unpacked, and never a source other
than the one it was compiled from.

    python -m cellar.site.bytecode RUNTIME OUT_FOLDER WHEEL... [--stdlib ZIP]   (what build.py runs)
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import io
import marshal
import sys
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
    added = {
        importlib.util.cache_from_source(entry): _pyc(source.read(entry), entry, name)
        for entry in source.namelist()
        if entry.endswith(".py")
    }
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


def stdlib_with_bytecode(archive: bytes, name: str = "python_stdlib.zip") -> bytes:
    """Pyodide's standard library zip (its bytes; ``name`` for errors) with each module's bytecode
    where zipimport looks for it: ``<module>.pyc`` beside ``<module>.py`` (a zip has no
    ``__pycache__``). Every other entry is kept as it is."""
    source = zipfile.ZipFile(io.BytesIO(archive))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            target.writestr(info, data)
            if info.filename.endswith(".py"):
                pyc = _pyc(data, info.filename, name)
                target.writestr(zipfile.ZipInfo(info.filename[:-3] + ".pyc", EPOCH), pyc, zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _pyc(source: bytes, entry: str, name: str) -> bytes:
    """The checked-hash bytecode file of ``source`` (PEP 552: magic, flags, the source's hash,
    the marshalled code; what ``py_compile`` writes), compiled as ``entry``; a source that does
    not compile is a ValueError naming it."""
    try:
        code = compile(source, entry, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        raise ValueError(f"{name}: {entry} does not compile ({error})") from None
    flags = (0b11).to_bytes(4, "little")  # hash-based, checked against the source
    return importlib.util.MAGIC_NUMBER + flags + importlib.util.source_hash(source) + marshal.dumps(code)


def _digest(data: bytes) -> str:
    """A RECORD hash: urlsafe base64 of the SHA-256, without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def main(argv: list[str] | None = None) -> int:
    """Compile the wheels in the Pyodide runtime given, into the output folder (same names)."""
    from cellar.rerender.pyodide_host import PyodideHost

    parser = argparse.ArgumentParser(prog="python -m cellar.site.bytecode", description=main.__doc__)
    parser.add_argument("runtime", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--stdlib", type=Path, help="Pyodide's python_stdlib.zip, to compile too")
    parser.add_argument("wheels", type=Path, nargs="*")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [(wheel, "with_bytecode") for wheel in args.wheels] + (
        [(args.stdlib, "stdlib_with_bytecode")] if args.stdlib else []
    )
    files = {"/cellar_bytecode.py": Path(__file__), **{f"/in/{n}": path for n, (path, _) in enumerate(jobs)}}
    with PyodideHost(args.runtime, packages=(), files=files) as host:
        for n, (path, function) in enumerate(jobs):
            host.run(
                f"import sys; sys.path.insert(0, '/'); from pathlib import Path; from cellar_bytecode import {function}\n"
                f"Path('/out').write_bytes({function}(Path('/in/{n}').read_bytes(), {path.name!r}))"
            )
            (args.out / path.name).write_bytes(host.read_file("/out"))
            print(f"bytecode: {path.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A Pyodide worker's start cache: what preparing the sandbox writes that a fresh worker can reuse.

In: the path of a zip in the interpreter's file system, and the imports that preparing does
(`around_imports`). Out: if the zip exists, its files unpacked where they were before the imports,
so that they load bytecode rather than compile sources and matplotlib does not rebuild its font
cache; if not, the zip written after them: the checked-hash bytecode (PEP 552) of every module they
imported and matplotlib's font list, named by their absolute paths.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any


@contextmanager
def around_imports(path: str | None) -> Iterator[None]:
    """Unpack the start files at `path` before the body, if they exist; else pack them after it,
    from the modules the body imported (bytecode is written meanwhile only to be packed)."""
    reuse = path is not None and os.path.exists(path)
    if path is not None and reuse:
        unpack_start_files(path)
    packing = path is not None and not reuse
    imported = set(sys.modules)
    dont_write_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = dont_write_bytecode and not packing  # Pyodide's is set: only to pack
    try:
        yield
    finally:
        sys.dont_write_bytecode = dont_write_bytecode
    if path is not None and packing:
        pack_start_files(path, [sys.modules[name] for name in sys.modules.keys() - imported])


def checked_bytecode(pyc: bytes, source: bytes) -> bytes | None:
    """A timestamp-based .pyc of this Python made checked-hash (PEP 552), or None for any other.

    The import then checks the source's hash rather than its time: the bytecode serves another
    interpreter whose sources were unpacked at another time, and never a changed source."""
    from importlib.util import MAGIC_NUMBER, source_hash

    if pyc[:4] != MAGIC_NUMBER or pyc[4:8] != bytes(4):
        return None
    return MAGIC_NUMBER + (0b11).to_bytes(4, "little") + source_hash(source) + pyc[16:]


def font_lists() -> dict[str, bytes]:
    """matplotlib's font lists of its own version, by path: in its cache folder, or, in Pyodide's
    build, beside its sources, where the list it ships has another version, so that every fresh
    interpreter rebuilds it."""
    import json

    font_manager = sys.modules.get("matplotlib.font_manager")
    if font_manager is None:
        return {}
    lists = {}
    folders: tuple[str, str] = (sys.modules["matplotlib"].get_cachedir(), os.path.dirname(font_manager.__file__ or ""))
    for folder in folders:
        for name in sorted(os.listdir(folder)):
            if name.startswith("fontlist") and name.endswith(".json"):
                with open(os.path.join(folder, name), "rb") as handle:
                    data = handle.read()
                if json.loads(data).get("_version") == font_manager.FontManager.__version__:
                    lists[os.path.join(folder, name)] = data
    return lists


def pack_start_files(path: str, modules: Sequence[Any]) -> None:
    """Zip the checked-hash bytecode of `modules` (those that have some) and matplotlib's font
    list into `path`, named by their absolute paths."""
    import zipfile

    files = font_lists()
    for module in modules:
        cached, source = getattr(module, "__cached__", None), getattr(module, "__file__", None)
        if cached and source and os.path.isfile(cached):
            with open(cached, "rb") as pyc, open(source, "rb") as text:
                bytecode = checked_bytecode(pyc.read(), text.read())
            if bytecode is not None:
                files[cached] = bytecode
    with zipfile.ZipFile(path, "w") as archive:
        for name in sorted(files):
            archive.writestr(name.lstrip("/"), files[name])


def unpack_start_files(path: str) -> None:
    """Put the files `pack_start_files` zipped back where they were."""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        archive.extractall("/")

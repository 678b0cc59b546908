"""cellar.site.bytecode: a wheel comes back with checked-hash bytecode beside each module, listed
in its RECORD, and an interpreter that unpacks it imports the bytecode rather than the source;
a standard library zip comes back with each module's bytecode where zipimport finds it."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import subprocess
import sys
import zipfile

import pytest

from cellar.site.bytecode import stdlib_with_bytecode, with_bytecode

SOURCES = {
    "tiny/__init__.py": "from tiny.words import shout\n",
    "tiny/words.py": "def shout(word):\n    return word.upper() + '!'\n",
}


def _wheel(sources: dict[str, str]) -> bytes:
    """A minimal wheel of `sources`, with a RECORD as pip writes one."""
    files = {name: text.encode() for name, text in sources.items()}
    files["tiny-1.0.dist-info/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    rows = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in files.items()]
    files["tiny-1.0.dist-info/RECORD"] = ("\n".join([*rows, "tiny-1.0.dist-info/RECORD,,"]) + "\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_each_module_gets_checked_hash_bytecode_listed_in_the_record():
    compiled = zipfile.ZipFile(io.BytesIO(with_bytecode(_wheel(SOURCES))))
    for name, text in SOURCES.items():
        pyc = compiled.read(importlib.util.cache_from_source(name))
        assert pyc[:4] == importlib.util.MAGIC_NUMBER
        assert int.from_bytes(pyc[4:8], "little") == 0b11  # hash-based, checked (PEP 552)
        assert pyc[8:16] == importlib.util.source_hash(text.encode())
    rows = compiled.read("tiny-1.0.dist-info/RECORD").decode().splitlines()
    assert rows[-1] == "tiny-1.0.dist-info/RECORD,,"
    listed = {row.split(",")[0]: row.split(",")[1:] for row in rows[:-1]}
    assert set(listed) == set(compiled.namelist()) - {"tiny-1.0.dist-info/RECORD"}
    for name, (digest, size) in listed.items():
        data = compiled.read(name)
        assert digest == f"sha256={_digest(data)}" and int(size) == len(data)


def test_the_same_wheel_gives_the_same_bytes():
    assert with_bytecode(_wheel(SOURCES)) == with_bytecode(_wheel(SOURCES))


def test_an_unpacked_wheel_imports_its_bytecode_and_never_a_stale_one(tmp_path):
    """The interpreter takes the shipped bytecode (here, made to say something else while keeping
    the source's hash, so that using it shows); after the source changes, it compiles the source."""
    zipfile.ZipFile(io.BytesIO(with_bytecode(_wheel(SOURCES)))).extractall(tmp_path)
    pyc = tmp_path / importlib.util.cache_from_source("tiny/words.py")
    other = compile("def shout(word):\n    return 'from bytecode'\n", "tiny/words.py", "exec")
    import marshal

    pyc.write_bytes(pyc.read_bytes()[:16] + marshal.dumps(other))

    def shout() -> str:
        code = "import sys; sys.dont_write_bytecode = True; import tiny; print(tiny.shout('ballast'))"
        return subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
        ).stdout.strip()

    assert shout() == "from bytecode"
    (tmp_path / "tiny/words.py").write_text(SOURCES["tiny/words.py"] + "# edited\n")
    assert shout() == "BALLAST!"


def test_a_module_that_does_not_compile_is_named():
    with pytest.raises(ValueError, match=r"tiny-1.0.whl: tiny/broken.py does not compile"):
        with_bytecode(_wheel({**SOURCES, "tiny/broken.py": "def (:\n"}), "tiny-1.0.whl")


def test_a_zip_that_is_not_a_wheel_is_refused():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("tiny/__init__.py", "")
    with pytest.raises(ValueError, match="not a wheel"):
        with_bytecode(out.getvalue(), "tiny.zip")


def _stdlib(sources: dict[str, str]) -> bytes:
    """A zip of modules, laid out as Pyodide's python_stdlib.zip (sources at the top, packages as folders)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in sources.items():
            archive.writestr(name, text)
        archive.writestr("tiny/data.txt", "not a module")
    return out.getvalue()


def test_the_standard_library_gets_bytecode_beside_each_module_and_keeps_the_rest():
    original = zipfile.ZipFile(io.BytesIO(_stdlib(SOURCES)))
    compiled = zipfile.ZipFile(io.BytesIO(stdlib_with_bytecode(_stdlib(SOURCES))))
    assert set(compiled.namelist()) == set(original.namelist()) | {"tiny/__init__.pyc", "tiny/words.pyc"}
    for name in original.namelist():
        assert compiled.read(name) == original.read(name)
    for name, text in SOURCES.items():
        pyc = compiled.read(name[:-3] + ".pyc")
        assert pyc[:4] == importlib.util.MAGIC_NUMBER
        assert int.from_bytes(pyc[4:8], "little") == 0b11  # hash-based, checked (PEP 552)
        assert pyc[8:16] == importlib.util.source_hash(text.encode())
    assert stdlib_with_bytecode(_stdlib(SOURCES)) == stdlib_with_bytecode(_stdlib(SOURCES))


def test_zipimport_takes_the_standard_librarys_bytecode_and_never_a_stale_one(tmp_path):
    """As for a wheel: the bytecode, made to say something else while keeping the source's hash,
    is what an import from the zip runs; once the source in the zip changes, the source is."""
    import marshal

    other = compile("def shout(word):\n    return 'from bytecode'\n", "tiny/words.py", "exec")

    def shout(sources: dict[str, str]) -> str:
        compiled = zipfile.ZipFile(io.BytesIO(stdlib_with_bytecode(_stdlib(SOURCES))))
        archive = tmp_path / "python_stdlib.zip"
        with zipfile.ZipFile(archive, "w") as out:
            for name in compiled.namelist():
                data = compiled.read(name)
                if name == "tiny/words.pyc":
                    data = data[:16] + marshal.dumps(other)
                out.writestr(name, sources[name] if name in sources else data)
        code = f"import sys; sys.path.insert(0, {str(archive)!r}); import tiny; print(tiny.shout('ballast'))"
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()

    assert shout(SOURCES) == "from bytecode"
    assert shout({**SOURCES, "tiny/words.py": SOURCES["tiny/words.py"] + "# edited\n"}) == "BALLAST!"


def test_a_standard_library_module_that_does_not_compile_is_named():
    with pytest.raises(ValueError, match=r"python_stdlib.zip: tiny/broken.py does not compile"):
        stdlib_with_bytecode(_stdlib({**SOURCES, "tiny/broken.py": "def (:\n"}))

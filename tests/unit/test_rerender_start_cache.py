"""What a `cellar rerender` worker's start cache rests on: checked-hash bytecode, used for its own
source and never for a changed one, and the fingerprint that names a runtime and environment."""

from __future__ import annotations

import json
import os
import py_compile
import subprocess
import sys
from importlib.util import cache_from_source

from cellar.rerender import environment
from cellar.rerender.start_cache import checked_bytecode


def test_checked_bytecode_is_used_for_its_source_and_never_for_a_changed_one(tmp_path):
    module = tmp_path / "tanks.py"
    module.write_text("CAPACITY = 412.1\n")
    # bytecode that says something its source does not: which of the two an import runs tells
    other = tmp_path / "other.py"
    other.write_text("CAPACITY = 'from the bytecode'\n")
    py_compile.compile(
        str(other),
        cfile=str(tmp_path / "other.pyc"),
        doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP,
    )
    timestamped = (tmp_path / "other.pyc").read_bytes()
    pyc = cache_from_source(str(module))
    os.makedirs(os.path.dirname(pyc))
    with open(pyc, "wb") as handle:
        handle.write(checked_bytecode(timestamped, module.read_bytes()))

    def imported() -> str:
        code = "import tanks; print(tanks.CAPACITY)"
        return subprocess.run(
            [sys.executable, "-B", "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
        ).stdout.strip()

    os.utime(module, (0, 0))  # another time than the bytecode's: the hash, not the time, decides
    assert imported() == "from the bytecode"
    module.write_text("CAPACITY = 288.0\n")  # the same size, another source
    assert imported() == "288.0"


def test_only_timestamp_bytecode_of_this_python_is_converted():
    assert checked_bytecode(b"\x00" * 32, b"x = 1\n") is None


def test_the_fingerprint_names_the_runtime_the_packages_and_the_wheels(site, tmp_path):
    runtime = site / "pyodide"
    lock = json.loads((runtime / "pyodide-lock.json").read_text())
    name = environment.fingerprint(runtime, ["numpy", "pandas"], ["wheels/cellar-0.1.0-py3-none-any.whl"])
    assert name.startswith(f"pyodide-{lock['info']['version']}-")
    assert name == environment.fingerprint(runtime, ["pandas", "numpy"], ["/cache/cellar-0.1.0-py3-none-any.whl"])
    assert name != environment.fingerprint(runtime, ["numpy"], ["wheels/cellar-0.1.0-py3-none-any.whl"])
    assert name != environment.fingerprint(runtime, ["numpy", "pandas"], ["wheels/cellar-0.2.0-py3-none-any.whl"])
    other = tmp_path / "pyodide"
    other.mkdir()
    lock["packages"]["matplotlib"]["version"] = "3.9.0"
    (other / "pyodide-lock.json").write_text(json.dumps(lock))
    assert name != environment.fingerprint(other, ["numpy", "pandas"], ["wheels/cellar-0.1.0-py3-none-any.whl"])

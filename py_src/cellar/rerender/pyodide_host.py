"""Python in Pyodide under Node, driven from CPython.

The tests use it to show that Pyodide computes what CPython computes, and the benchmarks to
time the same code in both. It runs the runtime and the cellar wheel of a built site, so what
it measures is what the browser tab runs.

    with PyodideHost(site / "pyodide", wheels=[...]) as host:
        host.run("import cellar.ingest.provenance as p; p.revision('abc')")   # -> 'ba7816bf...'

    with PyodideHost(site / "pyodide", files={"/tmp/in.zip": "in.zip"}) as host:  # copied in
        host.read_file("/tmp/in.zip")   # -> the bytes of a file in Pyodide's file system
"""

from __future__ import annotations

import base64
import json
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("pyodide_host.mjs")
MARK = "\x1ecellar-host "


class PyodideError(Exception):
    """Python code raised inside Pyodide; the message is its traceback."""


class PyodideExited(PyodideError):
    """The Node process running Pyodide is gone (it crashed, ran out of memory or was killed)."""


def _exit_status(code: int) -> str:
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class PyodideHost:
    """One Node process running Pyodide, with the given wheels installed, packages loaded and
    `files` (Pyodide path -> host path) copied into Pyodide's file system."""

    def __init__(
        self,
        runtime: str | PathLike[str],
        wheels: Sequence[str | PathLike[str]] = (),
        packages: Sequence[str] = ("numpy",),
        files: Mapping[str, str | PathLike[str]] | None = None,
        node: str = "node",
        start_timeout: float = 180.0,
    ) -> None:
        if shutil.which(node) is None:
            raise FileNotFoundError(f"{node}: Node.js is needed to run Pyodide outside a browser")
        if not (Path(runtime) / "pyodide.mjs").is_file():
            raise FileNotFoundError(f"{runtime}: no Pyodide runtime here (build the site first)")
        options: dict[str, Any] = {
            "runtime": str(Path(runtime).resolve()),
            "wheels": [str(Path(wheel).resolve()) for wheel in wheels],
            "packages": list(packages),
            "files": {target: str(Path(source).resolve()) for target, source in (files or {}).items()},
        }
        for source in options["files"].values():
            if not Path(source).is_file():
                raise FileNotFoundError(f"{source}: no such file to copy into Pyodide")
        started = time.perf_counter()
        self._process = subprocess.Popen(
            [node, str(SCRIPT), json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # Python's output: our stderr
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._next_id = 0
        self._read_reply(0, start_timeout)
        self.start_seconds = time.perf_counter() - started

    def run(self, code: str, timeout: float | None = 300.0) -> Any:
        """Run Python source in Pyodide; return the JSON-decoded value of its final expression."""
        return json.loads(self._request({"code": code}, timeout))

    def read_file(self, path: str, timeout: float | None = 60.0) -> bytes:
        """The bytes of a file in Pyodide's file system (PyodideError naming it if there is none)."""
        return base64.b64decode(self._request({"read": path}, timeout))

    def _request(self, request: dict[str, Any], timeout: float | None) -> Any:
        self._next_id += 1
        stdin = self._process.stdin
        assert stdin is not None  # started with stdin=PIPE
        try:
            stdin.write(json.dumps({"id": self._next_id, **request}) + "\n")
            stdin.flush()
        except (BrokenPipeError, ValueError, OSError):  # ValueError: its stdin was closed already
            code = self._process.wait()
            raise PyodideExited(f"the Node process running Pyodide had exited ({_exit_status(code)})") from None
        return self._read_reply(self._next_id, timeout)

    def _read_reply(self, request_id: int, timeout: float | None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        stdout = self._process.stdout
        assert stdout is not None  # started with stdout=PIPE
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while True:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0 or not selector.select(remaining):
                    self.close()
                    raise TimeoutError(f"Pyodide did not answer within {timeout} s")
                line = stdout.readline()
                if not line:
                    code = self._process.wait()
                    raise PyodideExited(f"the Node process running Pyodide exited ({_exit_status(code)})")
                if not line.startswith(MARK):
                    sys.stderr.write(line)
                    continue
                message = json.loads(line[len(MARK) :])
                if message["id"] != request_id:
                    continue
                if not message["ok"]:
                    raise PyodideError(message["error"])
                return message["value"]

    def close(self) -> None:
        if self._process.poll() is None and self._process.stdin is not None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> PyodideHost:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

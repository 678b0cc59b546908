r"""The sandbox: run a notebook's code cells with IPython's semantics over the archive's path map.

It runs inside Pyodide (under Node for builds, in a Web Worker in the tab) and imports in CPython
too. One warm interpreter runs notebook after notebook:

    result = run_notebook(cells, pathmap, blobs, cwd="/2017/17-042 Ballast")
    result["cells"][3]["outputs"]   # nbformat 4 output dicts, as ipykernel would have produced

What does the work is IPython's own machinery, not a re-implementation: one
`IPython.core.interactiveshell.InteractiveShell` (a subclass, `SandboxShell`) runs every cell
(`run_cell`: input transformers for magics and `!` lines, the trailing `;`, `%time`, `%%capture`),
its display hook formats the last expression (IPython's pretty printer for text/plain, the
formatters for `_repr_html_` and friends), its display publisher receives `display()`, and
`_showtraceback` receives errors, exactly where ipykernel plugs in. matplotlib runs with
`matplotlib_inline`'s backend, so open figures become display_data (image/png, `bbox_inches=
"tight"`) at the end of each cell, as under ipykernel. Captured and changed:

- `print` / stderr / warnings -> stream outputs (consecutive writes to one stream merged);
- `%timeit` runs its statement once, in the notebook's namespace, and prints nothing;
- `%matplotlib anything` selects the inline backend; `!cmd`, `%sx`, `%pip`, `%%bash` and other
  shell escapes raise `ShellUnavailable`; `input()` raises IPython's StdinNotImplementedError;
- no network: sockets, `pyodide.http` and `js.fetch` raise `NetworkRefused` at once.

Files. While a notebook runs, `open`, `io.open`, `os.stat`/`lstat`/`listdir`/`chdir`/`getcwd`/
`mkdir`/`remove`, and with them `os.path.exists/isfile/isdir`, `pathlib`, pandas' `read_*` and
`numpy.loadtxt`, see the archive's path map (cellar.rerender.vfs): a mapped path reads its blob (checked
against its hash), a write goes to a scratch folder that is deleted after the notebook (and reads
back from there), and any other path is refused as cellar.rerender.vfs refuses it. The interpreter's own
files (the standard library, site-packages, matplotlib's caches) stay readable by library code, so
that imports and fonts work, but not by a cell's own `open`.

Determinism and isolation between notebooks: `random` and NumPy seeded with 0, TZ=UTC, a fixed
clock (`time.time`, `datetime.now/today`) when asked, and before every notebook the namespace,
history and execution count, matplotlib's rcParams, pandas' options, NumPy's print options and
error state, warning filters and registries, `sys.path`, environment variables and the working
directory are restored, and modules a notebook imported from outside the interpreter's own folders
are dropped from `sys.modules`.

Time limits: each cell gets `min(cell_timeout, what is left of notebook_timeout)`. The watchdog is
the host's (`js.cellarArmDeadline` from cellar.rerender.pyodide_host, which trips Pyodide's interrupt
buffer) or, in CPython, SIGALRM; either raises KeyboardInterrupt in the cell, and the run stops
with `stopped` saying which limit was hit.
"""

from __future__ import annotations

import base64
import builtins
import copy
import datetime as _datetime
import io
import os
import random
import shutil
import socket
import stat as _stat
import sys
import sysconfig
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cellar.rerender import vfs

SEED = 0
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
# pandas as under a notebook front end: 20 columns and 60 rows before eliding, never the width
# of whatever terminal the worker happens to have (which truncates columns).
PANDAS_OPTIONS = {"display.max_columns": 20, "display.max_rows": 60, "display.width": 80}
_SHELL_MAGICS = ("bash", "sh", "script", "system", "sx", "perl", "ruby", "python2", "python3", "pypy")


class SandboxError(Exception):
    """Base of the errors the sandbox raises into a notebook."""


class ShellUnavailable(SandboxError):
    """A shell escape (`!cmd`, `%%bash`, `%pip`): there is no shell in the sandbox."""


class NetworkRefused(SandboxError, ConnectionRefusedError):
    """A network access: the sandbox has no network, and says so at once rather than hanging."""


@dataclass(frozen=True)
class Limits:
    """Seconds a cell and a whole notebook may run; `clock` (ISO 8601) fixes the wall clock."""

    cell_timeout: float = 60.0
    notebook_timeout: float = 300.0
    clock: str | None = None


# -- The file system view ---------------------------------------------------------------------------

_REAL = {
    "open": builtins.open, "stat": os.stat, "lstat": os.lstat, "listdir": os.listdir,
    "chdir": os.chdir, "getcwd": os.getcwd, "mkdir": os.mkdir, "remove": os.remove,
    "unlink": os.unlink,
}


def _runtime_roots(*extra: str) -> tuple[str, ...]:
    """Folders of the interpreter's own files, which library code (not a cell) may read.

    The standard library and site-packages, matplotlib's font cache and configuration, and `extra`
    (the run's scratch folder); not the home folder or the working directory, which Pyodide puts
    on sys.path.
    """
    paths = sysconfig.get_paths()
    roots = {os.path.dirname(os.__file__), paths["stdlib"], paths["platstdlib"], paths["purelib"],
             paths["platlib"], *extra}
    roots.update(path for path in sys.path if path.endswith((".zip", "site-packages", "lib-dynload")))
    if "matplotlib" in sys.modules:
        roots.update([sys.modules["matplotlib"].get_cachedir(), sys.modules["matplotlib"].get_configdir()])
    roots.update([os.path.realpath(root) for root in roots])
    return tuple(sorted({os.path.join(os.path.normpath(root), "") for root in roots if root}))


class _FileView:
    """The path map, a scratch overlay for writes, and the logical working directory of one run."""

    def __init__(self, pathmap: vfs.PathMap, blobs: Mapping[str, bytes], cwd: str,
                 is_cell: Callable[[str], bool]) -> None:
        self.pathmap, self.blobs, self.cwd, self.is_cell = pathmap, blobs, cwd, is_cell
        self.scratch = tempfile.mkdtemp(prefix="cellar-scratch-")
        self.written: dict[tuple[str, ...], str] = {}  # logical key -> scratch file
        self.made_dirs: set[tuple[str, ...]] = set()
        self.roots = _runtime_roots(self.scratch)
        self.decided: dict[str, bool] = {}  # path -> whether it is a runtime file (inspect asks often)

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    def real(self, path: Any, depth: int = 2) -> bool:
        """Whether `path` goes to the real file system: the interpreter's files, for library code."""
        if isinstance(path, int):
            return True  # an already open descriptor
        try:
            text = os.fsdecode(os.fspath(path))
        except TypeError:
            return True  # not a path: let the real function raise its own TypeError
        caller = sys._getframe(depth)
        if caller.f_code.co_name == "_modified_open":  # IPython's wrapper of a cell's open()
            caller = caller.f_back
        if not text.startswith("/") or self.is_cell(caller.f_code.co_filename):
            return False  # a cell's own open() sees only the archive
        known = self.decided.get(text)
        if known is None:
            known = self.decided[text] = self._runtime_file(text)
        return known

    def _runtime_file(self, text: str) -> bool:
        """Under the interpreter's own folders, and not a path the archive maps or the run wrote."""
        if "\x00" in text or not os.path.join(os.path.normpath(text), "").startswith(self.roots):
            return False
        try:
            return not (self.pathmap.exists(text) or vfs.logical_path(text).key in self.written)
        except vfs.VfsError:
            return False

    def key(self, path: Any) -> tuple[str, ...]:
        return vfs.logical_path(path, self.cwd).key

    def open(self, path: Any, mode: str = "r", buffering: int = -1, encoding: str | None = None,
             errors: str | None = None, newline: str | None = None, closefd: bool = True,
             opener: Any = None) -> Any:
        key = self.key(path)
        writing = any(flag in mode for flag in "wax+")
        if writing or key in self.written:
            return _REAL["open"](self._scratch_file(path, key, mode), mode, buffering, encoding,
                                 errors, newline)
        blob_id = self.pathmap.resolve(path, self.cwd)
        data = vfs.verify_blob(blob_id, self.blobs[blob_id], os.fsdecode(os.fspath(path)))
        raw = _NamedBytesIO(data, os.fsdecode(os.fspath(path)), mode)
        if "b" in mode:
            return raw
        return io.TextIOWrapper(raw, encoding=encoding or "utf-8", errors=errors, newline=newline)

    def _scratch_file(self, path: Any, key: tuple[str, ...], mode: str) -> str:
        """The scratch file behind a logical path, seeded with the blob when it is updated in place."""
        if key not in self.written:
            self.written[key] = os.path.join(self.scratch, f"{len(self.written)}")
            if "w" not in mode and self.pathmap.isfile(path, self.cwd):
                blob_id = self.pathmap.resolve(path, self.cwd)
                with _REAL["open"](self.written[key], "wb") as handle:
                    handle.write(vfs.verify_blob(blob_id, self.blobs[blob_id]))
        return self.written[key]

    def stat(self, path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        key = self.key(path)
        if key in self.written:
            return _REAL["stat"](self.written[key])
        if key in self.made_dirs or self.pathmap.isdir(path, self.cwd):
            return os.stat_result((_stat.S_IFDIR | 0o555, 0, 0, 2, 0, 0, 0, 0, 0, 0))
        blob_id = self.pathmap.resolve(path, self.cwd)  # raises the right error for the rest
        size = len(self.blobs[blob_id]) if blob_id in self.blobs else 0
        return os.stat_result((_stat.S_IFREG | 0o444, 0, 0, 1, 0, 0, size, 0, 0, 0))

    lstat = stat  # the archive has no symbolic links

    def listdir(self, path: Any = ".") -> list[str]:
        key = self.key(path)
        extra = {found[-1] for found in (*self.written, *self.made_dirs) if found[:-1] == key}
        if key in self.made_dirs and not self.pathmap.isdir(path, self.cwd):
            return sorted(extra)
        return sorted(set(self.pathmap.listdir(path, self.cwd)) | extra)

    def chdir(self, path: Any) -> None:
        target = vfs.chdir(self.cwd, path)
        if not (self.pathmap.isdir(target) or vfs.logical_path(target).key in self.made_dirs):
            self.stat(target)  # the error that names why it is not a folder
            raise NotADirectoryError(20, "not a folder in the archive's path map", target)
        self.cwd = target

    def mkdir(self, path: Any, mode: int = 0o777, **kwargs: Any) -> None:
        key = self.key(path)
        if key in self.made_dirs or self.pathmap.isdir(path, self.cwd) or key in self.written:
            raise FileExistsError(17, "File exists", os.fsdecode(os.fspath(path)))
        self.made_dirs.add(key)

    def remove(self, path: Any, **kwargs: Any) -> None:
        key = self.key(path)
        if key not in self.written:
            self.pathmap.resolve(path, self.cwd)
            raise PermissionError(13, "the archive's files are read-only", os.fsdecode(os.fspath(path)))
        _REAL["remove"](self.written.pop(key))


class _NamedBytesIO(io.BytesIO):
    """A mapped file's bytes with the `name` and `mode` a real file object has."""

    def __init__(self, data: bytes, name: str, mode: str) -> None:
        super().__init__(data)
        self.name, self.mode = name, mode


_ACTIVE: list[_FileView] = []  # the running notebook's view; empty between notebooks
_INSIDE: list[str] = []  # non-empty while a hook runs: the view's own file calls go to the real ones


def _hook(name: str) -> Callable[..., Any]:
    """A replacement for os.<name>/open that defers to the running notebook's view, if any."""
    real = _REAL[name]

    def hooked(*args: Any, **kwargs: Any) -> Any:
        view = _ACTIVE[-1] if _ACTIVE and not _INSIDE else None
        if view is None:  # between notebooks, or the view's own calls (os.path.realpath)
            return real(*args, **kwargs)
        if name == "getcwd":
            return view.cwd
        path = args[0] if args else kwargs.get("file", kwargs.get("path", "."))
        _INSIDE.append(name)
        try:
            if view.real(path):
                return real(*args, **kwargs)
            method = "open" if name == "open" else "remove" if name == "unlink" else name
            return getattr(view, method)(*args, **kwargs)
        finally:
            _INSIDE.pop()

    hooked.__name__ = hooked.__qualname__ = name
    hooked.__doc__ = real.__doc__
    return hooked


def _install_file_hooks() -> None:
    """Route the file functions through `_ACTIVE` for good: caches such as numpy's keep them."""
    if getattr(builtins.open, "__module__", None) == __name__:
        return
    builtins.open = io.open = _hook("open")
    for name in ("stat", "lstat", "listdir", "chdir", "getcwd", "mkdir", "remove", "unlink"):
        setattr(os, name, _hook(name))


# -- Network, clock, input --------------------------------------------------------------------------


def _refuse_network(*args: Any, **kwargs: Any) -> Any:
    raise NetworkRefused("network access is not available in the sandbox")


def _refuse_url(url: Any, *args: Any, **kwargs: Any) -> Any:
    """urllib's urlopen / urlretrieve (and so pandas' and numpy's readers of URLs): one clear
    refusal naming the URL, for https too, which Pyodide (no ssl) would otherwise call unknown."""
    import urllib.error

    where = getattr(url, "full_url", url)
    raise urllib.error.URLError(NetworkRefused(f"network access is not available in the sandbox: {where}"))


def _network_patches() -> list[tuple[Any, str, Any]]:
    """(object, attribute, replacement) for every way out to the network that the runtime has."""
    import urllib.request

    patches: list[tuple[Any, str, Any]] = [
        (socket, name, _refuse_network)
        for name in ("create_connection", "getaddrinfo", "gethostbyname", "gethostbyname_ex")]
    patches += [(socket.socket, name, _refuse_network) for name in ("connect", "connect_ex")]
    patches += [(urllib.request, name, _refuse_url) for name in ("urlopen", "urlretrieve")]
    if sys.platform == "emscripten":
        # Imported here, not looked up: a worker whose first import of `js` came with a notebook
        # has it dropped from sys.modules afterwards (it has no file under the runtime's folders).
        import js
        import pyodide.http

        patches += [(pyodide.http, name, _refuse_network) for name in ("pyfetch", "open_url")]
        patches.append((sys.modules, "js", _GuardedJs(js)))
    return patches


class _GuardedJs:
    """The `js` module with the browser's and Node's ways to the network refused."""

    _REFUSED = frozenset({"fetch", "XMLHttpRequest", "WebSocket", "EventSource", "importScripts",
                          "require", "process"})

    def __init__(self, js: Any) -> None:
        self._js = js

    def __getattr__(self, name: str) -> Any:
        if name in self._REFUSED:
            raise NetworkRefused(f"js.{name} is not available in the sandbox")
        return getattr(self._js, name)


def _clock_patches(clock: str | None) -> list[tuple[Any, str, Any]]:
    """Replacements that fix `time.time` and `datetime`'s now/today at `clock` (UTC)."""
    if clock is None:
        return []
    fixed = _datetime.datetime.fromisoformat(clock)
    if fixed.tzinfo is None:
        fixed = fixed.replace(tzinfo=_datetime.timezone.utc)
    seconds = fixed.timestamp()

    class FixedDatetime(_datetime.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            moment = fixed.astimezone(tz) if tz is not None else fixed.replace(tzinfo=None)
            return cls.combine(moment.date(), moment.timetz())

        @classmethod
        def utcnow(cls) -> Any:
            return cls.now().replace(tzinfo=None)

        @classmethod
        def today(cls) -> Any:
            return cls.now()

    class FixedDate(_datetime.date):
        @classmethod
        def today(cls) -> Any:
            return cls(fixed.year, fixed.month, fixed.day)

    FixedDatetime.__name__, FixedDate.__name__ = "datetime", "date"
    return [(time, "time", lambda: seconds), (time, "time_ns", lambda: int(seconds * 1e9)),
            (_datetime, "datetime", FixedDatetime), (_datetime, "date", FixedDate)]


def _no_input(*args: Any, **kwargs: Any) -> str:
    from IPython.core.error import StdinNotImplementedError

    raise StdinNotImplementedError("input() is not available in the sandbox")


def _apply(patches: list[tuple[Any, str, Any]]) -> list[tuple[Any, str, Any]]:
    """Apply (object, attribute, value) patches; return what undoes them."""
    undo = []
    for target, name, value in patches:
        if isinstance(target, dict):
            undo.append((target, name, target[name]))
            target[name] = value
        else:
            undo.append((target, name, getattr(target, name)))
            setattr(target, name, value)
    return undo[::-1]


# -- Output capture ---------------------------------------------------------------------------------


def _mime_bundle(data: Mapping[str, Any]) -> dict[str, Any]:
    """A format dict as nbformat stores it: binary types base64-encoded, as ipykernel does."""
    return {mime: base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value
            for mime, value in data.items()}


class _Capture:
    """The outputs of the cell being run, in nbformat 4 shape."""

    def __init__(self) -> None:
        self.outputs: list[dict[str, Any]] = []
        self.clear_pending = False

    def _add(self, output: dict[str, Any]) -> None:
        if self.clear_pending:
            self.outputs.clear()
            self.clear_pending = False
        self.outputs.append(output)

    def stream(self, name: str, text: str) -> None:
        if not text:
            return
        last = self.outputs[-1] if self.outputs and not self.clear_pending else None
        if last is not None and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
        else:
            self._add({"output_type": "stream", "name": name, "text": text})

    def display(self, data: Mapping[str, Any], metadata: Mapping[str, Any] | None) -> None:
        self._add({"output_type": "display_data", "data": _mime_bundle(data),
                   "metadata": dict(metadata or {})})

    def result(self, data: Mapping[str, Any], metadata: Mapping[str, Any] | None, count: int) -> None:
        self._add({"output_type": "execute_result", "execution_count": count,
                   "data": _mime_bundle(data), "metadata": dict(metadata or {})})

    def error(self, ename: str, evalue: str, traceback: Sequence[str]) -> None:
        self._add({"output_type": "error", "ename": ename, "evalue": evalue,
                   "traceback": list(traceback)})

    def clear(self, wait: bool) -> None:
        if wait:
            self.clear_pending = True
        else:
            self.outputs.clear()


class _Stream(io.TextIOBase):
    """sys.stdout / sys.stderr during a cell: text goes to the capture as a stream output."""

    def __init__(self, name: str, capture: Callable[[], _Capture]) -> None:
        self.name, self._capture = name, capture

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._capture().stream(self.name, text)
        return len(text)

    def isatty(self) -> bool:
        return False


_SHELL: Any = None  # the one SandboxShell of this interpreter, made by `_shell()`


def _shell() -> Any:
    """The interpreter's SandboxShell, made on first use (IPython is imported only then)."""
    global _SHELL
    if _SHELL is None:
        _SHELL = _make_shell()
    return _SHELL


def _make_shell() -> Any:
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class

    class CaptureHook(DisplayHook):
        """The last expression's format dict -> execute_result (ipykernel's ZMQShellDisplayHook)."""

        def start_displayhook(self) -> None:
            self.data, self.metadata = {}, {}

        def write_output_prompt(self) -> None:
            pass

        def write_format_data(self, format_dict: dict, md_dict: dict | None = None) -> None:
            self.data, self.metadata = format_dict, md_dict

        def finish_displayhook(self) -> None:
            if self.data:
                self.shell.capture.result(self.data, self.metadata, self.shell.execution_count)

    class CapturePublisher(DisplayPublisher):
        """display() -> display_data (ipykernel's ZMQDisplayPublisher)."""

        def publish(self, data: dict, metadata: dict | None = None, *args: Any, **kwargs: Any) -> None:
            self.shell.capture.display(data, metadata)

        def clear_output(self, wait: bool = False) -> None:
            self.shell.capture.clear(wait)

    @magics_class
    class SandboxMagics(Magics):
        """Magics whose real versions need a shell, a GUI or many repetitions."""

        @line_cell_magic
        def timeit(self, line: str, cell: str | None = None) -> None:
            """Run the statement once (later cells may use what it assigns); time nothing."""
            _, statement = self.parse_options(line, "n:r:tcp:qo", posix=False, strict=False,
                                              preserve_non_opts=True)
            code = statement if cell is None else f"{statement}\n{cell}"
            self.shell.ex(self.shell.transform_cell(code))

        @line_magic
        def matplotlib(self, line: str = "") -> None:
            """Any GUI request means the inline backend: figures become PNG outputs."""
            self.shell.enable_matplotlib("inline")

    class SandboxShell(InteractiveShell):
        """IPython's shell with ipykernel's capture points aimed at a cellar `_Capture`."""

        displayhook_class = CaptureHook
        display_pub_class = CapturePublisher
        capture = _Capture()

        def _showtraceback(self, etype: type, evalue: BaseException, stb: list[str]) -> None:
            self.capture.error(etype.__name__, str(evalue), stb)

        def system(self, cmd: str) -> None:
            raise ShellUnavailable(f"shell commands are not available in the sandbox: !{cmd}")

        system_piped = system_raw = system

        def enable_gui(self, gui: str | None = None) -> None:
            pass  # the inline backend needs no event loop (ipykernel's shell does the same)

        def getoutput(self, cmd: str, *args: Any, **kwargs: Any) -> None:
            raise ShellUnavailable(f"shell commands are not available in the sandbox: !!{cmd}")

    shell = SandboxShell.instance(history_length=0, history_load_length=0, colors="NoColor")
    shell.history_manager.enabled = False
    shell.register_magics(SandboxMagics)
    for name in _SHELL_MAGICS:
        shell.register_magic_function(_shell_magic(name), "cell", name)
    return shell


def _shell_magic(name: str) -> Callable[[str, str], None]:
    def refuse(line: str, cell: str) -> None:
        raise ShellUnavailable(f"shell commands are not available in the sandbox (%%{name})")

    return refuse


# -- The interpreter's state between notebooks ------------------------------------------------------


@dataclass
class _Baseline:
    """Module state as it was after `prepare()`, restored before every notebook."""

    rc_params: dict[str, Any]
    pandas_options: dict[str, Any]
    numpy_print: dict[str, Any]
    numpy_err: dict[str, Any]
    warning_filters: list[Any]
    sys_path: list[str]
    environ: dict[str, str]
    modules: frozenset[str]


_BASELINE: _Baseline | None = None


def _tzset() -> None:
    if hasattr(time, "tzset"):  # Pyodide has none: Emscripten's clock is UTC already
        time.tzset()


def prepare(packages: Sequence[str] = ("numpy", "pandas", "matplotlib"),
            start_files: str | None = None) -> float:
    """Set up the interpreter once (shell, matplotlib inline, pandas, UTC); return the seconds taken.

    Imports what notebooks commonly import up front, so that the state restored before every
    notebook includes them and the first notebook does not pay for them alone.

    `start_files` names a zip, in this interpreter's file system, of what preparing writes that a
    fresh interpreter of the same runtime can reuse: the bytecode of the modules it imports and
    matplotlib's font list. If it exists, it is unpacked first, so that the imports load bytecode
    rather than compile their sources and matplotlib does not rebuild its font cache; if not, this
    run writes it (see `_pack_start_files`).
    """
    global _BASELINE
    started = time.perf_counter()
    os.environ["TZ"] = "UTC"
    _tzset()
    os.environ["MPLBACKEND"] = INLINE_BACKEND
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)
    _install_file_hooks()
    reuse = start_files is not None and os.path.exists(start_files)
    if reuse:
        _unpack_start_files(start_files)
    packing = start_files is not None and not reuse
    imported = set(sys.modules)
    dont_write_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = dont_write_bytecode and not packing  # Pyodide's is set: only to pack
    try:
        shell = _shell()
        for name in packages:
            __import__(name)
        if "matplotlib" in packages:
            # Load the backend now (pyplot loads it lazily), so that the state every notebook
            # starts from has it active and interactive, as `%matplotlib inline` leaves it under
            # ipykernel.
            shell.enable_matplotlib("inline")
    finally:
        sys.dont_write_bytecode = dont_write_bytecode
    if packing:
        _pack_start_files(start_files, [sys.modules[name] for name in sys.modules.keys() - imported])
    if "pandas" in sys.modules:
        import pandas

        for option, value in PANDAS_OPTIONS.items():
            pandas.set_option(option, value)
    shell.reset(new_session=False)
    _BASELINE = _snapshot()
    return time.perf_counter() - started


def _checked_bytecode(pyc: bytes, source: bytes) -> bytes | None:
    """A timestamp-based .pyc of this Python made checked-hash (PEP 552), or None for any other.

    The import then checks the source's hash rather than its time: the bytecode serves another
    interpreter whose sources were unpacked at another time, and never a changed source."""
    from importlib.util import MAGIC_NUMBER, source_hash

    if pyc[:4] != MAGIC_NUMBER or pyc[4:8] != bytes(4):
        return None
    return MAGIC_NUMBER + (0b11).to_bytes(4, "little") + source_hash(source) + pyc[16:]


def _font_lists() -> dict[str, bytes]:
    """matplotlib's font lists of its own version, by path: in its cache folder, or, in Pyodide's
    build, beside its sources, where the list it ships has another version, so that every fresh
    interpreter rebuilds it."""
    import json

    font_manager = sys.modules.get("matplotlib.font_manager")
    if font_manager is None:
        return {}
    lists = {}
    for folder in (sys.modules["matplotlib"].get_cachedir(), os.path.dirname(font_manager.__file__)):
        for name in sorted(os.listdir(folder)):
            if name.startswith("fontlist") and name.endswith(".json"):
                with open(os.path.join(folder, name), "rb") as handle:
                    data = handle.read()
                if json.loads(data).get("_version") == font_manager.FontManager.__version__:
                    lists[os.path.join(folder, name)] = data
    return lists


def _pack_start_files(path: str, modules: Sequence[Any]) -> None:
    """Zip the checked-hash bytecode of `modules` (those that have some) and matplotlib's font
    list into `path`, named by their absolute paths."""
    import zipfile

    files = _font_lists()
    for module in modules:
        cached, source = getattr(module, "__cached__", None), getattr(module, "__file__", None)
        if cached and source and os.path.isfile(cached):
            with open(cached, "rb") as pyc, open(source, "rb") as text:
                bytecode = _checked_bytecode(pyc.read(), text.read())
            if bytecode is not None:
                files[cached] = bytecode
    with zipfile.ZipFile(path, "w") as archive:
        for name in sorted(files):
            archive.writestr(name.lstrip("/"), files[name])


def _unpack_start_files(path: str) -> None:
    """Put the files `_pack_start_files` zipped back where they were."""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        archive.extractall("/")


def _pandas_options() -> dict[str, Any]:
    if "pandas" not in sys.modules:
        return {}
    from pandas._config import config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {key: copy.deepcopy(config._get_option(key, silent=True))
                for key in config._registered_options if key not in config._deprecated_options}


def _snapshot() -> _Baseline:
    numpy = sys.modules.get("numpy")
    matplotlib = sys.modules.get("matplotlib")
    return _Baseline(
        rc_params=dict(matplotlib.rcParams) if matplotlib else {},
        pandas_options=_pandas_options(),
        numpy_print=numpy.get_printoptions() if numpy else {},
        numpy_err=numpy.geterr() if numpy else {},
        warning_filters=list(warnings.filters),
        sys_path=list(sys.path),
        environ=dict(os.environ),
        modules=frozenset(sys.modules),
    )


def _restore(baseline: _Baseline) -> None:
    """Put module state back as `prepare()` left it, so that no notebook sees another's changes."""
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
    if "matplotlib" in sys.modules and baseline.rc_params:
        # dict.update: the values were validated when they were first set
        dict.update(sys.modules["matplotlib"].rcParams, baseline.rc_params)
    if baseline.pandas_options:
        from pandas._config import config

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for key, value in baseline.pandas_options.items():
                config._set_option(key, copy.deepcopy(value), silent=True)
    if "numpy" in sys.modules and baseline.numpy_print:
        numpy = sys.modules["numpy"]
        numpy.set_printoptions(**baseline.numpy_print)
        numpy.seterr(**baseline.numpy_err)
    warnings.filters[:] = baseline.warning_filters
    warnings._filters_mutated()  # forgets every "already shown once" registry entry
    sys.path[:] = baseline.sys_path
    os.environ.clear()
    os.environ.update(baseline.environ)
    _tzset()
    roots = _runtime_roots()
    for name in set(sys.modules) - baseline.modules:
        origin = getattr(sys.modules[name], "__file__", None)
        if not origin or not os.path.realpath(origin).startswith(roots):
            del sys.modules[name]  # a notebook-local module: the next notebook must not see it


def _seed() -> None:
    random.seed(SEED)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(SEED)


# -- Time limits ------------------------------------------------------------------------------------


def _arm(seconds: float) -> None:
    """Raise KeyboardInterrupt in the running code after `seconds` (0 disarms)."""
    if "js" in sys.modules and hasattr(sys.modules["js"], "cellarArmDeadline"):
        sys.modules["js"].cellarArmDeadline(seconds)
    elif sys.platform != "emscripten":  # CPython: SIGALRM (main thread only)
        import signal

        if seconds > 0:
            signal.signal(signal.SIGALRM, signal.default_int_handler)
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 0))


# -- Running a notebook -----------------------------------------------------------------------------


def run_notebook(
    cells: Sequence[str],
    pathmap: vfs.PathMap,
    blobs: Mapping[str, bytes],
    cwd: str = "/",
    limits: Limits = Limits(),
) -> dict[str, Any]:
    """Run code cells (sources, in order) in a fresh namespace; return their outputs.

    The result: `{"cells": [{"execution_count", "outputs": [nbformat 4 output dicts]}, ...]`
    (one per cell run), `"stopped"`: why the run stopped early (a time limit) or None, and
    `"seconds"`. A cell's error is an error output and the run goes on, as with nbclient's
    `allow_errors`; comparing with the saved outputs (cellar.rerender.compare) decides what it means.
    """
    if _BASELINE is None:
        prepare()
    shell = _shell()
    _restore(_BASELINE)
    shell.reset(new_session=False)
    shell.execution_count = 1
    _seed()
    view = _FileView(pathmap, blobs, cwd, lambda name: name in shell.compile._filename_map)
    streams = {"stdout": _Stream("stdout", lambda: shell.capture),
               "stderr": _Stream("stderr", lambda: shell.capture)}
    undo = _apply(_network_patches() + _clock_patches(limits.clock) + [
        (sys, "stdout", streams["stdout"]), (sys, "stderr", streams["stderr"]),
        (sys, "stdin", io.StringIO("")), (builtins, "input", _no_input),
        (tempfile, "tempdir", view.scratch)])
    started = time.monotonic()
    results: list[dict[str, Any]] = []
    stopped = None
    _ACTIVE.append(view)
    try:
        for index, source in enumerate(cells):
            left = limits.notebook_timeout - (time.monotonic() - started)
            if left <= 0:
                stopped = f"the notebook exceeded its time limit of {limits.notebook_timeout:g} s"
                break
            budget = min(limits.cell_timeout, left)
            shell.capture = _Capture()
            count = shell.execution_count
            cell_started = time.monotonic()
            _arm(budget)
            try:
                shell.run_cell(source, store_history=True)
            finally:
                _arm(0)
            results.append({"execution_count": count, "outputs": shell.capture.outputs})
            if time.monotonic() - cell_started >= budget:
                which = "cell" if budget == limits.cell_timeout else "notebook"
                limit = limits.cell_timeout if which == "cell" else limits.notebook_timeout
                stopped = f"cell {index} exceeded the {which}'s time limit of {limit:g} s"
                break
    finally:
        _ACTIVE.pop()
        _apply(undo)
        view.close()
        _restore(_BASELINE)
    return {"cells": results, "stopped": stopped, "seconds": time.monotonic() - started}


_BLOBS: dict[str, bytes] = {}  # every blob a host has sent this worker: ids are content hashes


def run_request(request_json: str) -> str:
    """`run_notebook` over JSON, for a host driving a worker: the request carries the code cells,
    the path map, the blobs (base64) that this worker has not been sent before, the working
    directory and the limits; the reply is the result. Blobs are kept for later requests: an id
    names its content, and each read is checked against it anyway.
    """
    import json

    request = json.loads(request_json)
    _BLOBS.update({blob_id: base64.b64decode(data) for blob_id, data in request.get("blobs", {}).items()})
    result = run_notebook(request["cells"], vfs.PathMap.from_dict(request["pathmap"]), _BLOBS,
                          request.get("cwd", "/"), Limits(**request.get("limits", {})))
    return json.dumps(result, sort_keys=True)

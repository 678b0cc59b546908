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
"tight"`) at the end of each cell, as under ipykernel; each such output's metadata carries a
description read from the figure's objects, `{"cellar": {"figure": "Figure ... line plot ..."}}`
(cellar.rerender.figures), which the index searches with the plot. Captured and changed:

- `print` / stderr / warnings -> stream outputs (consecutive writes to one stream merged);
- `%timeit` runs its statement once, in the notebook's namespace, and prints nothing;
- `%matplotlib anything` selects the inline backend; `!cmd`, `%sx`, `%pip`, `%%bash`, `os.system`
  and other shell escapes raise `ShellUnavailable`; `input()` raises IPython's StdinNotImplementedError;
- no network: sockets, `pyodide.http` and `js.fetch` raise `NetworkRefused` at once.

Files. While a notebook runs, `open`, `io.open`, `os.stat`/`lstat`/`listdir`/`chdir`/`getcwd`/
`mkdir`/`remove`, and with them `os.path.exists/isfile/isdir`, `pathlib`, pandas' `read_*` and
`numpy.loadtxt`, see the archive's path map (cellar.rerender.vfs): a mapped path reads its blob (checked
against its hash), a write goes to a scratch folder that is deleted after the notebook (and reads
back from there), and any other path is refused as cellar.rerender.vfs refuses it. The interpreter's own
files (the standard library, site-packages, matplotlib's caches) stay readable by library code, so
that imports and fonts work, but not by a cell's own `open`. That view is cellar.rerender.file_view's;
what `prepare()` can reuse from an earlier worker is cellar.rerender.start_cache's.

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

State. What the interpreter keeps from notebook to notebook (the IPython shell, the module state
restored before each notebook, the file hooks, the blobs a host has sent) is one `_Session`, made
by the first `prepare()` (or `run_notebook`) and held in `_session`: one per interpreter, because
IPython's shell is a singleton and the file hooks, once installed, stay.
"""

from __future__ import annotations

import base64
import builtins
import copy
import datetime as _datetime
import io
import os
import random
import socket
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cellar.rerender import figures, start_cache, vfs
from cellar.rerender.file_view import FileHooks, FileView, runtime_roots

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
        for name in ("create_connection", "getaddrinfo", "gethostbyname", "gethostbyname_ex")
    ]
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

    _REFUSED = frozenset({"fetch", "XMLHttpRequest", "WebSocket", "EventSource", "importScripts", "require", "process"})

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
        fixed = fixed.replace(tzinfo=_datetime.UTC)
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
    return [
        (time, "time", lambda: seconds),
        (time, "time_ns", lambda: int(seconds * 1e9)),
        (_datetime, "datetime", FixedDatetime),
        (_datetime, "date", FixedDate),
    ]


def _no_input(*args: Any, **kwargs: Any) -> str:
    from IPython.core.error import StdinNotImplementedError

    raise StdinNotImplementedError("input() is not available in the sandbox")


def _no_system(command: Any) -> int:
    """os.system: Emscripten's runs a shell of the host's under Node (child_process.spawnSync)."""
    raise ShellUnavailable(f"shell commands are not available in the sandbox: os.system({command!r})")


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
    return {
        mime: base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value
        for mime, value in data.items()
    }


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
        self._add({"output_type": "display_data", "data": _mime_bundle(data), "metadata": dict(metadata or {})})

    def result(self, data: Mapping[str, Any], metadata: Mapping[str, Any] | None, count: int) -> None:
        self._add(
            {
                "output_type": "execute_result",
                "execution_count": count,
                "data": _mime_bundle(data),
                "metadata": dict(metadata or {}),
            }
        )

    def error(self, ename: str, evalue: str, traceback: Sequence[str]) -> None:
        self._add({"output_type": "error", "ename": ename, "evalue": evalue, "traceback": list(traceback)})

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


def _make_shell() -> Any:
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class

    class CaptureHook(DisplayHook):
        """The last expression's format dict -> execute_result (ipykernel's ZMQShellDisplayHook)."""

        def start_displayhook(self) -> None:
            self.data: dict[str, Any] = {}
            self.metadata: dict[str, Any] | None = {}

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
            _, statement = self.parse_options(line, "n:r:tcp:qo", posix=False, strict=False, preserve_non_opts=True)
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


def _describe_figures() -> None:
    """Give every figure the inline backend shows a description read from its objects
    (cellar.rerender.figures), in its output's metadata as `{"cellar": {"figure": text}}`.

    The backend asks `_fetch_figure_metadata(fig)` for the metadata of each figure it displays
    (at the end of a cell, and on `plt.show()`); that function is wrapped, once per interpreter.
    A figure the describer cannot read gets no description; it is rendered all the same.
    """
    from matplotlib_inline import backend_inline

    fetch = backend_inline._fetch_figure_metadata
    if getattr(fetch, "cellar_describes", False):
        return

    def fetch_with_description(fig: Any) -> Any:
        metadata = fetch(fig)
        try:
            text = figures.describe(fig)
        except Exception:  # describe() does not raise; a figure must render even if it did
            text = ""
        if not text:
            return metadata
        return {**(metadata or {}), "cellar": {"figure": text}}

    fetch_with_description.cellar_describes = True  # type: ignore[attr-defined]
    backend_inline._fetch_figure_metadata = fetch_with_description


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


def _tzset() -> None:
    if hasattr(time, "tzset"):  # Pyodide has none: Emscripten's clock is UTC already
        time.tzset()


def _pandas_options() -> dict[str, Any]:
    if "pandas" not in sys.modules:
        return {}
    from pandas._config import config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            key: copy.deepcopy(config._get_option(key, silent=True))
            for key in config._registered_options
            if key not in config._deprecated_options
        }


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
    warnings.filters[:] = baseline.warning_filters  # type: ignore[index]  # a list at run time
    warnings._filters_mutated()  # type: ignore[attr-defined]  # forgets every "already shown once" registry entry
    sys.path[:] = baseline.sys_path
    os.environ.clear()
    os.environ.update(baseline.environ)
    _tzset()
    roots = runtime_roots()
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


# -- The session: what the interpreter keeps from notebook to notebook ------------------------------


class _Session:
    """The sandbox of one interpreter: its shell, the module state every notebook starts from, the
    file hooks, and the blobs a host has sent.

    One per interpreter: IPython's shell is a singleton, and the file hooks, once installed into
    builtins and os, stay. Only `_current()` makes one; the module's functions use it.
    """

    def __init__(self) -> None:
        self.hooks = FileHooks()
        self.shell: Any = None  # the SandboxShell, made by the first `prepare`
        self.baseline: _Baseline | None = None  # module state as `prepare` left it
        self.blobs: dict[str, bytes] = {}  # every blob a host has sent this worker: ids are content hashes

    def prepare(
        self, packages: Sequence[str] = ("numpy", "pandas", "matplotlib"), start_files: str | None = None
    ) -> float:
        """`prepare` (the module's) in this session."""
        started = time.perf_counter()
        os.environ["TZ"] = "UTC"
        _tzset()
        os.environ["MPLBACKEND"] = INLINE_BACKEND
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)
        self.hooks.install()
        with start_cache.around_imports(start_files):  # IPython's imports too: the shell is made here
            if self.shell is None:
                self.shell = _make_shell()
            shell = self.shell
            for name in packages:
                __import__(name)
            if "matplotlib" in packages:
                # Load the backend now (pyplot loads it lazily), so that the state every notebook
                # starts from has it active and interactive, as `%matplotlib inline` leaves it under
                # ipykernel.
                shell.enable_matplotlib("inline")
                _describe_figures()
        if "pandas" in sys.modules:
            import pandas

            for option, value in PANDAS_OPTIONS.items():
                pandas.set_option(option, value)
        shell.reset(new_session=False)
        self.baseline = _snapshot()
        return time.perf_counter() - started

    def run_notebook(
        self, cells: Sequence[str], pathmap: vfs.PathMap, blobs: Mapping[str, bytes], cwd: str, limits: Limits
    ) -> dict[str, Any]:
        """`run_notebook` (the module's) in this session, preparing it first if need be."""
        if self.baseline is None:
            self.prepare()
        assert self.baseline is not None  # prepare() took it
        shell = self.shell
        _restore(self.baseline)
        shell.reset(new_session=False)
        shell.execution_count = 1
        _seed()
        view = FileView(pathmap, blobs, cwd, lambda name: name in shell.compile._filename_map)
        streams = {
            "stdout": _Stream("stdout", lambda: shell.capture),
            "stderr": _Stream("stderr", lambda: shell.capture),
        }
        undo = _apply(
            _network_patches()
            + _clock_patches(limits.clock)
            + [
                (sys, "stdout", streams["stdout"]),
                (sys, "stderr", streams["stderr"]),
                (sys, "stdin", io.StringIO("")),
                (builtins, "input", _no_input),
                (os, "system", _no_system),
                (tempfile, "tempdir", view.scratch),
            ]
        )
        started = time.monotonic()
        results: list[dict[str, Any]] = []
        stopped = None
        self.hooks.push(view)
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
            self.hooks.pop()
            _apply(undo)
            view.close()
            _restore(self.baseline)
        return {"cells": results, "stopped": stopped, "seconds": time.monotonic() - started}

    def run_request(self, request_json: str) -> str:
        """`run_request` (the module's) in this session: its blobs are kept in `self.blobs`."""
        import json

        request = json.loads(request_json)
        self.blobs.update({blob_id: base64.b64decode(data) for blob_id, data in request.get("blobs", {}).items()})
        result = self.run_notebook(
            request["cells"],
            vfs.PathMap.from_dict(request["pathmap"]),
            self.blobs,
            request.get("cwd", "/"),
            Limits(**request.get("limits", {})),
        )
        return json.dumps(result, sort_keys=True)


# The interpreter's one session, made on first use (see `_Session`); nothing else in this module
# changes after import.
_session: _Session | None = None


def _current() -> _Session:
    global _session
    if _session is None:
        _session = _Session()
    return _session


# -- The sandbox's functions ------------------------------------------------------------------------


def prepare(packages: Sequence[str] = ("numpy", "pandas", "matplotlib"), start_files: str | None = None) -> float:
    """Set up the interpreter once (shell, matplotlib inline, pandas, UTC); return the seconds taken.

    Imports what notebooks commonly import up front, so that the state restored before every
    notebook includes them and the first notebook does not pay for them alone.

    `start_files` names a zip, in this interpreter's file system, of what preparing writes that a
    fresh interpreter of the same runtime can reuse: the bytecode of the modules it imports and
    matplotlib's font list. If it exists, it is unpacked first, so that the imports load bytecode
    rather than compile their sources and matplotlib does not rebuild its font cache; if not, this
    run writes it (see cellar.rerender.start_cache).
    """
    return _current().prepare(packages, start_files)


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
    return _current().run_notebook(cells, pathmap, blobs, cwd, limits)


def run_request(request_json: str) -> str:
    """`run_notebook` over JSON, for a host driving a worker: the request carries the code cells,
    the path map, the blobs (base64) that this worker has not been sent before, the working
    directory and the limits; the reply is the result. Blobs are kept for later requests: an id
    names its content, and each read is checked against it anyway.
    """
    return _current().run_request(request_json)

"""Hostile notebooks against the re-render worker's boundary: what holds below Python.

Archive notebooks are untrusted code, and Python in Pyodide reaches its JavaScript host (`js`,
`pyodide_js`, `pyodide.code.run_js`), so the sandbox's Python-level refusals are a courtesy, not a
boundary. Each probe below is a notebook cell run by the same `Worker` (`PyodideHost` + the sandbox)
that `cellar rerender` uses, and tries one way out: read a file of the host's, write one, start a
process or a thread, reach the network (a listener on 127.0.0.1 that this module starts counts
every connection, request and datagram that arrives), read the host's environment, signal a
process of the host's, or end the worker.

What must hold, after every probe: nothing arrived at the listeners, no probe printed a secret
(a token in a host file, in the host's environment, /etc/passwd's root line), no file was written,
the host's other process lives, the worker still answers (or the run ended stale with a reason),
and the probe's own refusal is in its output (so that a probe that breaks cannot pass quietly).
`test_the_probes_escape_an_unconfined_worker` shows the probes are real: without the confinement
the same probes read the secret and reach the listener.

The probes are also the input of benchmarks/security.py.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cellar.rerender import batch
from cellar.rerender.pyodide_host import confinement
from cellar.rerender.report import MIN_MEMORY_MB

PACKAGES = ["ipython", "matplotlib", "numpy", "pandas"]
MAPPED = b"tank,volume_m3\nforepeak,412.1\n"
MAPPED_ID = "sha256:" + __import__("hashlib").sha256(MAPPED).hexdigest()
PATHMAP = {"format": 1, "files": {"/data/tanks.csv": MAPPED_ID}}
BLOBS = {MAPPED_ID: __import__("base64").b64encode(MAPPED).decode()}

# What every probe notebook starts with: `node(name)` is a Node built-in module, reached through
# the JavaScript bridge the way a hostile notebook would; `log` keeps what an asynchronous callback
# gets (after the cell, print has no cell to print into), for the next notebook to print (AFTER).
PRELUDE = """\
import js
from pyodide.ffi import create_proxy
def node(name):
    return js.globalThis.process.getBuiltinModule(name)
js.globalThis.probeLog = js.Array.new()
log = create_proxy(lambda *args: js.globalThis.probeLog.push(" ".join(map(str, args))))
"""
AFTER = "import js, time\ntime.sleep(0.3)\nprint('log:', list(getattr(js.globalThis, 'probeLog', None) or []))\n6 * 7"


@dataclass
class Probe:
    """One hostile cell: `code` (with {secret_file}, {write_dir}, {port}, {udp_port}, {unix_socket},
    {victim} filled in) and `expect`, a pattern its output must show: the refusal."""

    id: str
    code: str
    expect: str
    ends_worker: bool = False


ACCESS = r"ERR_ACCESS_DENIED|Access to this API has been restricted"
NO_NETWORK = r"ENETUNREACH|EAI_AGAIN|ENOTFOUND|ECONNREFUSED|fetch failed|sent"
PROBES = [
    # -- files, through Node's fs ------------------------------------------------------------------
    Probe("fs-readdir-root", "print(list(node('fs').readdirSync('/')))", ACCESS),
    Probe("fs-readdir-cwd", "print(list(node('fs').readdirSync(js.globalThis.process.cwd())))", ACCESS),
    Probe("fs-read-etc-passwd", "print(node('fs').readFileSync('/etc/passwd', 'utf8'))", ACCESS),
    Probe("fs-read-host-file", "print(node('fs').readFileSync({secret_file!r}, 'utf8'))", ACCESS),
    Probe(
        "fs-promises-read",
        "node('fs').promises.readFile({secret_file!r}, 'utf8').then(log, log)\nprint('sent')",
        "sent",
    ),
    Probe("fs-write-host-file", "node('fs').writeFileSync({write_dir!r} + '/pwned', 'x'); print('wrote')", ACCESS),
    # the runtime's folder where Node sees it (the host's path is not in the new root)
    Probe(
        "fs-write-runtime",
        "import json\nfolder = json.loads(js.globalThis.process.argv[2])['runtime']\n"
        "node('fs').writeFileSync(folder + '/pwned', 'x'); print('wrote')",
        ACCESS,
    ),
    Probe("fs-mkdir", "node('fs').mkdirSync({write_dir!r} + '/pwned-dir'); print('made')", ACCESS),
    Probe(
        "nodefs-mount-root",
        "import pyodide_js\nfrom pyodide.ffi import to_js\npyodide_js.FS.mkdirTree('/host')\n"
        "pyodide_js.FS.mount(pyodide_js.FS.filesystems.NODEFS,"
        " to_js({{'root': '/'}}, dict_converter=js.Object.fromEntries), '/host')\n"
        "print(list(pyodide_js.FS.readdir('/host')))",
        "thrown as an error",  # Emscripten's ErrnoError for Node's ERR_ACCESS_DENIED
    ),
    Probe(
        "nodefs-mount-secret-dir",
        "import pyodide_js\nfrom pyodide.ffi import to_js\npyodide_js.FS.mkdirTree('/h2')\n"
        "pyodide_js.FS.mount(pyodide_js.FS.filesystems.NODEFS,"
        " to_js({{'root': {write_dir!r}}}, dict_converter=js.Object.fromEntries), '/h2')\n"
        "print(bytes(pyodide_js.FS.readFile('/h2/secret.txt').to_py()))",
        "thrown as an error",  # Emscripten's ErrnoError for Node's ERR_ACCESS_DENIED
    ),
    Probe("process-binding-fs", "print(js.globalThis.process.binding('fs'))", ACCESS),
    # -- code from strings, constructors, module loaders ------------------------------------------
    # The eval'd code catches its own error and returns Node's refusal: Pyodide once (1 CI run in
    # many) turned the error thrown through `js.eval` into "SystemError: error return without
    # exception set", which holds the boundary but hides whose refusal it was.
    Probe(
        "js-eval",
        "print(js.eval(\"try {{ process.getBuiltinModule('fs').readFileSync('/etc/passwd', 'utf8') }}"
        " catch (error) {{ 'refused: ' + error.code + ' ' + error.message }}\"))",
        ACCESS,
    ),
    Probe(
        "pyodide-js-run-js",
        "import pyodide_js\nprint(pyodide_js.runPython(\"import js; js.globalThis.process.getBuiltinModule('fs')"
        ".readFileSync('/etc/passwd', 'utf8')\"))",
        ACCESS,
    ),
    Probe(
        "pyodide-code-run-js",
        "from pyodide.code import run_js\n"
        "print(run_js(\"process.getBuiltinModule('fs').readFileSync('/etc/passwd', 'utf8')\"))",
        ACCESS,
    ),
    Probe(
        "function-return-this",
        "g = js.Function('return this')()\nprint(g.process.getBuiltinModule('fs').readdirSync('/'))",
        ACCESS,
    ),
    Probe(
        "constructor-walk",
        "p = js.Object.constructor.constructor('return process')()\n"
        "print(p.getBuiltinModule('fs').readFileSync({secret_file!r}, 'utf8'))",
        ACCESS,
    ),
    Probe(
        "create-require",
        "req = node('module').createRequire('/x.js')\nprint(req('fs').readFileSync({secret_file!r}, 'utf8'))",
        ACCESS,
    ),
    Probe("js-require", "print(js.require('fs').readdirSync('/'))", r"NetworkRefused|AttributeError|not available"),
    Probe(
        "dynamic-import-builtin",
        "from pyodide.code import run_js\n"
        "run_js(\"import('node:fs').then(fs => fs.writeFileSync({write_dir!r} + '/pwned', 'x'))"
        ".catch(e => globalThis.probeLog.push(String(e)))\")\nprint('sent')",
        "sent",
    ),
    Probe(
        "dynamic-import-file",
        "from pyodide.code import run_js\n"
        "run_js(\"import('file://' + {secret_module!r}).then(m => globalThis.probeLog.push(m.leak()))"
        ".catch(e => globalThis.probeLog.push(String(e)))\")\nprint('sent')",
        "sent",
    ),
    Probe(
        "process-dlopen",
        "js.globalThis.process.dlopen(js.Object.new(), '/lib/x.so')\nprint('loaded')",
        "loading addons is disabled",
    ),
    Probe(
        "wasi",
        'w = node(\'wasi\').WASI.new(js.JSON.parse(\'{{"version": "preview1", "preopens": {{"/": "/"}}}}\'))\n'
        "print('made', w)",
        ACCESS,
    ),
    Probe("inspector-open", "node('inspector').open(9229)\nprint('opened')", ACCESS),
    # -- processes and threads ---------------------------------------------------------------------
    Probe("child-process-spawn-sync", "print(node('child_process').spawnSync('id').stdout)", ACCESS),
    Probe("child-process-exec-sync", "print(node('child_process').execSync('cat /etc/passwd'))", ACCESS),
    Probe(
        "child-process-exec-async",
        "node('child_process').exec('touch ' + {write_dir!r} + '/pwned')\nprint('sent')",
        ACCESS,
    ),
    Probe(
        "worker-thread",
        "node('worker_threads').Worker.new(\"require('fs').writeFileSync('/tmp/pwned', 'x')\","
        " js.JSON.parse('{{\"eval\": true}}'))\nprint('started')",
        ACCESS,
    ),
    # no capability: root in the namespaces could otherwise change its user, mount or chroot out
    Probe("change-user", "js.globalThis.process.setuid(65534)\nprint('ESC' + 'APED: changed its user')", r"EPERM"),
    Probe("kill-host-process", "js.globalThis.process.kill({victim}, 'SIGKILL')\nprint('sent')", r"ESRCH|EPERM"),
    Probe("kill-process-group", "js.globalThis.process.kill(0, 'SIGTERM')\nprint('sent')", r"sent|ESRCH|EPERM"),
    Probe(
        "signal-parent",
        "ppid = js.globalThis.process.ppid\nprint('parent', ppid)\n"
        "if ppid > 0:\n    js.globalThis.process.kill(ppid, 0)\n    print('ESCAPED: the parent can be signalled')",
        r"parent 0",
    ),
    # -- the network (the listeners count everything that arrives) ----------------------------------
    Probe(
        "fetch-loopback",
        "js.globalThis.fetch('http://127.0.0.1:{port}/fetch').then(log, log)\nprint('sent')",
        NO_NETWORK,
    ),
    Probe(
        "http-request",
        "r = node('http').request('http://127.0.0.1:{port}/http')\nr.on('error', log)\nr.end()\nprint('sent')",
        NO_NETWORK,
    ),
    Probe(
        "net-connect-tcp",
        "s = node('net').connect({port}, '127.0.0.1')\ns.on('error', log)\nprint('sent')",
        NO_NETWORK,
    ),
    Probe(
        "net-connect-ipv6",
        "s = node('net').connect({port}, '::1')\ns.on('error', log)\nprint('sent')",
        NO_NETWORK,
    ),
    Probe(
        "net-connect-unix-socket",
        "s = node('net').connect({unix_socket!r})\ns.on('error', log)\nprint('sent')",
        NO_NETWORK + "|" + ACCESS,
    ),
    Probe(
        "dgram-udp",
        "d = node('dgram').createSocket('udp4')\nd.on('error', log)\n"
        "d.send('leak', {udp_port}, '127.0.0.1', log)\nprint('sent')",
        NO_NETWORK,
    ),
    Probe(
        "websocket",
        "js.globalThis.WebSocket.new('ws://127.0.0.1:{port}/ws')\nprint('sent')",
        r"undefined|not a function|AttributeError|TypeError|" + NO_NETWORK,
    ),
    Probe(
        "dns-lookup",
        "node('dns').lookup('example.org', log)\nprint('sent')",
        NO_NETWORK,
    ),
    Probe(
        "dns-resolve",
        "node('dns').resolve4('example.org', log)\nprint('sent')",
        NO_NETWORK,
    ),
    Probe(
        "load-package-url",
        "import pyodide_js\npyodide_js.loadPackage('http://127.0.0.1:{port}/x-1.0-py3-none-any.whl')\nprint('sent')",
        NO_NETWORK,
    ),
    # -- the host's environment ----------------------------------------------------------------------
    Probe("process-env", "print(dict(js.Object.entries(js.globalThis.process.env)))", r"TZ"),
    # the machine's name, which names a host of the firm's: a name of the worker's own instead
    Probe("os-hostname", "print('host name:', node('os').hostname())", r"host name: cellar-sandbox"),
    # the host's folders, in Node's command line and in a stack trace: the paths of the new root instead
    Probe(
        "process-argv",
        "p = js.globalThis.process\nprint('argv:', list(p.argv), list(p.execArgv), p.report.getReport().header.commandLine)",
        r"argv: .*/cellar/\d+/pyodide_host\.mjs",
    ),
    Probe("stack-trace", "print(js.Error.new('where').stack)", r"/cellar/\d+/pyodide/"),
    # -- the Python-level refusals (the first layer) -------------------------------------------------
    Probe("py-open-etc-passwd", "print(open('/etc/passwd').read())", r"PathRefused|refused"),
    Probe("py-open-host-file", "print(open({secret_file!r}).read())", r"PathRefused|refused"),
    Probe("py-listdir-root", "import os\nprint(os.listdir('/'))", r"PathRefused|refused|\[\]"),
    # a write goes to the sandbox's scratch area, thrown away after the notebook: never to the host
    Probe("py-write-host-file", "open({write_dir!r} + '/pwned', 'w').write('x')\nprint('wrote')", r"wrote|refused"),
    Probe(
        "py-socket",
        "import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('connected')",
        r"NetworkRefused",
    ),
    Probe(
        "py-raw-socket",
        "import _socket\ns = _socket.socket()\ns.settimeout(2)\ns.connect(('127.0.0.1', {port}))\nprint('connected')",
        r"Error|refused|Refused",
    ),
    Probe(
        "py-urllib",
        "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{port}/urllib')",
        r"URLError|NetworkRefused",
    ),
    Probe(
        "py-pyfetch",
        "from pyodide.http import pyfetch\npyfetch('http://127.0.0.1:{port}/pyfetch')",
        r"NetworkRefused",
    ),
    Probe("py-js-fetch", "js.fetch('http://127.0.0.1:{port}/jsfetch')", r"NetworkRefused"),
    Probe("py-js-process", "print(js.process.env)", r"NetworkRefused|not available"),
    Probe("py-subprocess", "import subprocess\nprint(subprocess.run(['id']))", r"Error|not supported|refused"),
    Probe("py-os-system", "import os\nprint(os.system('id'))", r"ShellUnavailable"),
    # os.system is refused in Python; posix.system, the same function, is not: under Node,
    # Emscripten's system() is child_process.spawnSync of a shell, which the permission model stops
    # (the worker stops answering and is replaced)
    Probe(
        "py-posix-system",
        "import posix\nprint(posix.system('touch ' + {write_dir!r} + '/pwned'))",
        r"did not answer|exited|Error",
        ends_worker=True,
    ),
    Probe("py-shell-line", "!cat /etc/passwd", r"ShellUnavailable"),
    # -- ending the worker: the run must end stale with a reason, and the next one go on --------------
    Probe("process-exit", "js.globalThis.process.exit(3)", r"exited \(3\)", ends_worker=True),
    # in its PID namespace Node is process 1, which a signal from inside does not end
    Probe("process-kill-self", "js.globalThis.process.kill(js.globalThis.process.pid, 'SIGKILL')", r"True|exited"),
    Probe("process-abort", "js.globalThis.process.abort()", r"exited|ERR|sent", ends_worker=True),
]


class _Counter(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server = self.server
        with server.lock:
            server.arrivals.append(f"tcp from {self.client_address}")
        try:
            self.request.settimeout(1)
            self.request.recv(4096)
            self.request.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
        except OSError:
            pass


class _TCP(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class _UnixCounter(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


@dataclass
class Listeners:
    """A TCP listener (HTTP enough for fetch to complete), a UDP socket and a Unix socket, each
    counting what arrives."""

    tmp: Path
    arrivals: list[str] = field(default_factory=list)

    def __enter__(self) -> Listeners:
        lock = threading.Lock()
        self.tcp = _TCP(("127.0.0.1", 0), _Counter)
        self.unix_path = str(self.tmp / "listener.sock")
        self.unix = _UnixCounter(self.unix_path, _Counter)
        for server in (self.tcp, self.unix):
            server.lock, server.arrivals = lock, self.arrivals
            threading.Thread(target=server.serve_forever, daemon=True).start()
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.settimeout(0.2)
        self._stop = threading.Event()

        def receive() -> None:
            while not self._stop.is_set():
                try:
                    _, sender = self.udp.recvfrom(4096)
                    with lock:
                        self.arrivals.append(f"udp from {sender}")
                except OSError:
                    continue

        threading.Thread(target=receive, daemon=True).start()
        return self

    @property
    def port(self) -> int:
        return self.tcp.server_address[1]

    @property
    def udp_port(self) -> int:
        return self.udp.getsockname()[1]

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for server in (self.tcp, self.unix):
            server.shutdown()
            server.server_close()
        self.udp.close()


class Target:
    """Everything a probe aims at, and the checks that nothing was hit."""

    def __init__(self, tmp: Path, runtime: Path) -> None:
        self.token = "cellar-probe-" + secrets.token_hex(8)
        self.write_dir = tmp / "host"
        self.write_dir.mkdir()
        self.secret_file = self.write_dir / "secret.txt"
        self.secret_file.write_text(self.token)
        self.secret_module = self.write_dir / "leak.mjs"
        self.secret_module.write_text(f"export function leak() {{ return {self.token!r}; }}\n")
        self.runtime = runtime
        self.listeners = Listeners(tmp).__enter__()
        self.victim = self._spawn_victim()
        self.before = self._files()

    @staticmethod
    def _spawn_victim() -> subprocess.Popen:
        """A process of the host's for a probe to try to kill."""
        return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])

    def fill(self, probe: Probe) -> str:
        return probe.code.format(
            secret_file=str(self.secret_file),
            secret_module=str(self.secret_module),
            write_dir=str(self.write_dir),
            port=self.listeners.port,
            udp_port=self.listeners.udp_port,
            unix_socket=self.listeners.unix_path,
            victim=self.victim.pid,
        )

    def _files(self) -> set[str]:
        """The files a probe aims to write to (the folders of the host's that it names, /tmp/pwned)."""
        found = {path for path in ("/tmp/pwned",) if Path(path).exists()}
        for folder in (self.write_dir, self.runtime, Path.cwd()):
            found |= {str(path) for path in folder.iterdir()}
        return found

    def escapes(self, text: str) -> list[str]:
        """Every sign of an escape: a secret in the output, an arrival, a file, a killed process."""
        found = []
        if "ESCAPED" in text:
            found.append("the probe says it got out")
        if self.token in text:
            found.append("a host secret (file, module or environment) is in the output")
        if re.search(r"root:.*:0:0:", text):
            found.append("/etc/passwd is in the output")
        if str(self.runtime.resolve()) in text:
            found.append("a host path (the runtime's folder) is in the output")
        found += [f"arrived at a listener: {arrival}" for arrival in self.listeners.arrivals]
        files = self._files()
        found += [f"written: {path}" for path in sorted(files - self.before)]
        self.listeners.arrivals.clear()  # each probe answers for its own
        self.before = files
        if self.victim.poll() is not None:
            found.append(f"the host process {self.victim.pid} was killed")
            self.victim = self._spawn_victim()  # each probe answers for its own
        return found

    def close(self) -> None:
        self.listeners.__exit__()
        self.victim.kill()
        self.victim.wait()


def run_probe(worker: batch.Worker, target: Target, probe: Probe) -> tuple[str, dict]:
    """Run one probe as a notebook (prelude + probe cell); return its output text and the result."""
    request = {"cells": [PRELUDE, target.fill(probe)], "pathmap": PATHMAP, "cwd": "/", "limits": {"cell_timeout": 20}}
    result = worker.run(request, BLOBS, timeout=45)
    # a second notebook in the same worker: it must answer; between the two Node's loop runs
    # whatever the probe left pending (a connection, a callback), and AFTER prints what it logged
    time.sleep(0.5)
    after = worker.run({**request, "cells": [AFTER]}, BLOBS, timeout=60)
    text = json.dumps(result, ensure_ascii=False) + json.dumps(after, ensure_ascii=False)
    outputs = [output for cell in after["cells"] for output in cell["outputs"]]
    assert any("42" in json.dumps(output) for output in outputs), f"the worker does not answer after the probe: {after}"
    return text, result


@pytest.fixture(scope="module")
def target(site, tmp_path_factory) -> Target:
    runtime, _ = batch.site_runtime(site)
    target = Target(tmp_path_factory.mktemp("boundary"), runtime)
    os.environ["CELLAR_PROBE_SECRET"] = target.token  # the worker must not see the host's environment
    yield target
    os.environ.pop("CELLAR_PROBE_SECRET", None)
    target.close()


@pytest.fixture(scope="module")
def worker(site, target) -> batch.Worker:
    runtime, wheels = batch.site_runtime(site)
    worker = batch.Worker(runtime, wheels, PACKAGES)
    yield worker
    worker.close()


def test_the_boundary_holds_on_this_machine():
    """CI runs as root: the permission model, the namespaces and the memory cap must be there."""
    held = confinement()
    assert held.permission and held.unshare and held.prlimit and held.tethered, held.describe()


def test_a_mapped_file_still_reads(worker, target):
    text, result = run_probe(worker, target, Probe("mapped", "print(open('/data/tanks.csv').read())", "forepeak"))
    assert "forepeak,412.1" in text and result["stopped"] is None


@pytest.mark.parametrize("probe", PROBES, ids=[probe.id for probe in PROBES])
def test_a_hostile_notebook_does_not_escape(worker, target, probe):
    text, result = run_probe(worker, target, probe)
    assert target.escapes(text) == []
    assert re.search(probe.expect, text), f"the probe's refusal ({probe.expect}) is not in its output: {text[:2000]}"
    if probe.ends_worker:
        assert result["stopped"] and re.search("exited|did not answer", result["stopped"]), result["stopped"]


# A gibibyte taken, not only reserved (written to), from Python's heap and from JavaScript's: more
# than a worker of MIN_MEMORY_MB has left once its packages are loaded.
MEMORY_PROBES = [
    Probe("python-memory", "block = bytearray(1 << 30)\nprint('python took', len(block) >> 20, 'MB')", "MemoryError"),
    Probe(
        "js-memory",
        "block = js.Uint8Array.new(1 << 30)\nblock.fill(1)\nprint('javascript took', block.length >> 20, 'MB')",
        # or, when the heap the Python probe grew leaves no room to turn the RangeError into a
        # Python exception, the SystemError of that (seen once in CI, 2026-12-06): failed either way
        "RangeError: Array buffer allocation failed|SystemError: error return without exception set",
    ),
]


def test_a_notebook_cannot_take_more_memory_than_the_workers_cap(site, target, monkeypatch):
    """rerender.json's `memory_mb` is enforced by the operating system (RLIMIT_DATA): past it an
    allocation fails in the cell that asks, Python's and JavaScript's alike, and the worker goes
    on. The control: the same notebooks in a worker without the cap take their gigabyte."""
    runtime, wheels = batch.site_runtime(site)
    capped = batch.Worker(runtime, wheels, PACKAGES, memory_mb=MIN_MEMORY_MB)
    try:
        for probe in MEMORY_PROBES:
            text, result = run_probe(capped, target, probe)
            assert re.search(probe.expect, text) and " took " not in text, text[:2000]
            assert result["stopped"] is None
    finally:
        capped.close()
    real = batch.PyodideHost
    monkeypatch.setattr(batch, "PyodideHost", lambda *args, memory, **kwargs: real(*args, **kwargs))
    uncapped = batch.Worker(runtime, wheels, PACKAGES, memory_mb=MIN_MEMORY_MB)
    try:
        for probe in MEMORY_PROBES:
            text, _ = run_probe(uncapped, target, probe)
            assert "took 1024 MB" in text, text[:2000]
    finally:
        uncapped.close()


def test_the_probes_escape_an_unconfined_worker(site, target, monkeypatch):
    """The control: without the confinement the same probes get out, so the checks above can fail."""
    runtime, wheels = batch.site_runtime(site)
    real = batch.PyodideHost
    monkeypatch.setattr(batch, "PyodideHost", lambda *args, **kwargs: real(*args, **kwargs, confine=False))
    worker = batch.Worker(runtime, wheels, PACKAGES)
    try:
        for probe_id in (
            "fs-read-host-file",
            "js-eval",
            "fetch-loopback",
            "net-connect-tcp",
            "process-env",
            "py-posix-system",
        ):
            probe = next(probe for probe in PROBES if probe.id == probe_id)
            text, _ = run_probe(worker, target, probe)
            assert target.escapes(text), f"{probe_id} did not escape an unconfined worker"
            target.listeners.arrivals.clear()
    finally:
        worker.close()


# A host that starts a confined Node process that would run for ever, prints its pid and waits.
HOST = """
import json, subprocess, sys
from dataclasses import replace
from cellar.rerender.pyodide_host import NODE_ENV, confinement
held = confinement() if sys.argv[2] == "tethered" else replace(confinement(), tethered=())
command = held.command([sys.argv[1], "-e", "setInterval(() => {}, 1000)"], {}, 2**30)
print(subprocess.Popen(command, env=NODE_ENV, start_new_session=True).pid, flush=True)
sys.stdin.read()
"""


def _descendants(pid: int) -> set[int]:
    """`pid` and every process below it, from /proc (a PID namespace's processes are seen there)."""
    parents = {}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
        except (ValueError, OSError):  # not a process, or one that ended meanwhile
            continue
    found, frontier = {pid}, [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        frontier = [child for child in children if child not in found]
        found.update(frontier)
    return found


def _node_running_below(pid: int, seconds: float = 30.0) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        processes = _descendants(pid)
        for process in processes:
            try:
                with open(f"/proc/{process}/comm") as handle:
                    if handle.read().strip() == "node":
                        return processes
            except OSError:
                continue
        time.sleep(0.1)
    raise AssertionError(f"no Node process started below {pid}")


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def _alive(pids: set[int], seconds: float) -> set[int]:
    """Which of `pids` still run after up to `seconds`."""
    deadline = time.monotonic() + seconds
    while (left := set(filter(_running, pids))) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.parametrize("tether", ["tethered", "untethered"])
def test_a_worker_ends_with_its_host(tether):
    """A host killed by a signal runs no clean-up (`timeout` stopping `cellar rerender`, an OOM
    kill), and Node, the first process of its PID namespace, ignores a plain SIGTERM: the operating
    system must end the worker with its host (`setpriv --pdeathsig`). The control: without the
    tether, the same worker runs on after its host is gone, so this test can fail."""
    if not confinement().tethered:
        pytest.skip(confinement().describe())
    node = shutil.which("node") or "node"
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, node, tether], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    worker = int(host.stdout.readline())
    processes = _node_running_below(worker)
    host.kill()
    host.wait()
    left = _alive(processes, 10.0)
    for pid in left:  # the control's orphans
        os.kill(pid, signal.SIGKILL)
    if tether == "tethered":
        assert left == set(), f"processes {sorted(left)} outlived their host"
    else:
        assert left, "an untethered worker ended with its host: the tethered case shows nothing"

"""Python in Pyodide under Node, driven from CPython.

The tests use it to show that Pyodide computes what CPython computes, and the benchmarks to
time the same code in both. It runs the runtime and the cellar wheel of a built site, so what
it measures is what the browser tab runs.

    with PyodideHost(site / "pyodide", wheels=[...]) as host:
        host.run("import cellar.ingest.provenance as p; p.revision('abc')")   # -> 'ba7816bf...'

    with PyodideHost(site / "pyodide", files={"/tmp/in.zip": "in.zip"}) as host:  # copied in
        host.read_file("/tmp/in.zip")   # -> the bytes of a file in Pyodide's file system

Python in Pyodide reaches its JavaScript host (`import js`, `pyodide_js`, `pyodide.code.run_js`),
so code run here is confined below Python, by the operating system and Node (`confine=True`,
the default; see `confinement()`):

- Node's permission model: the process may read the runtime folder, the wheels, the files copied
  in and this module's script, and nothing else; it may write no file, start no child process or
  worker thread and load no addon. (A file reaches Pyodide through this host: copied in at start
  or sent over stdin, never read by path from Python.)
- Where `unshare` works (root, or unprivileged user namespaces): a new network namespace, whose
  only interface, loopback, is down, so that no connection leaves the process, to 127.0.0.1
  neither; and a new PID namespace, in which no other process of the machine can be signalled.
  With a mount namespace too, Node runs chrooted into a root of its own that holds the system's
  programs and the files it may read, these at `/cellar/<n>/<name>` (`INSIDE`): no other file,
  and no host path for a notebook to print from Node's command line or a stack trace.
- Where `setpriv` is, Node starts there with no capability and none to gain back: as root in
  the namespaces it could otherwise change its user, mount, or leave the new root.
- Where `prlimit` is, the process's memory is capped (`memory`: RLIMIT_DATA, which counts the
  WebAssembly memory Pyodide grows into, the JavaScript heap and every ArrayBuffer): beyond it
  an allocation fails (Python's MemoryError, JavaScript's RangeError) instead of taking the host's.
- A scrubbed environment (no variable of the host's is passed on) and a session of its own.
- Where `setpriv` can, the process ends when the host does (`--pdeathsig KILL`, kept across the
  exec of `prlimit` and `unshare`, whose `--kill-child` ends Node in turn): a host killed by a
  signal, which runs no clean-up, leaves no worker behind, and Node, the first process of its PID
  namespace, ignores the signals a host's caller may send it.

The code run can also write to the process's stdout, where replies come: a reply names its
request by a random id, which code run for one request cannot know for the next, and a reply whose
value is not JSON text raises ForgedReply. The host holds at most `max_reply` bytes of a line
(OversizedReply beyond: code run in Pyodide can write without end). What the process writes that
is no reply (Pyodide's own output, on stderr, and stray lines on stdout) is echoed on the host's
stderr, its control characters written as escapes and at most `ECHO_LIMIT` bytes a request: a
notebook's `os.write(1, ...)` must neither flood the operator's console or CI log nor recolour it
or forge a status line there.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from os import PathLike
from pathlib import Path
from typing import Any

from cellar.terminal import shown as terminal_safe

SCRIPT = Path(__file__).with_name("pyodide_host.mjs")
MARK = "\x1ecellar-host "
# The longest reply line the host reads (a fresh notebook's outputs, as JSON in JSON): a notebook
# that prints or plots without end must not fill the host's memory.
MAX_REPLY = 256 * 2**20
# What a worker writes besides its replies that the host echoes per request (a traceback of a
# failed start, Pyodide's "Loading numpy"); a notebook's endless writes are cut, not echoed.
ECHO_LIMIT = 64 * 2**10


# The namespaces `unshare` makes, as root or else as an unprivileged user in a user namespace of
# its own: a network namespace (loopback down: no network, 127.0.0.1 neither), a PID namespace (no
# other process to signal) and a mount namespace in which Node runs chrooted into a root that holds
# only the system's programs and the paths it may read (no other file, no Unix socket of the
# host's: Node's permission model does not cover connecting to one). --kill-child: killing
# unshare (a timeout) kills Node with it. Where the mount namespace fails, the others alone.
# UTS: a host name of its own (`os.hostname()` names no machine of the firm's); IPC: no System V
# semaphore, shared memory or message queue of the host's.
NAMESPACES = ("net", "pid", "uts", "ipc")
_UNSHARE = ("--net", "--pid", "--uts", "--ipc", "--fork", "--kill-child")
_MOUNT = ("--mount", "--propagation", "private")
_AS_USER = ("--map-root-user",)
# Run last, in the namespaces: Node starts with no capability, none to gain back (as root it could
# otherwise mount, chroot out or change its user: a bug of Node's or V8's would give it all that).
# The signal the process gets when its parent, the host, ends (prctl's PR_SET_PDEATHSIG, which
# exec keeps): it cannot be caught, and reaches the first process of a PID namespace too.
_TETHERED = ("--pdeathsig", "KILL", "--")
_NO_CAPABILITIES = ("--no-new-privs", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--")
# How a memory cap is tried at start (1 GiB: Node starts in far less). In bytes: util-linux reads
# `1G` in prlimit as something else, and Node then dies at start (SIGSEGV).
_TRIAL_MEMORY = 2**30
# What the new root holds besides the paths Node may read: the programs and their libraries.
SYSTEM_PATHS = ("/usr", "/bin", "/lib", "/lib64", "/sbin", "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
# The empty folder each worker's new root is mounted on, in its own mount namespace (so one
# folder serves them all, and the host sees it empty).
ROOT_MOUNT = Path(tempfile.gettempdir()) / "cellar-sandbox-root"
# Where, in a root of its own, Node finds the files it may read (the runtime, this module's script,
# the wheels, the start files): `/cellar/<n>/<name>`, not their host paths, which a notebook could
# print from Node's `process.argv`, `execArgv` or a stack trace (`/home/<user>/...` names a user and
# the folders of the machine; read in a hostile-input sweep, 2026-12-07).
INSIDE = "/cellar"
# Run inside the namespaces: sh -c NEW_ROOT cellar-sandbox MOUNT (PATH AT)... -- COMMAND...
NEW_ROOT = r"""
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin  # not exported: Node sees no PATH
new=$1; shift
mount -t tmpfs -o mode=0755 cellar-sandbox "$new"
while [ "$1" != "--" ]; do
  path=$1; at=$2; shift 2  # the host's path, and where the new root holds it
  # A path that is there already came with a folder bound before it: nothing to do. Only what is
  # not there is made (mkdir, the empty file a file is bound onto), so only ever in the tmpfs,
  # never through a bound folder into the host's own files.
  if [ -e "$new$at" ] || [ -L "$new$at" ]; then continue; fi
  if [ -L "$path" ]; then mkdir -p "$new$(dirname "$at")"; ln -s "$(readlink "$path")" "$new$at"; continue; fi
  if [ -d "$path" ]; then mkdir -p "$new$at"; mount --rbind "$path" "$new$at"
  elif [ -e "$path" ]; then mkdir -p "$new$(dirname "$at")"; : > "$new$at"; mount --bind "$path" "$new$at"
  else continue
  fi
  mount -o remount,bind,ro "$new$at" 2>/dev/null || true
done
shift
# The new PID namespace's own /proc (Node reads its memory use there), read-only: no write to a
# /proc file should a flaw of Node's permission model ever let one through
mkdir -p "$new/proc"; mount -t proc -o ro,nosuid,nodev,noexec proc "$new/proc" 2>/dev/null || true
# The host name, in the new UTS namespace only: until now, a copy of the host's
echo cellar-sandbox > /proc/sys/kernel/hostname 2>/dev/null || true
cd /
unset OLDPWD PWD  # sh's, which would tell Node the host's working directory
exec chroot "$new" "$@"
"""  # The variables Node is started with: none of the host's (secrets, NODE_OPTIONS), and the clock's
# zone fixed, as the sandbox fixes Python's.
NODE_ENV = {"TZ": "UTC"}


class PyodideError(Exception):
    """Python code raised inside Pyodide; the message is its traceback."""


class PyodideExited(PyodideError):
    """The Node process running Pyodide is gone (it crashed, ran out of memory or was killed)."""


class ForgedReply(PyodideError):
    """The reply to a request is not one this host's script writes: code run in Pyodide wrote it."""


class OversizedReply(PyodideError):
    """A line on the process's stdout grew past the host's `max_reply`: the process was ended."""


def _exit_status(code: int) -> str:
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


@dataclass(frozen=True)
class Confinement:
    """What confines a Node process running Pyodide, below the sandbox's Python-level refusals.

    `permission`: the flags that turn Node's permission model on (empty where this Node has none);
    `unshare`: the `unshare` command that starts it in new namespaces (empty where that fails here);
    `new_root`: whether it runs chrooted into a root of its own (a mount namespace);
    `missing`: what does not hold on this machine and why, one sentence each;
    `setpriv`: the `setpriv` that drops every capability before Node starts, in the namespaces
    (empty where there is none);
    `prlimit`: the `prlimit` that caps the memory of everything it starts (empty where there is none);
    `tethered`: the `setpriv` that kills it when the host ends (empty where there is none).
    """

    permission: tuple[str, ...]
    unshare: tuple[str, ...]
    new_root: bool
    missing: tuple[str, ...]
    setpriv: tuple[str, ...] = ()
    prlimit: tuple[str, ...] = ()
    tethered: tuple[str, ...] = ()

    def places(self, paths: Sequence[str]) -> dict[str, str]:
        """Where Node sees each of the host `paths` it will read (a folder's with a trailing
        separator): in a root of its own, `INSIDE/<n>/<name>`; else where they are."""
        if not (self.unshare and self.new_root):
            return {path: path for path in paths}
        return {
            path: f"{INSIDE}/{n}/{Path(path).name}" + ("/" if path.endswith(os.sep) else "")
            for n, path in enumerate(dict.fromkeys(paths))
        }

    def command(self, node: list[str], readable: Mapping[str, str], memory: int | None = None) -> list[str]:
        """`node` (a command line, its paths as Node sees them) confined, `readable` the host
        paths it may read and where it sees each (`places`; a path it sees where it is maps to
        itself), its memory capped at `memory` bytes where this machine can (none when None)."""
        confined = self._confined(node, readable)
        if memory is not None and self.prlimit:
            # Outside the namespaces: the limit is inherited by all it starts, and, once the
            # capabilities are dropped, Node cannot raise it again.
            confined = [*self.prlimit, f"--data={memory}", "--", *confined]
        # Outermost: the host's child itself must end with the host
        return [*self.tethered, *confined]

    def _confined(self, node: list[str], readable: Mapping[str, str]) -> list[str]:
        if self.permission:
            allowed = (f"--allow-fs-read={seen}" for seen in readable.values())
            node = [node[0], *self.permission, *allowed, *node[1:]]
        if not self.unshare:
            return node
        binary, node = node[0], [*self.setpriv, *node]
        if not self.new_root:
            return [*self.unshare, "--", *node]
        ROOT_MOUNT.mkdir(exist_ok=True)
        system = [path for path in SYSTEM_PATHS if os.path.lexists(path)] + [str(Path(binary).resolve())]
        mounts = {**{path: path for path in system}, **readable}
        paths = [part.rstrip(os.sep) for path, seen in mounts.items() for part in (path, seen)]
        return [
            *self.unshare,
            "--",
            shutil.which("sh") or "/bin/sh",
            "-c",
            NEW_ROOT,
            "cellar-sandbox",
            str(ROOT_MOUNT),
            *paths,
            "--",
            *node,
        ]

    def namespaces(self) -> list[str]:
        return (["mount", *NAMESPACES] if self.new_root else list(NAMESPACES)) if self.unshare else []

    def describe(self, memory_mb: int | None = None) -> str:
        """One line for a report: which boundaries hold (`memory_mb`: the workers' memory cap)."""
        held = []
        if self.permission:
            held.append(
                "Node's permission model (reads: the runtime, the wheels and the start files only; "
                "no file writes, child processes, worker threads or addons)"
            )
        if self.unshare:
            held.append(
                "new network, PID, UTS and IPC namespaces (no network, 127.0.0.1 neither; no other process)"
                + (
                    ", chrooted into a root of its own (no other file or Unix socket; host name cellar-sandbox)"
                    if self.new_root
                    else ""
                )
                + (", no capabilities" if self.setpriv else "")
            )
        if self.prlimit and memory_mb is not None:
            held.append(f"{memory_mb:,} MB of memory per worker (RLIMIT_DATA: beyond it an allocation fails)")
        if self.tethered:
            held.append("killed with the host (no worker outlives it)")
        line = "sandbox boundary: " + (" + ".join(held) if held else "none below Python")
        return line + "".join(f"; NOT HELD: {reason}" for reason in self.missing)

    def to_dict(self, memory_mb: int | None = None) -> dict[str, Any]:
        return {
            "permission": list(self.permission),
            "namespaces": self.namespaces(),
            "memory_mb": memory_mb if self.prlimit else None,
            "missing": list(self.missing),
            "summary": self.describe(memory_mb),
        }


def _works(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=30, env=NODE_ENV).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.cache
def confinement(node: str = "node") -> Confinement:
    """What this machine can confine `node` with, found once per process by trying it.

    The permission model's flag is `--permission` from Node 22 on, `--experimental-permission`
    in Node 20 and 21; `unshare` needs root or unprivileged user namespaces, and the new root
    `mount` and `chroot` in the namespace; `prlimit` (util-linux) any user. Set
    CELLAR_NO_NAMESPACES=1 to go without namespaces (to measure what the permission model alone
    holds).
    """
    node = shutil.which(node) or node
    missing = []
    permission: tuple[str, ...] = ()
    for flag in ("--permission", "--experimental-permission"):
        for quiet in (("--disable-warning=ExperimentalWarning",), ()):
            if not permission and _works([node, flag, *quiet, "-e", "0"]):
                permission = (flag, *quiet)
    if not permission:
        missing.append(f"{node} has no permission model (Node 20 or later has): files are not confined")
    prlimit = shutil.which("prlimit")
    capped = (prlimit,) if prlimit and _works([prlimit, f"--data={_TRIAL_MEMORY}", "--", node, "-e", "0"]) else ()
    if not capped:
        missing.append(
            "no `prlimit` here (or Node fails under it): a notebook can take as much of the host's memory as it likes"
        )
    setpriv = shutil.which("setpriv")
    tethered = (setpriv, *_TETHERED) if setpriv and _works([setpriv, *_TETHERED, node, "-e", "0"]) else ()
    if not tethered:
        missing.append("no `setpriv --pdeathsig` here: a worker may outlive a host killed by a signal")
    namespaces = _namespaces(node, permission, setpriv, missing)
    return replace(namespaces, prlimit=capped, tethered=tethered, missing=tuple(missing))


def _namespaces(node: str, permission: tuple[str, ...], setpriv: str | None, missing: list[str]) -> Confinement:
    """`confinement`'s namespaces, new root and capabilities (`setpriv`: its path, None where
    there is none): the first that works here, and what does not added to `missing`."""
    if os.environ.get("CELLAR_NO_NAMESPACES"):
        missing.append("namespaces turned off (CELLAR_NO_NAMESPACES): the network and other processes are reachable")
        return Confinement(permission, (), False, ())
    if shutil.which("unshare") is None:
        missing.append("no `unshare` here: the network and other processes are reachable")
        return Confinement(permission, (), False, ())
    for new_root in (True, False):
        for user in ((), _AS_USER):
            unshare = (shutil.which("unshare"), *user, *(_MOUNT if new_root else ()), *_UNSHARE)
            trial = Confinement(permission, unshare, new_root, ())
            if _works(trial.command([node, "-e", "0"], {})):
                if not new_root:
                    missing.append("no mount namespace here: Unix sockets of the host's are reachable")
                dropped = replace(trial, setpriv=(setpriv, *_NO_CAPABILITIES)) if setpriv else trial
                if dropped is trial or not _works(dropped.command([node, "-e", "0"], {})):
                    missing.append("no `setpriv` here: Node keeps the capabilities it starts with")
                    dropped = trial
                return dropped
    missing.append(
        "`unshare --net --pid` is not permitted here (no root, no user namespaces): "
        "the network and other processes are reachable"
    )
    return Confinement(permission, (), False, ())


class PyodideHost:
    """One Node process running Pyodide, with the given wheels installed, packages loaded and
    `files` (Pyodide path -> host path) copied into Pyodide's file system.

    `read`: host folders or files that trusted code (a test, a benchmark) mounts with Emscripten's
    NODEFS; the confined process may read them too. Never a notebook's: notebooks get their files
    through `files` or over stdin. `confine=False` starts Node without any of the confinement.
    `memory`: the bytes the process may take (where `prlimit` is; None: no cap, for trusted code);
    `max_reply`: the longest line of its stdout the host holds (OversizedReply beyond).
    """

    def __init__(
        self,
        runtime: str | PathLike[str],
        wheels: Sequence[str | PathLike[str]] = (),
        packages: Sequence[str] = ("numpy",),
        files: Mapping[str, str | PathLike[str]] | None = None,
        node: str = "node",
        start_timeout: float = 180.0,
        confine: bool = True,
        read: Sequence[str | PathLike[str]] = (),
        memory: int | None = None,
        max_reply: int = MAX_REPLY,
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
        node = shutil.which(node) or node
        self.confinement = confinement(node) if confine else Confinement((), (), False, ("not confined",))
        script = str(SCRIPT.resolve())
        places = self.confinement.places(
            [options["runtime"] + os.sep, script, *options["wheels"], *options["files"].values()]
        )
        seen = {
            "runtime": places[options["runtime"] + os.sep].rstrip("/"),
            "wheels": [places[wheel] for wheel in options["wheels"]],
            "packages": options["packages"],
            "files": {target: places[source] for target, source in options["files"].items()},
        }
        # trusted code's NODEFS mounts (`read`) name host paths: Node sees those where they are
        trusted = [str(Path(path).resolve()) + (os.sep if Path(path).is_dir() else "") for path in read]
        readable = {**places, **{path: path for path in trusted}}
        command = self.confinement.command([node, places[script], json.dumps(seen)], readable, memory)
        started = time.perf_counter()
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,  # Python's own output: echoed on ours (_echo)
            text=True,
            encoding="utf-8",
            bufsize=1,
            env=NODE_ENV if confine else None,
            start_new_session=True,  # no signal a notebook sends to its process group reaches ours
        )
        self._next_id = 0
        self._closed = False
        self._received = bytearray()  # stdout as read, up to the line not yet complete
        self._scanned = 0  # how much of it holds no line end
        self.max_reply = max_reply
        self._echo_left = ECHO_LIMIT  # of this request's echo (_echo)
        self._read_reply(0, start_timeout)
        self.start_seconds = time.perf_counter() - started

    def run(self, code: str, timeout: float | None = 300.0) -> Any:
        """Run Python source in Pyodide; return the JSON-decoded value of its final expression
        (ForgedReply when the reply's value is not JSON text)."""
        value = self._request({"code": code}, timeout)
        try:
            return json.loads(value)
        except (TypeError, ValueError):
            raise ForgedReply(f"the reply's value is not JSON text: {str(value)[:80]!r}") from None

    def read_file(self, path: str, timeout: float | None = 60.0) -> bytes:
        """The bytes of a file in Pyodide's file system (PyodideError naming it if there is none)."""
        value = self._request({"read": path}, timeout)
        if not isinstance(value, str):
            raise ForgedReply(f"the reply for {path} is not base64 text")
        return base64.b64decode(value)

    @property
    def exit_code(self) -> int | None:
        """The Node process's exit status once it has ended (a negative signal number if killed)."""
        return self._process.poll()

    def _request(self, request: dict[str, Any], timeout: float | None) -> Any:
        # Unguessable, and exact as a JavaScript number: a reply that code run for an earlier
        # request wrote ahead, with the ids that would follow, answers nothing.
        self._next_id = secrets.randbits(52) + 1
        self._echo_left = ECHO_LIMIT
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
        stdout, stderr = self._process.stdout, self._process.stderr
        assert stdout is not None and stderr is not None  # started with both as pipes
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            if not stderr.closed:
                selector.register(stderr, selectors.EVENT_READ)
            while True:
                for line in self._complete_lines():
                    if not line.startswith(MARK):
                        self._echo(line + "\n")
                        continue
                    message = _message(line[len(MARK) :])
                    if message is None or message["id"] != request_id:
                        continue
                    if not message["ok"]:
                        raise PyodideError(message["error"])
                    return message["value"]
                if len(self._received) > self.max_reply:  # what is left is one line, not yet ended
                    self.close()
                    raise OversizedReply(f"the worker wrote a line of more than {self.max_reply / 2**20:.3g} MB")
                remaining = None if deadline is None else deadline - time.monotonic()
                ready = [] if remaining is not None and remaining <= 0 else selector.select(remaining)
                if not ready:
                    self.close()
                    raise TimeoutError(f"Pyodide did not answer within {timeout} s")
                if any(key.fileobj is stderr for key, _ in ready):
                    said = os.read(stderr.fileno(), 1 << 16)
                    if said:
                        self._echo(said.decode("utf-8", errors="replace"))
                    else:  # ended: the process is ending, which stdout's end tells below
                        selector.unregister(stderr)
                        stderr.close()
                    continue
                # Whatever has arrived, never a blocking read of a whole line: code in Pyodide
                # can write half a line to stdout and loop, and the deadline must still hold.
                data = os.read(stdout.fileno(), 1 << 20)
                if not data:
                    code = self._process.wait()
                    raise PyodideExited(f"the Node process running Pyodide exited ({_exit_status(code)})")
                self._received += data

    def _echo(self, text: str) -> None:
        """Write what the process wrote besides its replies on our stderr, control characters
        as escapes, up to ``ECHO_LIMIT`` characters a request, then one line saying the rest was cut."""
        if self._echo_left <= 0:
            return
        shown = "\n".join(map(terminal_safe, text[: self._echo_left].split("\n")))
        self._echo_left -= len(text)
        if self._echo_left <= 0:
            shown += f"\n[the Pyodide worker wrote more than {ECHO_LIMIT // 1024} KB besides its reply: the rest is not shown]\n"
        sys.stderr.write(shown)

    def _complete_lines(self) -> Iterator[str]:
        """The lines received whole, taken from the buffer one by one (a reply may be read while
        the rest is left for the next request)."""
        while (end := self._received.find(b"\n", self._scanned)) >= 0:
            line = self._received[:end].decode("utf-8", errors="replace")
            del self._received[: end + 1]
            self._scanned = 0
            yield line
        self._scanned = len(self._received)

    def close(self) -> None:
        """End the Node process: its stdin closed, then killed with its whole process group if it
        lingers. The group, not the process alone: Node runs under `unshare`, and a notebook that
        changes its user (process.setuid) clears the signal that would end Node with `unshare`.
        Once only: after that the group's id may belong to another process's group."""
        if self._closed:
            return
        self._closed = True
        if self._process.poll() is None and self._process.stdin is not None:
            try:
                self._process.stdin.close()
            except OSError:  # a pipe the process already closed
                pass
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self._process.pid, signal.SIGKILL)  # its own session: start_new_session
        except (ProcessLookupError, PermissionError):  # the group has ended already
            pass
        self._process.wait()

    def __enter__(self) -> PyodideHost:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _message(text: str) -> dict[str, Any] | None:
    """A reply line's message, or None when it is not one: the code Pyodide runs (a notebook) can
    write to the process's stdout too, and a line it forges must not stop the host."""
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: a forged line nested too deeply
        return None
    if not isinstance(message, dict) or type(message.get("id")) is not int or type(message.get("ok")) is not bool:
        return None
    return message if ("value" if message["ok"] else "error") in message else None

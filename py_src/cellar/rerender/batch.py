"""Re-render an archive: run every notebook in a pool of Pyodide workers and compare with the saved.

    report = rerender("demo/archive", "out/fresh", workers=2)
    report["counts"]   # {"clean": 11, "drifted": 1, "stale": 1}

For each notebook (`*.ipynb` under the archive, checkpoints skipped) a worker runs its code cells
in `cellar.rerender.sandbox` with the archive's path map and blobs, starting in the notebook's own folder
(the archive root is the logical POSIX root `/`, as `cellar blobs add` lays it out). The fresh
notebook (the same cells with fresh outputs, nbformat 4.4, `metadata.cellar_rerender` holding the
status) goes to `out/<same relative path>`; the originals are never written. `out/report.json`
holds the environment, each notebook's status, reason and output diffs, the counts and the top
stale reasons and `sandbox`: which boundary confined the workers on this machine
(cellar.rerender.pyodide_host.Confinement); the index build uses fresh outputs for clean and
drifted notebooks and the saved ones for stale notebooks.

A worker is a Node process running the site's Pyodide (cellar.rerender.pyodide_host) with the cellar wheel,
the archive's environment (cellar.rerender.environment) and `cellar.rerender.sandbox.prepare()` done once. A notebook
that outruns its time limit is stopped inside the worker (the watchdog) or, if the worker stops
answering, the worker is killed and a fresh one started; either way the notebook is stale.

Workers are this process's threads (one Node process each), or, with `scheduler="dask"` or
`"tcp://HOST:PORT"`, Dask tasks (`rerun_task`, one per notebook) on worker processes that each keep
one warm worker across their tasks; reading, reuse and the report stay here either way.

The output folder is cellar's: a new or empty one, or one a run wrote (its `report.json` is a
re-render's; a run marks a new folder so before its first fresh notebook). A folder of anything
else, the archive, a folder inside it or holding it is refused (`check_out`); nothing is written
through a link in it (`write_inside`). The report records each fresh notebook's SHA-256 (`fresh`):
a result is reused only while its file is still the one written with it, and every notebook file
in the folder that is no fresh notebook of this run is removed (what a killed run left included).

Optional `rerender.json` at the archive root: `{"cell_timeout": s, "notebook_timeout": s,
"memory_mb": MB, "clock": "2024-01-01T00:00:00Z", "sanitizers": [["regex", "replacement"], ...]}`
(`cellar.rerender.report.Settings`).
"""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, cast

from cellar.ingest.discovery import (
    TEMPORARY_PREFIX,
    FileRefused,
    find_documents,
    printable,
    read_document,
    write_atomic,
)
from cellar.ingest.notebook import NotebookError, read_notebook
from cellar.ingest.provenance import revision
from cellar.records import RERENDER_STATUSES, ReportEntry
from cellar.rerender import environment, reuse, vfs
from cellar.rerender.blob_store import BlobStore
from cellar.rerender.pyodide_host import (
    ForgedReply,
    OversizedReply,
    PyodideError,
    PyodideExited,
    PyodideHost,
    confinement,
)
from cellar.rerender.report import (
    CONFIG_FILE,
    REPORT_FILE,
    Settings,
    check_result,
    dump_notebook,
    make_report,
    notebook_cwd,
    rerender_notebook,
)
from cellar.terminal import shown

DEFAULT_CACHE = Path(os.environ.get("CELLAR_CACHE") or Path.home() / ".cache" / "cellar") / "wheels"
REQUIREMENTS_FILE = "requirements.txt"
HOST_MARGIN = 30.0  # seconds past the notebook's limit before the host gives up on a worker
WORKER_DIED = "the Pyodide worker died"  # how a notebook's stale reason starts when its worker died
FORGED = "the worker's reply cannot be trusted"  # ... when its reply was not the sandbox's result
TOO_LONG = "the notebook's outputs are too large to read back"  # ... when its reply passed MAX_REPLY


class RerenderStopped(RuntimeError):
    """The batch could not go on (a Pyodide worker that cannot start); no report was written."""


def find_notebooks(archive: Path, skip: Path | None = None) -> list[Path]:
    """The archive's notebooks, sorted; hidden files and folders (checkpoints) and anything under
    `skip` (the output) left out. Like `cellar.ingest.discovery.find_documents`, every name is
    listed whatever it is (a FIFO, a link): reading it (`read_document`) decides, and reports."""
    skipped = None if skip is None else os.path.realpath(skip)
    return sorted(
        Path(path)
        for path in find_documents(archive, (".ipynb",))
        if not (skipped is not None and Path(os.path.realpath(path)).is_relative_to(skipped))
    )


def load_blobs(archive: Path, pathmap: vfs.PathMap, refused: list[str] | None = None) -> dict[str, bytes]:
    """Every blob the path map names, read (and hash-checked) from the archive's blob store.

    A blob the store lacks, or cannot use (its bytes do not hash to its id, it is a link out of
    the archive, not a regular file), is left out: a notebook that reads it gets the store's error
    there, and the others run. What was wrong with each unusable one is added to `refused`.
    """
    store = BlobStore(archive)
    blobs = {}
    for blob_id in sorted({blob for _, blob in pathmap.files.values()}):
        try:
            blobs[blob_id] = store.read(blob_id)
        except vfs.BlobNotFound:
            continue
        except vfs.BlobCorrupt as error:
            if refused is not None:
                refused.append(str(error))
    return blobs


def archive_text(archive: Path, name: str) -> str | None:
    """The text of the archive's own file `name` (rerender.json, pathmap.json, requirements.txt),
    None when it has none. It is read as any file of the archive is (`read_document`): a link out
    of the archive, a FIFO or a file over the size limit is a ValueError naming it, never read."""
    path = archive / name
    if not os.path.lexists(path):
        return None
    data = read_document(path, archive)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None


class Worker:
    """One Pyodide worker: a PyodideHost with the environment loaded and the sandbox prepared.

    What preparing writes that a fresh worker can reuse (cellar.rerender.sandbox's start files: the imported
    modules' bytecode, checked against their sources' hashes, and matplotlib's font list) is kept
    in `cache` on the host, one zip per runtime and environment (`environment.fingerprint`): the
    first worker writes it, later ones start from it, seconds sooner. It is taken before any
    notebook runs in the worker, so no notebook can leave anything in it. `cache=None` keeps none.
    `memory_mb`: what its Node process may take (rerender.json's `memory_mb`).
    """

    CACHE = DEFAULT_CACHE.parent / "worker-start"  # beside the wheel cache: $CELLAR_CACHE or ~/.cache/cellar
    START_FILES = "/tmp/cellar-start-files.zip"  # the zip's place in Pyodide's file system

    def __init__(
        self,
        runtime: Path,
        wheels: list[str],
        packages: list[str],
        cache: Path | None = CACHE,
        isolate: bool = False,
        memory_mb: int = Settings.memory_mb,
    ) -> None:
        self.args = (runtime, wheels, packages)
        self.memory = memory_mb * 2**20
        self.isolate = isolate  # a fresh process for every notebook: none sees what another left
        self.start_files = (
            None if cache is None else (cache / f"{environment.fingerprint(runtime, packages, wheels)}.zip")
        )
        self.start_seconds = 0.0
        self.deaths = 0  # how many times the Node process died under a notebook
        self.host = self._start()

    def _start(self) -> PyodideHost:
        started = time.perf_counter()
        runtime, wheels, packages = self.args
        kept = self.start_files is not None and self.start_files.is_file()
        host = PyodideHost(
            runtime,
            wheels=wheels,
            packages=packages,
            files={self.START_FILES: self.start_files} if kept and self.start_files else None,
            memory=self.memory,
        )
        start_files = self.START_FILES if self.start_files else None
        host.run(f"import cellar.rerender.sandbox as sandbox; sandbox.prepare(start_files={start_files!r})")
        if self.start_files and not kept:
            self._keep(self.start_files, host.read_file(self.START_FILES))
        self.start_seconds += time.perf_counter() - started
        self.sent: set[str] = set()  # blob ids this process holds (cellar.rerender.sandbox keeps them)
        self.served = 0  # notebooks this process has run: what they left behind may still run
        return host

    @staticmethod
    def _keep(path: Path, data: bytes) -> None:
        """Save the start files whole or not at all (written aside, then renamed: a parallel worker
        may be saving the same), and never at the cost of this start: a cache that cannot be
        written only loses later workers their head start."""
        partial = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial.write_bytes(data)
            partial.replace(path)
        except OSError:
            partial.unlink(missing_ok=True)

    def run(self, request: dict[str, Any], blobs: dict[str, str], timeout: float) -> dict[str, Any]:
        """The sandbox's result for `request`, sending only the `blobs` (id -> base64) this process
        has not had yet; a worker that does not answer in time is replaced, and the run stopped.

        A worker whose process ends (a notebook's `process.exit`, a signal, a timer that an earlier
        notebook left, a crash) is replaced and the notebook run once more in the fresh one, so that
        no notebook is blamed for another's doing; ended again, the run is stopped with WORKER_DIED
        and counted in `deaths`. So is a run out of time in a worker that ran notebooks before it
        (an earlier notebook's timer may be what took the time): stopped only when a fresh worker
        takes as long. And so is a reply that is not the sandbox's result (FORGED: a notebook can
        write reply lines, or patch the sandbox; `report.check_result`), one too long for the host
        to read (outputs of hundreds of MB, or a line written without end), and a failure of the
        sandbox itself (a module an earlier notebook left in `sys.modules` may break its
        restoring): the worker is replaced either way, as nothing that ran in it is trusted."""
        if self.host.exit_code is not None or (self.isolate and self.served):  # ended, or used
            self._restart()
        for attempt in range(2):
            fresh = {blob_id: data for blob_id, data in blobs.items() if blob_id not in self.sent}
            code = (
                "import cellar.rerender.sandbox as sandbox; "
                f"sandbox.run_request({json.dumps({**request, 'blobs': fresh})!r})"
            )
            try:
                reply = _result(self.host.run(code, timeout=timeout))
                self.sent.update(fresh)
                self.served += 1
                return reply
            except (ForgedReply, OversizedReply, ValueError) as error:  # ValueError: _result's, a result that is none
                if self._replaced(attempt):  # whatever wrote it may write again
                    continue
                what = f"{TOO_LONG} ({error})" if isinstance(error, OversizedReply) else f"{FORGED}: {error}"
                return {"cells": [], "stopped": f"{what}; a fresh worker was started", "seconds": 0.0}
            except TimeoutError:  # run() closed the stuck process
                if self._replaced(attempt):
                    continue
                return {
                    "cells": [],
                    "stopped": f"the worker did not answer within {timeout:g} s (stopped and restarted)",
                    "seconds": timeout,
                }
            except PyodideExited as error:
                exit_code = self.host.exit_code
                self._restart()  # a worker that cannot start again stops the batch (raised)
                if attempt:
                    self.deaths += 1
                    return {
                        "cells": [],
                        "stopped": f"{WORKER_DIED} ({error}), in a fresh worker too: the worker exited "
                        f"({exit_code}) while running the notebook; a fresh worker was started",
                        "seconds": 0.0,
                    }
            except PyodideError as error:  # the sandbox itself failed, not a cell
                if self._replaced(attempt):
                    continue
                last = str(error).strip().splitlines()[-1:] or ["unknown error"]
                return {"cells": [], "stopped": f"the sandbox failed: {last[0]}", "seconds": 0.0}
        raise AssertionError("unreachable: the second attempt returns")

    def _restart(self) -> None:
        self.host.close()
        self.host = self._start()

    def _replaced(self, attempt: int) -> bool:
        """Replace the worker; whether to run the notebook once more in the fresh one: on the
        first attempt, when the worker had run others (what they left may be to blame)."""
        earlier = self.served
        self._restart()
        return bool(earlier) and not attempt

    def close(self) -> None:
        self.host.close()


def _result(text: Any) -> dict[str, Any]:
    """The sandbox's result from what `sandbox.run_request` returns, its JSON text; ValueError
    (naming the problem) when it is none."""
    if not isinstance(text, str):
        raise ValueError(f"the sandbox's result is not JSON text but {type(text).__name__}")
    try:
        result = json.loads(text)
    except (ValueError, RecursionError) as error:  # RecursionError: a forged result nested too deeply
        raise ValueError(f"the sandbox's result is not JSON ({error})") from None
    check_result(result)
    return cast(dict[str, Any], result)


@dataclass(frozen=True)
class RunContext:
    """What running one notebook needs besides the notebook: plain data, so that a Dask task
    carries it to another process."""

    runtime: Path
    wheels: tuple[str, ...]
    packages: tuple[str, ...]
    env: Any  # cellar.rerender.environment.Environment
    settings: Settings
    pathmap: dict[str, Any]
    blobs: dict[str, str]  # blob id -> base64
    isolate: bool = False  # a fresh worker for every notebook (Worker)

    def worker(self) -> Worker:
        return Worker(
            self.runtime,
            list(self.wheels),
            list(self.packages),
            isolate=self.isolate,
            memory_mb=self.settings.memory_mb,
        )


def rerun(
    saved: Any, relative: str, context: RunContext, worker: Callable[[], Worker]
) -> tuple[bytes | None, ReportEntry]:
    """The fresh notebook (its bytes, None when it could not be compared) and the report entry of
    `saved` (archive path `relative`), run on `worker()` (called when a cell must run)."""

    def run(sources: list[str], cwd: str = notebook_cwd(relative)) -> dict[str, Any]:
        request = {"cells": sources, "pathmap": context.pathmap, "cwd": cwd, "limits": context.settings.limits()}
        return worker().run(request, context.blobs, context.settings.notebook_timeout + HOST_MARGIN)

    try:
        fresh, entry = rerender_notebook(saved, context.env, context.settings, run)
        return dump_notebook(fresh), entry
    except (NotebookError, ValueError) as error:  # one odd notebook never stops the batch
        stale: ReportEntry = {
            "path": relative,
            "status": "stale",
            "reason": f"cannot be compared: {error}",
            "revision": saved.revision,
            "seconds": None,
            "cells": [],
        }
        return None, stale


# One warm worker per thread and environment, kept across the tasks a Dask worker runs: its
# Pyodide started and the sandbox prepared once, not for every notebook (a worker serves one
# notebook at a time: a Dask worker with several threads keeps one each). Its Node process ends
# with this process (its stdin closes).
_WARM: dict[tuple[Any, ...], Worker] = {}


def rerun_task(item: tuple[str, bytes], context: RunContext) -> tuple[str, bytes | None, ReportEntry, float, int]:
    """A Dask task: notebook `item` (archive path, bytes) run on this process's warm worker; with
    the seconds a worker took to start in this task and the worker deaths it saw."""
    relative, data = item
    key = (context.runtime, context.wheels, context.packages, context.settings.memory_mb, threading.get_ident())
    warm = key in _WARM
    worker = _WARM[key] if warm else _WARM.setdefault(key, context.worker())
    started, deaths = (worker.start_seconds if warm else 0.0), worker.deaths
    fresh, entry = rerun(read_notebook(data, relative), relative, context, lambda: worker)
    return relative, fresh, entry, worker.start_seconds - started, worker.deaths - deaths


def _unreadable(path: str, problem: str, file_revision: str | None) -> ReportEntry:
    return {
        "path": path,
        "status": "stale",
        "reason": f"unreadable: {problem}",
        "revision": file_revision,  # type: ignore[typeddict-item]  # None: the file was not read
        "seconds": 0.0,
        "cells": [],
    }


def site_runtime(site: Path) -> tuple[Path, list[str]]:
    """The runtime folder and the wheels (cellar first) of a built site."""
    manifest_path = site / "build.json"
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{site}: not a built site (no build.json): run `python3 build.py site`")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    return site / "pyodide", [str(site / wheel) for wheel in manifest["wheels"]]


def _progress(done: int, total: int, counts: Counter, started: float) -> None:
    """A bar redrawn in place on a terminal; a line per notebook in a log (CI, a build's output)."""
    width = 30
    filled = width * done // max(total, 1)
    tally = " ".join(f"{status} {counts[status]}" for status in RERENDER_STATUSES)
    line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} notebooks  {tally}  {time.monotonic() - started:.0f} s"
    sys.stderr.write(f"\r{line}" if sys.stderr.isatty() else f"{line}\n")
    sys.stderr.flush()


def rerender(
    archive: str | os.PathLike[str],
    out: str | os.PathLike[str],
    workers: int = 1,
    site: str | os.PathLike[str] = "site",
    cache: str | os.PathLike[str] = DEFAULT_CACHE,
    progress: Callable[[int, int, Counter, float], None] | None = _progress,
    reuse_previous: bool = True,
    scheduler: str = "local",
    isolate: bool = False,
) -> dict[str, Any]:
    """Re-render every notebook of `archive` into `out` and write `out/report.json`; return the report.
    With `reuse_previous`, a notebook whose key (`cellar.rerender.reuse`) is the one the previous
    report in `out` holds for it, and whose fresh notebook is still there, keeps its entry instead
    of running; the report's `reuse` says what was reused, redone and removed.

    `scheduler`: "local" (threads, each driving its own worker), or "dask" / "tcp://HOST:PORT"
    (cellar.ingest.scheduler: a task per notebook on a Dask cluster, each Dask worker process
    keeping one warm Pyodide worker; the cluster's workers must read the site and the archive at
    the same paths). `isolate`: a fresh worker for every notebook, so that none can change what
    another outputs or is reported as (README, "The boundary"), at a worker's start per notebook."""
    # (the host's: the tab imports this module for load_blobs, and has no process pool)
    from cellar.ingest.scheduler import check_scheduler
    from cellar.ingest.scheduler import run as run_tasks

    archive, out = Path(archive), Path(out)
    check_scheduler(scheduler)
    check_out(archive, out)
    started, begun = time.monotonic(), time.time()
    config = archive_text(archive, CONFIG_FILE)
    mapping = archive_text(archive, vfs.PATHMAP_FILE)
    listed = archive_text(archive, REQUIREMENTS_FILE)
    settings = Settings.from_json(config, str(archive / CONFIG_FILE)) if config is not None else Settings()
    pathmap = (
        vfs.parse_pathmap(mapping.encode("utf-8"), str(archive / vfs.PATHMAP_FILE))
        if mapping is not None
        else vfs.PathMap.empty()
    )
    refused: list[str] = []
    blobs = {
        blob_id: base64.b64encode(data).decode("ascii")
        for blob_id, data in load_blobs(archive, pathmap, refused).items()
    }
    for problem in refused:
        print(f"cellar rerender: {shown(problem)}; the notebooks that read it fail there", file=sys.stderr)
    requirements = (
        environment.parse_requirements(listed, str(archive / REQUIREMENTS_FILE)) if listed is not None else []
    )
    runtime, site_wheels = site_runtime(Path(site))
    env = environment.resolve_environment(requirements, runtime, Path(cache))
    limits = {**settings.limits(), "memory_mb": settings.memory_mb}  # a notebook's outcome may depend on each
    env_key = reuse.environment_key((Path(site) / "build.json").read_bytes(), env.to_dict(), limits)
    context = RunContext(
        runtime,
        (*site_wheels, *(wheel.path for wheel in env.wheels)),
        tuple(env.packages),
        env,
        settings,
        pathmap.data,
        blobs,
        isolate,
    )
    remote: list[tuple[str, bytes]] = []  # what a Dask cluster runs
    old_entries, old_keys, old_fresh = reuse.previous_run(out, REPORT_FILE) if reuse_previous else ({}, {}, {})
    keys: dict[str, str] = {}
    reused: list[str] = []

    jobs: queue.Queue[Path] = queue.Queue()
    paths = find_notebooks(archive, skip=out)
    for path in paths:
        jobs.put(path)
    entries: dict[str, ReportEntry] = {}
    counts: Counter = Counter()
    lock = threading.Lock()
    worker_starts: list[float] = []

    def record(entry: ReportEntry) -> None:
        with lock:
            entries[entry["path"]] = entry
            counts[entry["status"]] += 1
            if progress:
                progress(len(entries), len(paths), counts, started)

    failures: list[BaseException] = []
    deaths: list[int] = []

    fresh_sums: dict[str, str] = {}  # the SHA-256 of each fresh notebook of this run, written or kept

    def write_fresh(relative: str, fresh: bytes) -> None:
        with lock:
            if not fresh_sums and not (out / REPORT_FILE).is_file():  # a re-render's folder from now on
                write_inside(out, REPORT_FILE, json.dumps({"archive": str(archive), "notebooks": []}).encode())
            fresh_sums[relative] = revision(fresh)
        write_inside(out, relative, fresh)

    def work() -> None:
        worker: Worker | None = None

        def started() -> Worker:  # a thread's worker, started when a notebook first needs it
            nonlocal worker
            if worker is None:
                worker = context.worker()
            return worker

        try:
            while not failures:
                try:
                    path = jobs.get_nowait()
                except queue.Empty:
                    return
                relative = printable(path.relative_to(archive).as_posix())
                try:
                    data = read_document(path, archive)
                except FileRefused as error:  # not a regular file, a link out of the archive, too large
                    record(_unreadable(relative, error.problem, None))
                    continue
                try:
                    saved = read_notebook(data, relative)
                except NotebookError as error:
                    record(_unreadable(relative, error.problem, revision(data)))
                    continue

                folder = relative.rsplit("/", 1)[0] if "/" in relative else ""
                code = [cell.source for cell in saved.cells if cell.cell_type == "code"]
                key = reuse.notebook_key(env_key, relative, data, reuse.inputs_named(pathmap.data, folder, code))
                old = old_entries.get(relative)
                with lock:
                    keys[relative] = key
                keep = (
                    old is not None
                    and old_keys.get(relative) == key
                    and reuse.fresh_as_written(out / relative, old_fresh.get(relative))
                )
                with lock:
                    if keep:
                        reused.append(relative)
                        fresh_sums[relative] = old_fresh[relative]
                if keep:
                    assert old is not None
                    record(old)
                    continue

                if scheduler != "local":
                    with lock:
                        remote.append((relative, data))
                    continue

                fresh, entry = rerun(saved, relative, context, started)
                if fresh is not None:
                    write_fresh(relative, fresh)
                record(entry)
        except BaseException as error:  # a worker that cannot start stops the pool, and is raised below
            failures.append(error)
        finally:
            if worker is not None:
                with lock:
                    worker_starts.append(worker.start_seconds)
                    deaths.append(worker.deaths)
                worker.close()

    def finished(result: tuple[str, bytes | None, ReportEntry, float, int]) -> None:
        relative, fresh, entry, start_seconds, died = result
        if fresh is not None:
            write_fresh(relative, fresh)
        with lock:
            if start_seconds:
                worker_starts.append(start_seconds)
            deaths.append(died)
        record(entry)

    # Reading, keys and reuse are this process's; a notebook that must run runs in a thread's
    # worker (local) or, gathered first, as a Dask task.
    threads = [
        threading.Thread(target=work, daemon=True) for _ in range(max(1, workers if scheduler == "local" else 1))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if remote and not failures:
        try:
            run_tasks(rerun_task, sorted(remote), finished, scheduler=scheduler, workers=workers, context=context)
        except (PyodideError, OSError) as stopped:  # a worker that cannot start, on the cluster
            failures.append(stopped)
    if failures:
        error = failures[0]
        if isinstance(error, (PyodideError, OSError)) and not isinstance(error, FileNotFoundError):  # no report
            raise RerenderStopped(
                f"the batch stopped after {len(entries)} of {len(paths)} notebooks: {error}"
            ) from error
        raise error
    if progress and sys.stderr.isatty():
        sys.stderr.write("\n")
    report = make_report(
        archive,
        env,
        [entries[printable(path.relative_to(archive).as_posix())] for path in paths],
        worker_starts,
        time.monotonic() - started,
        workers,
        sandbox=confinement(shutil.which("node") or "node").to_dict(settings.memory_mb),
    )
    report["worker_deaths"] = sum(deaths)  # notebooks whose worker died: stale, reason WORKER_DIED
    report["keys"] = dict(sorted(keys.items()))
    report["fresh"] = dict(sorted(fresh_sums.items()))
    removed = sorted(set(old_entries) - set(entries))
    # Every notebook file in `out` that is no fresh notebook of this run goes: those of notebooks
    # gone from the archive, of notebooks with none this run (an earlier `clean` copy of one now
    # unreadable was published as its fresh outputs), and what a killed run wrote for a notebook
    # withdrawn since, which no report lists.
    for parent, _, names in os.walk(out):
        for name in names:
            left = Path(parent) / name
            if name.endswith(".ipynb") and left.relative_to(out).as_posix() not in fresh_sums:
                left.unlink()
            elif name.startswith(TEMPORARY_PREFIX) and left.lstat().st_mtime < begun:
                left.unlink()  # what a killed run was writing (write_inside)
    report["reuse"] = {"reused": len(reused), "redone": len(entries) - len(reused), "removed": removed}
    write_inside(out, REPORT_FILE, (json.dumps(report, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
    return report


def check_out(archive: Path, out: Path) -> None:
    """A ValueError when ``out`` is no place for the fresh notebooks of ``archive``: the archive,
    a folder inside it (the fresh copies became notebooks of the archive) or holding it (nothing
    was run), no folder, or a folder of something else (its own `report.json` was overwritten)."""
    here, there = archive.resolve(), out.resolve()
    if there == here:
        raise ValueError(f"{out}: the output must not be the archive itself")
    if there.is_relative_to(here):
        raise ValueError(f"{out}: inside the archive {archive}: the fresh notebooks would be read as the archive's")
    if here.is_relative_to(there):
        raise ValueError(f"{out}: holds the archive {archive}: give the fresh notebooks a folder of their own")
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: not a folder")
    if out.is_dir() and any(out.iterdir()) and not _a_rerender(out / REPORT_FILE):
        raise ValueError(
            f"{out}: a folder that holds no re-render (no {REPORT_FILE} of cellar's): not written into; "
            "give a new or empty folder"
        )


def _a_rerender(report: Path) -> bool:
    """Whether ``report`` is a re-render's report (one a run wrote, or began)."""
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "archive" in data and isinstance(data.get("notebooks"), list)


def write_inside(out: Path, relative: str, data: bytes) -> None:
    """Write ``data`` whole at ``out/relative`` (``write_atomic``: a link at that name is
    replaced, never written through), in folders made inside ``out``. A link among those folders,
    which a run never makes, is removed first: one had a fresh notebook written out of ``out``,
    into the folder it led to."""
    folder = out
    folder.mkdir(parents=True, exist_ok=True)
    for part in PurePosixPath(relative).parent.parts:
        folder = folder / part
        if folder.is_symlink():
            folder.unlink()
        folder.mkdir(exist_ok=True)
    write_atomic(os.fspath(folder / PurePosixPath(relative).name), data)

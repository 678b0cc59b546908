"""Re-render reports: a sandbox run in, the fresh notebook, its verdict and the report out.

Pure functions over plain data, shared by `cellar rerender` (cellar.rerender.batch, in Node
workers) and the viewer's Re-render button (cellar.site.bridge, in the tab):

    settings = Settings.from_json(text)                    # rerender.json: limits, clock, sanitisers
    fresh, entry = rerender_notebook(saved, env, settings, run)   # run: code cells -> sandbox result
    report = make_report(archive, env, entries, ...)        # what report.json holds
    read_report(out)                                        # its entries by path, for the index

A sandbox result is `{"cells": [{"execution_count", "outputs"}...], "stopped": reason | None,
"seconds": float}` (cellar.rerender.sandbox.run_notebook). The fresh notebook is the saved one's
cells with fresh outputs, nbformat 4, `metadata.cellar_rerender` holding the status.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from cellar.ingest.notebook import NEWEST_MINOR, Notebook, read_notebook
from cellar.records import RERENDER_STATUSES, ReportEntry
from cellar.rerender import compare, environment
from cellar.terminal import shown

CONFIG_FILE = "rerender.json"
REPORT_FILE = "report.json"
BADGES = ("same", "drifted", "failed", "not run")  # a code cell's verdict in the viewer

# code cells' sources -> the sandbox's result for them
Run = Callable[[list[str]], dict[str, Any]]


# A sandbox result nests a few levels (the cells, their outputs, a display's data); one that a
# notebook forged thousands deep would stop the host's json and comparison (RecursionError).
MAX_RESULT_DEPTH = 100
MIN_MEMORY_MB = 1024  # a worker with pandas and matplotlib loaded holds about 630 MB before any cell runs
MAX_MEMORY_MB = 4096  # what Python in 32-bit WebAssembly can address at all
MAX_SECONDS = 3600  # the longest time limit an archive may set, for a cell or a whole notebook


@dataclass(frozen=True)
class Settings:
    """How to re-render an archive: its limits, clock and sanitisers (from rerender.json).

    `memory_mb`: the memory one worker may take, Node, Pyodide, its packages and the notebook's
    data together (a worker with pandas and matplotlib loaded holds about 630 MB before any cell
    runs); beyond it an allocation fails in the cell that asks (MemoryError), and the host's
    memory is safe (`pyodide_host.Confinement`)."""

    cell_timeout: float = 60.0
    notebook_timeout: float = 300.0
    clock: str | None = None
    sanitizers: tuple[tuple[str, str], ...] = ()
    memory_mb: int = 2048

    @classmethod
    def from_json(cls, text: str, source: str = CONFIG_FILE) -> Settings:
        """The settings in the text of a rerender.json; a bad one is a ValueError naming `source`."""
        try:
            data = json.loads(text)
            settings = cls(**{**data, "sanitizers": tuple(map(tuple, data.get("sanitizers", ())))})
            compare.compile_sanitizers(settings.sanitizers)  # a bad regex or replacement, named
        except (ValueError, TypeError, AttributeError, RecursionError) as error:  # RecursionError: nested too deeply
            raise ValueError(f"{source}: {error}") from None
        problem = settings.problem()
        if problem:
            raise ValueError(f"{source}: {problem}")
        return settings

    def problem(self) -> str | None:
        """What is wrong with these settings, None when nothing is. An archive writes them and the
        host enforces them, so each is bounded: a notebook's time (`MAX_SECONDS`: `Infinity` or
        a million seconds would hold a worker for good) and its memory (`MAX_MEMORY_MB`)."""
        for name in ("cell_timeout", "notebook_timeout"):
            value = getattr(self, name)
            if type(value) not in (int, float) or not 0 < value <= MAX_SECONDS:  # NaN is neither
                return f"{name} is a number of seconds above 0 and at most {MAX_SECONDS:,}, not {value!r}"
        if type(self.memory_mb) is not int or not MIN_MEMORY_MB <= self.memory_mb <= MAX_MEMORY_MB:
            return f"memory_mb is a whole number of MB from {MIN_MEMORY_MB} to {MAX_MEMORY_MB}, not {self.memory_mb!r}"
        if self.clock is not None:
            try:
                datetime.fromisoformat(self.clock)
            except (TypeError, ValueError):
                return f"clock is an ISO 8601 time (2024-01-01T00:00:00Z), not {self.clock!r}"
        return None

    def limits(self) -> dict[str, Any]:
        return {"cell_timeout": self.cell_timeout, "notebook_timeout": self.notebook_timeout, "clock": self.clock}


def fresh_notebook(saved: Notebook, runs: list[dict[str, Any]], status: dict[str, Any]) -> dict[str, Any]:
    """The saved notebook's cells (nbformat 4) with the fresh outputs of the code cells that ran."""
    fresh_runs = iter(runs)
    cells = []
    for cell in saved.cells:
        raw: dict[str, Any] = {"cell_type": cell.cell_type, "metadata": cell.metadata, "source": cell.source}
        if cell.attachments:
            raw["attachments"] = cell.attachments
        if cell.cell_type == "code":
            run: dict[str, Any] = next(fresh_runs, {"execution_count": None, "outputs": []})
            raw["execution_count"] = run["execution_count"]
            raw["outputs"] = run["outputs"]
        cells.append(raw)
    metadata = {**saved.metadata, "cellar_rerender": status}
    # 4.4 (no cell ids to invent), or the saved notebook's own minor when it is newer than any
    # cellar knows: its cell types may be ones only that version defines
    future = saved.nbformat[0] == 4 and saved.nbformat[1] > NEWEST_MINOR
    minor = saved.nbformat[1] if future else 4
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": minor}


def dump_notebook(notebook: dict[str, Any]) -> bytes:
    """nbformat's own layout (indent 1, sorted keys), so that equal runs give equal bytes."""
    return (json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def notebook_cwd(relative: str) -> str:
    """The logical folder a notebook starts in: its own, with the archive root as `/`."""
    parent = Path(relative).parent.as_posix()
    return "/" if parent == "." else f"/{parent}"


def reason_key(reason: str) -> str:
    """A stale reason without the cell number, so that the same cause counts once per notebook."""
    if reason.startswith("requirement "):
        return reason.split(" (", 1)[0]  # one line per missing requirement, whatever each cell raised
    return re.sub(r"^cell \d+: ", "", reason)[:160]


def rerender_notebook(
    saved: Notebook, env: environment.Environment, settings: Settings, run: Run
) -> tuple[dict[str, Any], ReportEntry]:
    """Re-run one notebook with `run` and judge it: the fresh notebook and its report entry.

    `run` gets the code cells' sources and returns the sandbox's result: a Node worker in
    `cellar rerender`, the sandbox itself in the tab. A notebook that imports a requirement the
    environment cannot provide is not run at all, and is stale with that reason."""
    sources = [cell.source for cell in saved.cells if cell.cell_type == "code"]
    blocked = environment.blocking_requirement(sources, env)
    result = {"cells": [], "stopped": blocked, "seconds": 0.0} if blocked else run(sources)
    return judge(saved, result, compare.compile_sanitizers(settings.sanitizers), env)


def judge(
    saved: Notebook,
    result: dict[str, Any],
    sanitizers: tuple[compare.Sanitizer, ...],
    env: environment.Environment,
) -> tuple[dict[str, Any], ReportEntry]:
    """Compare a sandbox run with the saved notebook: the fresh notebook (its metadata holding the
    status) and the report entry (status, reason, cell diffs, seconds). Pure: the build and the
    viewer's Re-render button both judge with it."""
    check_result(result)
    draft = fresh_notebook(saved, result["cells"], {})
    fresh = read_notebook(dump_notebook(draft), saved.path)
    comparison = compare.compare_notebooks(saved, fresh, sanitizers, stopped=result["stopped"])
    reason = comparison.reason and environment.attribute_failure(comparison.reason, env)
    # `ran`: how many code cells ran, so that a reader of the fresh notebook alone can tell a cell
    # that printed nothing from one the run never reached
    status = {"status": comparison.status, "reason": reason, "ran": len(result["cells"])}
    entry = cast(
        ReportEntry,
        {**comparison.to_dict(), "reason": reason, "revision": saved.revision, "seconds": round(result["seconds"], 3)},
    )
    return fresh_notebook(saved, result["cells"], status), entry


def check_result(result: Any) -> None:
    """Raise ValueError unless `result` has the sandbox result's shape (module docstring). The
    notebook ran in the sandbox it came from and can forge it (by patching the sandbox, or by
    writing the worker's reply line itself), so the host checks it before judging: a forged or
    broken result makes that notebook stale, never the batch fail."""
    if not isinstance(result, dict):
        problem = "not an object"
    elif not isinstance(result.get("cells"), list) or not all(map(_is_run, result["cells"])):
        problem = "its cells are not objects with an execution count and a list of outputs"
    elif not isinstance(result.get("stopped"), (str, type(None))):
        problem = "its reason for stopping is not text"
    elif type(result.get("seconds")) not in (int, float):
        problem = "its time taken is not a number"
    elif _deeper_than(result, MAX_RESULT_DEPTH):
        problem = f"it nests more than {MAX_RESULT_DEPTH} levels deep"
    else:
        return
    raise ValueError(f"the sandbox's result is malformed ({problem}); the notebook may have forged it")


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether JSON data `value` nests more than `limit` levels deep (without recursing itself)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return False


def _is_run(cell: Any) -> bool:
    return (
        isinstance(cell, dict)
        and type(cell.get("execution_count", "")) in (int, type(None))
        and isinstance(cell.get("outputs"), list)
        and all(isinstance(output, dict) for output in cell["outputs"])
    )


def make_report(
    archive: Path,
    env: environment.Environment,
    entries: list[ReportEntry],
    worker_starts: list[float],
    seconds: float,
    workers: int,
    sandbox: dict[str, Any] | None = None,
) -> dict[str, Any]:
    counts = Counter(entry["status"] for entry in entries)
    reasons = Counter(reason_key(entry["reason"] or "") for entry in entries if entry["status"] == "stale")
    return {
        "archive": str(archive),
        "environment": env.to_dict(),
        "counts": {status: counts.get(status, 0) for status in RERENDER_STATUSES},
        "top_reasons": [{"reason": reason, "notebooks": n} for reason, n in reasons.most_common(10)],
        "timings": {
            "total_seconds": round(seconds, 2),
            "workers": workers,
            "worker_start_seconds": [round(value, 2) for value in sorted(worker_starts)],
        },
        "sandbox": sandbox,
        "notebooks": entries,
    }


def read_report(out: str | os.PathLike[str]) -> dict[str, ReportEntry]:
    """The entries of the report in a `rerender` output folder, by notebook path. A missing or
    unreadable report is a ValueError that names it."""
    path = Path(out) / REPORT_FILE
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        return {entry["path"]: entry for entry in report["notebooks"]}
    except FileNotFoundError:
        raise ValueError(f"{path}: no re-render report here (run `cellar rerender ARCHIVE --out {out}`)") from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a re-render report: {error}") from None


def summary(report: dict[str, Any]) -> str:
    """The report as a short table: counts per status, the top stale reasons, the time taken. What
    a notebook or an archive wrote (a reason quotes an exception's message, a requirement its
    name) comes with its control characters as escapes: it must not recolour or rewrite the
    operator's terminal, nor forge a line of this table."""
    total = sum(report["counts"].values())
    lines = [f"{'status':<10}{'notebooks':>10}"]
    lines += [f"{status:<10}{n:>10}" for status, n in report["counts"].items()]
    lines.append(f"{'total':<10}{total:>10}")
    if report["top_reasons"]:
        lines.append("\ntop stale reasons:")
        lines += [f"{item['notebooks']:>4}  {shown(item['reason'])}" for item in report["top_reasons"]]
    for name, reason in report["environment"]["unavailable"].items():
        lines.append(f"\nunavailable requirement {shown(name)}: {shown(reason)}")
    timings = report["timings"]
    lines.append(
        f"\n{total} notebooks in {timings['total_seconds']} s with {timings['workers']} "
        f"worker(s); worker start {timings['worker_start_seconds']} s"
    )
    if report.get("sandbox"):
        lines.append(report["sandbox"]["summary"])
    return "\n".join(lines)


def cell_badges(saved: Notebook, fresh: Notebook, entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per code cell of `saved`: its index, a badge (one of BADGES) and the output diffs that the
    report `entry` holds for it. A cell the run never reached is `not run` (the fresh notebook's
    `ran` says how many did); one that raised where the saved one did not is `failed`."""
    diffs = {cell["cell"]: cell["outputs"] for cell in entry["cells"]}
    ran = fresh.metadata.get("cellar_rerender", {}).get("ran")
    code = [cell for cell in saved.cells if cell.cell_type == "code"]
    verdicts = []
    for number, cell in enumerate(code):
        if ran is not None and number >= ran:
            badge = "not run"
        elif compare.first_new_error(cell.outputs, fresh.cells[cell.index].outputs) is not None:
            badge = "failed"
        else:
            badge = "drifted" if cell.index in diffs else "same"
        verdicts.append({"index": cell.index, "badge": badge, "diffs": diffs.get(cell.index, [])})
    return verdicts

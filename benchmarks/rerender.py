"""Re-rendering speed and outcome: `cellar rerender` (Pyodide in Node) against nbclient + ipykernel.

    .venv/bin/python benchmarks/rerender.py [--corpus ../shared/corpus] [--site site] [--skip-nbclient]

On the 65 CalebBell fluids / thermo notebooks of the shared corpus, copied into a scratch archive
with REQUIREMENTS and SETTINGS below (pure wheels fetched once into the cellar wheel cache; CoolProp has no
WebAssembly build, so the notebooks that import it come out stale with that reason), it measures,
in one run:

- `rerender --workers 1`: cold worker start, then notebooks per second on the warm worker;
- `rerender --workers 2`: the whole set, start included (the issue's target: < 1/3 of nbclient);
- nbclient with an ipykernel in this CPython (kernel start each notebook, as nbclient does);
- the status counts and top stale reasons, and the share of code cells whose fresh Pyodide outputs
  equal nbclient's fresh CPython outputs under cellar.rerender.compare's normalisation.

Build/bench-only requirements on the host: nbclient==0.10.2, ipykernel==6.29.5, and the packages
of REQUIREMENTS (fluids==1.3.1 thermo==0.6.1 chemicals==1.5.2 pint==0.24.4 python-ternary==1.0.8)
for the nbclient side.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cellar.ingest.notebook import read_notebook
from cellar.rerender import compare
from cellar.rerender.batch import find_notebooks, rerender
from cellar.rerender.report import CONFIG_FILE, summary

ROOT = Path(__file__).resolve().parent.parent
REPOS = ("CalebBell__fluids", "CalebBell__thermo")
REQUIREMENTS = """\
numpy==2.0.2
pandas==2.2.3
scipy==1.14.1
matplotlib==3.8.4
joblib==1.4.0
fluids==1.3.1
thermo==0.6.1
chemicals==1.5.2
pint==0.24.4
flexcache==0.3
flexparser==0.4
platformdirs==4.14.8
typing_extensions==4.16.0
python-ternary==1.0.8
coolprop==6.6.0
"""
# One per-cell limit for both sides. "Performing Large Numbers of Calculations with Thermo in
# Parallel" runs 900 flashes in each of five cells: joblib already falls back to its sequential
# backend in Pyodide (no processes, no threads), and a flash costs about what it costs in CPython
# on this machine, so on a loaded machine a cell takes over the sandbox's default 60 s. It gets
# nbclient's limit here, no more, and a notebook limit that five such cells fit in.
CELL_TIMEOUT = 120
SETTINGS = {"cell_timeout": CELL_TIMEOUT, "notebook_timeout": 5 * CELL_TIMEOUT}


def make_archive(corpus: Path, target: Path) -> list[Path]:
    """Copy the fluids / thermo notebooks (paths kept) and write the requirements file."""
    for repo in REPOS:
        for path in find_notebooks(corpus / repo):
            destination = target / path.relative_to(corpus)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
    (target / "requirements.txt").write_text(REQUIREMENTS)
    (target / CONFIG_FILE).write_text(json.dumps(SETTINGS))
    return find_notebooks(target)


def run_nbclient(archive: Path, notebooks: list[Path], out: Path) -> tuple[float, list[float]]:
    """Execute each notebook with nbclient (allow_errors, TZ=UTC); the total and per-notebook seconds."""
    import nbformat
    from nbclient import NotebookClient

    os.environ["TZ"] = "UTC"
    seconds = []
    started = time.perf_counter()
    for number, path in enumerate(notebooks, 1):
        book = nbformat.read(path, as_version=4)
        began = time.perf_counter()
        client = NotebookClient(
            book,
            timeout=CELL_TIMEOUT,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(path.parent)}},
        )
        try:
            client.execute()
        except Exception as error:  # noqa: BLE001  (a kernel death is a result, not the end)
            print(f"\nnbclient: {path.name}: {type(error).__name__}: {error}", file=sys.stderr)
        seconds.append(time.perf_counter() - began)
        target = out / path.relative_to(archive)
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(book, target)
        print(f"\rnbclient {number}/{len(notebooks)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    return time.perf_counter() - started, seconds


def same_cells(archive: Path, pyodide_out: Path, cpython_out: Path, stale: set[str]) -> tuple[int, int]:
    """Code cells (of notebooks that ran) whose Pyodide and CPython fresh outputs compare the same."""
    sanitizers = compare.compile_sanitizers()
    same = total = 0
    for path in find_notebooks(archive):
        relative = path.relative_to(archive).as_posix()
        if relative in stale or not (cpython_out / relative).is_file():
            continue
        ours = read_notebook((pyodide_out / relative).read_bytes(), relative)
        theirs = read_notebook((cpython_out / relative).read_bytes(), relative)
        for mine, other in zip(ours.cells, theirs.cells):
            if mine.cell_type == "code":
                total += 1
                same += compare.compare_cell(mine.index, other.outputs, mine.outputs, sanitizers).same
    return same, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--site", default=str(ROOT / "site"))
    parser.add_argument("--skip-nbclient", action="store_true")
    args = parser.parse_args()
    corpus = Path(args.corpus)
    if not all((corpus / repo).is_dir() for repo in REPOS):
        print(f"{corpus}: the CalebBell fluids / thermo notebooks are not there", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="cellar-bench-rerender-"))
    archive = work / "archive"
    notebooks = make_archive(corpus, archive)
    n = len(notebooks)
    print(f"{n} notebooks from {', '.join(REPOS)}")

    one = rerender(archive, work / "one", workers=1, site=args.site)
    start_one = one["timings"]["worker_start_seconds"][0]
    warm = one["timings"]["total_seconds"] - start_one
    runs = [entry["seconds"] for entry in one["notebooks"] if entry["seconds"]]
    two = rerender(archive, work / "two", workers=2, site=args.site)
    deterministic = all(
        (work / "one" / p.relative_to(archive)).read_bytes() == (work / "two" / p.relative_to(archive)).read_bytes()
        for p in notebooks
    )

    print("\n" + summary(two))
    print(
        f"\n1 worker : cold start {start_one:.1f} s; {n} notebooks in {warm:.1f} s warm = "
        f"{n / warm:.2f} notebooks/s per worker (median run {statistics.median(runs):.3f} s)"
    )
    print(
        f"2 workers: {n} notebooks in {two['timings']['total_seconds']:.1f} s, start included "
        f"(worker starts {two['timings']['worker_start_seconds']} s)"
    )
    print(f"fresh notebooks byte-identical between the 1- and 2-worker runs: {deterministic}")
    if args.skip_nbclient:
        return 0
    nbclient_total, nbclient_each = run_nbclient(archive, notebooks, work / "nbclient")
    print(f"nbclient : {n} notebooks in {nbclient_total:.1f} s (median {statistics.median(nbclient_each):.2f} s each)")
    ratio = two["timings"]["total_seconds"] / nbclient_total
    print(
        f"ratio rerender --workers 2 / nbclient = {ratio:.2f} (target < 0.33: {'met' if ratio < 1 / 3 else 'not met'})"
    )
    # Where the time goes: the notebooks that take longest in Pyodide, beside nbclient's time.
    theirs = {path.relative_to(archive).as_posix(): seconds for path, seconds in zip(notebooks, nbclient_each)}
    ours = {entry["path"]: entry["seconds"] for entry in one["notebooks"]}
    slowest = sorted(ours, key=ours.get, reverse=True)[:3]
    for path in slowest:
        print(f"  {ours[path]:7.1f} s in Pyodide, {theirs[path]:6.1f} s in nbclient: {path}")
    # The same comparison without it: its cells are pure Python arithmetic, which WebAssembly runs
    # about 2x slower than native, so it alone outlasts a third of nbclient's total.
    rest = archive.parent / "rest"
    for path in notebooks:
        if path.relative_to(archive).as_posix() != slowest[0]:
            (rest / path.relative_to(archive)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, rest / path.relative_to(archive))
    for name in ("requirements.txt", CONFIG_FILE):
        shutil.copyfile(archive / name, rest / name)
    two_rest = rerender(rest, work / "two-rest", workers=2, site=args.site)
    rest_theirs = nbclient_total - theirs[slowest[0]]
    print(
        f"without it: rerender --workers 2 {two_rest['timings']['total_seconds']:.1f} s, start included, "
        f"vs nbclient {rest_theirs:.1f} s = {two_rest['timings']['total_seconds'] / rest_theirs:.2f}"
    )
    stale = {entry["path"] for entry in two["notebooks"] if entry["status"] == "stale"}
    same, total = same_cells(archive, work / "two", work / "nbclient", stale)
    print(
        f"code cells of the {n - len(stale)} notebooks that ran whose Pyodide outputs equal a fresh "
        f"CPython run's: {same}/{total} = {same / max(total, 1):.1%}"
    )
    print(f"(work files in {work})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

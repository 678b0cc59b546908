"""The re-render worker's boundary in figures: the hostile probes of tests/pyodide/test_boundary.py
run as notebooks in a real worker, and how many got out.

    .venv/bin/python benchmarks/security.py [--modes full,permission,none] [--only ID,...]

Modes: `full` (what `cellar rerender` uses on this machine: Node's permission model and, where
`unshare` works, new network, PID and mount namespaces), `permission` (Node's permission model
alone, as on a machine without `unshare`), `none` (no confinement below Python: the Python-level
refusals alone, as before issue 13). Prints one line per probe that got out and a summary line per
mode: "N probes, E escapes". Run `python3 build.py site` first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "pyodide"))

import test_boundary as boundary  # noqa: E402  (the probes live beside their test)

from cellar.rerender import batch, pyodide_host  # noqa: E402

SITE = ROOT / "site"


def confine_as(mode: str) -> None:
    """Make every worker started from now on (restarts too) confined as `mode` says."""
    pyodide_host.confinement.cache_clear()
    os.environ.pop("CELLAR_NO_NAMESPACES", None)
    if mode == "permission":
        os.environ["CELLAR_NO_NAMESPACES"] = "1"
    real = pyodide_host.PyodideHost
    confine = mode != "none"
    batch.PyodideHost = lambda *args, **kwargs: real(*args, **kwargs, confine=confine)


def clean_up(target: boundary.Target) -> None:
    """Remove what an escaping probe wrote (only a worker without confinement writes any)."""
    for path in (target.runtime / "pwned", Path("/tmp/pwned")):
        path.unlink(missing_ok=True)
    for path in target.write_dir.iterdir():
        if path.name not in {"secret.txt", "leak.mjs"}:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    target.before = target._files()


def measure(mode: str, probes: list[boundary.Probe], runtime: Path, wheels: list[str]) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        target = boundary.Target(Path(tmp), runtime)
        os.environ["CELLAR_PROBE_SECRET"] = target.token
        started = time.perf_counter()
        confine_as(mode)
        worker = batch.Worker(runtime, wheels, boundary.PACKAGES)
        print(f"{mode}: {worker.host.confinement.describe()}")
        escapes = 0
        try:
            for probe in probes:
                text, _ = boundary.run_probe(worker, target, probe)
                found = target.escapes(text)
                clean_up(target)
                if found:
                    escapes += 1
                    print(f"  {probe.id}: {'; '.join(found)}")
        finally:
            worker.close()
            target.close()
        return escapes, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="full,permission,none")
    parser.add_argument("--only", default="", help="probe ids, comma-separated (default: all)")
    args = parser.parse_args()
    if not (SITE / "build.json").is_file():
        print(f"{SITE}: not built: run `python3 build.py site` first", file=sys.stderr)
        return 1
    runtime, wheels = batch.site_runtime(SITE)
    only = set(filter(None, args.only.split(",")))
    probes = [probe for probe in boundary.PROBES if not only or probe.id in only]
    for mode in args.modes.split(","):
        escapes, seconds = measure(mode, probes, runtime, wheels)
        print(f"{mode}: {len(probes)} probes, {escapes} escapes ({seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

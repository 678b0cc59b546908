"""An archive's pinned environment, resolved at build time into what Pyodide can load.

An archive lists what its notebooks import in a plain `requirements.txt` (`name==version`, pip's
`--hash=sha256:...` options allowed, comments and blank lines ignored). `resolve_environment`
sorts each requirement into:

- a build in the Pyodide runtime: the runtime's `pyodide-lock.json` lists it (with a matching
  version, if pinned) and its file is in the runtime folder; the worker loads it by name;
- a pure-Python wheel (`py3-none-any`), fetched with `pip download` (never at run time) into a
  cache, checked against the requirement's `--hash` values if it has any, and recorded with its
  SHA-256; the worker installs them by file with `pyodide.loadPackage`, which reads no wheel's
  requirements, so nothing goes online for a dependency;
- unavailable, with the reason (no WebAssembly build: pip found no pure wheel; or a pinned version
  the runtime does not ship). Notebooks that import it are stale with that reason
  (`blocking_requirement`), rather than crashing or being skipped in silence.

`resolve_environment` is host-only (it runs pip); the rest is pure, and the viewer's Re-render
button sorts the same requirements against the site's own Pyodide lock (`sort_requirements`).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cellar.ingest.provenance import file_revision, revision

REQUIREMENT = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:==\s*([^\s;#]+))?")
HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")
# Import names that differ from the distribution's, for the packages seen in archives so far.
IMPORT_NAMES = {
    "python-ternary": "ternary",
    "scikit-learn": "sklearn",
    "pillow": "PIL",
    "python-dateutil": "dateutil",
    "typing-extensions": "typing_extensions",
    "pyyaml": "yaml",
    "beautifulsoup4": "bs4",
    "coolprop": "CoolProp",
}
BASE_PACKAGES = ("ipython", "matplotlib", "pandas")  # what cellar.rerender.sandbox.prepare() imports


class RequirementsError(ValueError):
    """A requirements file that cannot be read: the message names the file and line."""


@dataclass(frozen=True)
class Requirement:
    name: str  # normalised: lower case, `-` separators
    version: str | None
    hashes: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class Wheel:
    name: str
    version: str
    path: str
    sha256: str


@dataclass
class Environment:
    """What a worker loads: runtime packages by name, pure wheels by file; and what cannot load."""

    packages: list[str] = field(default_factory=list)
    wheels: list[Wheel] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)  # requirement name -> reason

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def normalise_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirements(text: str, source: str = "requirements.txt") -> list[Requirement]:
    """Parse the text of a requirements file; `source` names it in a RequirementsError."""
    requirements = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("--hash") else raw.strip()
        if not line:
            continue
        match = REQUIREMENT.match(line)
        if match is None or line.startswith("-"):
            raise RequirementsError(f"{source}:{number}: not a requirement: {raw.strip()!r}")
        requirements.append(
            Requirement(normalise_name(match.group(1)), match.group(2), tuple(HASH.findall(line)), number)
        )
    return requirements


def runtime_builds(
    lock: dict[str, Any], shipped: Callable[[str], bool] = lambda file_name: True
) -> dict[str, tuple[str, str]]:
    """Normalised name -> (lock name, version) of the packages of a parsed `pyodide-lock.json`
    whose file is `shipped` (the runtime folder has it)."""
    return {
        normalise_name(name): (name, entry["version"])
        for name, entry in lock["packages"].items()
        if shipped(entry["file_name"])
    }


def _runtime_builds(runtime: Path) -> dict[str, tuple[str, str]]:
    lock = json.loads((runtime / "pyodide-lock.json").read_text(encoding="utf-8"))
    return runtime_builds(lock, lambda file_name: (runtime / file_name).is_file())


def fingerprint(runtime: str | Path, packages: Sequence[str], wheels: Sequence[str | Path]) -> str:
    """`pyodide-<version>-<16 hex digits>`, a name for what a worker loads: the runtime's lock
    (Pyodide's version, each package's version and hash), the packages and the wheels' file names.

    Names, not contents: a wheel rebuilt under the same name keeps the fingerprint, so what is
    kept under it must check such files itself (as checked-hash bytecode does).
    """
    lock = Path(runtime) / "pyodide-lock.json"
    version = json.loads(lock.read_text(encoding="utf-8"))["info"]["version"]
    names = sorted(Path(wheel).name for wheel in wheels)
    digest = revision(json.dumps([file_revision(lock), sorted(packages), names]))
    return f"pyodide-{version}-{digest[:16]}"


def _pure_wheel(requirement: Requirement, cache: Path) -> Wheel | str:
    """The requirement's py3-none-any wheel in `cache` (fetched with pip if absent), or why not."""
    spec = requirement.name + (f"=={requirement.version}" if requirement.version else "")
    stem = requirement.name.replace("-", "_").lower()
    version = requirement.version or "*"
    found = [
        path
        for path in cache.glob("*.whl")
        if path.name.lower().startswith(f"{stem}-")
        and path.name.endswith("-none-any.whl")
        and (version == "*" or path.name.split("-")[1] == version)
    ]
    if not found:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--platform",
            "any",
            "--implementation",
            "py",
            "--abi",
            "none",
            "--python-version",
            "3.12",
            "--dest",
            str(cache),
            spec,
        ]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            return "no WebAssembly build: neither in the Pyodide runtime nor as a pure-Python wheel"
        found = [
            path
            for path in cache.glob("*.whl")
            if path.name.lower().startswith(f"{stem}-") and path.name.endswith("-none-any.whl")
        ]
        if not found:
            return "no WebAssembly build: neither in the Pyodide runtime nor as a pure-Python wheel"
    path = sorted(found)[-1]
    digest = file_revision(path)
    if requirement.hashes and digest not in requirement.hashes:
        return f"{path.name} has SHA-256 {digest}, which the requirement's --hash values do not list"
    return Wheel(requirement.name, path.name.split("-")[1], str(path), digest)


def resolve_environment(
    requirements: list[Requirement], runtime: str | Path, cache: str | Path, base: tuple[str, ...] = BASE_PACKAGES
) -> Environment:
    """Sort requirements into runtime builds, cached pure wheels and unavailable ones (see above)."""
    runtime, cache = Path(runtime), Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    return sort_requirements(
        requirements, _runtime_builds(runtime), lambda requirement: _pure_wheel(requirement, cache), base
    )


def sort_requirements(
    requirements: list[Requirement],
    builds: dict[str, tuple[str, str]],
    find_wheel: Callable[[Requirement], Wheel | str],
    base: tuple[str, ...] = BASE_PACKAGES,
) -> Environment:
    """The environment of `requirements`, given the runtime's `builds` (see `runtime_builds`) and
    `find_wheel`, which gives a requirement's pure wheel or why there is none. The build resolves
    with pip into a cache; the browser tab with the wheels its site ships.

    `base` are the runtime packages the sandbox itself needs, loaded whatever the archive asks.
    """
    environment = Environment(packages=[builds[normalise_name(name)][0] for name in base])
    for requirement in requirements:
        build = builds.get(requirement.name)
        if build is not None:
            if requirement.version and requirement.version != build[1]:
                environment.unavailable[requirement.name] = (
                    f"pinned {requirement.version}, but the Pyodide runtime ships {build[1]}"
                )
            elif build[0] not in environment.packages:
                environment.packages.append(build[0])
            continue
        wheel = find_wheel(requirement)
        if isinstance(wheel, str):
            environment.unavailable[requirement.name] = wheel
        else:
            environment.wheels.append(wheel)
    return environment


def imported_modules(sources: list[str]) -> set[str]:
    """Top-level module names that code cells import (cells that are not Python are skipped)."""
    names: set[str] = set()
    for source in sources:
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
        try:
            tree = ast.parse("\n".join(lines))
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # not Python, NULs, nested too deeply
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def blocking_requirement(sources: list[str], environment: Environment) -> str | None:
    """Why a notebook cannot run here: the first unavailable requirement it imports, or None."""
    imported = {normalise_name(name) for name in imported_modules(sources)}
    for name, reason in sorted(environment.unavailable.items()):
        if normalise_name(IMPORT_NAMES.get(name, name)) in imported or name in imported:
            return f"requirement {name}: {reason}"
    return None


def attribute_failure(reason: str, environment: Environment) -> str:
    """A failed run's reason, led by the unavailable requirement it names, if any.

    Catches what the import scan cannot: a library that imports the missing package itself
    (thermo's `ValueError: CoolProp is not installed`).
    """
    if reason.startswith("requirement "):
        return reason
    for name, why in sorted(environment.unavailable.items()):
        module = IMPORT_NAMES.get(name, name)
        if re.search(rf"(?<![\w.]){re.escape(module)}(?![\w])", reason, re.IGNORECASE):
            return f"requirement {name}: {why} ({reason})"
    return reason

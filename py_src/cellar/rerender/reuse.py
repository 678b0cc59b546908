"""Incremental re-rendering: which notebooks can keep the result of the previous run.

In: a notebook (its path and bytes), the archive's path map, and the run's environment (the
site's runtime and wheels, the resolved requirements, the limits, the sandbox code). Out: a key
(``notebook_key``); `cellar rerender` stores each notebook's key in report.json (``keys``) and,
on the next run into the same output folder, takes the report entry and the fresh notebook of
every notebook whose key is unchanged and whose fresh file is still there, instead of running it.

What a notebook's key covers:
- its bytes (its revision) and its path (a notebook starts in its own folder, so a moved notebook
  may read other inputs: it runs again);
- its inputs: the entries of the path map that its code names (a ``files`` key or a ``trees``
  prefix found in a code cell, compared without case and with either slash), and every entry
  under its own folder (the relative paths it may open), each with its blob id, which is the
  SHA-256 of the blob's bytes: an input whose bytes change makes the notebook run again even
  when the notebook itself did not change. An input whose path is built at run time from parts
  the code does not spell out is not seen; `--no-cache` runs everything;
- the environment: the site's build.json (runtime and wheels), the resolved requirements, the
  limits of rerender.json, the sandbox's code and cellar's version.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cellar import __version__
from cellar.ingest.provenance import file_revision

_PACKAGE = Path(__file__).resolve().parent
SANDBOX_SOURCES = ("*.py", "*.mjs")


def _norm(path: str) -> str:
    return path.replace("\\", "/").lower()


def environment_key(site_build: bytes, environment: Mapping[str, Any], limits: Mapping[str, Any]) -> str:
    """The SHA-256 of what runs every notebook."""
    digest = hashlib.sha256()
    for pattern in SANDBOX_SOURCES:
        for path in sorted(_PACKAGE.glob(pattern)):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    described = {
        "cellar": __version__,
        "sandbox": digest.hexdigest(),
        "site": hashlib.sha256(site_build).hexdigest(),
        "environment": environment,
        "limits": limits,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()


def inputs_named(pathmap: Mapping[str, Any], folder: str, sources: Iterable[str]) -> dict[str, Any]:
    """The path map's entries that a notebook in ``folder`` (relative to the archive, ``/``
    separators) may reach: those its code names, and those under its folder."""
    code = _norm("\n".join(sources))
    code = re.sub(r"/+", "/", code)  # r"\\srv" written as "\\\\srv" in a normal string
    own = "/" + folder.strip("/").lower() + "/" if folder.strip("/") else "/"
    found: dict[str, Any] = {}
    for logical, blob in (pathmap.get("files") or {}).items():
        key = re.sub(r"/+", "/", _norm(logical))
        if key in code or key.startswith(own) or key.rsplit("/", 1)[-1] in code and key.startswith("/"):
            found[f"file:{logical}"] = blob
    for prefix, tree in (pathmap.get("trees") or {}).items():
        if re.sub(r"/+", "/", _norm(prefix)) in code:
            found[f"tree:{prefix}"] = tree
    return found


def notebook_key(environment: str, path: str, data: bytes, inputs: Mapping[str, Any]) -> str:
    """The key of one notebook's run (see the module's docstring)."""
    described = [environment, path, hashlib.sha256(data).hexdigest(), inputs]
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def previous_run(out: Path, report_file: str) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """The entries (by path), keys and fresh notebooks' SHA-256s of the report a previous run left
    in ``out``; empty when there is none or it is unreadable (then everything runs)."""
    try:
        report = json.loads((out / report_file).read_text(encoding="utf-8"))
        entries = {entry["path"]: entry for entry in report["notebooks"]}
        keys = dict(report.get("keys") or {})
        fresh = dict(report.get("fresh") or {})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}, {}, {}
    return entries, keys, fresh


def fresh_as_written(path: Path, sha256: str | None) -> bool:
    """Whether the fresh notebook at ``path`` is the one a report recorded (``sha256``): a run
    killed after writing it, its notebook then changed back, left another run's copy there, which
    the next run reused as the report's and the index published under the archive file's revision."""
    try:
        return sha256 is not None and file_revision(path) == sha256
    except OSError:
        return False

"""A synthetic archive at a real archive's scale, made by varying real notebooks.

In: template notebooks (always the demo archive's, which ship in the repository; optionally the
notebooks of a corpus folder whose licence allows derivatives), a seed and a count. Out: an
archive laid out like the demo archive (``<year>/<project code> <subject>/<name>.ipynb``, each
notebook with ``metadata.cellar``, ``pathmap.json``, ``blobs/sha256/..``) and ``synth.json``, a
manifest with the SHA-256 of every file and the recipe of every notebook, so that the same seed
gives the same bytes and ``check_archive`` can verify an archive byte for byte.

Notebook ``i`` is a pure function of (seed, i, generation): its identity (year 2005-2025, project
code, subject, author, vessel class, file name) comes from (seed, i) and its content from (seed,
i, generation): numbers perturbed in sources and saved outputs, words swapped, new words, cells
dropped or repeated. ``mutate_archive`` is the nightly change set: it changes (a new generation of
the same path), adds (new indices) and deletes a share of the notebooks in place.

The pathmap format is ``cellar.rerender.vfs``'s (format 1), written here with ``json`` because
ingest sits below rerender; a test checks the result with ``cellar.rerender.archive``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import re
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cellar.ingest.discovery import read_document, write_atomic
from cellar.ingest.provenance import file_revision, revision

MANIFEST = "synth.json"
FORMAT = 1
DEFAULT_NOTEBOOKS = 41_000
DEMO_ARCHIVE = Path(__file__).resolve().parents[3] / "demo" / "archive"
# Licences of ../shared/corpus (its manifest.tsv `license` column) that allow derivatives. Left
# out: jakevdp/PythonDataScienceHandbook (CC-BY-NC-ND text) and anything unlisted.
DERIVATIVE_LICENCES = ("MIT", "Apache-2.0", "BSD-3-Clause", "CC-BY-4.0", "CC-BY-3.0")
PARALLEL_SPAN = 500  # notebooks per task when generating in several processes
_TEMPLATES: dict[Any, Synth] = {}  # a worker's templates, loaded once
MAX_TEMPLATE_BYTES = 400_000  # bigger corpus notebooks (table dumps) would dominate the archive's size

SUBJECTS = (
    "Ballast", "Stability", "Stabiliteit", "Mooring", "Fuel", "Weights", "Windage", "Resistance",
    "HVAC", "Elektrisch", "Diepgang", "Hull Form", "Fire Main", "Propulsion", "Steering", "Cargo Hold",
    "Anchoring", "Bilge", "Ballastwater", "Noise", "Vibration", "Crane", "Lashing", "Hatch Covers",
    "Tank Sounding", "Freeboard", "Tonnage", "Shafting", "Cooling Water", "Exhaust",
)  # fmt: skip
AUTHORS = (
    "J. de Vries", "H. Bakker", "M. Okafor", "P. van den Berg", "S. Lindqvist", "A. Jansen", "R. Meijer",
    "L. Chen", "K. Visser", "T. Smit", "E. Mulder", "N. de Boer", "F. Dekker", "G. Bos", "I. Hendriks",
    "D. Kowalski", "O. Haugen", "B. Nguyen", "C. Rossi", "W. Brouwer",
)  # fmt: skip
VESSEL_CLASSES = (
    "multipurpose cargo vessel", "coaster", "tug", "dredger", "offshore supply vessel", "ferry",
    "tanker", "bulk carrier", "container feeder", "research vessel", "patrol vessel", "yacht",
    "walk-to-work vessel", "cable layer", "inland barge",
)  # fmt: skip
SWAPS = {
    "vessel": "ship", "ship": "vessel", "total": "overall", "check": "verify", "tank": "tank",
    "calculation": "estimate", "input": "source", "table": "list", "schip": "vaartuig",
}  # fmt: skip
SYLLABLES = ("ka", "lo", "mer", "ti", "van", "dro", "sel", "bu", "rix", "no", "ple", "tor", "zan", "gue", "fi")
NUMBER = re.compile(r"(?<![\w\\/.#-])(\d{1,7})\.(\d{1,6})(?![\w\\/.])")
WORD = re.compile(r"\b[a-z]{4,}\b")


@dataclass(frozen=True)
class Template:
    """A template notebook: its decoded JSON, where it came from, the project code and year its
    text names (demo templates; replaced by the new ones) and the inputs its path map gives it."""

    name: str
    source: str  # "demo/<path>" or "corpus/<path>"
    notebook: dict[str, Any]
    code: str | None
    year: str | None
    inputs: dict[str, str]  # logical path -> "sha256:<hex>" (blobs in the demo archive)


@dataclass
class Synth:
    """The templates and the blob bytes they use."""

    templates: list[Template]
    blobs: dict[str, bytes]  # hex -> bytes
    sources: dict[str, str]  # template source -> SHA-256 of its bytes


def load_templates(corpus: str | os.PathLike[str] | None = None) -> Synth:
    """The demo archive's notebooks, plus those of ``corpus`` whose licence allows derivatives
    (by the corpus' manifest.tsv; a corpus without one contributes nothing)."""
    pathmap = json.loads((DEMO_ARCHIVE / "pathmap.json").read_text(encoding="utf-8"))
    templates, blobs, sources = [], {}, {}
    for path in sorted(DEMO_ARCHIVE.glob("*/*/*.ipynb")):
        data = path.read_bytes()
        notebook = json.loads(data)
        meta = notebook.get("metadata", {}).get("cellar", {})
        code, year = meta.get("project"), str(meta.get("year"))
        relative = path.relative_to(DEMO_ARCHIVE).as_posix()
        inputs = {}
        for logical, blob in pathmap["files"].items():
            if (code and code in logical) or logical.startswith(
                f"/{path.parent.relative_to(DEMO_ARCHIVE).as_posix()}/"
            ):
                inputs[logical] = blob
        for prefix, tree in pathmap["trees"].items():
            if code and code in prefix:
                inputs.update({f"{prefix}\\{rel.replace('/', chr(92))}": blob for rel, blob in tree.items()})
        for blob in inputs.values():
            hexdigest = blob.split(":", 1)[1]
            blobs[hexdigest] = (DEMO_ARCHIVE / "blobs" / "sha256" / hexdigest[:2] / hexdigest).read_bytes()
        source = f"demo/{relative}"
        templates.append(Template(path.stem, source, notebook, code, year, inputs))
        sources[source] = revision(data)
    if corpus is not None:
        for relative in corpus_templates(corpus):
            data = (Path(corpus) / relative).read_bytes()
            try:
                notebook = json.loads(data)
            except ValueError:
                continue
            if notebook.get("nbformat") != 4 or not isinstance(notebook.get("cells"), list) or not notebook["cells"]:
                continue
            source = f"corpus/{relative}"
            templates.append(Template(Path(relative).stem, source, notebook, None, None, {}))
            sources[source] = revision(data)
    return Synth(templates, blobs, sources)


def corpus_templates(corpus: str | os.PathLike[str]) -> list[str]:
    """The notebooks of a corpus folder usable as templates: listed in its manifest.tsv with a
    licence of DERIVATIVE_LICENCES, not under edge/ (deliberately broken test notebooks), at most
    MAX_TEMPLATE_BYTES."""
    manifest = Path(corpus) / "manifest.tsv"
    if not manifest.is_file():
        return []
    chosen = []
    with open(manifest, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            path = row.get("path", "")
            if row.get("license") not in DERIVATIVE_LICENCES or path.startswith("edge/"):
                continue
            if "jakevdp" in path.lower() or int(row.get("bytes") or 0) > MAX_TEMPLATE_BYTES:
                continue
            if (Path(corpus) / path).is_file():
                chosen.append(path)
    return sorted(chosen)


# -- one notebook ---------------------------------------------------------------------------------


def _rng(*parts: object) -> random.Random:
    return random.Random(hashlib.sha256(":".join(map(str, parts)).encode()).digest())


def identity(seed: int, index: int, synth: Synth) -> dict[str, Any]:
    """Who and where notebook ``index`` is: a function of (seed, index) alone."""
    rng = _rng(seed, "identity", index)
    template = synth.templates[rng.randrange(len(synth.templates))]
    year = rng.randint(2005, 2025)
    code = f"{year % 100:02d}-{rng.randint(1, 199):03d}"
    subject = rng.choice(SUBJECTS)
    stem = re.sub(r"[^a-z0-9]+", "_", template.name.lower()).strip("_")[:40] or "notebook"
    stem = re.sub(r"_?\d{5}$", "", stem)  # the demo's project number suffix
    name = f"{stem}_{code.replace('-', '')}_{index:05d}.ipynb"
    return {
        "template": template.source,
        "path": f"{year}/{code} {subject}/{name}",
        "project": code,
        "year": year,
        "subject": subject,
        "author": rng.choice(AUTHORS),
        "vessel_class": rng.choice(VESSEL_CLASSES),
        "deprecated": rng.random() < 0.03,
    }


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))


def _perturb_numbers(text: str, rng: random.Random, share: float) -> str:
    def change(match: re.Match[str]) -> str:
        if rng.random() >= share:
            return match.group(0)
        whole, decimals = match.group(1), match.group(2)
        value = float(f"{whole}.{decimals}") * rng.uniform(0.8, 1.25)
        return f"{value:.{len(decimals)}f}"

    return NUMBER.sub(change, text)


def _swap_words(text: str, rng: random.Random, share: float) -> str:
    return WORD.sub(lambda m: SWAPS.get(m.group(0), m.group(0)) if rng.random() < share else m.group(0), text)


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def make_notebook(seed: int, index: int, generation: int, synth: Synth) -> tuple[str, bytes, dict[str, str]]:
    """(path, bytes, inputs) of notebook ``index`` at ``generation``: inputs maps the logical
    paths its code reads to blob ids, for the path map."""
    who = identity(seed, index, synth)
    template = next(t for t in synth.templates if t.source == who["template"])
    rng = _rng(seed, "content", index, generation)
    new_code, new_year = who["project"], str(who["year"])

    def rename(text: str) -> str:
        if template.code:
            text = text.replace(template.code, new_code).replace(
                template.code.replace("-", ""), new_code.replace("-", "")
            )
        if template.year and template.year != "None":
            text = text.replace(f"\\{template.year}\\", f"\\{new_year}\\")
        return text

    cells = []
    topic = re.sub(r"[ _]?\d{5}$", "", template.name).replace("_", " ")
    title = f"{who['subject']} {new_code}: {topic} ({who['vessel_class']})"
    words = " ".join(_word(rng) for _ in range(rng.randint(1, 3)))
    intro = (
        f"# {title}\n\nProject {new_code}, {who['vessel_class']}, {who['author']}, {who['year']}. "
        f"Working names: {words}.\n"
    )
    cells.append({"cell_type": "markdown", "metadata": {}, "source": _lines(intro)})
    for cell in template.notebook["cells"]:
        roll = rng.random()
        if roll < 0.05:
            continue  # dropped
        copies = 2 if roll > 0.97 else 1
        for _ in range(copies):
            cells.append(_vary_cell(cell, rng, rename))
    for number, cell in enumerate(cells):
        cell["id"] = hashlib.sha256(f"{seed}:{index}:{generation}:{number}".encode()).hexdigest()[:12]
    metadata = dict(template.notebook.get("metadata", {}))
    metadata["cellar"] = {
        "author": who["author"],
        "deprecated": who["deprecated"],
        "project": new_code,
        "tags": [who["subject"].lower(), who["vessel_class"], *words.split()[:1]],
        "title": title,
        "vessel_class": who["vessel_class"],
        "year": who["year"],
    }
    metadata["synth"] = {"index": index, "generation": generation, "template": template.source}
    notebook = {
        "cells": cells,
        "metadata": metadata,
        "nbformat": 4,
        "nbformat_minor": max(5, int(template.notebook.get("nbformat_minor", 5))),
    }
    data = (json.dumps(notebook, indent=1, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    inputs = {rename(logical): blob for logical, blob in template.inputs.items()}
    if template.inputs and template.code:
        folder = who["path"].rsplit("/", 1)[0]
        for logical, blob in template.inputs.items():  # a relative input lives beside the notebook
            if logical.startswith("/"):
                inputs.pop(rename(logical), None)
                inputs[f"/{folder}/{rename(logical.split('/', 3)[-1])}"] = blob
    return who["path"], data, inputs


def _vary_cell(cell: Mapping[str, Any], rng: random.Random, rename: Callable[[str], str]) -> dict[str, Any]:
    new = {key: value for key, value in cell.items() if key != "id"}
    source = rename(_text(cell.get("source", "")))
    if cell.get("cell_type") == "markdown":
        source = _swap_words(_perturb_numbers(source, rng, 0.5), rng, 0.3)
    elif cell.get("cell_type") == "code":
        source = _perturb_numbers(source, rng, 0.3)
    new["source"] = _lines(source)
    if "outputs" in cell:
        new["outputs"] = [_vary_output(output, rng, rename) for output in cell["outputs"]]
    return new


def _vary_output(output: Mapping[str, Any], rng: random.Random, rename: Callable[[str], str]) -> dict[str, Any]:
    new = dict(output)
    if "text" in output:
        new["text"] = _lines(_perturb_numbers(rename(_text(output["text"])), rng, 0.4))
    if isinstance(output.get("data"), dict):
        data = dict(output["data"])
        for mime in ("text/plain", "text/html", "text/markdown"):
            if mime in data:
                data[mime] = _lines(_perturb_numbers(rename(_text(data[mime])), rng, 0.4))
        new["data"] = data
    return new


# -- an archive -----------------------------------------------------------------------------------


def _inside(root: Path, path: str) -> bool:
    """Whether the manifest's ``path`` names a file of the archive ``root`` (a hand-edited manifest
    may name any path)."""
    return Path(os.path.realpath(root / path)).is_relative_to(os.path.realpath(root))


def _blob_path(out: Path, hexdigest: str) -> Path:
    return out / "blobs" / "sha256" / hexdigest[:2] / hexdigest


def _finish(out: Path, manifest: dict[str, Any], synth: Synth) -> None:
    """Write pathmap.json and the blobs the notebooks use, then the manifest with every hash."""
    files: dict[str, str] = {}
    for entry in manifest["notebooks"].values():
        files.update(entry["inputs"])
    pathmap = {"files": dict(sorted(files.items())), "format": 1, "trees": {}}
    data = (json.dumps(pathmap, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    write_atomic(os.fspath(out / "pathmap.json"), data)
    manifest["files"] = {"pathmap.json": revision(data)}
    for blob in sorted({value.split(":", 1)[1] for value in files.values()}):
        target = _blob_path(out, blob)
        if not target.exists():
            write_atomic(os.fspath(target), synth.blobs[blob])
        manifest["files"][target.relative_to(out).as_posix()] = blob
    text = json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    write_atomic(os.fspath(out / MANIFEST), text.encode("utf-8"))


def generate_archive(
    out: str | os.PathLike[str],
    notebooks: int = DEFAULT_NOTEBOOKS,
    seed: int = 0,
    templates: str | os.PathLike[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
) -> dict[str, Any]:
    """Write a synthetic archive of ``notebooks`` notebooks into ``out`` (which must not hold one
    already) and return its manifest; ``workers`` processes (default: the machine's cores) write
    spans of PARALLEL_SPAN notebooks each, and the archive is the same whatever their number."""
    root = Path(out)
    if (root / MANIFEST).exists() or (root.exists() and any(root.iterdir())):
        raise ValueError(f"{out}: not empty; generate into a new folder")
    synth = load_templates(templates)
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "seed": seed,
        "templates": synth.sources,
        "template_dir": os.fspath(templates) if templates is not None else None,
        "generation": 0,
        "next_index": notebooks,
        "notebooks": {},
    }
    workers = workers or (os.cpu_count() or 1)
    if workers == 1 or notebooks < 2 * PARALLEL_SPAN:
        for index in range(notebooks):
            _add(root, manifest, synth, seed, index, 0)
            if progress and (index + 1) % 500 == 0:
                progress(index + 1, notebooks)
    else:  # each span of indices in a process of its own: the bytes do not depend on which
        spans = [range(start, min(start + PARALLEL_SPAN, notebooks)) for start in range(0, notebooks, PARALLEL_SPAN)]
        done = 0
        with ProcessPoolExecutor(workers) as pool:
            futures = [pool.submit(_write_span, os.fspath(root), seed, templates, span) for span in spans]
            for future in as_completed(futures):
                manifest["notebooks"].update(future.result())
                done += PARALLEL_SPAN
                if progress:
                    progress(min(done, notebooks), notebooks)
    _finish(root, manifest, synth)
    return manifest


def _write_span(
    root: str, seed: int, templates: str | os.PathLike[str] | None, span: range
) -> dict[str, dict[str, Any]]:
    """Write notebooks ``span`` (a worker's share); their manifest entries."""
    synth = _TEMPLATES.get(templates)
    if synth is None:
        synth = _TEMPLATES[templates] = load_templates(templates)
    part: dict[str, Any] = {"notebooks": {}}
    for index in span:
        _add(Path(root), part, synth, seed, index, 0)
    return part["notebooks"]


def _add(root: Path, manifest: dict[str, Any], synth: Synth, seed: int, index: int, generation: int) -> str:
    path, data, inputs = make_notebook(seed, index, generation, synth)
    write_atomic(os.fspath(root / path), data)
    manifest["notebooks"][path] = {
        "sha256": revision(data),
        "index": index,
        "generation": generation,
        "inputs": inputs,
    }
    return path


def read_manifest(out: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(out) / MANIFEST
    try:  # read as an archive's file is: no link out of it, no FIFO or device, bounded
        manifest = json.loads(read_document(path, out).decode("utf-8"))
    except (OSError, ValueError, RecursionError) as error:  # RecursionError: nested too deeply
        raise ValueError(f"{path}: not a synthetic archive's manifest ({error})") from None
    if not isinstance(manifest, dict):
        raise ValueError(f"{path}: not a synthetic archive's manifest (not a JSON object)")
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: manifest format {manifest.get('format')!r}, expected {FORMAT}")
    return manifest


@dataclass(frozen=True)
class Mutation:
    changed: list[str]
    added: list[str]
    deleted: list[str]


def mutate_archive(out: str | os.PathLike[str], fraction: float) -> Mutation:
    """Change, add and delete ``fraction`` of the archive's notebooks in place (3:1:1), as a
    day's work on a file share would; deterministic for the archive's seed and generation."""
    if not 0 < fraction <= 1:
        raise ValueError(f"the fraction must be in (0, 1], not {fraction}")
    root = Path(out)
    manifest = read_manifest(root)
    synth = load_templates(manifest["template_dir"])
    if synth.sources != manifest["templates"]:
        raise ValueError(f"{out}: its templates have changed since it was generated")
    outside = [path for path in sorted(manifest["notebooks"]) if not _inside(root, path)]
    if outside:  # a deletion there removed a file, and its folder, out of the archive
        raise ValueError(f"{out}: its manifest names {outside[0]}, outside the archive: nothing changed")
    generation = manifest["generation"] + 1
    rng = _rng(manifest["seed"], "mutate", generation)
    paths = sorted(manifest["notebooks"])
    count = max(1, round(fraction * len(paths)))
    deletes, adds = count // 5, count // 5
    changes = count - deletes - adds
    picked = rng.sample(paths, min(len(paths), changes + deletes))
    changed, deleted, added = picked[:changes], picked[changes:], []
    for path in changed:
        entry = manifest["notebooks"].pop(path)
        new_path = _add(root, manifest, synth, manifest["seed"], entry["index"], generation)
        assert new_path == path  # identity depends on the index only
    for path in deleted:
        del manifest["notebooks"][path]
        (root / path).unlink()
        for folder in (root / path).parents:
            if folder == root or any(folder.iterdir()):
                break
            folder.rmdir()
    for _ in range(adds):
        added.append(_add(root, manifest, synth, manifest["seed"], manifest["next_index"], generation))
        manifest["next_index"] += 1
    manifest["generation"] = generation
    _finish(root, manifest, synth)
    return Mutation(sorted(changed), sorted(added), sorted(deleted))


def check_archive(out: str | os.PathLike[str]) -> list[str]:
    """Every file the manifest lists, with its SHA-256, and no notebook it does not list: the
    problems found (empty when the archive is what was generated, byte for byte)."""
    root = Path(out)
    manifest = read_manifest(root)
    expected = {path: entry["sha256"] for path, entry in manifest["notebooks"].items()}
    expected.update(manifest["files"])
    problems = []
    for path, digest in sorted(expected.items()):
        if not _inside(root, path):  # only the archive's own files are read
            problems.append(f"{path}: outside the archive: not read")
            continue
        try:
            actual = file_revision(root / path)
        except OSError as error:
            problems.append(f"{path}: missing ({error.strerror})")
            continue
        if actual != digest:
            problems.append(f"{path}: SHA-256 {actual[:12]}, expected {digest[:12]}")
    for path in _notebooks_below(root):
        if path not in manifest["notebooks"]:
            problems.append(f"{path}: not in the manifest")
    return problems


def _notebooks_below(root: Path) -> Iterable[str]:
    for parent, folders, names in os.walk(root):
        folders.sort()
        for name in sorted(names):
            if name.endswith(".ipynb"):
                yield Path(parent, name).relative_to(root).as_posix()

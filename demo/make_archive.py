"""Build Cellar's demo archive: run the demo notebooks for real and keep their inputs as blobs.

The demo archive is the corpus that `python3 build.py serve` indexes by default: thirteen
calculation notebooks of a fictional naval/engineering consultancy, laid out like its file share.
This script is run by hand, never at build time; commit what it writes.

    .venv/bin/python demo/make_archive.py           # (re)write demo/archive/
    .venv/bin/python demo/make_archive.py --check   # build in a temporary directory and compare

Reads
  demo/sources/<stem>.py   each notebook's cells in percent format: a line "# %%" starts a code
                           cell, "# %% [markdown]" a markdown cell whose lines start with "#"
  demo/inputs/<project>/   the input files the notebooks read
  NOTEBOOKS (below)        where each notebook lives, its metadata.cellar, the paths it reads

Writes (into --out, default demo/archive/)
  <year>/<project folder>/<stem>.ipynb   nbformat 4.5, outputs from a real run
  blobs/sha256/<2 hex>/<64 hex>          every archived input, named by the SHA-256 of its bytes
  pathmap.json                           {"format": 1, "files": {logical path: "sha256:<hex>"},
                                          "trees": {logical prefix: {relative path: "sha256:<hex>"}}}
                                         The archive root is the logical POSIX root "/" and a
                                         notebook starts in its own folder, so a relative path is
                                         keyed "/<notebook folder>/<path as written>". "trees" keys
                                         are share prefixes without a trailing separator; their
                                         entries use "/" separators.
  requirements.txt, README.md            the pinned environment and the table of notebooks
  documents beside the notebooks         demo/make_documents.py: a Markdown report, a PDF, a
                                         DOCX, a standard's clauses, service notes, glossary.json

How each notebook is run: nbclient with an ipykernel (TZ=UTC, PYTHONHASHSEED=0), with a hidden
first setup cell, executed without storing history (so the author's cells count from In[1]):
`%matplotlib inline` (Agg; PNG figures at dpi 100 with bbox_inches="tight", matplotlib's default
metadata), `random` and NumPy seeded with 0, and `open`/`io.open` redirected from the logical paths
the notebook spells (UNC, drive letter, relative; case-insensitive, either slash) to the input
files. The setup cell is then removed, so cell indices and sources are exactly what the author
wrote. A notebook whose designed status is "drifted" ran against an input that was corrected
later: the archive keeps only the corrected file. A "stale" one read a file that never reached the
share: its saved outputs are real, but the path map does not know the file.

Build-only requirements (host, not the package): nbclient==0.10.2, ipykernel==6.29.5,
ipython==8.23.0 and matplotlib==3.8.4 with its dependencies at Pyodide 0.27.7's versions.
"""

from __future__ import annotations

import argparse
import ast
import filecmp
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbformat import NotebookNode

# nbformat and nbclient are imported where they are used, so that --help works with any Python.

DEMO = Path(__file__).resolve().parent
SOURCES = DEMO / "sources"
INPUTS = DEMO / "inputs"

# What the notebooks import, at the versions Pyodide 0.27.7 ships, so that a re-render in the
# browser runs the same library code that made the saved outputs.
REQUIREMENTS = {"numpy": "2.0.2", "pandas": "2.2.3", "matplotlib": "3.8.4"}

# Share prefixes stored as one tree in the path map rather than file by file.
TREES = (r"\\srv-calc-01\projects\2020\20-004",)

STATUSES = ("clean", "drifted", "stale")


@dataclass(frozen=True)
class Input:
    """One file a notebook reads.

    written:  the path as the notebook's code spells it
    source:   the file under demo/inputs/ that the archive keeps for it
    ran_with: the file the saved run read, when it was corrected afterwards (drifted on purpose)
    archived: False for a file that never reached the share (the notebook goes stale)
    """

    written: str
    source: str
    ran_with: str | None = None
    archived: bool = True


@dataclass(frozen=True)
class Notebook:
    """One notebook of the archive: where it lives, what it is about, what it reads."""

    path: str
    project: str
    author: str
    year: int
    vessel_class: str
    title: str
    tags: tuple[str, ...]
    answers: str
    inputs: tuple[Input, ...] = ()
    deprecated: bool = False
    designed_status: str = "clean"
    designed_reason: str | None = None
    errors: int = 0  # error outputs the author left in (a re-run reproduces them)

    @property
    def stem(self) -> str:
        return Path(self.path).stem

    @property
    def folder(self) -> str:
        return str(Path(self.path).parent.as_posix())

    def cellar_metadata(self) -> dict:
        return {
            "project": self.project,
            "author": self.author,
            "year": self.year,
            "vessel_class": self.vessel_class,
            "title": self.title,
            "tags": list(self.tags),
            "deprecated": self.deprecated,
            "designed_status": self.designed_status,
            "designed_reason": self.designed_reason,
        }


NOTEBOOKS = (
    Notebook(
        path="2014/14-011 Hull Form/hull_coefficients_14011.ipynb",
        project="14-011",
        author="H. Bakker",
        year=2014,
        vessel_class="coaster",
        title="Hull form coefficients, 14-011 coaster series (superseded)",
        tags=("hull form", "block coefficient", "prismatic coefficient", "superseded"),
        answers="Cb, Cm, Cp, Cwp of three 88 m coaster hull variants (table no longer used)",
        inputs=(Input(r"\\SRV-CALC-01\Projects\2014\14-011\inputs\hullforms_14011.csv", "14-011/hullforms_14011.csv"),),
        deprecated=True,
    ),
    Notebook(
        path="2015/15-027 Fire Main/pipe_friction_15027.ipynb",
        project="15-027",
        author="M. Okafor",
        year=2015,
        vessel_class="offshore supply vessel",
        title="Fire main friction losses (Darcy-Weisbach, Colebrook), 15-027 PSV",
        tags=("pipe friction", "Darcy-Weisbach", "Colebrook", "fire main", "pressure drop"),
        answers="friction loss from fire pump to forecastle hydrant, per pipe segment",
        inputs=(Input("inputs/pipe_runs_15027.csv", "15-027/pipe_runs_15027.csv"),),
    ),
    Notebook(
        path="2016/16-008 Stabiliteit/gz_kromme_16008.ipynb",
        project="16-008",
        author="P. van den Berg",
        year=2016,
        vessel_class="general cargo vessel",
        title="Stabiliteit: GZ-kromme vertrek volbeladen, 16-008",
        tags=("stabiliteit", "GZ-kromme", "IS Code", "oprichtende arm", "stability"),
        answers="GZ curve and IS Code 2008 intact stability criteria (Dutch)",
        inputs=(
            Input(r"\\srv-calc-01\projects\2016\16-008\invoer\kn_waarden_16008.csv", "16-008/kn_waarden_16008.csv"),
        ),
    ),
    Notebook(
        path="2017/17-042 Ballast/ballast_tanks_17042.ipynb",
        project="17-042",
        author="J. de Vries",
        year=2017,
        vessel_class="multipurpose cargo vessel",
        title="Ballast tank volumes, 17-042 130 m multipurpose cargo vessel",
        tags=("ballast", "tank volumes", "tank table", "ballastwater", "130 m"),
        answers="ballast volume per tank group (aft, forepeak, midship) and the total",
        inputs=(Input(r"\\srv-calc-01\projects\2017\17-042\inputs\tanks_17042c.csv", "17-042/tanks_17042c.csv"),),
    ),
    Notebook(
        path="2018/18-015 Windage/wind_loads_18015.ipynb",
        project="18-015",
        author="S. Lindqvist",
        year=2018,
        vessel_class="ro-ro ferry",
        title="Wind loads on the superstructure, 18-015 ro-ro ferry",
        tags=("wind load", "windage", "heeling moment", "superstructure"),
        answers="lateral wind force and heeling moment on the windage areas",
        inputs=(Input(r"\\srv-calc-01\projects\2018\18-015\inputs\windage_18015.json", "18-015/windage_18015.json"),),
    ),
    Notebook(
        path="2019/19-022 Weights/weight_estimate_19022.ipynb",
        project="19-022",
        author="M. Okafor",
        year=2019,
        vessel_class="harbour tug",
        title="Lightship weight estimate, 19-022 harbour tug",
        tags=("lightship", "weight estimate", "centre of gravity", "margins"),
        answers="lightship weight and centre of gravity with margins (a KeyError left in)",
        errors=1,
    ),
    Notebook(
        path="2019/19-063 Fuel/fuel_consumption_19063.ipynb",
        project="19-063",
        author="A. Jansen",
        year=2019,
        vessel_class="bulk carrier",
        title="Fuel consumption per voyage leg, 19-063 bulk carrier",
        tags=("fuel consumption", "SFOC", "voyage", "brandstofverbruik"),
        answers="main-engine HFO per leg, Rotterdam - Singapore, from the SFOC curve",
        inputs=(
            Input(
                r"P:\19-063\data\sfoc_me_19063.csv",
                "19-063/sfoc_me_19063.csv",
                ran_with="19-063/sfoc_me_19063_as_run.csv",
            ),
        ),
        designed_status="drifted",
        designed_reason=r"input P:\19-063\data\sfoc_me_19063.csv was corrected after the saved run "
        "(SFOC at 75 % load 178.2 -> 171.2 g/kWh)",
    ),
    Notebook(
        path="2020/20-004 Mooring/mooring_tension_20004.ipynb",
        project="20-004",
        author="S. Lindqvist",
        year=2020,
        vessel_class="offshore construction vessel",
        title="Mooring line tensions, 20-004 spread mooring",
        tags=("mooring", "catenary", "line tension", "safety factor"),
        answers="quasi-static top tension and safety factor of the most loaded mooring line",
        inputs=(
            Input(r"\\srv-calc-01\projects\2020\20-004\inputs\mooring_lines.csv", "20-004/mooring_lines.csv"),
            Input(r"\\srv-calc-01\projects\2020\20-004\inputs\site_conditions.txt", "20-004/site_conditions.txt"),
        ),
    ),
    Notebook(
        path="2021/21-019 Elektrisch/kortsluiting_hoofdschakelbord_21019.ipynb",
        project="21-019",
        author="R. Meijer",
        year=2021,
        vessel_class="trailing suction hopper dredger",
        title="Kortsluitstroom hoofdschakelbord 690 V, 21-019",
        tags=("kortsluiting", "kortsluitstroom", "schakelbord", "short circuit", "IEC 61363"),
        answers="short-circuit and peak current on the 690 V main switchboard (Dutch)",
        inputs=(
            Input(r"\\srv-calc-01\projects\2021\21-019\invoer\generatoren_21019.csv", "21-019/generatoren_21019.csv"),
        ),
    ),
    Notebook(
        path="2022/22-031 Diepgang/diepgang_meting_22031.ipynb",
        project="22-031",
        author="P. van den Berg",
        year=2022,
        vessel_class="chemical tanker",
        title="Diepgangmeting en trim, 22-031",
        tags=("diepgang", "trim", "draft survey", "quarter mean draught"),
        answers="trim and quarter mean draught from six draught marks (Dutch)",
        inputs=(
            Input(r"C:\Users\pvdberg\Desktop\diepgangen_22031.csv", "22-031/diepgangen_22031.csv", archived=False),
        ),
        designed_status="stale",
        designed_reason=r"input C:\Users\pvdberg\Desktop\diepgangen_22031.csv is not in the archive "
        "(it stayed on the author's desktop)",
    ),
    Notebook(
        path="2023/23-012 Resistance/resistance_power_23012.ipynb",
        project="23-012",
        author="L. Chen",
        year=2023,
        vessel_class="patrol vessel",
        title="Resistance and effective power, 23-012 patrol vessel",
        tags=("resistance", "effective power", "ITTC 1957", "speed-power"),
        answers="calm-water resistance, effective and brake power from 10 to 22 kn",
        inputs=(
            Input(
                r"\\srv-calc-01\projects\2023\23-012\inputs\main_particulars_23012.json",
                "23-012/main_particulars_23012.json",
            ),
        ),
    ),
    Notebook(
        path="2023/23-040 HVAC/engine_room_ventilation_23040.ipynb",
        project="23-040",
        author="R. Meijer",
        year=2023,
        vessel_class="service operation vessel",
        title="Engine room ventilation air flow (ISO 8861), 23-040",
        tags=("ventilation", "ISO 8861", "engine room", "combustion air", "heat emission"),
        answers="required engine room supply air from combustion air and heat emission",
    ),
    Notebook(
        path="2024/24-007 Ballastwater/ballastwater_behandeling_24007.ipynb",
        project="24-007",
        author="A. Jansen",
        year=2024,
        vessel_class="trailing suction hopper dredger",
        title="Ballastwaterbehandeling: capaciteit en pomptijd, 24-007",
        tags=("ballastwater", "BWTS", "pomptijd", "ballast water treatment"),
        answers="ballast water treatment system size and pumping time (Dutch)",
        inputs=(Input(r"P:\24-007\invoer\ballasttanks_24007.csv", "24-007/ballasttanks_24007.csv"),),
    ),
)

SETUP = """\
%matplotlib inline
def _cellar_setup(redirect):
    import builtins, io, random
    import matplotlib
    import numpy

    matplotlib.rcParams["svg.hashsalt"] = "cellar-demo"
    random.seed(0)
    numpy.random.seed(0)

    def redirecting(opener):
        def mapped_open(file, *args, **kwargs):
            if isinstance(file, str):
                file = redirect.get(file.replace("/", "\\\\").lower(), file)
            return opener(file, *args, **kwargs)
        return mapped_open

    # IPython puts its own guarded `open` into the user namespace; redirect both.
    shell = get_ipython()
    shell.user_ns["open"] = redirecting(shell.user_ns.get("open", builtins.open))
    builtins.open = io.open = redirecting(builtins.open)

_cellar_setup({redirect!r})
del _cellar_setup
"""

CELL_MARK = re.compile(r"^# %%(?: \[(markdown)\])?$")
MEMORY_ADDRESS = re.compile(r"at 0x[0-9a-fA-F]+")


def parse_percent(text: str, name: str) -> list[NotebookNode]:
    """Cells of a percent-format source: '# %%' opens a code cell, '# %% [markdown]' a markdown one."""
    from nbformat.v4 import new_code_cell, new_markdown_cell

    cells: list = []
    kind: str | None = None
    lines: list[str] = []

    def flush() -> None:
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        if kind == "code":
            cells.append(new_code_cell("\n".join(lines)))
        elif kind == "markdown":
            body = []
            for line in lines:
                if line != "#" and not line.startswith("# "):
                    raise ValueError(f"{name}: markdown line does not start with '# ': {line!r}")
                body.append(line[2:])
            cells.append(new_markdown_cell("\n".join(body)))

    for line in text.splitlines():
        mark = CELL_MARK.match(line)
        if mark:
            flush()
            kind, lines = ("markdown" if mark.group(1) else "code"), []
        elif kind is None and line.strip():
            raise ValueError(f"{name}: text before the first '# %%' marker")
        else:
            lines.append(line)
    flush()
    return cells


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_relative(path: str) -> bool:
    """True for a path that is neither UNC, drive-letter nor POSIX absolute."""
    return not (path.startswith(("\\", "/", "~")) or re.match(r"^[A-Za-z]:", path))


def tree_root(path: str) -> str | None:
    lowered = path.lower()
    return next((root for root in TREES if lowered.startswith(root.lower() + "\\")), None)


def build_pathmap(notebooks: tuple[Notebook, ...]) -> tuple[dict, dict[str, bytes]]:
    """The path map and the blobs (hex -> bytes) of every archived input."""
    files: dict[str, str] = {}
    trees: dict[str, dict[str, str]] = {}
    blobs: dict[str, bytes] = {}
    for nb in notebooks:
        for item in nb.inputs:
            if not item.archived:
                continue
            data = (INPUTS / item.source).read_bytes()
            blob = sha256_hex(data)
            blobs[blob] = data
            root = tree_root(item.written)
            if root:
                table, key = trees.setdefault(root, {}), item.written[len(root) + 1 :].replace("\\", "/")
            else:
                table, key = files, f"/{nb.folder}/{item.written}" if is_relative(item.written) else item.written
            if table.get(key, f"sha256:{blob}") != f"sha256:{blob}":
                raise ValueError(f"{nb.path}: {item.written} is mapped to two different files")
            table[key] = f"sha256:{blob}"
    return {"format": 1, "files": files, "trees": trees}, blobs


def check_imports(nb: Notebook, cells: list) -> None:
    """Every module a notebook imports is in the standard library or in REQUIREMENTS."""
    for cell in cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            )
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in REQUIREMENTS:
                    raise ValueError(f"{nb.path}: imports {top}, which requirements.txt does not pin")


def execute(nb: Notebook, folder: Path) -> NotebookNode:
    """Run the notebook's cells for real and return it without the hidden setup cell."""
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell, new_notebook

    source = SOURCES / f"{nb.stem}.py"
    cells = parse_percent(source.read_text(encoding="utf-8"), str(source))
    check_imports(nb, cells)
    redirect = {
        item.written.replace("/", "\\").lower(): str(INPUTS / (item.ran_with or item.source)) for item in nb.inputs
    }
    book = new_notebook(cells=[new_code_cell(SETUP.format(redirect=redirect)), *cells])
    book.metadata.kernelspec = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    client = NotebookClient(
        book,
        kernel_name="python3",
        timeout=300,
        allow_errors=nb.errors > 0,
        record_timing=False,
        resources={"metadata": {"path": str(folder)}},
    )
    env = dict(os.environ, TZ="UTC", PYTHONHASHSEED="0")
    with client.setup_kernel(env=env):
        info = client.wait_for_reply(client.kc.kernel_info())
        client.execute_cell(book.cells[0], 0, store_history=False)
        if any(out.output_type in ("error", "stream") for out in book.cells[0].outputs):
            raise RuntimeError(f"{nb.path}: the setup cell failed: {book.cells[0].outputs}")
        for index in range(1, len(book.cells)):
            client.execute_cell(book.cells[index], index)
    book.cells = book.cells[1:]
    book.metadata.language_info = info["content"]["language_info"]
    book.metadata.cellar = nb.cellar_metadata()
    check_outputs(nb, book)
    for index, cell in enumerate(book.cells):
        # Stable ids: the same notebook and index give the same id on every run.
        cell.id = sha256_hex(f"{nb.path}#{index}".encode())[:12]
    return book


def check_outputs(nb: Notebook, book: NotebookNode) -> None:
    """Refuse a run that would make the saved outputs misleading or unstable."""
    counts = [cell.execution_count for cell in book.cells if cell.cell_type == "code"]
    if counts != list(range(1, len(counts) + 1)):
        raise RuntimeError(f"{nb.path}: execution counts {counts} do not run 1..n")
    outputs = [out for cell in book.cells if cell.cell_type == "code" for out in cell.outputs]
    errors = sum(out.output_type == "error" for out in outputs)
    if errors != nb.errors:
        raise RuntimeError(f"{nb.path}: {errors} error outputs, expected {nb.errors}")
    for out in outputs:
        if out.output_type == "stream" and out.name == "stderr":
            raise RuntimeError(f"{nb.path}: unexpected stderr output: {out.text!r}")
        text = out.get("text", "") + out.get("data", {}).get("text/plain", "")
        if MEMORY_ADDRESS.search(text):
            raise RuntimeError(f"{nb.path}: output holds a memory address: {text!r}")


def readme(notebooks: tuple[Notebook, ...]) -> str:
    rows = "\n".join(
        f"| `{nb.path}` | {nb.project} | {nb.year} | {nb.author} | {nb.answers}"
        f"{' (deprecated)' if nb.deprecated else ''} | {nb.designed_status} |"
        for nb in notebooks
    )
    reasons = "\n".join(
        [f"- `{nb.path}` is **{nb.designed_status}**: {nb.designed_reason}." for nb in notebooks if nb.designed_reason]
        + [
            f"- `{nb.path}` keeps the error output its author left in; a re-run raises the same error,"
            " so it is designed to come out clean."
            for nb in notebooks
            if nb.errors
        ]
    )
    return README.format(
        count=len(notebooks),
        rows=rows,
        reasons=reasons,
        requirements=", ".join(f"{k}=={v}" for k, v in REQUIREMENTS.items()),
    )


README = """\
# Cellar demo archive

The corpus that `python3 build.py serve` indexes by default: {count} calculation notebooks of a
fictional naval and marine engineering consultancy, 2014-2024, laid out the way its file share is
(`<year>/<project code> <subject>/<notebook>.ipynb`). They cover several projects, authors and
vessel classes; some are written in Dutch. Every saved output is real: the notebooks were run
with `demo/make_archive.py` (which also writes this file; edit that script, not this file).

Each notebook carries `metadata.cellar`: `project`, `author`, `year`, `vessel_class`, `title`,
`tags`, `deprecated`, and `designed_status` / `designed_reason`, the outcome a re-render in the
sandbox is designed to give. The table below is generated from that metadata.

| Notebook | Project | Year | Author | What it answers | Designed re-render |
|---|---|---|---|---|---|
{rows}

{reasons}

## Inputs: blobs and the path map

The notebooks read their inputs at the paths their authors used: UNC paths on the calculation
server (`\\\\srv-calc-01\\projects\\...`), mapped drives (`P:\\...`) and a path relative to the
notebook's folder. The files themselves are kept as content-addressed blobs,
`blobs/sha256/<first 2 hex>/<64 hex>`, each named by the SHA-256 of its bytes, and
`pathmap.json` maps each logical path to its blob:

```
{{"format": 1,
 "files": {{"<logical path as written in the notebook>": "sha256:<hex>", ...}},
 "trees": {{"<logical directory prefix>": {{"<relative path, / separators>": "sha256:<hex>"}}}}}}
```

This directory is the logical POSIX root `/`, and a notebook starts in its own folder: a relative
path is keyed `/<notebook folder>/<path as written>` (for example
`/2015/15-027 Fire Main/inputs/pipe_runs_15027.csv`). A `trees` key is a share prefix without a
trailing separator.

## Environment

`requirements.txt` pins what the notebooks import ({requirements}), the versions Pyodide 0.27.7
ships. The saved outputs were made with CPython 3.11, ipykernel 6.29.5 and IPython 8.23.0
(`%matplotlib inline`: PNG at dpi 100 with `bbox_inches="tight"`), TZ=UTC, `random` and NumPy
seeded with 0.
"""


def build(out: Path) -> None:
    """Write the whole archive into `out`, which must not exist yet."""
    import nbformat

    pathmap, blobs = build_pathmap(NOTEBOOKS)
    for blob, data in blobs.items():
        target = out / "blobs" / "sha256" / blob[:2] / blob
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (out / "pathmap.json").write_text(
        json.dumps(pathmap, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out / "requirements.txt").write_text("".join(f"{k}=={v}\n" for k, v in REQUIREMENTS.items()))
    (out / "README.md").write_text(readme(NOTEBOOKS), encoding="utf-8")
    sys.path.insert(0, str(DEMO))  # make_documents.py is a script beside this one, not a package
    from make_documents import write_documents

    write_documents(out)  # the reports, the standard's clauses and the service notes beside them
    for nb in NOTEBOOKS:
        folder = out / nb.folder
        folder.mkdir(parents=True, exist_ok=True)
        print(f"running {nb.path}", flush=True)
        book = execute(nb, folder)
        nbformat.validate(book)
        nbformat.write(book, str(out / nb.path))


def differences(a: Path, b: Path) -> list[str]:
    """Relative paths that differ between two directory trees (missing on either side included)."""
    files_a = {p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()}
    return sorted(
        rel
        for rel in files_a | files_b
        if rel not in files_a or rel not in files_b or not filecmp.cmp(a / rel, b / rel, shallow=False)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--out", type=Path, default=DEMO / "archive", help="archive directory to (re)write (default: %(default)s)"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="build into a temporary directory and report the files that differ from --out",
    )
    args = parser.parse_args(argv)
    # Build the font cache in this process first: otherwise each kernel's first import of
    # matplotlib may report "building the font cache" on stderr, inside a saved output.
    import matplotlib.font_manager  # noqa: F401

    with tempfile.TemporaryDirectory(prefix="cellar-demo-") as tmp:
        fresh = Path(tmp) / "archive"
        build(fresh)
        if args.check:
            changed = differences(args.out, fresh)
            for rel in changed:
                print(f"differs: {rel}")
            print("identical" if not changed else f"{len(changed)} files differ")
            return 1 if changed else 0
        if args.out.exists():
            shutil.rmtree(args.out)
        shutil.copytree(fresh, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""cellar.ingest.tables and text_tables in Pyodide read the same tables and write the same searched
text as CPython.

The HTML and text reprs are made here by CPython's pandas 2.2.3 (the version Pyodide 0.27.7
ships), plus a sample of the outputs saved in ../shared/corpus when it is there.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"

PROBE = r"""
import json
from cellar.ingest.tables import parse_html_table, table_text
from cellar.ingest.text_tables import parse_text_table

def probe(inputs):
    out = []
    for kind, text in inputs:
        table = (parse_html_table if kind == "html" else parse_text_table)(text)
        out.append(None if table is None else {
            "shape": list(table.shape), "kind": table.kind, "elided": table.elided,
            "dtypes": [str(d) for d in table.frame.dtypes], "text": table_text(table),
        })
    return json.loads(json.dumps(out))
"""


def generated() -> list[tuple[str, str]]:
    tanks = pd.DataFrame(
        {
            "volume_m3": [412.1, 2106.3, 1284.7],
            "ballast": [True, False, True],
            "sounded": pd.to_datetime(["2024-03-01", "2024-03-02", "2024-03-05"]),
        },
        index=pd.Index(["forepeak", "midship", "aftpeak"], name="tank"),
    )
    multi = pd.DataFrame(
        np.arange(24).reshape(6, 4) * 1.5,
        index=pd.MultiIndex.from_product([["fore", "aft"], [1, 2, 3]], names=["zone", "tank"]),
        columns=pd.MultiIndex.from_product([["ballast", "fuel"], ["volume_m3", "mass_t"]]),
    )
    wide = pd.DataFrame(np.arange(1200).reshape(100, 12) / 4)
    with pd.option_context("display.max_rows", 6, "display.min_rows", 6, "display.max_columns", 6, "display.width", 60):
        elided = [("html", wide._repr_html_()), ("text", repr(wide))]
    return [
        ("html", tanks.to_html()),
        ("html", multi._repr_html_()),
        *elided,
        ("text", repr(tanks)),
        ("text", repr(multi)),
        ("text", repr(tanks["volume_m3"])),
        ("text", "just a sentence\nof prose"),
        ("html", "<p>no table</p>"),
    ]


def corpus_sample() -> list[tuple[str, str]]:
    """Every fifth HTML table and text/plain result saved in the corpus (none without it)."""
    sample: list[tuple[str, str]] = []
    for path in sorted(CORPUS.glob("[!e]*/**/*.ipynb")) if CORPUS.is_dir() else []:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        sheets = notebook.get("worksheets", [])
        cells = notebook.get("cells") or [cell for sheet in sheets for cell in sheet["cells"]]
        for output in (o for cell in cells for o in cell.get("outputs", [])):
            data = output.get("data", output)
            for kind, keys in (("html", ("text/html", "html")), ("text", ("text/plain", "text"))):
                value = next((data[key] for key in keys if key in data), None)
                if value is not None and output.get("output_type") != "stream":
                    sample.append((kind, "".join(value) if isinstance(value, list) else value))
    return sample[::5]


def test_tables_read_alike_in_pyodide(pyodide):
    inputs = generated() + corpus_sample()
    namespace: dict = {}
    exec(PROBE, namespace)
    expected = namespace["probe"](inputs)
    assert sum(result is not None for result in expected) >= 7
    code = (
        'import pyodide_js\nawait pyodide_js.loadPackage("pandas")\n'
        + PROBE
        + f"\nprobe(json.loads({json.dumps(json.dumps(inputs))}))"
    )
    assert pyodide.run(code) == expected

"""cellar.retrieval.embedding in Pyodide tokenises and encodes exactly as in CPython: the browser embeds a
query with the model that embedded the chunks at build time, so the two must agree.

The model directory is mounted into Pyodide's file system from the host (Node's NODEFS).
"""

from __future__ import annotations

import json
import unicodedata

import numpy as np

from cellar.retrieval.embedding import default_model_dir, load_model

MODEL_DIR = default_model_dir()
TEXTS = [
    "",
    "What volume did we use for the forepeak tank?",
    "Wat is het drukverlies in de leidingen voor stookolie met SG 0,815?",
    "df.groupby('key').median_house_value.mean()  # 1.500e-03 'tank_17042c'",
    "|    | tank      |   volume_m3 |\n|---:|:----------|------------:|\n|  0 | forepeak  |       412.1 |",
    "Café NAÏVE Ångström straße ﬁle Cafe\u0301 ΟΔΟΣ İstanbul Δp ρ·v² µm Ω",
    "船 emoji \U0001f6a2 中文字符 が 한국어 👨‍👩‍👧‍👦 🇳🇱 ❤️",
    "zero\u200bwidth\u00adsoft \x00\x1b[0;31mANSI\x1b[0m \u2066bidi\u2069 a\u0301\u0323 \u0378 \ue000",
    "[UNK] [PAD] foo[UNK]bar ##ing " + "x" * 101 + " " + "é" * 40,
    " ".join(["ballast tank volume"] * 300),  # beyond max_tokens
]


def mounted_model() -> str:
    """Python source that mounts the model directory at /mnt/model (once) and loads it."""
    return f"""
import os, pyodide_js
from js import Object
from pyodide.ffi import to_js
if not os.path.exists("/mnt/model/model.json"):
    pyodide_js.FS.mkdirTree("/mnt/model")
    options = to_js({{"root": {str(MODEL_DIR)!r}}}, dict_converter=Object.fromEntries)
    pyodide_js.FS.mount(pyodide_js.FS.filesystems.NODEFS, options, "/mnt/model")
from cellar.retrieval.embedding import StaticModel, load_model
model = load_model("/mnt/model")
"""


def run_json(pyodide, code: str, value) -> object:
    """Run ``code`` in Pyodide with ``value`` bound to the name ``value`` (passed as JSON)."""
    return pyodide.run(f"import json\nvalue = json.loads({json.dumps(json.dumps(value))})\n{code}")


def test_token_ids_and_vectors_equal_cpython(pyodide):
    code = (
        mounted_model()
        + """
names = ["model.json", "embeddings.npy", "scales.npy", "vocab.txt"]
fetched = StaticModel.from_files({name: open(f"/mnt/model/{name}", "rb").read() for name in names})
[model.sha256, [model.token_ids(t) for t in value], model.encode(value).tolist(), fetched.encode(value).tolist()]
"""
    )
    sha256, ids, vectors, fetched = run_json(pyodide, code, TEXTS)
    model = load_model(MODEL_DIR)
    assert sha256 == model.sha256
    assert ids == [model.token_ids(text) for text in TEXTS]
    np.testing.assert_allclose(np.array(vectors), model.encode(TEXTS), rtol=0, atol=1e-6)
    assert fetched == vectors


def test_every_bmp_character_is_tokenised_as_in_cpython(pyodide):
    """Only characters newer than CPython 3.11's Unicode tables may differ from Pyodide's 3.12."""
    code_points = [cp for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF]
    texts = [f"a{chr(cp)}b{chr(cp).upper()}" for cp in code_points]
    code = mounted_model() + "[model.tokenizer.token_ids(t) for t in value]"
    theirs = run_json(pyodide, code, texts)
    model = load_model(MODEL_DIR)
    differ = [cp for cp, text, ids in zip(code_points, texts, theirs) if model.tokenizer.token_ids(text) != ids]
    assert [hex(cp) for cp in differ if unicodedata.category(chr(cp)) != "Cn"] == []


def test_a_damaged_file_is_refused_in_pyodide_too(pyodide):
    code = (
        mounted_model()
        + """
from cellar.retrieval.embedding import ModelError
names = ["model.json", "embeddings.npy", "scales.npy", "vocab.txt"]
files = {name: open(f"/mnt/model/{name}", "rb").read() for name in names}
files["scales.npy"] = files["scales.npy"][:-4] + b"\\0\\0\\0\\0"
try:
    StaticModel.from_files(files, source="https://example.org/model")
    message = None
except ModelError as error:
    message = str(error)
message
"""
    )
    assert pyodide.run(code).startswith("https://example.org/model/scales.npy: damaged or replaced")

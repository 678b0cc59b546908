"""cellar.retrieval.embedding: the pure-Python WordPiece tokenizer gives the `tokenizers` library's token ids,
the shipped model is intact and makes sense, and a damaged model is refused naming the file.

The reference tokenizer is the distiller's own `tokenizer.json`, kept in the model directory; the
`tokenizers` library that reads it is a test-only dependency (the tests that need it skip without).
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from cellar.cli import main
from cellar.retrieval.distill import DistillError, tokenizer_settings
from cellar.retrieval.embedding import ModelError, StaticModel, default_model_dir, load_model, quantise_rows

MODEL_DIR = default_model_dir()

# Hand-written texts of the kinds a notebook archive holds, and the Unicode that breaks tokenizers.
TEXTS = [
    "",
    " \t\n ",
    "What volume did we use for the forepeak tank?",
    "The ballast calculation for the 130 m vessel: GM = KB + BM - KG",
    "Reynolds number = 101022.58866016791; Darcy friction factor fd = 0.0181",
    "Pressure drop = 405252.2181183786 pascal",
    "Wat is het drukverlies in de leidingen voor stookolie met SG 0,815?",
    "Zeeuws-Vlaanderen, coöperatie, één, ideeën, 's-Hertogenbosch, ĳzer, IJmuiden",
    "kortsluiting vermogensschakelaar (KK VK) van veld 3 is vervangen",
    "df.groupby('key').median_house_value.mean()",
    "def friction_factor(Re: float, eD: float = 0.0) -> float:\n    return 0.316 / Re**0.25",
    "from sklearn.ensemble import RandomForestRegressor; HTTPServer(('', 8000), Handler)",
    "x = np.linspace(0, 2*np.pi, 100)  # shape (100,)\nplt.plot(x, np.sin(x), 'r--')",
    "print(f\"{value:>10.3e} {name!r}\")  # 1.500e-03 'tank_17042c'",
    "re.compile(r'^(?P<tag>[A-Z]{2,})-(\\d+)$', re.I)",
    "|    | tank      |   volume_m3 |\n|---:|:----------|------------:|\n|  0 | forepeak  |       412.1 |",
    "   tank  volume_m3\n0  forepeak      412.1\n1  aftpeak      1284.6\n[2 rows x 2 columns]",
    "0xFF 0b1010 1e-9 -3.5E+12 1_000_000 3+4j 1/3 ½ ¾ 2² 10³ 5° 20 °C 3.14159265358979323846",
    "drawing 17-042, code E-407, rev. B; 1,284.6 m³ and 412.1 m³",
    "C:\\Users\\jan\\Documents\\calc.xlsx and \\\\srv-calc-01\\projects\\2017",
    "https://example.org/path?query=a&b=c#frag user@example.org",
    "$\\frac{\\rho v^2}{2} = \\Delta p$ and $$\\sum_{i=1}^{n} x_i$$",
    '<div class="output"><b>bold</b> &amp; &lt;tag&gt;</div>',
    "Café NAÏVE Ångström straße ﬁle Cafe\u0301 crème brûlée Dvořák Łódź Ørsted",
    "ΟΔΟΣ Σίσυφος ΣΣ σς Δp ρ·v² µm μm Ω Ω K K Å Å",
    "İstanbul ıI iİ DİYARBAKIR",
    "Москва ёлка Ёжик, Київ, Ελληνικά",
    "船 emoji \U0001f6a2 and CJK 中文字符测试 日本語のテキスト が ガ パ",
    "한국어 텍스트 각 힣, ㄱㄴㄷ",
    "ภาษาไทย ไม่มีช่องว่าง, हिन्दी भाषा, বাংলা, தமிழ்",
    "العربية مُشَكَّلة, עִבְרִית",
    "👍🏽 👨‍👩‍👧‍👦 🇳🇱 ❤️ ☕ ⚓ 1️⃣ ©️ ™",
    "zero\u200bwidth\u200cnon\u200djoiner\u2060word\ufeffbom",
    "soft\u00adhyphen, no\u00a0break, thin\u2009space, ideographic\u3000space, narrow\u202fnbsp",
    "line\u2028separator\u2029paragraph\x85next\x0bvtab\x0cfeed\r\ncrlf",
    "control \x00\x01\x07\x1b[0;31mANSI red\x1b[0m \x7f \x9f end",
    "bidi \u200eLTR\u200f \u202aembedding\u202c \u2066isolate\u2069",
    "combining a\u0301 e\u0308 o\u0302\u0323 n\u0303 q\u0307\u0323 x\u20dd Z\u0335\u0336",
    "Zalgo: H\u0336\u0321e\u0334\u0322 c\u0337o\u0338m\u0335e\u0334s\u0336",
    "unassigned \u0378 \u0557 \U0001faff new \u0890\u08e2\u2e43\U00013430 private \ue000\U000f0000",
    "format chars new in Unicode: \u061c \u180e \U000110cd \U0001bca0 \U000e0001",
    "ligatures ﬀ ﬃ ﬄ, fullwidth ＡＢＣ１２３！, circled ①②③, roman Ⅻ, superscript ⁿ",
    "punctuation ‐‑‒–—― ‘’‚‛“”„‟ †‡•…‰′″ ‹› «» ¡¿ ¶§ 〈〉 「」 『』 【】",
    "symbols €$£¥₿ +−×÷=≠≈≤≥∞∑∏√∫ ←→↑↓ ⇒ ∀∃∈∉ ⊂⊃ ∧∨ ¬ ⊕",
    "supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis",
    "a" * 100,
    "b" * 101,
    "x" * 250 + " short",
    "é" * 101,
    "https://example.org/" + "abc123/" * 20,
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798",
    "[UNK] [PAD] [CLS] [SEP] [MASK] [unk] [pad] foo[UNK]bar [PAD][PAD]x [unused1]",
    "##ing ## #hashtag ###header",
    "don't can't it's O'Brien rock'n'roll l'eau",
    "e-mail, well-known, state-of-the-art, 12-15, A4-formaat",
    "UPPER lower MiXeD CamelCase snake_case kebab-case SCREAMING_SNAKE __dunder__",
]

# Pieces that generated texts are stitched from: words, numbers and awkward characters.
PIECES = [
    "tank",
    "ballast",
    "Drukverlies",
    "leiding",
    "friction",
    "Re",
    "1284.6",
    "m³",
    "17-042",
    "_",
    "np.",
    "()",
    "[",
    "]",
    "UNK",
    "[UNK]",
    "##",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "é",
    "e\u0301",
    "İ",
    "Σ",
    "ß",
    "ﬁ",
    "船",
    "中",
    "が",
    "한",
    "\U0001f6a2",
    "\u200b",
    "\u00ad",
    "\x00",
    "\x1b",
    "\u0378",
    "\u2e43",
    "\U00013430",
    "\ue000",
    "\u3000",
    "\u00a0",
    "—",
    "’",
    "…",
    "½",
    "°C",
    "Ω",
    "٣",
    "๓",
    "\u0e31",
    "\u0301",
    "\u20dd",
    "\U0001f3fd",
    "\ufe0f",
    "ＡＢ",
    "ⅻ",
    "µ",
    "Ǆ",
    "ǅ",
]


def generated_texts(count: int = 300, seed: int = 20240511) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 24))) for _ in range(count)]


@pytest.fixture(scope="module")
def model() -> StaticModel:
    return load_model(MODEL_DIR)


@pytest.fixture(scope="module")
def reference():
    tokenizers = pytest.importorskip("tokenizers", reason="the `tokenizers` library (test-only) is not installed")
    tokenizer = tokenizers.Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def reference_ids(reference, texts: list[str]) -> list[list[int]]:
    return [encoding.ids for encoding in reference.encode_batch(texts, add_special_tokens=False)]


@pytest.mark.parametrize("texts", [TEXTS, generated_texts()], ids=["written", "generated"])
def test_token_ids_equal_the_tokenizers_library(model, reference, texts):
    ours = [model.tokenizer.token_ids(text) for text in texts]
    for text, mine, theirs in zip(texts, ours, reference_ids(reference, texts)):
        assert mine == theirs, f"{text!r}: {model.tokenizer.token_ids(text)} != {theirs}"


def sample_code_points() -> list[int]:
    """All of the Basic Multilingual Plane, and above it every code point where this Python's
    Unicode category changes (the edges of every block and range) with its neighbour below."""
    astral = [
        cp for cp in range(0x10000, 0x110000) if unicodedata.category(chr(cp)) != unicodedata.category(chr(cp - 1))
    ]
    above = sorted({cp for edge in astral for cp in (edge - 1, edge)})
    return [cp for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF] + above


def test_every_kind_of_character_is_classed_as_the_tokenizers_library_does(model, reference):
    """Each character between letters and beside an upper-case copy: removed, space, punctuation,
    CJK, mark, lower-cased or kept. Only characters that this Python's Unicode tables do not know
    yet may differ (it cannot lower-case or decompose them), and U+11938, which Rust's NFD keeps."""
    code_points = sample_code_points()
    texts = [f"a{chr(cp)}b{chr(cp).upper()}" for cp in code_points]
    expected = reference_ids(reference, texts)
    differ = [cp for cp, text, ids in zip(code_points, texts, expected) if model.tokenizer.token_ids(text) != ids]
    unexplained = [hex(cp) for cp in differ if unicodedata.category(chr(cp)) != "Cn" and cp != 0x11938]
    assert not unexplained
    assert len(differ) < 100


def test_notebook_cells_tokenise_as_the_tokenizers_library_does(model, reference, shared_corpus):
    from cellar.ingest.notebook import load_notebook

    texts = []
    for path in sorted(shared_corpus.rglob("*.ipynb")):
        try:
            notebook = load_notebook(path, shared_corpus)
        except ValueError:
            continue  # the edge cases include broken notebooks; they have no cells to compare
        texts += [cell.source for cell in notebook.cells]
    assert len(texts) > 5000
    for text, ids in zip(texts, reference_ids(reference, texts)):
        assert model.tokenizer.token_ids(text) == ids, text[:200]


def test_truncation_keeps_the_first_tokens(model):
    text = " ".join(TEXTS)
    full = model.tokenizer.token_ids(text)
    assert len(full) > 600
    assert model.tokenizer.token_ids(text, max_tokens=5) == full[:5]
    assert model.tokenizer.token_ids(text, max_tokens=512) == full[:512]
    assert model.token_ids(text) == [i for i in full[:512] if i != model.tokenizer.unk_id]


def test_shipped_files_match_model_json(model):
    manifest_bytes = (MODEL_DIR / "model.json").read_bytes()
    manifest = json.loads(manifest_bytes)
    on_disk = sorted(path.name for path in MODEL_DIR.iterdir())
    assert on_disk == sorted([*manifest["files"], "model.json"])
    for name, entry in manifest["files"].items():
        data = (MODEL_DIR / name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["bytes"], entry["sha256"]), name
    assert model.sha256 == hashlib.sha256(manifest_bytes).hexdigest()
    assert (model.id, model.dims, len(model.tokenizer)) == (manifest["id"], manifest["dims"], manifest["vocab_size"])
    assert manifest["upstream"]["license"] == "Apache-2.0"
    assert "Apache License" in (MODEL_DIR / "LICENSE").read_text()
    assert manifest["upstream"]["model"] in (MODEL_DIR / "README.md").read_text()


def test_vectors_are_the_normalised_mean_of_the_token_rows(model, reference):
    """Computed here straight from the .npy files and the library's token ids."""
    vectors = np.load(MODEL_DIR / "embeddings.npy").astype(np.float64) * np.load(MODEL_DIR / "scales.npy")[:, None]
    texts = TEXTS[2:12]
    for ids, got in zip(reference_ids(reference, texts), model.encode(texts)):
        mean = vectors[[i for i in ids if i != 1]].mean(axis=0)  # id 1 is [UNK]
        np.testing.assert_allclose(got, mean / np.linalg.norm(mean), atol=1e-6)


def test_encode_shapes_norms_and_empty_texts(model):
    assert model.encode([]).shape == (0, model.dims)
    vectors = model.encode(["", "ballast tank", " \x00\u200b ", "b" * 101, "tank"])
    assert vectors.dtype == np.float32 and vectors.shape == (5, 256)
    norms = np.linalg.norm(vectors, axis=1)
    np.testing.assert_allclose(norms, [0, 1, 0, 0, 1], atol=1e-6)  # no known token: the zero vector
    with pytest.raises(TypeError):
        model.encode("one text")


def test_a_text_gets_the_same_vector_alone_or_in_a_batch(model):
    texts = TEXTS + generated_texts(50)
    together = model.encode(texts)
    np.testing.assert_array_equal(np.vstack([model.encode([text]) for text in texts]), together)


def test_related_texts_are_closer(model):
    query, near, far = model.encode(
        ["ballast tank volume", "volume of the water ballast tanks", "wind load on the deck house"]
    )
    assert query @ near > query @ far + 0.3
    pipe, friction, stock = model.encode(
        [
            "pressure drop in a pipe with turbulent flow",
            "Darcy friction factor from the Colebrook equation for the pipe",
            "stock market returns of the portfolio",
        ]
    )
    assert pipe @ friction > pipe @ stock


def test_from_files_needs_only_the_inference_files(model):
    names = ["model.json", "embeddings.npy", "scales.npy", "vocab.txt"]
    built = StaticModel.from_files({name: (MODEL_DIR / name).read_bytes() for name in names})
    assert (built.id, built.sha256) == (model.id, model.sha256)
    np.testing.assert_array_equal(built.encode(TEXTS), model.encode(TEXTS))
    with pytest.raises(ModelError, match="scales.npy: missing"):
        StaticModel.from_files({name: (MODEL_DIR / name).read_bytes() for name in names if name != "scales.npy"})


def damage(directory: Path, name: str) -> None:
    data = bytearray((directory / name).read_bytes())
    data[len(data) // 2] ^= 0x01
    (directory / name).write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["embeddings.npy", "scales.npy", "vocab.txt", "LICENSE"])
def test_a_damaged_file_is_refused_by_name(tmp_path, name):
    copy = tmp_path / "model"
    shutil.copytree(MODEL_DIR, copy)
    damage(copy, name)
    with pytest.raises(ModelError, match=f"{name}: damaged or replaced"):
        load_model(copy)


def test_missing_or_damaged_model_json_is_refused(tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(MODEL_DIR, copy)
    (copy / "vocab.txt").unlink()
    with pytest.raises(ModelError, match="vocab.txt: cannot read"):
        load_model(copy)
    (copy / "model.json").write_text("{not json")
    with pytest.raises(ModelError, match="model.json: not valid JSON"):
        load_model(copy)
    with pytest.raises(ModelError, match="model.json: cannot read"):
        load_model(tmp_path / "absent")


def test_quantise_rows_is_within_half_a_step():
    rows = np.random.default_rng(3).normal(size=(50, 16)).astype(np.float32) * np.logspace(-3, 1, 50)[:, None]
    rows[7] = 0
    quantised, scales = quantise_rows(rows)
    assert quantised.dtype == np.int8 and scales[7] == 0
    assert np.all(np.abs(quantised * scales[:, None] - rows) <= scales[:, None] / 2 + 1e-9)
    assert np.all(np.abs(quantised).max(axis=1)[scales > 0] == 127)


def test_only_the_bert_uncased_tokenizer_is_accepted():
    tokenizer = json.loads((MODEL_DIR / "tokenizer.json").read_text())
    vocab, settings = tokenizer_settings(tokenizer)
    assert (len(vocab), settings["special_tokens"]) == (29525, ["[PAD]", "[UNK]"])
    tokenizer["normalizer"]["lowercase"] = False
    with pytest.raises(DistillError, match="not the BERT uncased normaliser"):
        tokenizer_settings(tokenizer)


def test_distill_without_the_extra_says_what_to_install(tmp_path, capsys):
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("torch is installed here: distillation would run")
    assert main(["model", "distill", "--out", str(tmp_path / "model")]) == 1
    assert "pip install 'cellar[distill]'" in capsys.readouterr().err
    assert not (tmp_path / "model").exists()

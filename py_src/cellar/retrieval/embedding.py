"""Embedding: a static token-embedding model distilled from all-MiniLM-L6-v2, on NumPy alone.

Each WordPiece token of the model's vocabulary has a vector. A text is cut into tokens exactly as
the BERT uncased pipeline of the `tokenizers` library cuts it (BertNormalizer, BertPreTokenizer,
WordPiece); its vector is the mean of its token vectors, L2-normalised. Unknown tokens are left
out, as Model2Vec does, and a text with no known token gets the zero vector, which has cosine 0
with everything.

A model is a directory (see `cellar.retrieval.distill`, which writes it):

    model.json       id, dims, tokenizer and pooling settings, upstream, every file's SHA-256
    embeddings.npy   int8 token vectors, one row per token id
    scales.npy       float32 scale per row: vector = row * scale
    vocab.txt        the WordPiece vocabulary, one token per line, line number = token id
    tokenizer.json, LICENSE, README.md   reference tokenizer, upstream licence, attribution

`load_model(directory)` checks every file against model.json; `StaticModel.from_files` builds the
same model from bytes. The default model ships inside the package (`default_model_dir()`, found
through importlib.resources), so an installed wheel, in CPython or in the tab, needs no checkout.
"""

from __future__ import annotations

import bisect
import importlib.resources
import io
import itertools
import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from os import PathLike
from pathlib import Path, PurePosixPath

import numpy as np

from cellar.ingest.provenance import revision

MODEL_FORMAT = 1
MANIFEST = "model.json"
DEFAULT_MODEL_ID = "minilm-l6-static-256"

# The normaliser and pre-tokenizer settings this module implements: those of BERT uncased.
BERT_UNCASED_NORMALIZER = {
    "clean_text": True,
    "handle_chinese_chars": True,
    "strip_accents": True,
    "lowercase": True,
}

# Character classes of the Rust `tokenizers` BERT pipeline, as hexadecimal code point ranges.
# It takes them from the `unicode_categories` crate, whose tables are those of Unicode 8.0, not
# from the Unicode version of this Python: a character assigned later (a new format character,
# mark or punctuation) is an ordinary letter there, and must be one here too, or the token ids
# differ. Derived by asking `tokenizers` 0.23.3 about every code point; tests/unit/test_embedding.py
# checks them against it again. Ranges may run over code points that never reach the test
# (removed earlier or decomposed by NFD), which keeps the tables short.
#
# _REMOVED: dropped by clean_text (NUL, U+FFFD and the categories Cc, Cf, Co except tab, LF, CR).
_REMOVED = """
0-8 b-c e-1f 7f-9f ad 600-605 61c 6dd 70f 180e 200b-200f 202a-202e 2060-2064 2066-206f
e000-f8ff feff fff9-fffb fffd 110bd 1bca0-1bca3 1d173-1d17a e0001 e0020-e007f f0000-ffffd
100000-10fffd
"""
# _WHITESPACE: turned into a space by clean_text (tab, LF, CR and Rust's char::is_whitespace,
# less the control characters that _REMOVED takes first).
_WHITESPACE = "9-a d 20 a0 1680 2000-200a 2028-2029 202f 205f 3000"
# _CHINESE: surrounded by spaces (tokenizers' CJK blocks, including its 2b920 for 2b820).
_CHINESE = "3400-4dbf 4e00-9fff f900-faff 20000-2a6df 2a700-2b81f 2b920-2ceaf 2f800-2fa1f"
# _PUNCTUATION: split off as a word of its own (ASCII punctuation and categories Pc Pd Pe Pf Pi Po Ps).
_PUNCTUATION = """
21-2f 3a-40 5b-60 7b-a1 a7 ab b6-b7 bb bf 37e 387 55a-55f 589-58a 5be 5c0 5c3 5c6 5f3-5f4
609-60a 60c-60d 61b 61e-61f 66a-66d 6d4 700-70d 7f7-7f9 830-83e 85e 964-965 970 af0 df4 e4f
e5a-e5b f04-f12 f14 f3a-f3d f85 fd0-fd4 fd9-fda 104a-104f 10fb 1360-1368 1400 166d-166e
169b-169c 16eb-16ed 1735-1736 17d4-17d6 17d8-17da 1800-180a 1944-1945 1a1e-1a1f 1aa0-1aa6
1aa8-1aad 1b5a-1b60 1bfc-1bff 1c3b-1c3f 1c7e-1c7f 1cc0-1cc7 1cd3 2010-2043 2045-2051
2053-205e 207d-207e 208d-208e 2308-230b 2329-232a 2768-2775 27c5-27c6 27e6-27ef 2983-2998
29d8-29db 29fc-29fd 2cf9-2cfc 2cfe-2cff 2d70 2e00-2e2e 2e30-2e42 3001-3003 3008-3011
3014-301f 3030 303d 30a0 30fb a4fe-a4ff a60d-a60f a673 a67e a6f2-a6f7 a874-a877 a8ce-a8cf
a8f8-a8fa a8fc a92e-a92f a95f a9c1-a9cd a9de-a9df aa5c-aa5f aade-aadf aaf0-aaf1 abeb
fd3e-fd3f fe10-fe19 fe30-fe52 fe54-fe61 fe63 fe68 fe6a-fe6b ff01-ff03 ff05-ff0a ff0c-ff0f
ff1a-ff1b ff1f-ff20 ff3b-ff3d ff3f ff5b ff5d ff5f-ff65 10100-10102 1039f 103d0 1056f 10857
1091f 1093f 10a50-10a58 10a7f 10af0-10af6 10b39-10b3f 10b99-10b9c 11047-1104d 110bb-110c1
11140-11143 11174-11175 111c5-111c9 111cd 111db 111dd-111df 11238-1123d 112a9 114c6
115c1-115d7 11641-11643 1173c-1173e 12470-12474 16a6e-16a6f 16af5 16b37-16b3b 16b44 1bc9f
1da87-1da8b
"""
# _MARKS: non-spacing marks (Mn), dropped after NFD by strip_accents.
_MARKS = """
300-36f 483-487 591-5bd 5bf 5c1-5c2 5c4-5c5 5c7 610-61a 64b-65f 670 6d6-6dc 6df-6e4 6e7-6e8
6ea-6ed 711 730-74a 7a6-7b0 7eb-7f3 816-819 81b-823 825-827 829-82d 859-85b 8e3-902 93a 93c
941-948 94d 951-957 962-963 981 9bc 9c1-9c4 9cd 9e2-9e3 a01-a02 a3c a41-a42 a47-a48 a4b-a4d
a51 a70-a71 a75 a81-a82 abc ac1-ac5 ac7-ac8 acd ae2-ae3 b01 b3c b3f b41-b44 b4d b56 b62-b63
b82 bc0 bcd c00 c3e-c40 c46-c47 c4a-c4d c55-c56 c62-c63 c81 cbc cbf cc6 ccc-ccd ce2-ce3 d01
d41-d44 d4d d62-d63 dca dd2-dd4 dd6 e31 e34-e3a e47-e4e eb1 eb4-eb9 ebb-ebc ec8-ecd f18-f19
f35 f37 f39 f71-f7e f80-f84 f86-f87 f8d-f97 f99-fbc fc6 102d-1030 1032-1037 1039-103a
103d-103e 1058-1059 105e-1060 1071-1074 1082 1085-1086 108d 109d 135d-135f 1712-1714
1732-1734 1752-1753 1772-1773 17b4-17b5 17b7-17bd 17c6 17c9-17d3 17dd 180b-180d 18a9
1920-1922 1927-1928 1932 1939-193b 1a17-1a18 1a1b 1a56 1a58-1a5e 1a60 1a62 1a65-1a6c
1a73-1a7c 1a7f 1ab0-1abd 1b00-1b03 1b34 1b36-1b3c 1b42 1b6b-1b73 1b80-1b81 1ba2-1ba5
1ba8-1ba9 1bab-1bad 1be6 1be8-1be9 1bed 1bef-1bf1 1c2c-1c33 1c36-1c37 1cd0-1cd2 1cd4-1ce0
1ce2-1ce8 1ced 1cf4 1cf8-1cf9 1dc0-1df5 1dfc-1dff 20d0-20dc 20e1 20e5-20f0 2cef-2cf1 2d7f
2de0-2dff 302a-302d 3099-309a a66f a674-a67d a69e-a69f a6f0-a6f1 a802 a806 a80b a825-a826
a8c4 a8e0-a8f1 a926-a92d a947-a951 a980-a982 a9b3 a9b6-a9b9 a9bc a9e5 aa29-aa2e aa31-aa32
aa35-aa36 aa43 aa4c aa7c aab0 aab2-aab4 aab7-aab8 aabe-aabf aac1 aaec-aaed aaf6 abe5 abe8
abed fb1e fe00-fe0f fe20-fe2f 101fd 102e0 10376-1037a 10a01-10a03 10a05-10a06 10a0c-10a0f
10a38-10a3a 10a3f 10ae5-10ae6 11001 11038-11046 1107f-11081 110b3-110b6 110b9-110ba
11100-11102 11127-1112b 1112d-11134 11173 11180-11181 111b6-111be 111ca-111cc 1122f-11231
11234 11236-11237 112df 112e3-112ea 11300-11301 1133c 11340 11366-1136c 11370-11374
114b3-114b8 114ba 114bf-114c0 114c2-114c3 115b2-115b5 115bc-115bd 115bf-115c0 115dc-115dd
11633-1163a 1163d 1163f-11640 116ab 116ad 116b0-116b5 116b7 1171d-1171f 11722-11725
11727-1172b 16af0-16af4 16b30-16b36 16f8f-16f92 1bc9d-1bc9e 1d167-1d169 1d17b-1d182
1d185-1d18b 1d1aa-1d1ad 1d242-1d244 1da00-1da36 1da3b-1da6c 1da75 1da84 1da9b-1da9f
1daa1-1daaf 1e8d0-1e8d6 e0100-e01ef
"""

# ASCII text (most of a notebook) takes a fast path through the C regex engine: the same result
# as the tables above, which class every ASCII character as removed, space, punctuation or word.
_ASCII_REMOVED = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]+")
_ASCII_WORDS = re.compile(r"[0-9a-z]+|[!-/:-@\[-`{-~]")


class ModelError(ValueError):
    """A model that is missing, damaged or inconsistent; the message names the file."""


def _parse_ranges(spec: str) -> tuple[list[int], list[int]]:
    """Sorted range starts and ends from `"21-2f a7 ..."`."""
    starts, ends = [], []
    for item in spec.split():
        first, _, last = item.partition("-")
        starts.append(int(first, 16))
        ends.append(int(last or first, 16))
    return starts, ends


def _membership(spec: str) -> Callable[[int], bool]:
    """A test `code_point in ranges` by bisection."""
    starts, ends = _parse_ranges(spec)

    def contains(code_point: int) -> bool:
        index = bisect.bisect_right(starts, code_point) - 1
        return index >= 0 and code_point <= ends[index]

    return contains


_is_removed = _membership(_REMOVED)
_is_whitespace = _membership(_WHITESPACE)
_is_chinese = _membership(_CHINESE)
_is_punctuation = _membership(_PUNCTUATION)
_is_mark = _membership(_MARKS)


def _clean_char(code_point: int) -> str:
    """clean_text and handle_chinese_chars for one character (they precede NFD)."""
    if _is_removed(code_point):
        return ""
    if _is_whitespace(code_point):
        return " "
    char = chr(code_point)
    return f" {char} " if _is_chinese(code_point) else char


def _fold_char(code_point: int) -> str:
    """After NFD: drop non-spacing marks, lower-case, and set punctuation apart."""
    if _is_mark(code_point):
        return ""
    char = chr(code_point)
    # Per character, as Rust's char::to_lowercase does: no final-sigma rule as in str.lower().
    return f" {char} " if _is_punctuation(code_point) else char.lower()


class _CharTable(dict):
    """A `str.translate` table that works out each character once, on first sight."""

    def __init__(self, rule: Callable[[int], str]) -> None:
        super().__init__()
        self.rule = rule

    def __missing__(self, code_point: int) -> str:
        self[code_point] = value = self.rule(code_point)
        return value


_CLEAN = _CharTable(_clean_char)
_FOLD = _CharTable(_fold_char)


def bert_words(text: str) -> list[str]:
    """The words of `text` after BERT uncased normalisation and pre-tokenisation.

    Control and format characters are removed, whitespace splits, CJK ideographs and punctuation
    stand alone, accents are stripped (NFD, then non-spacing marks dropped) and letters are
    lower-cased, as the `tokenizers` BertNormalizer and BertPreTokenizer do.
    """
    if text.isascii():
        return _ASCII_WORDS.findall(_ASCII_REMOVED.sub("", text).lower())
    return unicodedata.normalize("NFD", text.translate(_CLEAN)).translate(_FOLD).split()


class WordPieceTokenizer:
    """BERT uncased WordPiece: token ids as the `tokenizers` library gives them, in pure Python.

    `special_tokens` are matched in the raw text before anything else (as the library does with
    its added tokens) and stand for their own id. A word longer than `max_input_chars_per_word`,
    or one that the vocabulary cannot spell, becomes `unk_token`. Words are cached, since a corpus
    repeats them.
    """

    def __init__(
        self,
        vocab: Sequence[str],
        *,
        unk_token: str = "[UNK]",
        continuing_subword_prefix: str = "##",
        max_input_chars_per_word: int = 100,
        special_tokens: Sequence[str] = (),
        cache_size: int = 1 << 16,
    ) -> None:
        self.vocab = {token: index for index, token in enumerate(vocab)}
        if len(self.vocab) != len(vocab):
            raise ValueError("the vocabulary has duplicate tokens")
        missing = [token for token in (unk_token, *special_tokens) if token not in self.vocab]
        if missing:
            raise ValueError(f"the vocabulary lacks {', '.join(missing)}")
        self.unk_id = self.vocab[unk_token]
        self.prefix = continuing_subword_prefix
        self.max_input_chars_per_word = max_input_chars_per_word
        self.specials = {token: self.vocab[token] for token in special_tokens}
        # Longest first: the library matches the longest special token at the leftmost place.
        alternatives = sorted(self.specials, key=len, reverse=True)
        self._special_pattern = re.compile("(" + "|".join(map(re.escape, alternatives)) + ")") if alternatives else None
        # No piece is longer than the longest token, so the greedy search need not start wider.
        # (map over C functions: a generator over the 30,000 tokens was 20 ms of the tab's boot)
        self._longest = max(map(len, map(str.removeprefix, self.vocab, itertools.repeat(self.prefix))))
        self._word_ids = lru_cache(maxsize=cache_size)(self._wordpiece)

    def __len__(self) -> int:
        return len(self.vocab)

    def token_ids(self, text: str, max_tokens: int | None = None) -> list[int]:
        """The token ids of `text` (no [CLS]/[SEP]), at most `max_tokens` of them."""
        ids: list[int] = []
        for piece in self._pieces(text):
            if piece in self.specials:
                ids.append(self.specials[piece])
                continue
            words = bert_words(piece)
            if max_tokens is not None:
                words = words[: max(0, max_tokens - len(ids))]  # each word gives one token or more
            ids.extend(itertools.chain.from_iterable(map(self._word_ids, words)))
        return ids if max_tokens is None else ids[:max_tokens]

    def _pieces(self, text: str) -> list[str]:
        """`text` cut around the special tokens it contains, each kept as a piece."""
        if self._special_pattern is None:
            return [text]
        return [piece for piece in self._special_pattern.split(text) if piece]

    def _wordpiece(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match-first pieces of one word, or the unknown token."""
        if len(word) > self.max_input_chars_per_word:
            return (self.unk_id,)
        vocab, ids, start = self.vocab, [], 0
        while start < len(word):
            prefix = self.prefix if start else ""
            for end in range(min(len(word), start + self._longest), start, -1):
                token_id = vocab.get(prefix + word[start:end])
                if token_id is not None:
                    ids.append(token_id)
                    start = end
                    break
            else:
                return (self.unk_id,)
        return tuple(ids)


def quantise_rows(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 quantisation with one float32 scale per row: `vectors ~ q * scale[:, None]`.

    A row of zeros gets scale 0. Per-row scales keep every row's relative precision, whatever its
    norm; see cellar.retrieval.distill for why that matters for this model.
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {vectors.shape}")
    scales = (np.abs(vectors).max(axis=1) / 127.0).astype(np.float32)
    safe = np.where(scales > 0, scales, np.float32(1))
    quantised = np.clip(np.rint(vectors / safe[:, None]), -127, 127).astype(np.int8)
    return quantised, scales


class StaticModel:
    """Token vectors (int8 rows with a scale each) and the tokenizer that indexes them.

    `encode` gives one float32 row per text: the mean of its known token vectors (the first
    `max_tokens` tokens), L2-normalised; the zero vector for a text without a known token.
    """

    def __init__(
        self,
        vectors: np.ndarray,
        scales: np.ndarray,
        tokenizer: WordPieceTokenizer,
        *,
        model_id: str,
        sha256: str,
        max_tokens: int | None = 512,
    ) -> None:
        if vectors.dtype != np.int8 or vectors.ndim != 2:
            raise ValueError(f"vectors must be a 2-D int8 array, not {vectors.dtype} {vectors.shape}")
        if scales.shape != (vectors.shape[0],):
            raise ValueError(f"scales has shape {scales.shape}, expected ({vectors.shape[0]},)")
        if len(tokenizer) != vectors.shape[0]:
            raise ValueError(f"the vocabulary has {len(tokenizer)} tokens but there are {vectors.shape[0]} vectors")
        self.vectors = vectors
        self.scales = scales.astype(np.float32, copy=False)
        # Sums in float64 do not depend on their order at float32 precision, so CPython's BLAS and
        # Pyodide's plain loops give the same vectors.
        self._weights = self.scales.astype(np.float64)
        self.tokenizer = tokenizer
        self.id = model_id
        self.sha256 = sha256
        self.max_tokens = max_tokens

    @property
    def dims(self) -> int:
        return int(self.vectors.shape[1])

    def token_ids(self, text: str) -> list[int]:
        """The ids that `encode` averages: the first `max_tokens` tokens, unknown ones left out."""
        unk = self.tokenizer.unk_id
        return [i for i in self.tokenizer.token_ids(text, self.max_tokens) if i != unk]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """An array of shape (len(texts), dims), float32, each row of norm 1 or 0."""
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts; wrap a single text in a list")
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in zip(out, texts):
            ids = self.token_ids(text)
            if ids:
                # One matrix-vector product per text: the scaled sum of its int8 rows. (Ten times
                # faster than np.add.reduceat over all texts' gathered rows, and no large buffer.)
                row[:] = self._weights[ids] @ self.vectors[ids]
        # The mean and the sum point the same way, so normalising the sum gives the mean's unit vector.
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    @classmethod
    def from_files(cls, files: Mapping[str, bytes], *, source: str = "model") -> StaticModel:
        """A model from file contents by name: model.json and the files it needs.

        Every file given is checked against the SHA-256 that model.json records for it; files
        that inference does not read (licence, readme, reference tokenizer) may be left out.
        `source` names the place in error messages (a directory or a URL).
        """
        if MANIFEST not in files:
            raise ModelError(f"{source}/{MANIFEST}: missing")
        manifest = _parse_manifest(files[MANIFEST], f"{source}/{MANIFEST}")
        for name, data in files.items():
            if name != MANIFEST:
                _check_file(manifest, name, data, source)
        settings, tokenizer_settings = manifest["embeddings"], manifest["tokenizer"]
        needed = (settings["file"], settings["scales"], tokenizer_settings["vocab"])
        missing = [name for name in needed if name not in files]
        if missing:
            raise ModelError(f"{source}/{missing[0]}: missing")
        vectors = _load_npy(files[settings["file"]], f"{source}/{settings['file']}")
        scales = _load_npy(files[settings["scales"]], f"{source}/{settings['scales']}")
        vocab = _parse_vocab(files[tokenizer_settings["vocab"]], f"{source}/{tokenizer_settings['vocab']}")
        try:
            tokenizer = WordPieceTokenizer(
                vocab,
                unk_token=tokenizer_settings["unk_token"],
                continuing_subword_prefix=tokenizer_settings["continuing_subword_prefix"],
                max_input_chars_per_word=tokenizer_settings["max_input_chars_per_word"],
                special_tokens=tokenizer_settings["special_tokens"],
            )
            model = cls(
                vectors,
                scales,
                tokenizer,
                model_id=manifest["id"],
                sha256=revision(files[MANIFEST]),
                max_tokens=manifest["pooling"]["max_tokens"],
            )
        except ValueError as error:
            raise ModelError(f"{source}: {error}") from None
        if model.dims != manifest["dims"]:
            raise ModelError(f"{source}/{settings['file']}: {model.dims} dims, model.json says {manifest['dims']}")
        return model


def _parse_manifest(data: bytes, where: str) -> dict:
    """model.json as a dict, after checking its format and that it describes what this module does."""
    try:
        manifest = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelError(f"{where}: not valid JSON ({error})") from None
    try:
        if manifest["format"] != MODEL_FORMAT:
            raise ModelError(f"{where}: format {manifest['format']!r}, this cellar reads {MODEL_FORMAT}")
        tokenizer, pooling = manifest["tokenizer"], manifest["pooling"]
        if tokenizer["type"] != "WordPiece" or tokenizer["normalizer"] != BERT_UNCASED_NORMALIZER:
            raise ModelError(f"{where}: unsupported tokenizer {tokenizer['type']} {tokenizer['normalizer']}")
        if pooling["mode"] != "mean" or pooling["normalize"] != "l2":
            raise ModelError(f"{where}: unsupported pooling {pooling}")
        for name, entry in manifest["files"].items():
            if name == MANIFEST or PurePosixPath(name).name != name or name in ("", ".", ".."):
                raise ModelError(f"{where}: bad file name {name!r}")
            if not isinstance(entry["bytes"], int) or not isinstance(entry["sha256"], str):
                raise ModelError(f"{where}: {name} needs an integer size and a SHA-256 string")
        for name in (manifest["embeddings"]["file"], manifest["embeddings"]["scales"], tokenizer["vocab"]):
            if name not in manifest["files"]:
                raise ModelError(f"{where}: {name} is not in its file list")
        if not isinstance(manifest["id"], str) or not isinstance(manifest["dims"], int):
            raise ModelError(f"{where}: id must be a string and dims an integer")
    except (KeyError, TypeError) as error:
        raise ModelError(f"{where}: missing or malformed entry {error}") from None
    return manifest


def _check_file(manifest: Mapping, name: str, data: bytes, source: str) -> None:
    """Raise ModelError naming the file unless `data` has the size and SHA-256 model.json records."""
    expected = manifest["files"].get(name)
    if expected is None:
        raise ModelError(f"{source}/{name}: not listed in {MANIFEST}")
    digest = revision(data)
    if len(data) != expected["bytes"] or digest != expected["sha256"]:
        raise ModelError(
            f"{source}/{name}: damaged or replaced (SHA-256 {digest}, {len(data)} bytes; "
            f"{MANIFEST} records {expected['sha256']}, {expected['bytes']} bytes)"
        )


def _load_npy(data: bytes, where: str) -> np.ndarray:
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except ValueError as error:
        raise ModelError(f"{where}: not a NumPy array file ({error})") from None


def _parse_vocab(data: bytes, where: str) -> list[str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ModelError(f"{where}: not UTF-8 ({error})") from None
    # One token per line; split on "\n" only, since str.splitlines also breaks at \x1c, \x85, ...
    return text.removesuffix("\n").split("\n")


def default_model_dir() -> Path:
    """The folder of the model that ships in the package (package data of cellar.retrieval)."""
    return Path(str(importlib.resources.files("cellar.retrieval") / "models" / DEFAULT_MODEL_ID))


@lru_cache(maxsize=1)
def default_model() -> StaticModel:
    """The packaged model, loaded and checked once per process (8 MB against model.json's hashes)."""
    return load_model(default_model_dir())


def load_model(directory: str | PathLike[str]) -> StaticModel:
    """The model in `directory`, after checking every file that model.json lists."""
    directory = Path(directory)
    files = {MANIFEST: _read(directory, MANIFEST)}
    manifest = _parse_manifest(files[MANIFEST], str(directory / MANIFEST))
    for name in manifest["files"]:
        files[name] = _read(directory, name)
    return StaticModel.from_files(files, source=str(directory))


def _read(directory: Path, name: str) -> bytes:
    try:
        return (directory / name).read_bytes()
    except OSError as error:
        raise ModelError(f"{directory / name}: cannot read ({error.strerror or error})") from None

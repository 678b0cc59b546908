"""A seeded fuzzer over real notebooks: mutated files never crash or hang the readers.

Real notebooks (tests/fixtures/notebooks, demo/archive and, when present, the shared corpus) are
mutated by a seeded random mutator (byte flips, truncation, invalid UTF-8, NULs, deep nesting,
huge strings and integers, non-finite numbers, wrong types, missing keys, surrogates paired and
lone, odd nbformat versions, and mixes of these), then run through `read_notebook`, `chunk_file`
and `build_index_from_directory` + `write_shard` + `open_shard`. A case passes when it is read
(and its chunk records are UTF-8 JSON) or refused with a ValueError (NotebookError, FileRefused)
whose message starts with the file's path. Any other exception is a crash; a case that takes
longer than CASE_SECONDS is a hang. Inputs stay bounded (a huge string is 300,000 characters,
with MAX_TEXT_CHARS lowered so the cut is exercised), so the whole run takes seconds.
"""

from __future__ import annotations

import json
import random
import signal
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cellar.ingest import chunking
from cellar.ingest.chunking import chunk_file, chunk_notebook
from cellar.ingest.notebook import read_notebook
from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.index import build_index_from_directory
from cellar.retrieval.publish import write_shard
from cellar.retrieval.shard import open_shard

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "tests" / "fixtures" / "notebooks", ROOT / "demo" / "archive"]
SHARED_CORPUS = ROOT.parent / "shared" / "corpus"
SEED = 13
CASES = 520
CASE_SECONDS = 10


class Hang(Exception):
    pass


def _expired(*_: object) -> None:
    raise Hang


def originals(folders: list[Path], limit: int | None = None) -> list[bytes]:
    files = sorted(path for folder in folders for path in folder.rglob("*.ipynb") if path.is_file())
    return [path.read_bytes() for path in files[:limit]]


# -- the mutator ----------------------------------------------------------------------------------


def _nodes(value: Any) -> list[tuple[Any, Any]]:
    """(container, key) of every value inside `value`, without recursion."""
    found, stack = [], [value]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            found.append((node, key))
            stack.append(child)
    return found


def _random_value(rng: random.Random) -> Any:
    return rng.choice(
        [None, True, False, 0, -1, 2**63, 1.5, float("nan"), "", "x", "\0", [], {}, [None], {"": None}, ["a", 1]]
    )


def _nest(rng: random.Random, depth: int) -> str:
    if rng.random() < 0.5:
        return "[" * depth + "1" + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def _structural(rng: random.Random, doc: Any) -> tuple[Any, str]:
    """One change to the parsed notebook; returns it (maybe replaced) and the JSON text to use."""
    nodes = _nodes(doc)
    kinds = ["wrong-type", "delete", "huge-string", "huge-int", "deep", "number", "surrogate", "version"]
    kind = rng.choice(kinds + ["edit-string"] * 4 + ["deep-metadata"] * 2)
    strings = [(container, key) for container, key in nodes if isinstance(container[key], str)]
    if kind == "edit-string" and strings:  # text a reader must take as it is: controls, NULs, pairs
        container, key = rng.choice(strings)
        at = rng.randint(0, len(container[key]))
        junk = rng.choice(["\0", "\x1b[31m", "\u202e", "e\u0301", "\U0001f600", "\r", "\ufeff", "\\", "```", "# "])
        container[key] = container[key][:at] + junk * rng.randint(1, 50) + container[key][at:]
        return doc, json.dumps(doc, ensure_ascii=rng.random() < 0.5)
    if kind == "deep-metadata" and isinstance(doc, dict):  # free-form metadata may nest, within limits
        places = [doc] + [cell for cell in doc.get("cells", []) if isinstance(cell, dict)]
        place = rng.choice(places)
        if isinstance(place.get("metadata"), dict):
            place["metadata"]["nested"] = "\x00MARK\x00"
            text = json.dumps(doc).replace(json.dumps("\x00MARK\x00"), _nest(rng, rng.choice([10, 200, 900])))
            return doc, text
    if not nodes:
        return doc, json.dumps(doc)
    container, key = rng.choice(nodes)
    marker = "\x00MARK\x00"
    if kind == "wrong-type":
        container[key] = _random_value(rng)
    elif kind == "delete" and isinstance(container, dict):
        del container[key]
    elif kind == "delete":
        container.pop(key)
    elif kind == "huge-string":
        container[key] = rng.choice(["word ", "x", "\u00e9 ", "<td>1</td>", "\n"]) * rng.randint(50_000, 300_000)
    elif kind == "number":
        container[key] = rng.choice([float("inf"), float("-inf"), float("nan"), 1e308, -0.0, 10**300])
    elif kind == "version":
        doc["nbformat" if rng.random() < 0.5 else "nbformat_minor"] = rng.choice([0, 1, 2, 3, 4, 5, 99, -1, "4"])
    else:  # spliced into the text: deep nesting, integers past the digit limit, surrogates
        container[key] = marker
    text = json.dumps(doc)
    if kind == "deep":
        text = text.replace(json.dumps(marker), _nest(rng, rng.choice([900, 1100, 5000, 100_000])))
    elif kind == "huge-int":
        text = text.replace(json.dumps(marker), rng.choice(["", "-"]) + "9" * rng.randint(4301, 20_000))
    elif kind == "surrogate":
        escape = rng.choice(["\\ud800", "\\udfff", "\\ud83d\\ude00", "\\ude00\\ud83d", "x\\udc80y", "\\u0000"])
        text = text.replace(json.dumps(marker), f'"{escape}"')
    return doc, text


def _bytes_level(rng: random.Random, data: bytes) -> bytes:
    kind = rng.choice(["flip", "truncate", "nul", "invalid-utf8", "splice", "bom"])
    buffer = bytearray(data)
    if not buffer:
        return bytes(buffer)
    if kind == "flip":
        for _ in range(rng.randint(1, 20)):
            buffer[rng.randrange(len(buffer))] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        del buffer[rng.randrange(len(buffer)) :]
    elif kind == "nul":
        for _ in range(rng.randint(1, 5)):
            buffer.insert(rng.randrange(len(buffer)), rng.choice([0, 0x5C]))  # NUL, or a stray backslash
    elif kind == "invalid-utf8":
        at = rng.randrange(len(buffer))
        buffer[at:at] = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"])
    elif kind == "splice":
        a, b = sorted(rng.randrange(len(buffer)) for _ in range(2))
        buffer[a:a] = buffer[a:b][:100_000]
    else:
        buffer[0:0] = b"\xef\xbb\xbf"
    return bytes(buffer)


def mutate(rng: random.Random, original: bytes) -> bytes:
    """One to three mutations of a notebook's bytes."""
    data = original
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        if rng.random() < 0.6:
            try:
                doc = json.loads(data)
            except (ValueError, RecursionError):
                data = _bytes_level(rng, data)
                continue
            _, text = _structural(rng, doc)
            data = text.encode("utf-8", "surrogatepass")
        else:
            data = _bytes_level(rng, data)
    return data


# -- the checks -----------------------------------------------------------------------------------


def run_case(path: Path, root: Path, data: bytes, outcomes: Counter, crashes: list[str]) -> None:
    """Read the case as bytes and as a file; tally read / refused / crash / hang."""
    name = path.relative_to(root).as_posix()
    signal.alarm(CASE_SECONDS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                chunk_notebook(read_notebook(data, name))
            except ValueError as error:
                if not str(error).startswith(f"{name}: "):
                    raise AssertionError(f"an error that does not name the file: {error}") from error
            try:
                chunked = chunk_file(path, root)
                for chunk in chunked.chunks:
                    json.dumps(chunk.record(), ensure_ascii=False).encode("utf-8")
                outcomes["read"] += 1
            except ValueError as error:
                if not str(error).startswith(f"{name}: "):
                    raise AssertionError(f"an error that does not name the file: {error}") from error
                outcomes["refused"] += 1
    except Hang:
        outcomes["hang"] += 1
        crashes.append(f"{name}: hang (over {CASE_SECONDS} s)")
    except Exception as error:  # noqa: BLE001 - any other exception is what the fuzzer looks for
        outcomes["crash"] += 1
        crashes.append(f"{name}: {type(error).__name__}: {str(error)[:300]}")
    finally:
        signal.alarm(0)


def fuzz(tmp_path: Path, sources: list[bytes], cases: int, seed: int) -> tuple[Counter, list[str], Path]:
    rng = random.Random(seed)
    root = tmp_path / "fuzzed"
    outcomes: Counter = Counter()
    crashes: list[str] = []
    previous = signal.signal(signal.SIGALRM, _expired)
    try:
        for number in range(cases):
            data = mutate(rng, rng.choice(sources))
            path = root / f"{number // 100:02d}" / f"case{number:04d}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            run_case(path, root, data, outcomes, crashes)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return outcomes, crashes, root


@pytest.fixture()
def small_texts(monkeypatch):
    monkeypatch.setattr(chunking, "MAX_TEXT_CHARS", 100_000)  # a huge string is cut, quickly


def test_the_mutator_is_seeded():
    source = originals(SOURCES, 1)[0]
    assert mutate(random.Random(1), source) == mutate(random.Random(1), source)


def test_fuzzed_notebooks_never_crash_or_hang_the_readers_or_the_index(tmp_path, small_texts):
    started = time.perf_counter()
    outcomes, crashes, root = fuzz(tmp_path, originals(SOURCES), CASES, SEED)
    signal.signal(signal.SIGALRM, _expired)
    signal.alarm(300)
    try:
        built = build_index_from_directory(root, load_model(default_model_dir()))
        write_shard(built.index, tmp_path / "shard")
        shard = open_shard(tmp_path / "shard")
        shard.check_all()
    finally:
        signal.alarm(0)
    seconds = time.perf_counter() - started
    print(
        f"fuzz: {CASES} cases (seed {SEED}) in {seconds:.1f} s: {outcomes['read']} read, "
        f"{outcomes['refused']} refused, {outcomes['crash']} crashes, {outcomes['hang']} hangs; "
        f"index: {built.files} files read, {built.skipped} skipped, {built.index.n_chunks} chunks"
    )
    assert crashes == []
    assert sum(outcomes.values()) == CASES
    assert built.files + built.skipped == CASES and built.files == outcomes["read"]
    assert outcomes["read"] > CASES // 10 and outcomes["refused"] > CASES // 10  # both paths exercised


def test_fuzzed_notebooks_of_the_shared_corpus(tmp_path, small_texts):
    if not SHARED_CORPUS.is_dir():
        pytest.skip(f"{SHARED_CORPUS}: the shared corpus is not on this machine")
    sources = originals([SHARED_CORPUS], 60)
    outcomes, crashes, _ = fuzz(tmp_path, sources, 200, SEED + 1)
    print(f"fuzz (shared corpus): 200 cases: {dict(outcomes)}")
    assert crashes == []

"""Hidden checks of lesson 1: one function per checkpoint, given the learner's namespace.

Every call gets deep copies of its inputs, and expectations come from this file's own
data, so a function that changes its arguments cannot move the goalposts; changing them is
itself a failure. The first expectation that fails raises CheckFailure in plain words.
"""

import hashlib
import math
import pickle
import re

from cellar.lessons.lesson import CheckFailure, brief, call, expect_value_error, learner_function

EXAMPLE = "  A  B\nC D E F G H  "
SNAPSHOT_KEYS = ["id", "revision", "text", "title"]
CHUNK_KEYS = ["document_id", "end", "id", "revision", "start", "text", "word_end", "word_start"]
COVERAGE_KEYS = [
    "coverage",
    "covered_words",
    "duplication_factor",
    "missing_word_indices",
    "total_words",
    "word_occurrences",
]


# --- this file's own reference data -------------------------------------------------------------


def sha256_hex(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record(doc_id="d", title="Example", text=EXAMPLE):
    return {"id": doc_id, "title": title, "text": text}


def snapshot(doc_id="d", title="Example", text=EXAMPLE):
    return {**record(doc_id, title, text), "revision": sha256_hex(text)}


def word_spans(text):
    return [match.span() for match in re.finditer(r"\S+", text)]


def chunk(document, word_start, word_end, start, end):
    return {
        "id": f"{document['id']}:{word_start}",
        "document_id": document["id"],
        "revision": document["revision"],
        "word_start": word_start,
        "word_end": word_end,
        "start": start,
        "end": end,
        "text": document["text"][start:end],
    }


def reference_chunks(document, window, overlap):
    spans = word_spans(document["text"])
    chunks, first = [], 0
    while True:
        last = min(first + window, len(spans))
        chunks.append(chunk(document, first, last, spans[first][0], spans[last - 1][1]))
        if last == len(spans):
            return chunks
        first += window - overlap


def reference_coverage(document, chunks):
    total = len(word_spans(document["text"]))
    covered = set()
    for item in chunks:
        covered.update(range(item["word_start"], item["word_end"]))
    occurrences = sum(item["word_end"] - item["word_start"] for item in chunks)
    return {
        "total_words": total,
        "covered_words": len(covered),
        "coverage": len(covered) / total,
        "word_occurrences": occurrences,
        "duplication_factor": occurrences / len(covered) if covered else None,
        "missing_word_indices": [i for i in range(total) if i not in covered],
    }


def fail(message):
    raise CheckFailure(message)


def same(actual, expected):
    """Equal and of the same type, so that True does not pass for 1 nor 2.0 for 2."""
    if isinstance(expected, float):
        return type(actual) is float and math.isclose(actual, expected, rel_tol=1e-12)
    return type(actual) is type(expected) and actual == expected


def call_on_copies(label, function, *args, **kwargs):
    """Call with deep copies of the arguments; changing them fails the check."""
    given = pickle.loads(pickle.dumps(args))  # a deep copy, and much faster than copy.deepcopy
    result = call(label, function, *given, **kwargs)
    if given != args:
        fail(f"{label} changed the arguments it was given; it must leave its input as it was")
    return result


# --- checkpoint 1: document_snapshots ----------------------------------------------------------


def check_document_snapshots(namespace):
    document_snapshots = learner_function(namespace, "document_snapshots")
    tank_note = {"text": "Tank FP-3\r\nvolume 412.1 m³ ✓ 🚢\n", "title": "  Forepeak tank  ", "id": "tank_FP-3"}
    accepted = [
        ("document_snapshots(records) for the example and a tank note", [record(), tank_note]),
        (
            "document_snapshots(records) with 32 records (the most allowed)",
            [record(f"r{i}", text=f"note {i}") for i in range(32)],
        ),
        (
            "document_snapshots(records) with a 40-character id, a 100-character title "
            "and a 20,000-character text (the longest allowed)",
            [record("x" * 40, "T" * 100, "w " * 10_000)],
        ),
    ]
    for label, records in accepted:
        expect_snapshots(label, document_snapshots, records)

    rejected = [
        (None, "records is None, not a list"),
        (record(), "records is one dict, not a list of dicts"),
        ([], "records is an empty list (1 to 32 records)"),
        ([record(f"r{i}") for i in range(33)], "there are 33 records (at most 32)"),
        (["A B"], "record 0 is a string, not a dict"),
        ([{"id": "d", "text": "A B"}], "record 0 has no title"),
        ([{**record(), "path": "notes/a.md"}], "record 0 has the key 'path' besides id, title and text"),
        ([record("")], "the id '' is empty"),
        ([record("tank 3")], "the id 'tank 3' contains a space"),
        ([record("tank3\n")], "the id 'tank3\\n' ends with a newline"),
        ([record("café")], "the id 'café' has a letter outside A-Z"),
        ([record("x" * 41)], "the id has 41 characters (at most 40)"),
        ([record(7)], "the id 7 is an int, not a string"),
        ([record(True)], "the id True is a bool, not a string"),
        ([record("d"), record("d", text="other")], "the ids 'd' and 'd' are the same"),
        ([record(title=None)], "the title is None, not a string"),
        ([record(title=" \t ")], "the title ' \\t ' is empty after strip()"),
        ([record(title="T" * 101)], "the title has 101 characters (at most 100)"),
        ([record(text=b"A B")], "the text is bytes, not a string"),
        ([record(text=" \n\t ")], "the text ' \\n\\t ' is empty after strip()"),
        ([record(text="w" * 20_001)], "the text has 20,001 characters (at most 20,000)"),
        ([record(text="A \ud800 B")], "the text holds a lone surrogate '\\ud800', which UTF-8 cannot encode"),
    ]
    for records, why in rejected:
        expect_value_error("document_snapshots(records)", why, document_snapshots, records)


def expect_snapshots(label, document_snapshots, records):
    result = call_on_copies(label, document_snapshots, records)
    if not isinstance(result, list) or len(result) != len(records):
        fail(f"{label} returned {brief(result)}; expected a list of {len(records)} snapshots")
    for position, (got, given) in enumerate(zip(result, records)):
        where = f"{label}: snapshot {position}"
        if not isinstance(got, dict) or sorted(got) != SNAPSHOT_KEYS:
            fail(f"{where} is {brief(got)}; expected a dict with exactly id, title, text and revision")
        for key in ("id", "title", "text"):
            if not same(got[key], given[key]):
                fail(f"{where} has {key} {brief(got[key])}; expected {brief(given[key])}, exactly as given")
        revision = sha256_hex(given["text"])
        if got["revision"] != revision:
            fail(
                f"{where} has revision {brief(got['revision'])}; expected {revision}, "
                "the SHA-256 hex digest of the text's UTF-8 bytes"
            )


# --- checkpoint 2: word_chunks ------------------------------------------------------------------


def check_word_chunks(namespace):
    word_chunks = learner_function(namespace, "word_chunks")
    doc = snapshot()
    expect_chunks(
        "word_chunks(doc, window=4, overlap=1)",
        word_chunks,
        doc,
        [chunk(doc, 0, 4, 2, 10), chunk(doc, 3, 7, 9, 16), chunk(doc, 6, 8, 15, 18)],
        window=4,
        overlap=1,
    )

    hundred = snapshot("log", "Log", "\n".join(" ".join(f"w{i + j}" for j in range(10)) for i in range(0, 100, 10)))
    seven = snapshot("seven", "Seven", "one two three four five six seven")
    spaces = snapshot("tank_FP-3", "Tank", "Tank\tFP-3\u00a0volume\u2003412.1 m³\r\n\r\nnext  line ")
    three_hundred = snapshot("long", "Long", " ".join(f"t{i}" for i in range(300)))
    single = snapshot("one", "One", "  x\n")
    expect_chunks(
        "word_chunks(doc) on 100 words, with the defaults window=40 and overlap=8",
        word_chunks,
        hundred,
        reference_chunks(hundred, 40, 8),
    )
    cases = [
        (seven, 4, 1, "7 words"),
        (doc, 1, 0, "the example"),
        (doc, 3, 0, "the example"),
        (doc, 50, 10, "the example"),
        (spaces, 3, 1, "a text with tabs, no-break and em spaces and CRLF"),
        (three_hundred, 256, 255, "300 words"),
        (single, 3, 2, "the one-word text '  x\\n'"),
    ]
    for document, window, overlap, what in cases:
        expect_chunks(
            f"word_chunks(doc, window={window}, overlap={overlap}) on {what}",
            word_chunks,
            document,
            reference_chunks(document, window, overlap),
            window=window,
            overlap=overlap,
        )

    bad_settings = [
        (True, 0, "window True is a bool, not an int"),
        (4, False, "overlap False is a bool, not an int"),
        (0, 0, "window 0 is below 1"),
        (257, 0, "window 257 is above 256"),
        (4.0, 1, "window 4.0 is a float, not an int"),
        ("4", 1, "window '4' is a string, not an int"),
        (4, -1, "overlap -1 is below 0"),
        (4, 4, "overlap 4 is not smaller than window 4"),
        (4, 5, "overlap 5 is larger than window 4"),
        (4, 1.0, "overlap 1.0 is a float, not an int"),
    ]
    for window, overlap, why in bad_settings:
        expect_value_error(
            f"word_chunks(doc, window={window!r}, overlap={overlap!r})",
            why,
            word_chunks,
            snapshot(),
            window=window,
            overlap=overlap,
        )
    for document, why in bad_documents():
        expect_value_error("word_chunks(doc, window=4, overlap=1)", why, word_chunks, document, window=4, overlap=1)


def bad_documents():
    return [
        (None, "the document is None, not a snapshot dict"),
        (record(), "the document has no revision: it is a record, not a snapshot"),
        ({**snapshot(), "path": "notes/a.md"}, "the document has the key 'path' besides id, title, text and revision"),
        (
            {**snapshot(), "text": EXAMPLE.replace("E", "F")},
            "its text was changed after the snapshot was taken, so the revision no longer matches",
        ),
        (
            {**snapshot(), "revision": sha256_hex(EXAMPLE.strip())},
            "the revision is that of the stripped text, not of the text",
        ),
        (snapshot("tank 3"), "the id 'tank 3' is not a valid document id, so this is no snapshot"),
        (snapshot(text="  \n "), "the text is empty after strip(), so this is no snapshot"),
    ]


def expect_chunks(label, word_chunks, document, expected, **settings):
    result = call_on_copies(label, word_chunks, document, **settings)
    if not isinstance(result, list):
        fail(f"{label} returned {brief(result)}; expected a list of chunk dicts")
    if len(result) != len(expected):
        ids = [item["id"] for item in expected]
        shown = ", ".join(ids if len(ids) <= 6 else ids[:5] + ["…", ids[-1]])
        fail(f"{label} returned {len(result)} chunks; expected {len(expected)} ({shown})")
    for position, (got, want) in enumerate(zip(result, expected)):
        where = f"{label}: chunk {position} ({want['id']})"
        if not isinstance(got, dict) or sorted(got) != CHUNK_KEYS:
            keys = sorted(got) if isinstance(got, dict) else brief(got)
            fail(f"{where} has the keys {keys}; expected exactly {', '.join(CHUNK_KEYS)}")
        for key in ("id", "document_id", "revision", "word_start", "word_end", "start", "end", "text"):
            if not same(got[key], want[key]):
                fail(
                    f"{where} has {key} {brief(got[key])}; expected {brief(want[key])}" + explain_chunk_field(key, want)
                )


def explain_chunk_field(key, want):
    return {
        "id": " (<document id>:<first word index>)",
        "word_end": " (the index after its last word)",
        "start": f" (where word {want['word_start']} starts)",
        "end": f" (just after word {want['word_end'] - 1}: end is exclusive)",
        "text": f", exactly text[{want['start']}:{want['end']}]",
    }.get(key, "")


# --- checkpoint 3: chunk_coverage ---------------------------------------------------------------


def check_chunk_coverage(namespace):
    chunk_coverage = learner_function(namespace, "chunk_coverage")
    doc = snapshot()
    full = reference_chunks(doc, 4, 1)
    expect_coverage(
        "chunk_coverage(doc, chunks) for the example's chunks d:0, d:3, d:6",
        chunk_coverage,
        doc,
        full,
        {
            "total_words": 8,
            "covered_words": 8,
            "coverage": 1.0,
            "word_occurrences": 10,
            "duplication_factor": 1.25,
            "missing_word_indices": [],
        },
    )
    expect_coverage(
        "chunk_coverage(doc, []) with no chunks",
        chunk_coverage,
        doc,
        [],
        {
            "total_words": 8,
            "covered_words": 0,
            "coverage": 0.0,
            "word_occurrences": 0,
            "duplication_factor": None,
            "missing_word_indices": [0, 1, 2, 3, 4, 5, 6, 7],
        },
    )
    expect_coverage(
        "chunk_coverage(doc, chunks) for the example's d:0 and d:6 only",
        chunk_coverage,
        doc,
        [full[0], full[2]],
        {
            "total_words": 8,
            "covered_words": 6,
            "coverage": 0.75,
            "word_occurrences": 6,
            "duplication_factor": 1.0,
            "missing_word_indices": [4, 5],
        },
    )
    word_0 = chunk(doc, 0, 1, 2, 3)
    many = [{**word_0, "id": f"copy-{i}"} for i in range(20_000)]
    others = [
        ("chunk_coverage(doc, chunks) for d:6, d:3, d:0 (in reverse order)", full[::-1]),
        ("chunk_coverage(doc, chunks) for window=3, overlap=0 on the example", reference_chunks(doc, 3, 0)),
        ("chunk_coverage(doc, chunks) for 20,000 chunks (the most allowed) of word 0", many),
    ]
    for label, chunks in others:
        expect_coverage(label, chunk_coverage, doc, chunks, reference_coverage(doc, chunks))

    for chunks, why in bad_chunk_lists():
        expect_value_error("chunk_coverage(doc, chunks)", why, chunk_coverage, snapshot(), chunks)
    xyz = snapshot(text="x y z")
    expect_value_error(
        "chunk_coverage(doc, chunks) for the text 'x y z'",
        "start False is a bool, not an int",
        chunk_coverage,
        xyz,
        [{**chunk(xyz, 0, 1, 0, 1), "start": False}],
    )
    for document, why in bad_documents():
        expect_value_error("chunk_coverage(doc, chunks)", why, chunk_coverage, document, chunks_agreeing_with(document))


def chunks_agreeing_with(document):
    """Chunks made from the bad document itself, so that only checking the document finds it."""
    if isinstance(document, dict) and {"id", "text", "revision"} <= set(document) and word_spans(document["text"]):
        return reference_chunks(document, 4, 1)
    return []


def bad_chunk_lists():
    doc = snapshot()
    full = reference_chunks(doc, 4, 1)
    d0, d3, d6 = full
    return [
        (None, "chunks is None, not a list"),
        ([{**d0, "id": f"copy-{i}"} for i in range(20_001)], "there are 20,001 chunks (at most 20,000)"),
        (["A  B\nC D"], "chunk 0 is a string, not a chunk dict"),
        ([{key: value for key, value in d0.items() if key != "text"}], "chunk d:0 has no text"),
        ([{**d0, "kind": "text"}], "chunk d:0 has the key 'kind' besides the eight chunk fields"),
        (full + [dict(d0)], "the id d:0 occurs twice"),
        ([{**d0, "document_id": "e"}], "chunk d:0 says it comes from document e, not d"),
        ([{**d0, "revision": sha256_hex(EXAMPLE.strip())}], "chunk d:0 has another revision than the document"),
        ([d0, {**d3, "text": "D E F X"}, d6], "chunk d:3's text 'D E F X' is not the source's text[9:16]"),
        ([d0, {**d3, "text": "D E F G "}, d6], "chunk d:3's text 'D E F G ' is not the source's text[9:16]"),
        (
            [{**d0, "start": 1, "text": EXAMPLE[1:10]}],
            "chunk d:0 starts at character 1, in the spaces before its first word (at 2)",
        ),
        ([{**d6, "end": 25, "text": EXAMPLE[15:25]}], "chunk d:6 ends at 25, past the end of the 20-character text"),
        ([{**d6, "word_end": 9}], "chunk d:6 has word_end 9, past the text's 8 words"),
        ([{**chunk(doc, 7, 8, 17, 18), "word_start": -1}], "chunk d:7 has word_start -1, before the first word"),
        ([chunk(doc, 3, 3, 9, 9)], "chunk d:3 has no words (word_start 3, word_end 3)"),
        ([{**d0, "start": 2.0}], "chunk d:0 has start 2.0, a float, not an int"),
        ([{**chunk(doc, 0, 1, 2, 3), "word_end": True}], "chunk d:0 has word_end True, a bool, not an int"),
    ]


def expect_coverage(label, chunk_coverage, document, chunks, expected):
    result = call_on_copies(label, chunk_coverage, document, chunks)
    if not isinstance(result, dict) or sorted(result) != COVERAGE_KEYS:
        keys = sorted(result) if isinstance(result, dict) else brief(result)
        fail(f"{label} returned {keys}; expected a dict with exactly {', '.join(COVERAGE_KEYS)}")
    for key in (
        "total_words",
        "covered_words",
        "word_occurrences",
        "coverage",
        "duplication_factor",
        "missing_word_indices",
    ):
        got, want = result[key], expected[key]
        if want is None and got is None or want is not None and same(got, want):
            continue
        explanation = {
            "coverage": f" ({expected['covered_words']} covered / {expected['total_words']} words, a float)",
            "duplication_factor": (
                f" ({expected['word_occurrences']} word occurrences / {expected['covered_words']} covered words)"
                if want is not None
                else " because no word is covered"
            ),
            "missing_word_indices": " (the uncovered word indices, in order)",
        }.get(key, "")
        fail(f"{label} returned {key} {brief(got)}; expected {brief(want)}{explanation}")

"""Lesson 1, a sample solution: snapshots, word-window chunks with exact offsets, and coverage."""

import hashlib
import re

ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,40}")
WORD = re.compile(r"\S+")
MAX_RECORDS = 32
MAX_TITLE = 100
MAX_TEXT = 20_000
MAX_WINDOW = 256
MAX_CHUNKS = 20_000
RECORD_KEYS = {"id", "title", "text"}
SNAPSHOT_KEYS = RECORD_KEYS | {"revision"}
CHUNK_KEYS = {"id", "document_id", "revision", "word_start", "word_end", "start", "end", "text"}


def document_snapshots(records):
    """Return a new dict per record with id, title, text (exactly as given) and revision.

    `records` is a list of 1 to 32 dicts with exactly the keys id, title and text. The
    revision is the SHA-256 hex digest of the text's UTF-8 bytes. Any rule broken: ValueError.
    """
    if not isinstance(records, list) or not 1 <= len(records) <= MAX_RECORDS:
        raise ValueError(f"records must be a list of 1 to {MAX_RECORDS} dicts")
    snapshots = [snapshot(record) for record in records]
    ids = [document["id"] for document in snapshots]
    if len(set(ids)) != len(ids):
        raise ValueError("document ids must be unique")
    return snapshots


def snapshot(record):
    """One record's snapshot; the text is stored as given, never stripped."""
    if not isinstance(record, dict) or set(record) != RECORD_KEYS:
        raise ValueError("a record must be a dict with exactly the keys id, title and text")
    doc_id, title, text = record["id"], record["title"], record["text"]
    if not isinstance(doc_id, str) or not ID_PATTERN.fullmatch(doc_id):
        raise ValueError(f"id {doc_id!r} must match [A-Za-z0-9_-]{{1,40}}")
    require_text("title", title, MAX_TITLE)
    require_text("text", text, MAX_TEXT)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"the text of {doc_id} cannot be encoded as UTF-8") from None
    return {"id": doc_id, "title": title, "text": text, "revision": hashlib.sha256(data).hexdigest()}


def require_text(name, value, limit):
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a string that is not empty after strip()")
    if len(value) > limit:
        raise ValueError(f"{name} has {len(value)} characters; at most {limit} are allowed")


def checked_snapshot(document):
    """The document's words as (start, end) spans, once it is known to be an intact snapshot."""
    if not isinstance(document, dict) or set(document) != SNAPSHOT_KEYS:
        raise ValueError("a document must be a snapshot: id, title, text and revision")
    fresh = snapshot({key: document[key] for key in RECORD_KEYS})
    if document["revision"] != fresh["revision"]:
        raise ValueError("the revision does not match the text")
    return [match.span() for match in WORD.finditer(document["text"])]


def word_chunks(document, window=40, overlap=8):
    """Cut a snapshot into windows of `window` words, each starting `window - overlap` words on.

    Each chunk keeps where it came from: document id and revision, the word range
    (word_end exclusive) and the character range (end exclusive) whose exact slice is its text.
    """
    words = checked_snapshot(document)
    if type(window) is not int or not 1 <= window <= MAX_WINDOW:
        raise ValueError(f"window must be an int from 1 to {MAX_WINDOW}")
    if type(overlap) is not int or not 0 <= overlap < window:
        raise ValueError("overlap must be an int with 0 <= overlap < window")
    chunks = []
    for first in range(0, len(words), window - overlap):
        last = min(first + window, len(words))
        start, end = words[first][0], words[last - 1][1]
        chunks.append(
            {
                "id": f"{document['id']}:{first}",
                "document_id": document["id"],
                "revision": document["revision"],
                "word_start": first,
                "word_end": last,
                "start": start,
                "end": end,
                "text": document["text"][start:end],
            }
        )
        if last == len(words):  # this chunk reaches the last word: any later one would repeat it
            break
    return chunks


def chunk_coverage(document, chunks):
    """How well `chunks` cover the document's words, after checking every chunk against it."""
    words = checked_snapshot(document)
    if not isinstance(chunks, list) or len(chunks) > MAX_CHUNKS:
        raise ValueError(f"chunks must be a list of at most {MAX_CHUNKS} chunks")
    covered = [False] * len(words)
    occurrences = 0
    seen = set()
    for chunk in chunks:
        first, last = checked_chunk(chunk, document, words)
        if chunk["id"] in seen:
            raise ValueError(f"chunk id {chunk['id']!r} occurs more than once")
        seen.add(chunk["id"])
        covered[first:last] = [True] * (last - first)
        occurrences += last - first
    covered_words = sum(covered)
    return {
        "total_words": len(words),
        "covered_words": covered_words,
        "coverage": covered_words / len(words),
        "word_occurrences": occurrences,
        "duplication_factor": occurrences / covered_words if covered_words else None,
        "missing_word_indices": [index for index, hit in enumerate(covered) if not hit],
    }


def checked_chunk(chunk, document, words):
    """The chunk's word range, once its fields, offsets and text are shown to match the source."""
    if not isinstance(chunk, dict) or set(chunk) != CHUNK_KEYS:
        raise ValueError(f"a chunk must be a dict with exactly the keys {sorted(CHUNK_KEYS)}")
    if not isinstance(chunk["id"], str):
        raise ValueError("a chunk id must be a string")
    if chunk["document_id"] != document["id"] or chunk["revision"] != document["revision"]:
        raise ValueError(f"chunk {chunk['id']} belongs to another document or revision")
    positions = [chunk[key] for key in ("word_start", "word_end", "start", "end")]
    if any(type(position) is not int for position in positions):
        raise ValueError(f"chunk {chunk['id']}: word_start, word_end, start and end must be ints")
    first, last, start, end = positions
    if not 0 <= first < last <= len(words):
        raise ValueError(f"chunk {chunk['id']}: words {first}-{last} are not inside the text")
    if (start, end) != (words[first][0], words[last - 1][1]):
        raise ValueError(f"chunk {chunk['id']}: characters {start}-{end} are not its words' range")
    if chunk["text"] != document["text"][start:end]:
        raise ValueError(f"chunk {chunk['id']}: text is not the source's text[{start}:{end}]")
    return first, last


if __name__ == "__main__":
    [doc] = document_snapshots([{"id": "d", "title": "Example", "text": "  A  B\nC D E F G H  "}])
    chunks = word_chunks(doc, window=4, overlap=1)
    for chunk in chunks:
        print(f"{chunk['id']}  chars {chunk['start']}-{chunk['end']}  {chunk['text']!r}")
    print(chunk_coverage(doc, chunks))

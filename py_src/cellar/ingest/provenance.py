"""Provenance: the revision of a text or file, and document snapshots.

A revision is the SHA-256 hex digest of the exact bytes. Text is encoded as UTF-8 with no
normalisation of whitespace, case or line ends, so a revision pins one exact version of a source.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from os import PathLike

from cellar.ingest.discovery import open_regular

ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,40}")
SNAPSHOT_KEYS = ("id", "title", "text")


def text_bytes(text: str) -> bytes:
    """The UTF-8 bytes of `text`; a ValueError for text that has no UTF-8 form (lone surrogates)."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, not {type(text).__name__}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"text cannot be encoded as UTF-8 at character {error.start}: {error.reason}") from None


def revision(data: str | bytes) -> str:
    """SHA-256 hex of `data`: bytes as given, text as its UTF-8 bytes."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return hashlib.sha256(data).hexdigest()
    return hashlib.sha256(text_bytes(data)).hexdigest()


def file_revision(path: str | PathLike[str]) -> str:
    """SHA-256 hex of a regular file's bytes, read in blocks so large files need little memory.
    Anything else is an OSError saying what it is, never read: a FIFO or `/dev/zero` never ends
    (opened without blocking, so a FIFO with no writer is not waited on either)."""
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def snapshot(record: Mapping[str, object]) -> dict[str, str]:
    """A new dict with id, title, text and the text's revision; the text is stored unstripped."""
    if not isinstance(record, Mapping):
        raise ValueError(f"a document must be a mapping, not {type(record).__name__}")
    missing = [key for key in SNAPSHOT_KEYS if key not in record]
    if missing:
        raise ValueError(f"document is missing {', '.join(missing)}")
    doc_id, title, text = (record[key] for key in SNAPSHOT_KEYS)
    if not isinstance(doc_id, str) or not ID_PATTERN.fullmatch(doc_id):
        raise ValueError(f"document id {doc_id!r} must match [A-Za-z0-9_-]{{1,40}}")
    for name, value in (("title", title), ("text", text)):
        if not isinstance(value, str):
            raise ValueError(f"document {doc_id}: {name} must be a str, not {type(value).__name__}")
        if not value.strip():
            raise ValueError(f"document {doc_id}: {name} is empty")
    assert isinstance(title, str) and isinstance(text, str)  # checked by the loop above
    return {"id": doc_id, "title": title, "text": text, "revision": revision(text)}


def snapshots(records: Iterable[Mapping[str, object]]) -> list[dict[str, str]]:
    """Snapshots of a batch of documents whose ids must be unique within the batch."""
    result = [snapshot(record) for record in records]
    seen: set[str] = set()
    for doc in result:
        if doc["id"] in seen:
            raise ValueError(f"document id {doc['id']!r} occurs more than once")
        seen.add(doc["id"])
    return result

"""Lesson 1: cut sources into passages without losing where they came from.

Write the three functions below; each checkpoint's task gives the exact rules.
Run shows the demo at the bottom; Check tests one function at a time.
"""

import hashlib
import re


def document_snapshots(records):
    """Return a new dict per record with id, title, text (exactly as given) and revision.

    `records` is a list of 1 to 32 dicts with exactly the keys id, title and text. The
    revision is the SHA-256 hex digest of the text's UTF-8 bytes. Any rule broken: ValueError.
    """
    raise NotImplementedError


def word_chunks(document, window=40, overlap=8):
    """Cut a snapshot into windows of `window` words, each starting `window - overlap` words on.

    Each chunk keeps where it came from: document id and revision, the word range
    (word_end exclusive) and the character range (end exclusive) whose exact slice is its text.
    """
    raise NotImplementedError


def chunk_coverage(document, chunks):
    """How well `chunks` cover the document's words, after checking every chunk against it."""
    raise NotImplementedError


if __name__ == "__main__":
    [doc] = document_snapshots([{"id": "d", "title": "Example", "text": "  A  B\nC D E F G H  "}])
    chunks = word_chunks(doc, window=4, overlap=1)
    for chunk in chunks:
        print(f"{chunk['id']}  chars {chunk['start']}-{chunk['end']}  {chunk['text']!r}")
    print(chunk_coverage(doc, chunks))

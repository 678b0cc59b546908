"""The files a command is given (gold sets, matching rules, a glossary), read with errors that
name them."""

from __future__ import annotations

import errno
import json

from cellar.ingest.discovery import MAX_FILE_BYTES, read_regular


def file_bytes(name: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file `name` (``discovery.read_regular``: a FIFO or `/dev/zero`
    hung `cellar eval`); a ValueError naming it when it is anything else or holds more than
    `limit` bytes, an OSError when it cannot be opened."""
    try:
        return read_regular(name, limit)
    except OSError as error:
        if error.errno in (errno.EINVAL, errno.EFBIG):
            raise ValueError(f"{name}: {error.strerror}") from None
        raise


def text_file(name: str) -> str:
    """The UTF-8 text of the regular file `name` (``file_bytes``); a ValueError naming it when it
    is not UTF-8."""
    try:
        return file_bytes(name).decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{name}: not UTF-8 text ({error})") from None


def json_file(name: str) -> object:
    """The JSON value in the file `name`: an OSError when it cannot be opened, a ValueError naming
    it when it is no regular file or not JSON (or is nested too deeply for the reader: a
    RecursionError in json)."""
    return json_text(file_bytes(name), name)


def json_text(data: bytes, name: str) -> object:
    """The JSON value in `data`, the bytes of the file `name`; a ValueError naming it when they
    are not UTF-8 JSON, or when an object gives a key twice (`json` keeps the last silently: a
    glossary's `"HP": "high pressure"` lost to a later `"HP": "heat pump"`)."""
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"{name}: not valid JSON ({error})") from None


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    value = dict(pairs)
    if len(value) < len(pairs):
        twice = next(key for i, (key, _) in enumerate(pairs) if any(key == k for k, _ in pairs[:i]))
        raise ValueError(f"the key {twice!r} is given twice in one object")
    return value

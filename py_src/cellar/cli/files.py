"""The files a command is given (gold sets, matching rules, a glossary), read with errors that
name them."""

from __future__ import annotations

import json
import os
import stat

from cellar.ingest.discovery import MAX_FILE_BYTES


def file_bytes(name: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file `name`; a ValueError naming it when it is anything else (a
    FIFO waits for a writer for ever, `/dev/zero` never ends: both hung `cellar eval`) or holds
    more than `limit` bytes. Opened without blocking, so a FIFO is not waited on either."""
    descriptor = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{name}: not a regular file (a folder, a FIFO or a device): not read")
        if info.st_size > limit:
            raise ValueError(f"{name}: {info.st_size:,} bytes, over the limit of {limit:,} for one file: not read")
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            return handle.read(limit + 1)
    finally:
        os.close(descriptor)


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
    are not UTF-8 JSON."""
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"{name}: not valid JSON ({error})") from None

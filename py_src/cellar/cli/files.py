"""The JSON files a command is given (matching rules, a glossary), read with errors that name them."""

from __future__ import annotations

import json


def json_file(name: str) -> object:
    """The JSON value in the file `name`: an OSError when it cannot be read, a ValueError naming
    it when it is not JSON (or is nested too deeply for the reader: a RecursionError in json)."""
    with open(name, "rb") as handle:
        return json_text(handle.read(), name)


def json_text(data: bytes, name: str) -> object:
    """The JSON value in `data`, the bytes of the file `name`; a ValueError naming it when they
    are not UTF-8 JSON."""
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"{name}: not valid JSON ({error})") from None

"""The JSON files a command is given (matching rules, a glossary), read with errors that name them."""

from __future__ import annotations

import json


def json_file(name: str) -> object:
    """The JSON value in the file `name`: an OSError when it cannot be read, a ValueError naming
    it when it is not JSON (or is nested too deeply for the reader: a RecursionError in json)."""
    with open(name, encoding="utf-8") as handle:
        try:
            return json.load(handle)
        except (ValueError, RecursionError) as error:
            raise ValueError(f"{name}: not valid JSON ({error})") from None

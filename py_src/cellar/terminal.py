"""Text from an archive or a notebook as a terminal may print it."""

from __future__ import annotations

import re

# C0 and C1 control characters (a tab aside): in a file name, an escape sequence would recolour or
# rewrite the terminal and a carriage return overwrite the line it is printed on. And Unicode's
# bidirectional controls (embeddings, overrides, isolates, the marks): a right-to-left override
# in a name shows `report<U+202E>fdp.exe` as `reportexe.pdf`, and reorders the rest of its line.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown(text: str) -> str:
    """`text` (a problem line naming an archive file, what a notebook wrote) as a terminal may
    print it: control characters written as escapes (`\\x1b`, `\\r`, `\\n`, `\\u202e`)."""
    return _CONTROL.sub(lambda match: repr(match[0])[1:-1], text)

"""Text from an archive or a notebook as a terminal may print it."""

from __future__ import annotations

import re

# C0 and C1 control characters (a tab aside): in a file name, an escape sequence would recolour or
# rewrite the terminal and a carriage return overwrite the line it is printed on.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def shown(text: str) -> str:
    """`text` (a problem line naming an archive file, what a notebook wrote) as a terminal may
    print it: control characters written as escapes (`\\x1b`, `\\r`, `\\n`)."""
    return _CONTROL.sub(lambda match: repr(match[0])[1:-1], text)

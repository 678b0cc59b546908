"""Text cut to a length, the one way Cellar shortens what it shows or stores."""

from __future__ import annotations


def shortened(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: whole when it fits, else cut, its trailing blanks
    dropped, and ended with `…` (counted in the limit) so that a reader sees it was cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"

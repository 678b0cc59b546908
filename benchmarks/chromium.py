"""What the browser benchmarks share: Chromium's flags and the bare reference page.

The reference in every browser benchmark is a bare page that only boots Pyodide and numpy in a
worker (benchmarks/pages), served from a temporary folder that links to the site's own runtime,
so both pages load the same files.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PAGES = Path(__file__).resolve().parent / "pages"
# Without the networking flags Chromium keeps trying to reach Google's services, and this
# machine's closed network refuses every attempt.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def bare_site(site: Path) -> Iterator[Path]:
    """A temporary folder with the bare page (bare.html) and the site's runtime."""
    with tempfile.TemporaryDirectory() as root:
        for name in ("bare.html", "bare.js", "bare-worker.js"):
            (Path(root) / name).write_bytes((PAGES / name).read_bytes())
        (Path(root) / "pyodide").symlink_to(site / "pyodide")
        yield Path(root)


def wait_for(page, expression: str, arg: object = None, timeout_ms: float = 180_000, poll_ms: float = 20) -> object:
    """`page.wait_for_function` under the site's Content-Security-Policy, which forbids the page's
    `eval` that Playwright's own uses: polls through `page.evaluate` every `poll_ms` instead.
    `expression` is a function of `arg` ("q => ...") or a plain expression; returns its first
    truthy value."""
    function = expression if "=>" in expression else f"() => ({expression})"
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        try:
            value = page.evaluate(function, arg)
        except Exception as error:  # a navigation replaced the page's context meanwhile: ask again
            if "context was destroyed" not in str(error) and "navigat" not in str(error):
                raise
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{expression} still false after {timeout_ms / 1000:.0f} s")
        page.wait_for_timeout(poll_ms)

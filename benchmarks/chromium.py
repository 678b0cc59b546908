"""What the browser benchmarks share: Chromium's flags and the bare reference page.

The reference in every browser benchmark is a bare page that only boots Pyodide and numpy in a
worker (benchmarks/pages), served from a temporary folder that links to the site's own runtime,
so both pages load the same files.
"""

from __future__ import annotations

import tempfile
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
        for name in ("bare.html", "bare-worker.js"):
            (Path(root) / name).write_bytes((PAGES / name).read_bytes())
        (Path(root) / "pyodide").symlink_to(site / "pyodide")
        yield Path(root)

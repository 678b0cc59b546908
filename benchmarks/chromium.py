"""What the browser benchmarks share: Chromium's flags, waiting in a page, the bare reference page.

The reference in every browser benchmark is a bare page that only boots Pyodide and numpy in a
worker (benchmarks/pages), served from a temporary folder that links to Pyodide as distributed:
the runtime build.py downloaded and checked, before the site added bytecode to its standard
library and to NumPy (cellar.site.bytecode). search_page.py also times the bare page on the
site's own runtime, so that what the bytecode alone gains is seen apart.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # build.py's runtime folder, and the browser tests' Chromium flags and CSP-proof wait
from build import runtime_dir  # noqa: E402  (build.py's own: where it keeps the runtime it checked)
from tests.browser.conftest import CHROMIUM_ARGS as CHROMIUM_ARGS  # noqa: E402  (the benchmarks import it from here)
from tests.browser.conftest import service_worker_ready as service_worker_ready  # noqa: E402
from tests.browser.conftest import site_around as site_around  # noqa: E402
from tests.browser.conftest import wait_for as _wait_for  # noqa: E402

PAGES = Path(__file__).resolve().parent / "pages"


def stock_runtime() -> Path:
    """Pyodide as distributed: the folder build.py downloaded and checked it into."""
    folder = runtime_dir()
    if not (folder / "pyodide.asm.wasm").is_file():
        raise SystemExit(f"{folder}: Pyodide is not there; build the site first (python3 build.py site)")
    return folder


@contextmanager
def bare_site(runtime: Path) -> Iterator[Path]:
    """A temporary folder with the bare page (bare.html) and the Pyodide runtime in ``runtime``."""
    with tempfile.TemporaryDirectory() as root:
        for name in ("bare.html", "bare.js", "bare-worker.js"):
            (Path(root) / name).write_bytes((PAGES / name).read_bytes())
        (Path(root) / "pyodide").symlink_to(runtime)
        yield Path(root)


def wait_for(page, expression: str, arg: object = None, timeout_ms: float = 180_000) -> object:
    """The browser tests' `wait_for` (it works under the site's Content-Security-Policy), polling
    every 20 ms so that the time it waited is measured closely."""
    return _wait_for(page, expression, arg, timeout_ms, poll_ms=20)

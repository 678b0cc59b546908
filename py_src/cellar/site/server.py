"""A static file server for a built Cellar site, for local use and the browser tests.

Any static host serves the site; this one adds what a local preview needs: the right MIME types
for `.mjs` and `.wasm`, revalidation on every request (so a rebuilt wheel is never served stale),
and the cross-origin isolation headers that let the tab interrupt runaway Python code through a
SharedArrayBuffer (without them the page falls back to restarting its worker).
"""

from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from os import PathLike


class SiteRequestHandler(SimpleHTTPRequestHandler):
    extensions_map = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".wasm": "application/wasm",
        ".json": "application/json",
        ".whl": "application/zip",
        ".npy": "application/octet-stream",
    }

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        if self.server.verbose:  # type: ignore[attr-defined]
            super().log_message(format, *args)


def make_server(root: str | PathLike[str], host: str = "127.0.0.1", port: int = 8000,
                verbose: bool = False) -> ThreadingHTTPServer:
    """A server for the site in `root`; port 0 picks a free port (see `server.server_port`)."""
    handler = functools.partial(SiteRequestHandler, directory=str(root))
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    server.verbose = verbose  # type: ignore[attr-defined]
    return server


def serve_in_background(root: str | PathLike[str], host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """Start a server on a free port in a daemon thread; stop it with `server.shutdown()`."""
    server = make_server(root, host, 0)
    threading.Thread(target=server.serve_forever, name="cellar-site", daemon=True).start()
    return server

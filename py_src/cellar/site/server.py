"""A static file server for a built Cellar site, for local use and the browser tests.

Any static host serves the site; this one adds what a local preview needs: the right MIME types
for `.mjs` and `.wasm`, revalidation on every request (so a rebuilt wheel is never served stale),
and the cross-origin isolation headers that let the tab interrupt runaway Python code through a
SharedArrayBuffer (without them the page falls back to restarting its worker).

It also holds the site against hostile archive content: every response carries the site's
Content-Security-Policy (`CONTENT_SECURITY_POLICY`; each page repeats it in a `<meta>` for hosts
that send no headers) and `X-Content-Type-Options: nosniff`, and whatever lies under the
archive's folders (`DATA_FOLDERS`: notebooks, path map, blobs, fresh notebooks) is served as data
that no browser runs or shows as a page: JSON, plain text or `application/octet-stream`, as an
attachment, in a sandbox.

And it serves the site folder and nothing else: no file that a link in it resolves to outside it
(but see `serve_in_background`), no folder listing (the pages never fetch one), and no HTTP/0.9
(whose responses carry no headers, so no policy).
"""

from __future__ import annotations

import functools
import os
import posixpath
import threading
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from os import PathLike
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# The policy of every page. Scripts only from the site itself (no inline script, no eval) and
# WebAssembly compilation for Pyodide; fetches, images (besides data: and blob: URIs, which the
# viewer draws notebook images from) and styles only from the site; no forms, plugins, <base> or
# framing. Pages repeat it (without frame-ancestors, which a <meta> cannot carry) in
# <meta http-equiv="Content-Security-Policy">; tests/browser/test_hostile_content.py checks both.
CSP_DIRECTIVES = (
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'",
    "style-src 'self'",
    "connect-src 'self'",
    "img-src 'self' data: blob:",
    "worker-src 'self'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "object-src 'none'",
)
# The lesson workbench's editor (CodeMirror) writes its theme into a <style> element, which
# style-src 'self' blocks; that page shows no archive content, so it alone allows inline styles.
# The pages that show archive content (search, viewer) keep style-src 'self': notebook HTML can
# bring no style of its own (the sanitiser drops <style> and style attributes besides).
PAGE_DIRECTIVES = {"lesson.html": {"style-src": "style-src 'self' 'unsafe-inline'"}}


def content_security_policy(page: str = "index.html", meta: bool = False) -> str:
    """The policy of the site's `page` (a file name such as "viewer.html"), as the header sends it,
    or as its <meta http-equiv> carries it (`meta`: without frame-ancestors)."""
    changes = PAGE_DIRECTIVES.get(page, {})
    directives = [changes.get(directive.split()[0], directive) for directive in CSP_DIRECTIVES]
    return "; ".join(d for d in directives if not (meta and d.startswith("frame-ancestors")))


CONTENT_SECURITY_POLICY = content_security_policy()

# Folders of the site that hold archive content (and the build's re-render of it): data for the
# pages' scripts, never a page, whatever a file's name says.
DATA_FOLDERS = ("archive", "rendered")
DATA_TYPES = {".ipynb": "application/json", ".json": "application/json", ".txt": "text/plain; charset=utf-8"}
# A data file opened directly gets nothing to run and no origin.
DATA_POLICY = "default-src 'none'; sandbox; frame-ancestors 'none'"


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

    # A connection that sends nothing for this long is closed, so idle or half-sent requests do
    # not hold a thread each for ever.
    timeout = 60
    # An error found before the request line names its version (a malformed line) is sent as
    # HTTP/1.0, with the headers; the stdlib's default (HTTP/0.9) sends the error page alone.
    default_request_version = "HTTP/1.0"

    def handle(self) -> None:
        """A client that goes away mid-response is no server error: one line in the verbose log,
        not a traceback on the console for every such client."""
        try:
            super().handle()
        except ConnectionError as error:  # BrokenPipeError, ConnectionResetError, ...
            self.log_error("the client closed the connection (%s)", type(error).__name__)

    def parse_request(self) -> bool:
        """HTTP/0.9 is refused (a request line without a version, or naming 0.9): its response
        would be the body alone, without the policy or nosniff. No browser sends it."""
        if not super().parse_request():
            return False
        if self.request_version == "HTTP/0.9" or len(self.requestline.split()) == 2:
            self.request_version = "HTTP/1.0"  # so that the refusal itself carries the headers
            self.send_error(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, "HTTP/0.9 is not served")
            return False
        return True

    def is_data(self) -> bool:
        """Whether the request names a file under one of `DATA_FOLDERS`: judged on the file the
        request is served from (``translate_path``, which drops empty and dot segments), so that
        no spelling of the URL (``/%2Farchive/...``, ``/./archive``) reaches one as a page; by its
        folder's name casefolded, for file systems that ignore case. An error sent before the
        request line was read names no file."""
        if not hasattr(self, "path"):
            return False
        path = self.translate_path(self.path)
        try:  # the file's own place: a link elsewhere in the site to a notebook's HTML is that notebook's
            path = os.path.realpath(path)
        except ValueError:  # a NUL byte or a lone surrogate, which no file's path holds (send_head refuses)
            pass
        served = os.path.relpath(path, os.path.realpath(self.directory))
        return served.split(os.sep)[0].casefold() in DATA_FOLDERS

    def send_head(self) -> Any:
        """A path that no file can have is a bad request: a NUL byte, or a lone surrogate (as
        ``%ed%a0%80`` decodes to); ``open`` would raise on either; so is a raw backslash. A file
        (or a folder's index page) that resolves outside the site folder through a link, and
        anything but a file or a folder (a FIFO), is not found."""
        path = self.translate_path(self.path)
        try:
            os.fsencode(path)
        except UnicodeEncodeError:
            self.send_error(HTTPStatus.BAD_REQUEST, "the path is not valid UTF-8")
            return None
        if "\0" in path:
            self.send_error(HTTPStatus.BAD_REQUEST, "NUL byte in the path")
            return None
        # A browser sends `\` as `/`; raw, the stdlib's redirect of `/\host/folder` to
        # `/\host/folder/` is read by URL parsers as another host's page.
        if "\\" in self.path:
            self.send_error(HTTPStatus.BAD_REQUEST, "a backslash in the path")
            return None
        # (a server made other than by make_server, as a benchmark makes its own, follows links)
        if not getattr(self.server, "follow_links_out", True) and self.leads_out(path):
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        # only files and folders: opening a FIFO a hand put in the site blocked its thread for ever
        if os.path.exists(path) and not (os.path.isfile(path) or os.path.isdir(path)):
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        return super().send_head()

    def leads_out(self, path: str) -> bool:
        """Whether the file at `path` (translated), or the index page the stdlib would serve for
        a folder there, resolves to a place outside the site folder."""
        site = Path(os.path.realpath(self.directory))
        candidates = [path]
        if os.path.isdir(path):
            candidates += [os.path.join(path, index) for index in ("index.html", "index.htm")]
        return any(not Path(os.path.realpath(candidate)).is_relative_to(site) for candidate in candidates)

    def list_directory(self, path: str | PathLike[str]) -> None:
        """No folder listings: every page the site fetches is a file, and a listing would show
        what a hand put in the folder besides."""
        self.send_error(HTTPStatus.NOT_FOUND, "File not found")

    def guess_type(self, path: str | PathLike[str]) -> str:
        if self.is_data():
            return DATA_TYPES.get(posixpath.splitext(str(path))[1].lower(), "application/octet-stream")
        return super().guess_type(path)

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "same-origin")
        if self.is_data():
            self.send_header("Content-Security-Policy", DATA_POLICY)
            self.send_header("Content-Disposition", "attachment")
        else:
            page = posixpath.basename(urlsplit(getattr(self, "path", "/")).path) or "index.html"
            self.send_header("Content-Security-Policy", content_security_policy(page))
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        if self.server.verbose:  # type: ignore[attr-defined]
            super().log_message(format, *args)


def make_server(
    root: str | PathLike[str],
    host: str = "127.0.0.1",
    port: int = 8000,
    verbose: bool = False,
    follow_links_out: bool = False,
) -> ThreadingHTTPServer:
    """A server for the site in `root`; port 0 picks a free port (see `server.server_port`).
    With `follow_links_out`, links in `root` are followed wherever they lead."""
    handler = functools.partial(SiteRequestHandler, directory=str(root))
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    server.verbose = verbose  # type: ignore[attr-defined]
    server.follow_links_out = follow_links_out  # type: ignore[attr-defined]
    return server


def serve_in_background(root: str | PathLike[str], host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """Start a server on a free port in a daemon thread; stop it with `server.shutdown()`.

    For the browser tests and benchmarks, which serve sites assembled from links to the built
    site's files: it follows links out of `root` (`cellar serve` does not).
    """
    server = make_server(root, host, 0, follow_links_out=True)
    threading.Thread(target=server.serve_forever, name="cellar-site", daemon=True).start()
    return server

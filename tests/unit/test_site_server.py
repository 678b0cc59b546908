"""`cellar serve`: the built site over HTTP with the types and headers a Pyodide page needs."""

import http.client
import socket
import subprocess
import sys
import urllib.request
from urllib.parse import urlsplit

import pytest

from cellar.site.server import content_security_policy


def serve(site):
    """`cellar serve SITE` on a free port: yields (its URL, the process)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "cellar", "serve", str(site), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    assert line.startswith("Serving ")
    yield line.split(" at ")[1].split()[0], process
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def served(site):
    for url, _ in serve(site):
        yield url


@pytest.fixture
def hand_made(tmp_path):
    """A site as a hand might make it: a page in the archive folder."""
    site = tmp_path / "site"
    (site / "archive").mkdir(parents=True)
    (site / "index.html").write_text("<!doctype html><title>a site</title>")
    (site / "archive" / "served-anyway.html").write_text("<script>document.title = 'ran'</script>")
    yield from serve(site)


def get(url, path):
    """GET `path` exactly as written (no normalising, no quoting): (status, headers)."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=30)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status, response.headers
    finally:
        connection.close()


def fetch(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.headers, response.read()


def test_serves_the_page_and_the_runtime_with_their_types(served):
    headers, body = fetch(served)
    assert b'id="revision-input"' in body
    headers, body = fetch(served + "pyodide/pyodide.asm.wasm")
    assert headers["Content-Type"] == "application/wasm"
    assert body[:4] == b"\0asm"
    headers, _ = fetch(served + "pyodide/pyodide.mjs")
    assert headers["Content-Type"] == "text/javascript"


def test_sends_cross_origin_isolation_and_revalidation_headers(served):
    headers, _ = fetch(served + "build.json")
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert headers["Cache-Control"] == "no-cache"


def test_refuses_a_directory_without_a_site(tmp_path):
    result = subprocess.run([sys.executable, "-m", "cellar", "serve", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "no index.html" in result.stderr and str(tmp_path) in result.stderr


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_port_that_is_none_is_named(site, port):
    result = subprocess.run(
        [sys.executable, "-m", "cellar", "serve", str(site), "--port", port], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert f"argument --port: a port number from 0 to 65535, not '{port}'" in result.stderr


def test_every_response_carries_the_policy_and_nosniff(served):
    for page in ("", "viewer.html", "lesson.html", "build.json", "pyodide/pyodide.mjs"):
        headers, _ = fetch(served + page)
        assert headers["Content-Security-Policy"] == content_security_policy(page or "index.html"), page
        assert headers["X-Content-Type-Options"] == "nosniff", page
    assert "'unsafe-inline'" not in content_security_policy("viewer.html")
    assert "frame-ancestors 'none'" in content_security_policy("index.html")
    assert "frame-ancestors" not in content_security_policy("index.html", meta=True)


def test_archive_files_are_served_as_data(served, site):
    notebook = next(path for path in (site / "archive").rglob("*.ipynb"))
    headers, _ = fetch(served + "archive/" + urllib.request.pathname2url(str(notebook.relative_to(site / "archive"))))
    assert headers["Content-Type"] == "application/json"
    assert headers["Content-Disposition"] == "attachment"
    assert "sandbox" in headers["Content-Security-Policy"]
    blob = next(path for path in (site / "archive/blobs").rglob("*") if path.is_file())
    headers, _ = fetch(served + "archive/" + blob.relative_to(site / "archive").as_posix())
    assert headers["Content-Type"] == "application/octet-stream"


@pytest.mark.parametrize(
    "path",
    [
        "/archive/served-anyway.html",
        "/%2Farchive/served-anyway.html",
        "/%2farchive/served-anyway.html",
        "//archive/served-anyway.html",
        "/./archive/served-anyway.html",
        "/index.html/../archive/served-anyway.html",
    ],
)
def test_no_spelling_of_the_url_serves_an_archive_file_as_a_page(hand_made, path):
    url, _ = hand_made
    status, headers = get(url, path)
    assert status == 200
    assert headers["Content-Type"] == "application/octet-stream"
    assert headers["Content-Disposition"] == "attachment"
    assert "sandbox" in headers["Content-Security-Policy"]


def test_malformed_requests_are_answered_not_dropped(hand_made):
    url, process = hand_made
    assert get(url, "/index.html%00")[0] == 400
    address = urlsplit(url)
    for request in (b"GET / HTTP/9.9\r\n\r\n", b"GARBAGE\r\n\r\n", b"GET /a b c d\r\n\r\n"):
        with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
            connection.sendall(request)
            reply = b"".join(iter(lambda: connection.recv(4096), b""))
        # (each answered with a status line and the headers, the policy among them: never as
        # HTTP/0.9, the error page alone)
        assert b"Error code: 400" in reply or b"Error code: 505" in reply, (request, reply)
        assert reply.startswith(b"HTTP/1.") and b"Content-Security-Policy" in reply, (request, reply)
    assert get(url, "/")[0] == 200  # and the server goes on
    process.terminate()
    assert "Traceback" not in process.communicate(timeout=10)[1]

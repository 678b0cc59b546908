"""`cellar serve` against hostile requests and hand-placed links: it serves the site folder's own
files, answers every request, and keeps its console free of tracebacks."""

import os
import socket
import struct
import subprocess
import sys
import time
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest

from cellar.site.server import serve_in_background

SECRET = b"API_TOKEN=not-for-the-site"


@pytest.fixture
def hand_made(tmp_path):
    """A site with links a hand put in it: out of the folder (to a file, to a folder, under
    archive/, as a folder's index page) and one within it; and a large file to abandon."""
    site, outside = tmp_path / "site", tmp_path / "outside"
    for folder in (site / "archive", site / "sub", site / "linked-index", outside):
        folder.mkdir(parents=True)
    (outside / "secret.txt").write_bytes(SECRET)
    (site / "index.html").write_text("<!doctype html><title>a site</title>")
    (site / "sub" / "index.html").write_text("<!doctype html><title>sub</title>")
    (site / "large.bin").write_bytes(b"x" * (32 << 20))  # more than any socket buffer holds
    (site / "link.txt").symlink_to(outside / "secret.txt")
    (site / "linkdir").symlink_to(outside, target_is_directory=True)
    (site / "archive" / "host.ipynb").symlink_to(outside / "secret.txt")
    (site / "linked-index" / "index.html").symlink_to(outside / "secret.txt")
    (site / "inside.txt").symlink_to("index.html")
    (site / "archive" / "page.html").write_text("<!doctype html><title>a notebook's page</title>")
    (site / "page-link.html").symlink_to("archive/page.html")
    os.mkfifo(site / "fifo.html")
    return site


@contextmanager
def serving(site):
    """`cellar serve SITE` on a free port: its URL, then (on leaving) the check that its
    console shows no traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", "cellar", "serve", str(site), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("Serving ")
        yield line.split(" at ")[1].split()[0]
        time.sleep(0.5)  # (a request the server is still handling gets to fail)
    finally:
        process.terminate()
        _, err = process.communicate(timeout=10)
    assert "Traceback" not in err, err


def raw(url, request):
    """The server's whole reply to `request` (bytes, sent as they are): (status line, reply)."""
    address = urlsplit(url)
    with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
        connection.sendall(request)
        reply = b"".join(iter(lambda: connection.recv(65536), b""))
    return reply.split(b"\r\n", 1)[0], reply


def status(url, path, method="GET"):
    return raw(url, f"{method} {path} HTTP/1.0\r\n\r\n".encode("latin-1"))[0].split()[1]


def test_links_out_of_the_site_folder_are_not_followed(hand_made):
    with serving(hand_made) as url:
        for path in ("/link.txt", "/linkdir/secret.txt", "/linkdir/", "/linkdir", "/archive/host.ipynb"):
            for method in ("GET", "HEAD"):
                line, reply = raw(url, f"{method} {path} HTTP/1.0\r\n\r\n".encode())
                assert line.split()[1] == b"404", (method, path, line)
                assert SECRET not in reply
        assert status(url, "/linked-index/") == b"404"  # a folder's index page that leads out
        assert status(url, "/inside.txt") == b"200"  # a link within the folder is followed
        assert status(url, "/sub/") == b"200"


def test_serve_in_background_follows_links_out_for_the_tests_sites_of_links(hand_made):
    server = serve_in_background(hand_made)
    try:
        line, reply = raw(f"http://127.0.0.1:{server.server_port}/", b"GET /link.txt HTTP/1.0\r\n\r\n")
        assert line.split()[1] == b"200" and reply.endswith(SECRET)
    finally:
        server.shutdown()
        server.server_close()


def test_folders_are_not_listed(hand_made):
    with serving(hand_made) as url:
        assert status(url, "/archive/") == b"404"
        assert status(url, "/archive") == b"301"  # (the stdlib's redirect to /archive/, as before)
        assert status(url, "/") == b"200"  # a folder with an index page is served it
        assert status(url, "/sub/") == b"200"


@pytest.mark.parametrize("path", ["/a%ed%a0%80b", "/%ed%a0%80/", "/archive/%ed%b0%80.ipynb"])
def test_a_lone_surrogate_in_the_path_is_a_bad_request(hand_made, path):
    with serving(hand_made) as url:
        for method in ("GET", "HEAD"):
            line, reply = raw(url, f"{method} {path} HTTP/1.0\r\n\r\n".encode())
            assert line.split()[1] == b"400", (method, line)
            assert b"X-Content-Type-Options: nosniff" in reply
        assert status(url, "/") == b"200"  # and the server goes on


def test_clients_that_leave_mid_response_leave_no_traceback(hand_made):
    with serving(hand_made) as url:
        address = urlsplit(url)
        for _ in range(3):
            connection = socket.create_connection((address.hostname, address.port), timeout=30)
            connection.sendall(b"GET /large.bin HTTP/1.0\r\n\r\n")
            assert connection.recv(4096).startswith(b"HTTP/1.0 200")
            # close with a reset (linger 0): the server's next write fails at once
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            connection.close()
        time.sleep(0.5)
        assert status(url, "/") == b"200"


@pytest.mark.parametrize("request_line", [b"GET /index.html HTTP/0.9", b"GET /index.html"])
def test_http_0_9_is_refused_with_headers(hand_made, request_line):
    with serving(hand_made) as url:
        line, reply = raw(url, request_line + b"\r\n\r\n")
        assert line.startswith(b"HTTP/1.0 505"), reply
        assert b"X-Content-Type-Options: nosniff" in reply
        assert b"Content-Security-Policy: " in reply
        assert b"<title>a site</title>" not in reply


def test_a_malformed_request_line_is_answered_with_headers(hand_made):
    with serving(hand_made) as url:
        line, reply = raw(url, b"GET /a b c d\r\n\r\n")
        assert line.startswith(b"HTTP/1.0 400") and b"X-Content-Type-Options: nosniff" in reply


def test_a_link_to_archive_content_is_served_as_data_like_the_file_it_leads_to(hand_made):
    """What is served is judged by the file it comes from: an archive page reached through a link
    elsewhere in the site is an attachment, in the data policy's sandbox, never a page."""
    with serving(hand_made) as url:
        for path in ("/archive/page.html", "/page-link.html"):
            line, reply = raw(url, f"GET {path} HTTP/1.0\r\n\r\n".encode())
            assert line.split()[1] == b"200" and b"Content-Disposition: attachment" in reply, path
            assert b"Content-type: text/html" not in reply


def test_a_fifo_in_the_site_is_not_found_and_holds_no_thread(hand_made):
    with serving(hand_made) as url:
        assert status(url, "/fifo.html") == b"404"
        assert status(url, "/") == b"200"


def test_a_raw_backslash_is_a_bad_request_not_a_redirect_to_another_host(hand_made):
    with serving(hand_made) as url:
        line, reply = raw(url, b"GET /\\evil.example/sub HTTP/1.0\r\n\r\n")
        assert line.split()[1] == b"400" and b"Location" not in reply

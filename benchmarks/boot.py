"""Boot timeline of the Cellar page in headless Chromium, cold and warm, against a bare page.

    .venv/bin/python benchmarks/boot.py [--rounds 3]

The reference is a bare page that only loads Pyodide and numpy in a worker, measured in the
same run, so the ratio says what Cellar adds on top of the runtime itself. Cold: a fresh browser
context (empty cache); warm: a reload in the same context. Needs a built site (build.py site).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from cellar.site.server import serve_in_background
from chromium import CHROMIUM_ARGS, bare_site, stock_runtime

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("runtime", "packages", "cellar", "ready")


def cellar_boot(page, url: str) -> dict[str, float]:
    """ms at which each stage started (worker clock), plus ready as seen from navigation start."""
    page.goto(url)
    ready = page.evaluate("() => window.cellar.ready")
    marks = {entry["stage"]: entry["t"] for entry in ready["timeline"]}
    marks["page"] = page.evaluate("() => performance.now()")
    return marks


def bare_boot(page, url: str) -> dict[str, float]:
    page.goto(url)
    marks = page.evaluate("() => window.bare")
    marks["page"] = page.evaluate("() => performance.now()")
    return marks


def measure(browser, url: str, boot) -> tuple[dict, dict]:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(180_000)
    cold = boot(page, url)
    warm = boot(page, url)
    context.close()
    return cold, warm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    site = ROOT / "site"
    if not (site / "build.json").exists():
        print("build the site first: python3 build.py site", file=sys.stderr)
        return 1
    with bare_site(stock_runtime()) as bare_root:
        cellar_server, bare_server = serve_in_background(site), serve_in_background(bare_root)
        cellar_url = f"http://127.0.0.1:{cellar_server.server_port}/"
        bare_url = f"http://127.0.0.1:{bare_server.server_port}/bare.html"
        runs = {"cellar cold": [], "cellar warm": [], "bare cold": [], "bare warm": []}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
            for _ in range(args.rounds):  # interleaved, so drift on the machine hits both alike
                cold, warm = measure(browser, cellar_url, cellar_boot)
                runs["cellar cold"].append(cold)
                runs["cellar warm"].append(warm)
                cold, warm = measure(browser, bare_url, bare_boot)
                runs["bare cold"].append(cold)
                runs["bare warm"].append(warm)
            browser.close()
        cellar_server.shutdown()
        bare_server.shutdown()

    def median(name: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[name])

    print(f"Boot timeline, median of {args.rounds} rounds (s since the worker started)")
    print(f"{'':12} {'core':>7} {'numpy':>7} {'cellar':>7} {'ready':>7} {'page':>7}")
    for temperature in ("cold", "warm"):
        name = f"cellar {temperature}"
        core = median(name, "packages") - median(name, "runtime")
        numpy = median(name, "cellar") - median(name, "packages")
        install = median(name, "ready") - median(name, "cellar")
        print(
            f"{name:12} {core / 1000:7.2f} {numpy / 1000:7.2f} {install / 1000:7.2f} "
            f"{median(name, 'ready') / 1000:7.2f} {median(name, 'page') / 1000:7.2f}"
        )
        bare = f"bare {temperature}"
        print(
            f"{bare:12} {median(bare, 'runtime') / 1000:7.2f} "
            f"{(median(bare, 'ready') - median(bare, 'runtime')) / 1000:7.2f} {'':>7} "
            f"{median(bare, 'ready') / 1000:7.2f} {median(bare, 'page') / 1000:7.2f}"
        )
    for temperature in ("cold", "warm"):
        ratio = median(f"cellar {temperature}", "page") / median(f"bare {temperature}", "page")
        print(f"ready, page clock, {temperature}: cellar / bare = {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

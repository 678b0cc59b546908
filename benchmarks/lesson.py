"""Lesson page timings in headless Chromium, against the bare Pyodide+numpy boot.

    .venv/bin/python benchmarks/lesson.py [--rounds 3]

For lesson 1 in a fresh browser context (cold cache) and after a reload (warm):
- editor: navigation start to a usable editor (prose, starter and CodeMirror drawn; no Python);
- python: navigation start to Python ready (Run and Check answer from here on);
- check: one Check of the sample solution's word_chunks, click to verdict (Python warm);
and, measured in the same run, the bare page (benchmarks/pages/bare.html) that only boots Pyodide
and numpy in a worker. Ratios: each figure / bare boot. Needs a built site (build.py site).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from cellar.site.server import serve_in_background
from chromium import CHROMIUM_ARGS, bare_site, stock_runtime, wait_for

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "lessons/01-passages/solution.py").read_text(encoding="utf-8")


def lesson_timings(page, url: str) -> dict[str, float]:
    page.goto(url)
    wait_for(page, "performance.getEntriesByName('cellar-editor-ready').length")
    editor = page.evaluate("() => performance.getEntriesByName('cellar-editor-ready')[0].startTime")
    page.evaluate("() => window.cellar.ready")
    python = page.evaluate("() => performance.now()")
    page.evaluate("code => window.workbench.editor.setText(code)", SOLUTION)
    item = page.locator("#checkpoint-word_chunks")
    item.locator(".verdict").evaluate("node => node.textContent = ''")
    started = time.perf_counter()
    item.locator("button.check").click()
    wait_for(
        page, "() => /Passed|Geslaagd/.test(document.querySelector('#checkpoint-word_chunks .verdict').textContent)"
    )
    check = (time.perf_counter() - started) * 1000
    return {"editor": editor, "python": python, "check": check}


def bare_timing(page, url: str) -> float:
    page.goto(url)
    page.evaluate("() => window.bare")
    return page.evaluate("() => performance.now()")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    site = ROOT / "site"
    if not (site / "lesson.html").exists():
        print("build the site first: python3 build.py site", file=sys.stderr)
        return 1
    runs: dict[str, list] = {"lesson cold": [], "lesson warm": [], "bare cold": [], "bare warm": []}
    with bare_site(stock_runtime()) as bare_root:
        lesson_server, bare_server = serve_in_background(site), serve_in_background(bare_root)
        lesson_url = f"http://127.0.0.1:{lesson_server.server_port}/lesson.html?lesson=01-passages"
        bare_url = f"http://127.0.0.1:{bare_server.server_port}/bare.html"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
            for _ in range(args.rounds):  # interleaved, so drift on the machine hits both alike
                for name, measure, url in (("lesson", lesson_timings, lesson_url), ("bare", bare_timing, bare_url)):
                    context = browser.new_context(locale="en-GB")
                    page = context.new_page()
                    page.set_default_timeout(180_000)
                    runs[f"{name} cold"].append(measure(page, url))
                    runs[f"{name} warm"].append(measure(page, url))
                    context.close()
            browser.close()
        lesson_server.shutdown()
        bare_server.shutdown()

    print(f"Lesson 1, median of {args.rounds} rounds (s; ratio = figure / bare Pyodide+numpy boot)")
    for temperature in ("cold", "warm"):
        bare = statistics.median(runs[f"bare {temperature}"])
        print(f"{temperature}: bare boot {bare / 1000:.2f} s")
        for key, label in (
            ("editor", "open -> usable editor"),
            ("python", "open -> Python ready"),
            ("check", "Check -> verdict"),
        ):
            value = statistics.median(run[key] for run in runs[f"lesson {temperature}"])
            print(f"  {label:24} {value / 1000:6.2f} s  {value / bare:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The viewer's Re-render button in headless Chromium: the notebook runs in the tab with the code
`cellar rerender` runs under Node (the fresh notebook is the same to the byte), its inputs fetched
from the site; saved and fresh outputs side by side with a badge per cell; pandas and matplotlib
load only then; a runaway cell is stopped at its time limit while the page stays usable."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import expect
from tests.browser.conftest import BOOT_TIMEOUT_MS, wait_for

from cellar.cli import main
from cellar.rerender.pyodide_host import PyodideHost

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "archive"
BALLAST = "2017/17-042 Ballast/ballast_tanks_17042.ipynb"
FUEL = "2019/19-063 Fuel/fuel_consumption_19063.ipynb"
DIEPGANG = "2022/22-031 Diepgang/diepgang_meting_22031.ipynb"
RERENDER_TIMEOUT_MS = 300_000


@pytest.fixture(scope="module")
def node_fuel(site, tmp_path_factory) -> tuple[Path, dict]:
    """`cellar rerender` under Node on the demo archive cut down to the fuel notebook (its inputs,
    path map and requirements as they are): the fresh notebook and the report entry."""
    archive = tmp_path_factory.mktemp("archive")
    for name in ("pathmap.json", "requirements.txt", "blobs"):
        source = DEMO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, archive / name)
    (archive / FUEL).parent.mkdir(parents=True)
    shutil.copy(DEMO / FUEL, archive / FUEL)
    out = tmp_path_factory.mktemp("fresh")
    assert main(["rerender", str(archive), "--out", str(out), "--site", str(site)]) == 0
    report = json.loads((out / "report.json").read_text())
    return out / FUEL, report["notebooks"][0]


def open_viewer(page, site_url: str, path: str) -> list[str]:
    """Open the viewer on `path`; the URLs the page fetches from now on (the list keeps growing)."""
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{site_url}viewer.html?path={quote(path)}")
    wait_for(page, "document.body.dataset.rendered === 'true'", timeout=BOOT_TIMEOUT_MS)
    return requests


def rerender(page) -> str:
    page.get_by_role("button", name="Re-render in this tab").click()
    wait_for(page, "document.body.dataset.rerendered", timeout=RERENDER_TIMEOUT_MS)
    return page.evaluate("document.body.dataset.rerendered")


def badges(page) -> dict[int, str]:
    cells = page.evaluate("[...document.querySelectorAll('.cell[data-badge]')].map(c => [c.id, c.dataset.badge])")
    return {int(cell.removeprefix("cell-")): badge for cell, badge in cells}


def in_tab(page, path: str, texts: dict, file_url: str | None = None) -> dict:
    """cellar.site.bridge.rerender_notebook in a fresh re-render worker, as the button runs it
    (viewer.js rerenderInWorker: the page fetches the files and hands their bytes over)."""
    return page.evaluate(
        """async ([path, texts, fileUrl]) => {
            const build = await (await fetch("build.json")).json();
            const url = fileUrl ?? build.archive + path.split("/").map(encodeURIComponent).join("/");
            return window.rerenderInWorker(path, url, texts);
        }""",
        [path, texts, file_url],
    )


def test_the_fuel_notebook_drifts_in_the_tab_exactly_as_under_node(page, site, site_url, screenshot, node_fuel):
    node_file, node_entry = node_fuel
    requests = open_viewer(page, site_url, FUEL)
    wait_for(page, "document.body.dataset.built", timeout=BOOT_TIMEOUT_MS)
    assert not [url for url in requests if "pandas" in url or "matplotlib" in url], (
        "pandas and matplotlib load only for a re-render in the tab"
    )

    assert rerender(page) == "drifted"
    assert [url for url in requests if "/pyodide/pandas" in url] and [
        url for url in requests if "/pyodide/matplotlib" in url
    ]
    status = page.locator("#rerender-status")
    expect(status.locator(".status")).to_have_text("drifted")
    # The cells Node's comparison lists as changed, and only those, are marked drifted.
    assert node_entry["status"] == "drifted"
    changed = {cell["cell"] for cell in node_entry["cells"]}
    assert {cell for cell, badge in badges(page).items() if badge == "drifted"} == changed
    assert set(badges(page).values()) <= {"same", "drifted"}
    # The corrected input: SFOC at 75 % load was 178.2 g/kWh when saved, 171.2 now.
    sfoc = page.locator("#cell-1")
    expect(sfoc.locator(".outputs.saved")).to_contain_text("178.2")
    expect(sfoc.locator(".outputs.fresh")).to_contain_text("171.2")
    expect(sfoc.locator(".outputs.fresh")).not_to_contain_text("178.2")
    expect(page.locator("#cell-2 .outputs.fresh img")).to_be_visible()
    expect(page.locator("#cell-1 .cell-label .badge")).to_have_text("drifted")
    sfoc.locator("details.diff summary").click()
    expect(sfoc.locator("details.diff pre")).to_contain_text("178.2")
    expect(sfoc.locator("details.diff pre")).to_contain_text("171.2")
    screenshot("viewer-rerender-fuel")

    # The same code under Node and in Chromium: the fresh notebook is the same to the byte, and
    # strings hash alike (so sets iterate in the same order).
    with page.expect_download() as download:  # (the page's policy lets it fetch nothing but the site)
        page.locator("#rerender-download").click()
    assert Path(download.value.path()).read_text(encoding="utf-8") == node_file.read_text(encoding="utf-8")
    with PyodideHost(site / "pyodide", packages=[]) as host:
        in_node = host.run("hash('cellar')")
    assert (
        page.evaluate("cellar.call('cellar.site.bridge', 'run_code', 'print(hash(\"cellar\"))')")["stdout"]
        == f"{in_node}\n"
    )

    # A second run, in a fresh worker, re-renders the ballast notebook clean.
    texts = {
        name: (DEMO / file).read_text()
        for name, file in (("pathmap", "pathmap.json"), ("requirements", "requirements.txt"))
    }
    ballast = in_tab(page, BALLAST, {**texts, "settings": None})
    assert ballast["status"] == "clean" and ballast["reason"] is None
    assert {cell["badge"] for cell in ballast["cells"]} == {"same"}


def test_the_viewer_shows_the_rerender_made_when_the_site_was_built(page, site, site_url, screenshot):
    report = {
        entry["path"]: entry for entry in json.loads((site / "rendered" / "report.json").read_text())["notebooks"]
    }
    # Drifted: the build's fresh outputs (which the index holds) beside the saved ones, at once.
    open_viewer(page, site_url, FUEL)
    wait_for(page, "document.body.dataset.built", timeout=BOOT_TIMEOUT_MS)
    assert page.evaluate("document.body.dataset.built") == report[FUEL]["status"] == "drifted"
    expect(page.locator("#built-status .status")).to_have_text("drifted")
    assert {cell for cell, badge in badges(page).items() if badge == "drifted"} == {
        cell["cell"] for cell in report[FUEL]["cells"]
    }
    expect(page.locator("#cell-5 .outputs.saved")).to_contain_text("797 t")
    expect(page.locator("#cell-5 .outputs.fresh")).to_contain_text("772 t")
    expect(page.locator("#rerender-status")).to_be_empty()  # nothing ran in this tab
    screenshot("viewer-built-fuel")
    # Clean: the status line only; stale: the reason, and the cell that failed at build time.
    open_viewer(page, site_url, BALLAST)
    wait_for(page, "document.body.dataset.built", timeout=BOOT_TIMEOUT_MS)
    expect(page.locator("#built-status .status")).to_have_text("clean")
    expect(page.locator(".compare")).to_have_count(0)
    open_viewer(page, site_url, DIEPGANG)
    wait_for(page, "document.body.dataset.built", timeout=BOOT_TIMEOUT_MS)
    expect(page.locator("#built-status .reason")).to_contain_text("diepgangen_22031.csv")
    assert "failed" in badges(page).values()


def test_a_runaway_cell_is_stopped_at_its_time_limit_and_the_page_stays_usable(page, site_url):
    open_viewer(page, site_url, BALLAST)
    assert page.evaluate("self.crossOriginIsolated"), "the interrupt buffer needs cross-origin isolation"
    page.evaluate("window.restarts = []; cellar.onRestart((r) => restarts.push(r.reason)); 0")
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}
            for source in ("x = 0\nwhile True:\n    x += 1", "print('after')")
        ],
    }
    # Served at a URL of the site (the page's policy lets it fetch nothing else), by the browser.
    url = f"{site_url}runaway-test.ipynb"
    page.context.route(url, lambda route: route.fulfill(content_type="application/json", body=json.dumps(notebook)))
    page.evaluate(
        """(url) => { window.run = window.rerenderInWorker("runaway.ipynb", url,
        { pathmap: null, requirements: null, settings: '{"cell_timeout": 3}' }); }""",
        url,
    )
    # Python runs in a worker: the page answers at once all the while (boot, imports, the spin).
    page.evaluate("window.run.finally(() => { window.done = true; }); 0")
    slowest = 0.0
    while not page.evaluate("window.done === true"):
        started = time.monotonic()
        assert page.evaluate("document.title").endswith("Cellar")
        slowest = max(slowest, time.monotonic() - started)
        time.sleep(0.2)
    assert slowest < 1.0
    result = page.evaluate("window.run")
    assert result["status"] == "stale"
    assert result["reason"] == "cell 0 exceeded the cell's time limit of 3 s"
    assert [cell["badge"] for cell in result["cells"]] == ["failed", "not run"]
    assert result["cells"][0]["outputs"][-1]["ename"] == "KeyboardInterrupt"
    # Stopped inside Python (the KeyboardInterrupt above), in the re-render worker: the page's
    # own worker was never restarted and still answers.
    assert page.evaluate("window.restarts") == []
    assert len(page.evaluate("cellar.revision('after')")) == 64


def test_the_diepgang_notebook_is_stale_and_names_its_missing_input(page, site_url, screenshot):
    open_viewer(page, site_url, DIEPGANG)
    assert rerender(page) == "stale"
    reason = page.locator("#rerender-status .reason")
    expect(reason).to_contain_text("diepgangen_22031.csv")
    expect(reason).to_contain_text("path map")
    marked = badges(page)
    assert "failed" in marked.values() and set(marked.values()) <= {"failed", "same"}
    first_failed = min(cell for cell, badge in marked.items() if badge == "failed")
    expect(page.locator(f"#cell-{first_failed} .outputs.fresh .traceback")).to_contain_text("diepgangen_22031.csv")
    screenshot("viewer-rerender-diepgang")

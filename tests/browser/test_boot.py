"""The home page boots Python in a worker, shows progress, the versions and live revisions."""

from playwright.sync_api import expect
from tests.browser.conftest import wait_for

import cellar
from cellar.ingest.provenance import revision


def test_page_shows_progress_then_python_and_cellar_versions(page, site_url, screenshot):
    page.goto(site_url)
    expect(page.locator("#stages li").first).to_contain_text("Loading the Python runtime")
    ready = page.evaluate("() => window.cellar.ready")
    assert ready["python"].startswith("3.12.")
    assert ready["cellar"] == cellar.__version__
    assert [entry["stage"] for entry in ready["timeline"]] == ["runtime", "packages", "ready"]
    expect(page.locator("#python-version")).to_have_text(ready["python"])
    expect(page.locator("#cellar-version")).to_have_text(cellar.__version__)
    screenshot("boot-ready")


def test_typed_text_gets_its_revision_from_python(page, site_url, screenshot):
    page.goto(site_url)
    wait_for(page, "document.body.dataset.ready === 'true'")
    text = "Ballastwater achterpiek: 1284.6 m³\n"
    page.fill("#revision-input", text)
    expect(page.locator("#revision-output")).to_have_text(revision(text))
    screenshot("boot-revision")


def test_the_api_reports_python_errors_with_their_type(page, site_url):
    page.goto(site_url)
    error = page.evaluate("""() => window.cellar.revision('\\ud800').then(
        () => null, (error) => ({type: error.pythonType, message: error.message}))""")
    assert error["type"] == "ValueError"
    assert "UTF-8" in error["message"]


def test_python_runs_in_a_worker_and_the_main_thread_keeps_drawing(page, site_url):
    page.goto(site_url)
    # The longest gap between animation frames while Python boots: a main thread blocked by
    # Python would stall them for seconds.
    longest_gap = page.evaluate("""async () => {
        let last = performance.now(), longest = 0, running = true;
        const tick = (now) => { longest = Math.max(longest, now - last); last = now;
                                if (running) requestAnimationFrame(tick); };
        requestAnimationFrame(tick);
        await window.cellar.ready;
        running = false;
        return longest;
    }""")
    assert longest_gap < 2000
    # The interpreter (pyodide.asm.*) is fetched by the worker, never by the page itself.
    page_resources = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
    assert not [name for name in page_resources if "pyodide.asm" in name]

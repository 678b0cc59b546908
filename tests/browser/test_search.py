"""The search page and the viewer in headless Chromium: Python in a worker searches the demo
shard, answers as CPython does, cites cells that the viewer opens, refuses what the archive does
not hold, filters, speaks Dutch, and keeps working with the server gone."""

from __future__ import annotations

import bisect
import json
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect
from tests.browser.conftest import (
    BOOT_TIMEOUT_MS,
    SCREENSHOTS,
    answer_contract,
    as_the_page_searches,
    asked,
    expected_fetches,
    flip_a_byte,
    service_worker_ready,
    shard_file_name,
    site_with_own_shard,
    wait_for,
)

from cellar.retrieval.embedding import default_model
from cellar.retrieval.search import Filters, Searcher
from cellar.retrieval.shard import open_shard
from cellar.site.server import serve_in_background

ROOT = Path(__file__).resolve().parents[2]
BALLAST = "ballast tank volumes for the 2017 vessel"
BALLAST_NOTEBOOK = "2017/17-042 Ballast/ballast_tanks_17042.ipynb"
OUT_OF_SCOPE = [
    json.loads(line)["query"]
    for line in (ROOT / "demo/gold.jsonl").read_text().splitlines()
    if line.strip() and json.loads(line)["kind"] == "out_of_scope"
]


def answered(page, query: str) -> None:
    wait_for(page, "q => document.body.dataset.answered === q", arg=query, timeout=BOOT_TIMEOUT_MS)


def first_paths(page) -> list[str]:
    return page.locator("#notebooks .notebook .path").all_inner_texts()


@pytest.fixture(scope="module")
def cpython_searcher(site) -> Searcher:
    build = json.loads((site / "build.json").read_text())
    model = default_model()  # the tab's model: the one in the cellar wheel
    return Searcher(open_shard(site / build["shard"], model), model)


def test_a_question_typed_while_python_boots_finds_the_table_and_its_citation_opens_the_viewer(
    page, site_url, screenshot
):
    page.goto(site_url)
    # Typed at once, long before Python is ready: it runs as soon as the index is open.
    page.get_by_label("Search the archive").fill(BALLAST)
    expect(page.locator("#results-count")).to_contain_text("as soon as Python is ready")
    expect(page.locator("#boot-progress")).to_be_visible()
    answered(page, BALLAST)
    expect(page.locator("#results-count")).to_contain_text("3 notebooks")
    assert first_paths(page)[0] == BALLAST_NOTEBOOK
    best = page.locator("#notebooks > li").first
    expect(best.locator(".status")).to_have_text("clean")
    expect(best.locator(".hit mark").first).to_be_visible()
    table_hit = best.locator(".hit.kind-table").first
    expect(table_hit.locator(".badge")).to_have_text("table")
    # The answer cell first (answer_cell.order_hits): the per-group volumes, under the heading
    # "Ballast volume per tank group" (tests/unit/test_search.py, the per-group table test).
    expect(table_hit.locator("table th").first).to_contain_text("group")
    expect(table_hit.locator("table")).to_contain_text("1284.6")
    expect(table_hit.locator("table")).to_contain_text("412.1")
    neighbourhood = best.locator("details.neighbourhood")
    neighbourhood.locator("summary").click()
    expect(neighbourhood.locator("li").first).to_be_visible()
    screenshot("search-ballast")

    link = table_hit.locator("a.cite")
    query = parse_qs(urlparse(link.get_attribute("href")).query)
    assert query["path"] == [BALLAST_NOTEBOOK]
    cell = int(query["cell"][0])
    link.click()
    wait_for(page, "document.body.dataset.rendered === 'true'", timeout=BOOT_TIMEOUT_MS)
    cited = page.locator(f"#cell-{cell}")
    expect(cited).to_have_class("cell cell-code cited")
    expect(cited).to_be_focused()
    expect(cited).to_be_in_viewport()
    expect(cited.locator(".output.cited table")).to_contain_text("2106.3")
    expect(page.locator(".cited")).to_have_count(2)  # the cell and its cited output, nothing else
    expect(page.locator("#revision-check")).to_have_text("This is the revision the search result cited.")
    expect(page.locator("#revision-full")).to_have_text(query["rev"][0])
    expect(page.locator("#facts")).to_contain_text("17-042")
    # Markdown is rendered and code highlighted by the bundled libraries, not shown as source.
    expect(page.locator(".cell-markdown h1").first).to_be_visible()
    expect(page.locator(".cell-code .hljs-string").first).to_be_visible()
    screenshot("viewer-cited-cell")


def test_the_page_answers_as_cpython_refuses_filters_and_speaks_dutch(page, site_url, screenshot, cpython_searcher):
    page.goto(site_url)
    wait_for(page, "document.body.dataset.searchReady === 'true'", timeout=BOOT_TIMEOUT_MS)

    # The API answers what CPython answers over the same shard (timings and page extras aside).
    contract = answer_contract
    in_page = page.evaluate("q => window.cellar.search(q, {k: 3})", BALLAST)
    assert contract(in_page) == contract(as_the_page_searches(cpython_searcher, BALLAST, k=3))
    filtered = page.evaluate("q => window.cellar.search(q, {kinds: ['table'], year_to: 2020})", BALLAST)
    assert contract(filtered) == contract(
        as_the_page_searches(cpython_searcher, BALLAST, k=3, filters=Filters(kinds=("table",), year_to=2020))
    )
    # Only tables asked for: the ballast notebook still answers, with its tables.
    assert not filtered["refused"] and filtered["notebooks"][0]["path"] == BALLAST_NOTEBOOK
    assert {hit["kind"] for nb in filtered["notebooks"] for hit in nb["hits"]} == {"table"}

    # Out of scope: refused with a reason, and the closest thing found is shown.
    box = page.get_by_label("Search the archive")
    box.fill("what is the salary of the CEO")
    box.press("Enter")
    answered(page, "what is the salary of the CEO")
    expect(page.locator("#results-count")).to_have_text("No answer for “what is the salary of the CEO”.")
    expect(page.locator("#refusal .reason")).to_contain_text("no cell or output mentions salary, CEO")
    expect(page.locator("#refusal .closest .notebook")).to_have_count(1)
    expect(page.locator("#notebooks > li")).to_have_count(0)
    screenshot("search-refused")
    for question in OUT_OF_SCOPE:
        answer = page.evaluate("q => window.cellar.search(q)", question)
        assert answer["refused"] and answer["refusal_reason"].startswith("looked for"), question

    # A pasted page is read up to its first 4,000 characters, and the page says so.
    pasted = " ".join([BALLAST] * 150)
    box.fill(pasted)
    box.press("Enter")
    answered(page, pasted[:4000])
    expect(page.locator("#results-count")).to_contain_text(
        f"Only its first 4,000 of {len(pasted):,} characters were read."
    )

    # Filters change the results: a year range drops the 2024 notebook, a kind keeps only its
    # passages, a project keeps only its notebook. (Notebooks only: the demo's ballast report
    # and standard answer "ballast water tanks" too, tests/browser/test_documents.py.)
    page.get_by_label("Source").select_option("notebook")
    box.fill("ballast water tanks")
    box.press("Enter")
    answered(page, "ballast water tanks")
    assert "2024/24-007 Ballastwater/ballastwater_behandeling_24007.ipynb" in first_paths(page)
    page.get_by_label("Year to").fill("2019")
    page.get_by_label("Year to").press("Enter")
    expect(page.locator("#notebooks .notebook .path", has_text="24-007")).to_have_count(0)
    years = page.locator("#notebooks .notebook .meta").all_inner_texts()
    assert len(years) == 3 and all(int(text.split("year ")[1][:4]) <= 2019 for text in years)
    page.get_by_role("button", name="Clear filters").click()
    page.get_by_label("Source").select_option("notebook")  # cleared with the rest
    expect(page.locator("#notebooks .notebook .path", has_text="24-007")).to_have_count(1)
    page.get_by_label("code (49)").check()
    expect(page.locator("#notebooks .notebook").first.locator(".badge").first).to_have_text("code")
    # The first hit of the unfiltered answer may be code already (the answer cell first): wait for
    # the filtered answer to replace it, then every hit shown is code.
    wait_for(
        page,
        "() => { const kinds = [...document.querySelectorAll('#notebooks .hits .badge')].map((b) => b.textContent);"
        " return kinds.length > 0 && kinds.every((kind) => kind === 'code'); }",
    )
    assert set(page.locator("#notebooks .hits .badge").all_inner_texts()) == {"code"}
    page.get_by_label("code (49)").uncheck()
    box.fill("ballasttanks inhoud")
    box.press("Enter")
    answered(page, "ballasttanks inhoud")
    assert len(first_paths(page)) == 3
    page.get_by_label("Project").select_option("24-007")
    expect(page.locator("#notebooks .notebook")).to_have_count(1)
    expect(page.locator("#notebooks .notebook .path")).to_have_text(
        "2024/24-007 Ballastwater/ballastwater_behandeling_24007.ipynb"
    )
    screenshot("search-filtered")
    page.get_by_role("button", name="Clear filters").click()

    # A Dutch question, typed with the keyboard alone.
    dutch = "Waar staat de GZ-kromme van het vrachtschip uit 2016?"
    box.fill("")
    box.focus()
    page.keyboard.type(dutch)
    page.keyboard.press("Enter")
    answered(page, dutch)
    assert first_paths(page)[0] == "2016/16-008 Stabiliteit/gz_kromme_16008.ipynb"
    expect(page.locator("#results-count")).to_have_attribute("aria-live", "polite")
    screenshot("search-dutch")

    # And the reverse: an English question over a Dutch notebook, read in English when the
    # site's shard was built (cellar.retrieval.incremental.english_readings).
    english = "prospective short-circuit current on the 690 V main switchboard of the dredger"
    in_page = page.evaluate("q => window.cellar.search(q, {k: 3})", english)
    assert contract(in_page) == contract(as_the_page_searches(cpython_searcher, english, k=3))
    assert not in_page["refused"]
    assert in_page["notebooks"][0]["path"] == "2021/21-019 Elektrisch/kortsluiting_hoofdschakelbord_21019.ipynb"


def test_a_page_opened_with_a_question_and_a_project_answers_within_that_project(page, site_url):
    """A link or bookmark with ?q=...&project=...: the project's option is drawn after the first
    answer, and the answer left on the page is the one within that project."""
    page.goto(f"{site_url}/?q=ballasttanks%20inhoud&project=24-007")
    answered(page, "ballasttanks inhoud")
    expect(page.get_by_label("Project")).to_have_value("24-007")
    expect(page.locator("#notebooks .notebook")).to_have_count(1)
    expect(page.locator("#notebooks .notebook .path")).to_have_text(
        "2024/24-007 Ballastwater/ballastwater_behandeling_24007.ipynb"
    )


def test_a_question_naming_a_machine_searches_its_notes_first_and_says_so(page, site_url):
    """`T2-0457` is a machine of the demo's pump notes: the page asks its notes first (the field
    rule of cellar.retrieval.routing, as `cellar search` does) and says what it searched."""
    page.goto(f"{site_url}/?q=bearing%20noise%20on%20T2-0457")
    answered(page, "bearing noise on T2-0457")
    expect(page.locator("#route")).to_have_text("Searched the service notes of machine T2-0457 first.")
    facts = page.locator("#notebooks .notebook .meta")
    expect(facts.first).to_contain_text("machine T2-0457")
    # its notes refuse: the other sources are searched in a round of fetches of their own
    page.goto(f"{site_url}/?q=sea%20chest%20flange%20bolts%20of%20T2-0457")
    answered(page, "sea chest flange bolts of T2-0457")
    expect(page.locator("#route")).to_have_text(
        "Searched the service notes of machine T2-0457 first, then the other sources."
    )
    page.goto(f"{site_url}/?q=ballast%20tank%20volumes%20for%20the%202017%20vessel")
    answered(page, "ballast tank volumes for the 2017 vessel")
    expect(page.locator("#route")).to_have_text("")  # no machine named: every source at once


def test_a_question_only_a_deprecated_notebook_answers_shows_it_as_such(page, site_url):
    """14-011's hull coefficients were superseded in 2019: left out of a search, they answer a
    question that nothing current answers, marked deprecated, and the page says why it shows them."""
    page.goto(f"{site_url}/?q=table%20of%20block%20coefficients%20of%20the%20coaster%20hull%20variants")
    answered(page, "table of block coefficients of the coaster hull variants")
    expect(page.locator("#route")).to_have_text(
        "Nothing current answers this: the answer comes from a deprecated notebook, kept for the record."
    )
    first = page.locator("#notebooks .notebook").first
    expect(first.locator(".path")).to_have_text("2014/14-011 Hull Form/hull_coefficients_14011.ipynb")
    expect(first.locator(".status-deprecated")).to_have_text("deprecated")


def test_results_carry_the_rerender_status_fresh_outputs_and_the_stale_warning(page, site_url, screenshot):
    page.goto(site_url)
    wait_for(page, "document.body.dataset.searchReady === 'true'", timeout=BOOT_TIMEOUT_MS)
    box = page.get_by_label("Search the archive")
    # The fuel notebook drifted when the site was built (a corrected input): the fresh total is
    # what is found and shown, not the saved one.
    question = "HFO for the voyage main engine Rotterdam Singapore"
    box.fill(question)
    box.press("Enter")
    answered(page, question)
    fuel = page.locator("#notebooks > li").first
    expect(fuel.locator(".path")).to_have_text("2019/19-063 Fuel/fuel_consumption_19063.ipynb")
    expect(fuel.locator(".status").first).to_have_text("drifted")
    expect(fuel.locator(".note")).to_contain_text("fresh outputs")
    expect(fuel.locator(".hits")).to_contain_text("772 t")
    expect(fuel.locator(".hits")).not_to_contain_text("797 t")
    screenshot("search-drifted")
    # The draught survey could not re-run (its input stayed on a desktop): saved outputs, a warning.
    question = "diepgang trim meting diepgangmerken"
    box.fill(question)
    box.press("Enter")
    answered(page, question)
    stale = page.locator("#notebooks > li", has_text="22-031").first
    expect(stale.locator(".status").first).to_have_text("stale")
    expect(stale.locator(".warning")).to_contain_text("diepgangen_22031.csv")


def test_a_plot_hit_shows_what_the_re_rendered_figure_holds_as_text(page, site_url):
    # The SFOC curve's question names neither its title nor its labels in the code's words; the
    # figure's description (read from the figure when the site re-rendered the notebook) is
    # shown under the plot hit, as text.
    question = "SFOC against engine load shop test curve"
    page.goto(f"{site_url}?q={question}")
    answered(page, question)
    plot = page.locator("#notebooks > li", has_text="19-063").first.locator(".hit.kind-plot").first
    figure = plot.locator(".figure-text")
    expect(figure).to_contain_text('"19-063 main engine SFOC": line plot (1 line)')
    expect(figure).to_contain_text('x axis "Engine load [% MCR]"; y axis "SFOC [g/kWh]"; legend: shop test.')
    assert figure.evaluate("node => node.childElementCount") == 0  # text, never markup


def test_after_the_first_visit_search_and_viewer_work_with_the_server_stopped(browser, site):
    server = serve_in_background(site)  # its own server (and origin): this test stops it
    url = f"http://127.0.0.1:{server.server_port}/"
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(BOOT_TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"{url}?q={BALLAST}")
        answered(page, BALLAST)
        service_worker_ready(page)
        wait_for(page, "navigator.serviceWorker.controller !== null")
        expect(page.locator("#offline-status")).to_contain_text("offline use")
    finally:
        server.shutdown()
        server.server_close()
    page.reload()
    answered(page, BALLAST)
    assert first_paths(page)[0] == BALLAST_NOTEBOOK
    box = page.get_by_label("Search the archive")
    box.fill("GZ-kromme vrachtschip")
    box.press("Enter")
    answered(page, "GZ-kromme vrachtschip")
    assert first_paths(page)[0] == "2016/16-008 Stabiliteit/gz_kromme_16008.ipynb"
    page.locator("#notebooks .hit.kind-plot a.cite").first.click()
    wait_for(page, "document.body.dataset.rendered === 'true'")
    expect(page.locator(".cell.cited .output img")).to_be_visible()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "viewer-offline.png"))
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def test_a_question_fetches_only_its_partitions_its_clusters_and_the_top_notebooks(
    page, site_url, site, cpython_searcher
):
    """Counting the page's requests: at boot the shard's manifest and boot files; for a question,
    each once, the postings partitions of its terms, the clusters its vector probes and the
    containers of its top notebooks, nothing else; asked again, nothing at all."""
    requested: list[str] = []
    page.on("request", lambda request: requested.append(name) if (name := shard_file_name(request.url)) else None)
    page.goto(site_url)
    wait_for(page, "document.body.dataset.searchReady === 'true'", timeout=BOOT_TIMEOUT_MS)
    shard = cpython_searcher.source.shard
    assert set(requested) == {"manifest.json", *shard.manifest["boot"]}  # the page reads the manifest too
    requested.clear()
    answer = page.evaluate("q => window.cellar.search(q, {k: 3})", BALLAST)
    expected = expected_fetches(Path(shard.source), cpython_searcher.model, BALLAST, k=3)
    assert sorted(requested) == sorted(expected)
    assert len(requested) < len(shard.files)  # a large archive's share: test_large_archive.py
    assert [nb["path"] for nb in answer["notebooks"]][0] == BALLAST_NOTEBOOK
    requested.clear()
    page.evaluate("q => window.cellar.search(q, {k: 3})", BALLAST)
    assert requested == []


@pytest.mark.parametrize("damage", ["flip", "remove"])
def test_a_flipped_byte_in_a_partition_is_refused_in_the_page_naming_it(browser, site, tmp_path, damage):
    """A copy of the site whose partition for `ballast` has one byte flipped: the page says the
    search failed and names the file (its SHA-256 does not match the manifest's); a partition
    that is missing is named too (the server's 404 for it)."""
    copy = site_with_own_shard(site, tmp_path / "site")
    lexical = json.loads((copy / "shard" / "manifest.json").read_text())["lexical"]
    name = lexical["files"][bisect.bisect_right(lexical["first"], "ballast") - 1]
    flip_a_byte(copy / "shard" / name)
    if damage == "remove":
        (copy / "shard" / name).unlink()
    with asked(browser, copy, BALLAST) as page:
        if damage == "flip":
            expect(page.locator("#results-count")).to_contain_text(f"{name}: damaged", timeout=BOOT_TIMEOUT_MS)
            expect(page.locator("#results-count")).to_contain_text("SHA-256 mismatch")
        else:
            expect(page.locator("#results-count")).to_contain_text(f"{name}: 404", timeout=BOOT_TIMEOUT_MS)


def test_a_question_asked_once_works_offline_when_the_shard_is_too_large_to_keep_whole(browser, site, tmp_path):
    """With a shard over the service worker's size limit (here: a limit of 0 bytes), install keeps
    only its boot files; the files each search fetched are kept as it goes (even those fetched
    before the service worker came), so the questions asked online are answered offline, and a
    question never asked is not."""
    copy = tmp_path / "site"
    copy.mkdir()
    for entry in site.iterdir():
        if entry.name != "sw.js":
            (copy / entry.name).symlink_to(entry)
    sw = (site / "sw.js").read_text()
    assert "const OFFLINE_SHARD_BYTES = 20e6;" in sw
    (copy / "sw.js").write_text(sw.replace("const OFFLINE_SHARD_BYTES = 20e6;", "const OFFLINE_SHARD_BYTES = 0;"))
    server = serve_in_background(copy)
    url = f"http://127.0.0.1:{server.server_port}/"
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(BOOT_TIMEOUT_MS)
    requested: set[str] = set()
    page.on("request", lambda request: requested.add(name) if (name := shard_file_name(request.url)) else None)
    second = "GZ-kromme vrachtschip"
    count_cached = """async () => {
        const names = [];
        for (const key of await caches.keys()) {
            for (const request of await (await caches.open(key)).keys()) names.push(request.url);
        }
        return names.filter((u) => u.includes('/shard/')).map((u) => u.split('/shard/')[1]);
    }"""
    try:
        page.goto(f"{url}?q={BALLAST}")
        answered(page, BALLAST)
        service_worker_ready(page)
        wait_for(page, "navigator.serviceWorker.controller !== null")
        expect(page.locator("#offline-status")).to_contain_text("offline use")
        assert page.evaluate("q => window.cellar.search(q)", second)["notebooks"]
        for _ in range(100):
            cached = set(page.evaluate(count_cached))
            if requested <= cached:
                break
            page.wait_for_timeout(100)
        assert requested <= cached, sorted(requested - cached)
        assert len(cached) < len(open_shard(site / "shard").files)  # not the whole shard
    finally:
        server.shutdown()
        server.server_close()
    page.reload()
    answered(page, BALLAST)
    assert first_paths(page)[0] == BALLAST_NOTEBOOK
    box = page.get_by_label("Search the archive")
    box.fill(second)
    box.press("Enter")
    answered(page, second)
    assert first_paths(page)[0] == "2016/16-008 Stabiliteit/gz_kromme_16008.ipynb"
    box.fill("mooring line tension of the spread mooring")
    box.press("Enter")
    expect(page.locator("#results-count")).to_contain_text("The search failed")
    context.close()

"""Documents beside the demo notebooks on the search page: a clause cited as read aloud, a
service note found under a machine filter from the entries' own fields, the source filter.
(The demo site's shard holds the documents of demo/make_documents.py.)"""

from __future__ import annotations

from playwright.sync_api import expect
from tests.browser.conftest import BOOT_TIMEOUT_MS, wait_for
from tests.browser.test_search import answered


def test_a_clause_is_cited_by_its_path_and_a_note_filtered_by_machine(page, site_url, screenshot):
    page.goto(site_url)
    wait_for(page, "document.body.dataset.searchReady === 'true'", timeout=BOOT_TIMEOUT_MS)
    box = page.get_by_label("Search the archive")
    question = "minimum cross-section of the earthing conductor of a pump motor"
    box.fill(question)
    box.press("Enter")
    answered(page, question)
    best = page.locator("#notebooks > li").first
    expect(best.locator(".path")).to_have_text("standards/cvs-210-2019.clauses.xml")
    expect(best.locator(".hit cite").first).to_contain_text("CVS 210:2019 §6.3.2 b")
    expect(best.locator(".hit").first).to_contain_text("cross-section of at least 16 mm2")
    context = best.locator("details.neighbourhood")
    context.locator("summary").click()
    expect(context.locator("li").first).to_contain_text(
        "6 Electrical safety > 6.3 Earthing > 6.3.2 Earthing of pump motors"
    )
    expect(context).to_contain_text("CVS 210:2019 §6.3.2 note 1")
    screenshot("search-clause")

    page.get_by_label("machine").select_option("T3-0112")
    question = "mechanical seal leakage"
    box.fill(question)
    box.press("Enter")
    answered(page, question)
    expect(page.locator(".notebook h3").first).to_contain_text("T3-")
    # Answered or (under the site's default thresholds, calibrated on notebooks) refused with the
    # closest note shown: either way only that machine's notes, each cited by its id.
    notes = page.locator(".notebook h3").all_inner_texts()
    assert notes and all("T3-" in title for title in notes), notes
    expect(page.locator(".notebook .hit cite").first).to_contain_text("T3-2018-01603")
    screenshot("search-note-by-machine")

    # (activated from the keyboard: a pointer click here was lost in headless Chromium after the
    # machine select's change, while a script's click works; the page clears either way)
    page.get_by_role("button", name="Clear filters").press("Enter")
    expect(page.get_by_label("machine")).to_have_value("")
    page.get_by_label("Source").select_option("clauses")
    question = "how often must sea chest valves be inspected"
    box.fill(question)
    box.press("Enter")
    answered(page, question)
    shown = page.locator(".notebook .path")  # the answer, or a refusal's closest
    expect(shown.first).to_have_text("standards/cvs-210-2019.clauses.xml")
    assert set(shown.all_inner_texts()) == {"standards/cvs-210-2019.clauses.xml"}

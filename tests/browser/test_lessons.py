"""The lesson workbench in headless Chromium: write, run and check code; progress survives a
reload; an endless loop is stopped and the page stays usable; the widgets; Dutch.

One browser page serves the tests of lesson 1 in order (each boot of Python costs seconds).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from tests.browser.conftest import BOOT_TIMEOUT_MS, SCREENSHOTS, wait_for

expect.set_options(timeout=30_000)

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = (ROOT / "lessons/01-passages/solution.py").read_text(encoding="utf-8")
STARTER = (ROOT / "lessons/01-passages/main.py").read_text(encoding="utf-8")
CHECKPOINTS = ("document_snapshots", "word_chunks", "chunk_coverage")


@pytest.fixture(scope="module")
def lesson(browser, site_url) -> Iterator[Page]:
    """Lesson 1 in English, in a fresh browser profile, with Python ready."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-GB")
    page = context.new_page()
    page.set_default_timeout(BOOT_TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{site_url}lesson.html?lesson=01-passages")
    wait_for(page, "window.cellar && window.workbench")
    page.evaluate("() => window.cellar.ready")
    yield page
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def shot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def type_code(page: Page, code: str) -> None:
    """Replace the editor's text by keyboard: select all, then type (inserted as one input)."""
    page.locator("#editor .cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(code)
    expect_editor_text(page, code)


def expect_editor_text(page: Page, code: str) -> None:
    wait_for(page, "code => window.workbench.editor.getText() === code", arg=code)


def check(page: Page, checkpoint: str):
    item = page.locator(f"#checkpoint-{checkpoint}")
    item.get_by_role("button", name="Check").click()
    verdict = item.locator(".verdict")
    expect(verdict).not_to_have_text("Checking…")
    return verdict


def test_the_page_shows_prose_checkpoints_and_the_starter(lesson):
    expect(lesson.locator("#prose h1")).to_have_text("Cut sources into passages without losing where they came from")
    expect(lesson.locator(".checkpoint h3 .title")).to_have_text(
        [
            "1. Take a snapshot of each document",
            "2. Cut a snapshot into overlapping word windows",
            "3. Measure coverage, and trust no chunk unchecked",
        ]
    )
    expect_editor_text(lesson, STARTER)
    expect(lesson.locator("#progress")).to_have_text("0 / 3")
    expect(
        lesson.get_by_role("link", name="Next: The embedding lab: meaning, words, and how Cellar fuses them →")
    ).to_be_visible()
    expect(lesson.locator("#boot-status")).to_have_text("Python is ready")


def test_a_runnable_example_runs_with_its_own_button(lesson):
    example = lesson.get_by_role("region", name="Example 1")
    example.get_by_role("button", name="Run example").click()
    printed = example.locator(".stdout pre")
    expect(printed).to_have_text(re.compile(r"^[0-9a-f]{64}\n[0-9a-f]{64}\nFalse\n$"))
    expect(lesson.locator("#output")).to_be_empty()  # the editor's output is left alone


def test_the_sample_solution_runs_passes_every_checkpoint_and_progress_survives_a_reload(lesson):
    type_code(lesson, SOLUTION)
    lesson.keyboard.press("Control+Enter")  # Run from the editor
    expect(lesson.locator("#output .stdout pre")).to_contain_text("d:0  chars 2-10  'A  B\\nC D'")
    expect(lesson.locator("#output .stdout pre")).to_contain_text("'duplication_factor': 1.25")
    for checkpoint in CHECKPOINTS:
        expect(check(lesson, checkpoint)).to_have_text("✓ Passed")
    expect(lesson.locator("#progress")).to_have_text("3 / 3")
    shot(lesson, "lesson-1-passed")

    lesson.reload()
    wait_for(lesson, "window.workbench")
    expect(lesson.locator("#progress")).to_have_text("3 / 3")
    expect_editor_text(lesson, SOLUTION)
    expect(lesson.locator("#checkpoint-chunk_coverage .badge")).to_have_text("✓ Passed")
    lesson.evaluate("() => window.cellar.ready")


def test_a_wrong_solution_fails_with_the_first_broken_expectation(lesson):
    wrong = SOLUTION.replace("if type(window) is not int or", "if not isinstance(window, int) or")
    assert wrong != SOLUTION
    type_code(lesson, wrong)
    verdict = check(lesson, "word_chunks")
    expect(verdict).to_have_text(
        "✗ Not yet: word_chunks(doc, window=True, overlap=0) returned a list of 8 items; "
        "expected a ValueError because window True is a bool, not an int"
    )
    expect(lesson.locator("#progress")).to_have_text("2 / 3")
    shot(lesson, "lesson-1-wrong")


def test_a_traceback_shows_the_learners_own_line_numbers(lesson):
    type_code(lesson, "def ratio(a, b):\n    return a / b\n\nprint('before')\nratio(1, 0)\n")
    lesson.get_by_role("button", name="Run", exact=True).click()
    expect(lesson.locator("#output .stdout pre")).to_have_text("before\n")
    traceback = lesson.locator("#output .traceback")
    expect(traceback.locator("figcaption")).to_have_text(
        "Stopped with an error: ZeroDivisionError: division by zero (main.py, line 2)"
    )
    expect(traceback.locator("pre")).to_contain_text('File "main.py", line 5, in <module>')
    expect(traceback.locator("pre")).to_contain_text('File "main.py", line 2, in ratio')


def test_an_endless_loop_is_stopped_and_the_page_stays_usable(lesson):
    limit = lesson.evaluate("() => window.workbench.timeLimitMs") / 1000
    lesson.evaluate("() => { window.restarts = 0; window.cellar.onRestart(() => window.restarts++); }")
    type_code(lesson, "print('looping')\nwhile True:\n    pass\n")
    started = time.monotonic()
    lesson.get_by_role("button", name="Run", exact=True).click()
    expect(lesson.locator("#output .problem")).to_have_text(
        f"Stopped after {limit:g} s: the code ran too long (an endless loop?). Python is ready for the next run.",
        timeout=(limit + 10) * 1000,
    )
    stopped_after = time.monotonic() - started
    assert limit <= stopped_after < limit + 5
    # What it printed before, and where it was stopped, in the learner's lines.
    expect(lesson.locator("#output .stdout pre")).to_have_text("looping\n")
    expect(lesson.locator("#output .traceback figcaption")).to_contain_text("KeyboardInterrupt")
    expect(lesson.locator("#output .traceback figcaption")).to_contain_text("(main.py, line")
    shot(lesson, "lesson-1-loop-stopped")

    # A loop inside a function the hidden tests call ends the check the same way.
    type_code(lesson, "def document_snapshots(records):\n    while True:\n        pass\n")
    expect(check(lesson, "document_snapshots")).to_have_text(
        f"Stopped after {limit:g} s: the code ran too long (an endless loop?). Python is ready for the next run.",
        timeout=(limit + 10) * 1000,
    )
    # Isolated pages are interrupted, not restarted: Python and its packages stay loaded.
    assert lesson.evaluate("() => window.crossOriginIsolated && window.restarts") == 0

    type_code(lesson, "print('still here', 6 * 7)\n")
    lesson.get_by_role("button", name="Run", exact=True).click()
    expect(lesson.locator("#output .stdout pre")).to_have_text("still here 42\n")


def test_without_an_answer_the_worker_is_replaced_and_a_later_call_works(lesson):
    # A call that ignores the interrupt (time.sleep blocks the worker in Pyodide) is ended by
    # restarting the worker once its grace has passed (10 s); the page then boots Python again
    # and carries on.
    error = lesson.evaluate("""() => window.cellar.callWith({timeout: 500}, "cellar.site.bridge", "run_code",
        "import time\\ntime.sleep(30)").then(() => null, (error) => ({stopped: error.stopped, message: error.message}))""")
    assert error == {"stopped": True, "message": "stopped after 0.5 s"}
    lesson.get_by_role("button", name="Run", exact=True).click()
    expect(lesson.locator("#output .stdout pre")).to_have_text("still here 42\n")


def test_the_chunk_explorer_shows_passages_ranges_and_coverage(lesson):
    explorer = lesson.locator(".chunk-explorer")
    explorer.scroll_into_view_if_needed()
    expect(explorer.locator(".passages button")).to_have_text(
        [
            "d:0 chars 2-10 · words 0-4 A  B\nC D",
            "d:3 chars 9-16 · words 3-7 D E F G",
            "d:6 chars 15-18 · words 6-8 G H",
        ]
    )
    expect(explorer.locator(".stats")).to_have_text(
        "8 words, 8 covered (coverage 100 %), 10 word occurrences, duplication 1.25"
    )
    explorer.locator(".passages button", has_text="d:3").click()
    expect(explorer.locator(".source mark")).to_have_text("D E F G")
    expect(explorer.locator(".passages button", has_text="d:3")).to_have_attribute("aria-pressed", "true")
    shot(lesson, "lesson-1-chunk-explorer")

    explorer.get_by_label("Overlap (words)").fill("0")
    expect(explorer.locator(".passages button")).to_have_count(2)
    expect(explorer.locator(".stats")).to_have_text(
        "8 words, 8 covered (coverage 100 %), 8 word occurrences, duplication 1.00"
    )
    explorer.get_by_label("Text", exact=True).fill("   ")
    expect(explorer.locator(".stats")).to_have_text("document d: text is empty")


def test_the_dutch_switch_shows_dutch_and_is_remembered(lesson):
    lesson.get_by_role("button", name="Nederlands").click()
    expect(lesson.locator("#prose h1")).to_have_text(
        "Knip bronnen in passages zonder te vergeten waar ze vandaan komen"
    )
    expect(lesson.get_by_role("button", name="Uitvoeren", exact=True)).to_be_visible()
    expect(lesson.locator("#checkpoint-word_chunks .check")).to_have_text("Controleer")
    expect(lesson.locator("#checkpoint-word_chunks h3 .title")).to_have_text(
        "2. Knip een momentopname in overlappende woordvensters"
    )
    lesson.reload()
    expect(lesson.get_by_role("button", name="Uitvoeren", exact=True)).to_be_visible()
    expect(lesson.locator(".chunk-explorer h3")).to_have_text("Chunkverkenner")
    shot(lesson, "lesson-1-dutch")
    lesson.get_by_role("button", name="English").click()
    expect(lesson.get_by_role("button", name="Run", exact=True)).to_be_visible()


def test_the_home_page_links_the_lessons_and_the_list_shows_their_titles(page, site_url):
    page.goto(site_url)
    page.get_by_role("link", name="Lessons: learn how Cellar finds and cites passages").click()
    expect(page.locator("#lesson-list a")).to_have_text(
        [
            "Cut sources into passages without losing where they came from",
            "The embedding lab: meaning, words, and how Cellar fuses them",
        ]
    )


def test_the_embedding_lab_shows_its_heat_map_and_both_rankings(page, site_url, screenshot):
    page.goto(f"{site_url}lesson.html?lesson=02-embedding-lab")
    lab = page.locator(".embedding-lab")
    expect(lab).to_have_attribute("data-state", "ready")
    expect(lab.locator(".heatmap tbody tr")).to_have_count(8)
    expect(lab.locator(".heatmap tbody td")).to_have_count(64)
    diagonal = lab.locator(".heatmap tbody tr").first.locator("td").first
    expect(diagonal).to_have_text("1.00")
    lab.get_by_role("button", name="will the ship capsize when it leans over").click()
    expect(lab.locator(".rankings section").first.locator("li").first).to_contain_text("GZ curve")
    expect(lab.locator(".rankings section").nth(1)).to_contain_text("no passage shares a term")
    lab.scroll_into_view_if_needed()
    screenshot("lesson-2-embedding-lab")

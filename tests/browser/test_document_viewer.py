"""The document viewer (document.html): a document hit on the search page opens the published
document (its extracted text and blocks, from the shard, checked against the manifest's SHA-256)
scrolled to the cited block with the quote marked and the citation read aloud; a service note
shows its structured fields; a damaged published document is refused, named."""

from __future__ import annotations

import json
from urllib.parse import quote

from playwright.sync_api import expect
from tests.browser.conftest import BOOT_TIMEOUT_MS, flip_a_byte, site_with_own_shard, wait_for
from tests.browser.test_search import answered

from cellar.site.server import serve_in_background

CLAUSES = "standards/cvs-210-2019.clauses.xml"
NOTES = "service/pump_service_notes.records.csv"


def ask(page, site_url: str, question: str) -> None:
    page.goto(site_url)
    wait_for(page, "document.body.dataset.searchReady === 'true'", timeout=BOOT_TIMEOUT_MS)
    box = page.get_by_label("Search the archive")
    box.fill(question)
    box.press("Enter")
    answered(page, question)


def in_view(page, selector: str) -> bool:
    return page.locator(selector).evaluate(
        "node => { const r = node.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; }"
    )


def test_a_clause_hit_opens_the_document_at_its_block_with_the_quote_marked(page, site_url, screenshot):
    ask(page, site_url, "minimum cross-section of the earthing conductor of a pump motor")
    best = page.locator("#notebooks > li").first
    expect(best.locator(".path")).to_have_text(CLAUSES)
    best.locator(".hit a.cite").first.click()
    wait_for(page, "document.body.dataset.rendered === 'true'", timeout=BOOT_TIMEOUT_MS)
    expect(page.locator("#citation")).to_have_text("CVS 210:2019 §6.3.2 b")
    assert page.evaluate("document.body.dataset.cited") == "CVS 210:2019 §6.3.2 b"
    cited = page.locator(".doc-block.cited")
    expect(cited).to_have_count(1)
    expect(cited.locator("cite")).to_have_text("CVS 210:2019 §6.3.2 b")
    expect(cited.locator("mark")).to_contain_text("cross-section of at least 16 mm2")
    assert in_view(page, ".doc-block.cited"), "the cited block is not scrolled into view"
    expect(page.locator("#revision-check")).to_have_text("This is the revision the search result cited.")
    expect(page.locator("#title")).to_contain_text("safety rules")
    # every other clause is there too, as text, in document order
    assert page.locator(".doc-block").count() > 10
    expect(page.locator(".doc-block").first.locator("cite")).to_have_text("CVS 210:2019 §4.1")
    screenshot("document-clause")


def test_a_passage_in_a_document_hits_context_opens_the_viewer_at_that_passage(page, site_url):
    ask(page, site_url, "minimum cross-section of the earthing conductor of a pump motor")
    best = page.locator("#notebooks > li").first
    expect(best.locator(".path")).to_have_text(CLAUSES)
    best.locator("details.neighbourhood summary").click()
    links = best.locator("details.neighbourhood li a.cite")
    assert links.count() >= 2, "the context's passages do not link into the viewer"
    following = links.last  # a passage after the hit's own
    cited = following.inner_text()
    assert cited != "CVS 210:2019 §6.3.2 b" and cited.startswith("CVS 210:2019 §6.3.2")
    following.click()
    wait_for(page, "document.body.dataset.rendered === 'true'", timeout=BOOT_TIMEOUT_MS)
    expect(page.locator("#citation")).to_have_text(cited)
    expect(page.locator(".doc-block.cited cite")).to_have_text(cited)
    assert in_view(page, ".doc-block.cited"), "the passage is not scrolled into view"


def test_a_note_hit_opens_the_notes_with_its_fields(page, site_url, screenshot):
    ask(page, site_url, "bearing replaced at the drive end of ballast pump 1 in 2017")
    hits = page.locator("#notebooks .hit a.cite", has_text="T2-2017-04411")
    expect(hits.first).to_be_visible()
    card = page.locator("#notebooks article.notebook", has=page.locator("h3", has_text="T2-2017-04411")).first
    expect(card.locator(".meta")).to_have_text(
        "year 2017 · customer Noordkaap Shipping · fault code E217 · machine T2-0457"
    )
    expect(card.locator(".status")).to_have_count(0)  # a note is never re-run: no re-render status
    hits.first.click()
    wait_for(page, "document.body.dataset.rendered === 'true'", timeout=BOOT_TIMEOUT_MS)
    expect(page.locator("#citation")).to_have_text("T2-2017-04411")
    cited = page.locator(".doc-block.cited")
    expect(cited.locator("mark")).to_contain_text("brg noise at drive end")
    fields = cited.locator(".note-fields")
    expect(fields).to_contain_text("machine")
    expect(fields).to_contain_text("T2-0457")
    expect(fields).to_contain_text("fault code")
    assert in_view(page, ".doc-block.cited")
    screenshot("document-note")


def test_document_text_is_drawn_as_text_never_as_html(page, site_url):
    """The viewer builds its blocks with textContent: no element of the archive's text exists."""
    page.goto(f"{site_url}document.html?path={quote(CLAUSES)}&start=0&end=1")
    wait_for(page, "document.body.dataset.rendered === 'true'", timeout=BOOT_TIMEOUT_MS)
    tags = page.locator("#blocks").evaluate("node => [...node.querySelectorAll('*')].map(e => e.tagName)")
    assert set(tags) <= {"LI", "P", "STRONG", "CITE", "SPAN", "DL", "DT", "DD", "PRE", "MARK"}, set(tags)


def test_a_damaged_published_document_is_refused_naming_the_file(browser, site, tmp_path):
    copy = site_with_own_shard(site, tmp_path / "site")
    name = json.loads((copy / "shard" / "manifest.json").read_text())["documents"][CLAUSES]
    flip_a_byte(copy / "shard" / name)
    server = serve_in_background(copy)
    context = browser.new_context(service_workers="block")
    page = context.new_page()
    try:
        page.goto(f"http://127.0.0.1:{server.server_port}/document.html?path={quote(CLAUSES)}&start=0&end=1")
        wait_for(page, "document.body.dataset.rendered === 'failed'", timeout=BOOT_TIMEOUT_MS)
        expect(page.locator("#revision-check")).to_contain_text(f"{name}: damaged")
        expect(page.locator("#revision-check")).to_contain_text("SHA-256 mismatch")
        expect(page.locator(".doc-block")).to_have_count(0)
    finally:
        context.close()
        server.shutdown()
        server.server_close()


def test_a_pdf_block_shows_its_page_and_heading_path(page, site_url, site):
    """Opened from a citation's offsets: the block that holds them, its page, its section path."""
    from cellar.retrieval.published import published_document

    pdf = "2020/20-004 Mooring/mooring_review_20004.pdf"
    shard = site / json.loads((site / "build.json").read_text())["shard"]
    view = published_document(lambda name: (shard / name).read_bytes(), pdf)
    block = next(b for b in view["blocks"] if b["citation"] == "2.3 Line loads, paragraph 2")
    page.goto(
        f"{site_url}document.html?path={quote(pdf)}&start={block['start']}&end={block['end']}&rev={view['revision']}"
    )
    wait_for(page, "document.body.dataset.rendered === 'true'", timeout=BOOT_TIMEOUT_MS)
    cited = page.locator(".doc-block.cited")
    expect(cited.locator("cite")).to_have_text("2.3 Line loads, paragraph 2 · page 2")
    expect(cited).to_contain_text("2 Mooring lines > 2.3 Line loads")
    expect(cited.locator("mark")).to_have_text(view["text"][block["start"] : block["end"]])
    expect(page.locator("#extracted-note")).to_contain_text("extracted from this PDF")


HOSTILE = """# Report <img src=x onerror="window.pwned=1">

## 1 Scope <script>window.pwned=2</script>

The <b>pump</b> <iframe srcdoc="<script>parent.pwned=3</script>"></iframe> delivers 250 m3/h.
<a href="javascript:window.pwned=4">click</a> <svg onload="window.pwned=5"></svg>
"""
HOSTILE_NOTES = (
    'id,machine,text\nX-1,"<img src=x onerror=window.pwned=6>","seal <script>window.pwned=7</script> leaking"\n'
)


def test_hostile_document_text_is_shown_as_text_and_runs_nothing(browser, site, tmp_path):
    """A report and a note whose text and fields are HTML payloads: the viewer shows them as the
    characters they are, and no element, handler or script of theirs exists or runs."""
    from tests.browser.conftest import site_around

    from cellar.retrieval.embedding import default_model
    from cellar.retrieval.index import build_index_from_directory
    from cellar.retrieval.publish import write_shard

    archive = tmp_path / "archive"
    archive.mkdir()
    (archive / "hostile.md").write_text(HOSTILE, encoding="utf-8")
    (archive / "hostile.records.csv").write_text(HOSTILE_NOTES, encoding="utf-8")
    root = tmp_path / "root"
    root.mkdir()
    write_shard(build_index_from_directory(archive, default_model()).index, root / "shard")
    site_around(site, root)
    server = serve_in_background(root)
    context = browser.new_context(service_workers="block")
    page = context.new_page()
    try:
        base = f"http://127.0.0.1:{server.server_port}/"
        at = HOSTILE.index("The <b>pump</b>")
        for path, start, shown in (
            ("hostile.md", at, '<iframe srcdoc="<script>parent.pwned=3</script>"></iframe>'),
            ("hostile.records.csv", 0, "seal <script>window.pwned=7</script> leaking"),
        ):
            page.goto(f"{base}document.html?path={quote(path)}&start={start}&end={start + 5}")
            wait_for(page, "document.body.dataset.rendered === 'true'", timeout=BOOT_TIMEOUT_MS)
            expect(page.locator(".doc-block.cited")).to_contain_text(shown)
            assert (
                page.locator("#blocks img, #blocks script, #blocks iframe, #blocks svg, #blocks a, #blocks b").count()
                == 0
            )
            assert page.evaluate("window.pwned") is None
        expect(page.locator(".doc-block.cited .note-fields")).to_contain_text("<img src=x onerror=window.pwned=6>")
        expect(page.locator("#title")).to_have_text("hostile.records.csv")
    finally:
        context.close()
        server.shutdown()
        server.server_close()

"""The search page over a synthetic archive of a few thousand notebooks (`cellar synth`, from the
demo's notebooks, so it needs nothing beside the checkout): a question fetches only the postings
partitions of its terms, the clusters its vector probes and its top notebooks' containers, a
small share of the shard; the page answers what CPython answers over the same shard; and a
damaged partition is refused in the page by name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect
from tests.browser.conftest import (
    BOOT_TIMEOUT_MS,
    answer_contract,
    as_the_page_searches,
    asked,
    expected_fetches,
    flip_a_byte,
    shard_file_name,
    site_around,
    wait_for,
)

from cellar.ingest.synth import generate_archive
from cellar.retrieval.embedding import default_model, default_model_dir
from cellar.retrieval.index import build_index_from_directory
from cellar.retrieval.publish import write_shard
from cellar.retrieval.search import Searcher
from cellar.retrieval.shard import open_shard
from cellar.site.server import serve_in_background

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = 2500
QUESTIONS = [
    json.loads(line)["query"]
    for line in (ROOT / "demo/gold.jsonl").read_text().splitlines()
    if line.strip() and json.loads(line)["kind"] != "out_of_scope"
][:6]


@pytest.fixture(scope="module")
def large_site(site, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("large")
    generate_archive(root / "archive", NOTEBOOKS, seed=3)
    built = build_index_from_directory(root / "archive", str(default_model_dir()), workers=2)
    assert built.skipped == 0 and len(built.index.notebooks) == NOTEBOOKS
    write_shard(built.index, root / "shard")
    return site_around(site, root)


@pytest.fixture(scope="module")
def large_searcher(large_site) -> Searcher:
    model = default_model()
    return Searcher(open_shard(large_site / "shard", model), model)


@pytest.fixture(scope="module")
def large_url(large_site):
    server = serve_in_background(large_site)
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()


def test_questions_fetch_only_what_they_need_and_answer_as_cpython(page, large_site, large_url, large_searcher):
    shard = large_searcher.source.shard
    requested: list[str] = []
    page.on("request", lambda request: requested.append(name) if (name := shard_file_name(request.url)) else None)
    page.goto(large_url)
    wait_for(page, "document.body.dataset.searchReady === 'true'", timeout=BOOT_TIMEOUT_MS)
    assert set(requested) == {"manifest.json", *shard.manifest["boot"]}
    fetched: set[str] = set()
    for question in QUESTIONS:
        requested.clear()
        answer = page.evaluate("q => window.cellar.search(q, {k: 3})", question)
        # Each file once, and only those not fetched for an earlier question.
        assert len(requested) == len(set(requested)), question
        assert (
            set(requested) == expected_fetches(large_site / "shard", large_searcher.model, question, k=3) - fetched
        ), question
        fetched |= set(requested)

        assert answer_contract(answer) == answer_contract(as_the_page_searches(large_searcher, question, k=3)), question
    # Six questions over 2,500 notebooks read a small share of the shard.
    assert len(fetched) < len(shard.files) / 10


def test_a_damaged_partition_is_refused_in_the_page_naming_it(browser, large_site, large_searcher, tmp_path):
    """A copy of the site whose partition for the question's first term has one byte flipped: the
    page says the search failed and names the file."""
    copy = tmp_path / "site"
    (copy / "shard").mkdir(parents=True)
    shard = (large_site / "shard").resolve()
    for entry in shard.iterdir():
        (copy / "shard" / entry.name).symlink_to(entry)
    site_around(large_site, copy)
    question = QUESTIONS[0]
    name = large_searcher.source.shard.partition_names(large_searcher.analyzer.query_terms(question))[0]
    folder = name.split("/")[0]
    (copy / "shard" / folder).unlink()
    shutil.copytree(shard / folder, copy / "shard" / folder)
    flip_a_byte(copy / "shard" / name)
    with asked(browser, copy, question) as page:
        expect(page.locator("#results-count")).to_contain_text(f"{name}: damaged", timeout=BOOT_TIMEOUT_MS)
        expect(page.locator("#results-count")).to_contain_text("SHA-256 mismatch")

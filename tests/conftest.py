"""Shared fixtures: where the repository, the built site and the shared corpus are."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "site"
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def site() -> Path:
    """The site that `python3 build.py site` assembled (build.py test builds it first)."""
    if not (SITE / "build.json").is_file():
        pytest.fail(f"{SITE} is not built: run `python3 build.py site` (or `python3 build.py test`)")
    return SITE


@pytest.fixture(scope="session")
def shared_corpus() -> Path:
    """../shared/corpus: real notebooks beside the checkout, here and in CI but not in a user's clone."""
    corpus = SHARED / "corpus"
    if not corpus.is_dir():
        pytest.skip(f"{corpus} not found: the shared corpus sits beside the checkout only in CI")
    return corpus

"""Shared fixtures: where the repository, the built site and the shared corpus are; and build.py as a
module."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "site"
SHARED = ROOT.parent / "shared"


def load_build() -> ModuleType:
    """A fresh copy of build.py as a module (it is a script, not a package's module): each caller
    gets its own, so what one test file patches or records in it stays there."""
    spec = importlib.util.spec_from_file_location("cellar_build", ROOT / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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

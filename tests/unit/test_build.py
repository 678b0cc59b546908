"""build.py: the runtime is verified file by file, and the site is assembled idempotently."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import load_build

ROOT = Path(__file__).resolve().parents[2]


build = load_build()


@pytest.fixture(scope="module")
def runtime() -> Path:
    directory = build.runtime_dir()
    if not (directory / "pyodide-lock.json").exists():
        pytest.fail(f"{directory}: no runtime in the cache; run `python3 build.py runtime`")
    return directory


@pytest.fixture
def cache_copy(tmp_path, runtime) -> Path:
    """A private copy of the cached runtime, to damage without touching the real cache."""
    cache = tmp_path / "cache"
    shutil.copytree(runtime, cache / runtime.name)
    return cache


def flip_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "victim", ["pyodide.asm.wasm", "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl", "pyodide-lock.json"]
)
def test_a_flipped_byte_in_the_cached_runtime_stops_the_build_naming_the_file(cache_copy, victim):
    path = cache_copy / f"pyodide-{build.PYODIDE_VERSION}" / victim
    flip_one_byte(path)
    result = subprocess.run(
        [sys.executable, str(ROOT / "build.py"), "runtime"],
        env={**os.environ, "CELLAR_CACHE": str(cache_copy)},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert str(path) in result.stderr
    assert "SHA-256 mismatch" in result.stderr
    assert "expected" in result.stderr and "found" in result.stderr


def test_the_intact_runtime_verifies(runtime):
    lock = build.verify_runtime(runtime)
    assert lock["info"]["version"] == build.PYODIDE_VERSION


def test_the_site_lock_lists_exactly_what_the_site_ships(site):
    lock = json.loads((site / "pyodide" / "pyodide-lock.json").read_text())
    shipped = {path.name for path in (site / "pyodide").iterdir()} - set(build.CORE_FILES) - {"pyodide-lock.json"}
    assert {entry["file_name"] for entry in lock["packages"].values()} == shipped
    for entry in lock["packages"].values():
        assert build.sha256_file(site / "pyodide" / entry["file_name"]) == entry["sha256"]
    for name in entry.get("depends", []):
        assert build.canonical(name) in {build.canonical(key) for key in lock["packages"]}
    assert {"numpy", "micropip", "pandas"} <= set(lock["packages"])


def test_a_second_site_build_changes_nothing(site):
    build_site = [sys.executable, str(ROOT / "build.py"), "site"]
    subprocess.run(build_site, capture_output=True, check=True)  # brings site/ up to date
    before = {path: path.stat().st_mtime_ns for path in site.rglob("*") if path.is_file()}
    result = subprocess.run(build_site, capture_output=True, text=True, check=True)
    assert "0 changed" in result.stdout
    assert "fetching" not in result.stdout
    after = {path: path.stat().st_mtime_ns for path in site.rglob("*") if path.is_file()}
    assert after == before


def test_package_closure_follows_dependencies_across_name_spellings(runtime):
    lock = build.verify_runtime(runtime)
    closure = build.package_closure(lock, ("ipython",))
    assert "prompt_toolkit" in closure or "prompt-toolkit" in closure
    with pytest.raises(build.BuildError, match="not in the Pyodide"):
        build.package_closure(lock, ("no-such-package",))


def test_the_site_publishes_only_what_its_pages_fetch_of_the_archive():
    digest = "0" * 64
    for name in (
        "a/b c.ipynb",
        "X.IPYNB",
        "pathmap.json",
        "requirements.txt",
        "rerender.json",
        f"blobs/sha256/00/{digest}",
    ):
        assert build.published(name), name
    for name in (
        "page.html", "a/page.htm", "x.xhtml", "logo.svg", "app.js", "mod.mjs", "README.md", "notes.txt",
        "a/pathmap.json", f"blobs/sha256/00/{digest}.html", "blobs/sha256/00/short", f"a/blobs/sha256/00/{digest}",
    ):  # fmt: skip
        assert not build.published(name), name


def test_another_out_folder_keeps_its_own_build_state_and_a_foreign_folder_is_refused(tmp_path):
    """`build.py site --out DIR` re-renders and indexes into a folder of its own (so the demo's
    build/ and site/ are left alone), and will not empty a folder that holds no site."""
    assert build.work_folder(build.SITE) == ROOT / "build"
    other, again = build.work_folder(tmp_path / "a"), build.work_folder(tmp_path / "a")
    assert other == again and other.parent == ROOT / "build" / "sites"
    assert build.work_folder(tmp_path / "b") != other
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    with pytest.raises(build.BuildError, match="holds no site"):
        build.step_site(ROOT / "demo" / "archive", out=foreign)
    assert (foreign / "keep.txt").read_text() == "mine"
    # a web app's own build.json made a folder a site's, and the build removed every file of it
    # that it did not publish
    (foreign / "build.json").write_text('{"app": "my web app", "version": 3}')
    with pytest.raises(build.BuildError, match="holds no site \\(no build.json of cellar's\\)"):
        build.step_site(ROOT / "demo" / "archive", out=foreign)
    assert sorted(path.name for path in foreign.iterdir()) == ["build.json", "keep.txt"]
    (tmp_path / "file").write_text("mine")
    with pytest.raises(build.BuildError, match="file: not a folder"):
        build.step_site(ROOT / "demo" / "archive", out=tmp_path / "file")


def test_a_gold_set_inside_the_site_folder_is_refused():
    """The build removes from its site folder every file it did not publish: a gold set kept
    there was calibrated on, then removed."""
    assert "the gold set among them" in build.nested(ROOT / "demo" / "archive", ROOT / "x", ROOT / "x" / "gold.jsonl")
    assert build.nested(ROOT / "demo" / "archive", ROOT / "x", ROOT / "demo" / "gold.jsonl") is None


def test_the_site_is_never_written_through_a_link_in_it(tmp_path):
    """A link where the site keeps a file, or among its folders, had the build write into the
    file or the folder it led to, outside the site."""
    site, victim = tmp_path / "site", tmp_path / "victim"
    (site / "shard").mkdir(parents=True)
    victim.mkdir()
    (victim / "precious.txt").write_text("precious")
    (site / "build.json").symlink_to(victim / "precious.txt")
    (site / "archive").symlink_to(victim)
    source = tmp_path / "source.txt"
    source.write_text("published")
    assert build.publish({"archive/precious.txt": source}, site) == 1
    assert build.write_if_changed(site / "build.json", "{}")
    assert (victim / "precious.txt").read_text() == "precious" and sorted(victim.iterdir()) == [victim / "precious.txt"]
    assert (site / "archive" / "precious.txt").read_text() == "published" and not (site / "archive").is_symlink()
    assert (site / "build.json").read_text() == "{}" and not (site / "build.json").is_symlink()

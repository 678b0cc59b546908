"""`cellar lesson` against hostile lesson folders: deep TOML, unclosed fences, links out.

Each case is a copy of the shipped lessons with one lesson spoiled: the spoiled one is reported,
naming its file, and the others are still listed and checked.
"""

import itertools
import json
import random
import re
import shutil
from pathlib import Path

import pytest
from tests.unit.conftest import deadline

from cellar.cli import main
from cellar.lessons.lesson import LessonError, Page, parse_checkpoints, parse_page, read_lesson_files, validate_lesson

LESSONS_ROOT = Path(__file__).resolve().parents[2] / "lessons"
DEEP = 10_000  # far past the recursion limit of tomllib's parser


@pytest.fixture
def lessons_copy(tmp_path):
    root = tmp_path / "lessons"
    shutil.copytree(LESSONS_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def add_to_front_matter(page, line):
    head, front, body = page.read_text(encoding="utf-8").split("+++\n", 2)
    page.write_text(f"{head}+++\n{front}{line}\n+++\n{body}", encoding="utf-8")


DEEP_CASES = {
    "array in front matter": ("lesson.en.md", "x = " + "[" * DEEP + "]" * DEEP, "lesson.en.md: front matter"),
    "table in front matter": ("lesson.en.md", "x = " + "{a=" * DEEP + "1" + "}" * DEEP, "lesson.en.md: front matter"),
    "array in checkpoints": ("checkpoints.toml", "z = " + "[" * DEEP + "]" * DEEP, "checkpoints.toml:"),
}


def spoil(folder, name, line):
    if name.endswith(".md"):
        add_to_front_matter(folder / name, line)
    else:
        with (folder / name).open("a", encoding="utf-8") as file:
            file.write("\n" + line + "\n")


@pytest.mark.parametrize("case", DEEP_CASES)
def test_deeply_nested_toml_is_that_lessons_problem(lessons_copy, capsys, case):
    name, line, where = DEEP_CASES[case]
    spoil(lessons_copy / "01-passages", name, line)
    with deadline(60):
        assert main(["lesson", "list", "--root", str(lessons_copy)]) == 1
    out, err = capsys.readouterr()
    assert [line.split()[:2] for line in out.splitlines()] == [["02", "embedding-lab"]]
    assert f"{lessons_copy / '01-passages'}: {where}" in err
    assert "nested too deeply" in err and "Traceback" not in err


def test_check_goes_on_past_a_lesson_with_deep_toml(lessons_copy, capsys):
    spoiled, good = lessons_copy / "01-passages", lessons_copy / "02-embedding-lab"
    spoil(spoiled, *DEEP_CASES["array in front matter"][:2])
    with deadline(120):
        assert main(["lesson", "check", str(spoiled), str(good)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{spoiled}: lesson.en.md: front matter is not valid TOML: nested too deeply",
        f"{good}: ok",
    ]


@pytest.mark.parametrize("text", ["checkpoint = [1]", "checkpoint = [[1]]", 'checkpoint = ["a", {id = "b"}]'])
def test_checkpoints_that_are_not_tables_are_named(text):
    checkpoints, problems = parse_checkpoints(text)
    assert checkpoints == ()
    assert "checkpoints.toml: checkpoint 1 is not a table" in problems


# --- runnable examples ----------------------------------------------------------------------------

# What the examples were before they were matched line by line: the reference for the results.
OLD_RUNNABLE = re.compile(r"^```python run[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
PIECES = ["```python run", "```python run \t", "```", "``` ", "```\t", "````", "```python", "x = 1", "", " ```", "\r"]


def examples(body):
    """The runnable examples of a page with this Markdown body."""
    return Page("en", "x", "A module", 1, "A title", 5, (), None, body).examples


def test_examples_are_found_as_before_in_the_shipped_lessons():
    for page in LESSONS_ROOT.glob("*/lesson.*.md"):
        text = page.read_text(encoding="utf-8")
        assert OLD_RUNNABLE.findall(text), page  # (each page has examples to compare)
        assert examples(text) == OLD_RUNNABLE.findall(text), page


def test_examples_are_found_as_before_in_every_small_arrangement_of_fence_lines():
    endings = ["\n", "\r\n", "\r", ""]
    for count in range(1, 5):
        for lines in itertools.product(PIECES, repeat=count):
            for ending in endings:
                text = "\n".join(lines) + ending
                assert examples(text) == OLD_RUNNABLE.findall(text), text
    chooser = random.Random(7)
    for _ in range(5000):
        text = "".join(chooser.choice(PIECES) + chooser.choice(["\n", "\n", "\r\n", ""]) for _ in range(12))
        assert examples(text) == OLD_RUNNABLE.findall(text), text


def test_unclosed_fences_take_linear_time():
    page = (LESSONS_ROOT / "01-passages" / "lesson.en.md").read_text(encoding="utf-8")
    # 300 KB of opening lines: the regex that searched the rest of the page for a close after
    # each took minutes on it
    with deadline(10):
        parsed, problems = parse_page(page + "```python run\n" * 20_000, "en")
        assert problems == [] and parsed is not None
        assert parsed.examples == examples(page)  # none of the unclosed ones counts
        assert examples("```python run\nx = 1\n" * 50_000) == []


# --- links ----------------------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("API_TOKEN=not-for-the-site\n")
    return folder


@pytest.mark.parametrize("link", ["secret.txt", "data", "sub/notes.txt"])
def test_a_link_in_a_lesson_folder_is_named_and_not_followed(lessons_copy, outside, capsys, link):
    folder = lessons_copy / "01-passages"
    (folder / "sub").mkdir()
    target = outside if link == "data" else outside / "secret.txt"
    (folder / link).symlink_to(target)
    with pytest.raises(LessonError, match=re.escape(f"{folder / link}: a symbolic link")):
        read_lesson_files(folder)
    [problem] = validate_lesson(folder)
    assert problem.startswith(f"{folder / link}: a symbolic link")
    assert main(["lesson", "list", "--root", str(lessons_copy), "--json"]) == 1
    out, err = capsys.readouterr()
    assert [entry["folder"] for entry in json.loads(out)] == ["02-embedding-lab"]
    assert f"{folder / link}: a symbolic link" in err
    assert "not-for-the-site" not in out + err


def test_a_link_within_the_folder_is_refused_too(lessons_copy):
    # (a lesson is published file by file: nothing in it needs a link)
    folder = lessons_copy / "01-passages"
    (folder / "copy.py").symlink_to("main.py")
    assert validate_lesson(folder)[0].startswith(f"{folder / 'copy.py'}: a symbolic link")


def test_hidden_links_stay_skipped(lessons_copy, outside):
    folder = lessons_copy / "01-passages"
    (folder / ".env").symlink_to(outside / "secret.txt")
    assert ".env" not in read_lesson_files(folder)


def test_check_stops_a_lesson_whose_code_never_ends_and_goes_on(lessons_copy, capsys):
    looping, good = lessons_copy / "01-passages", lessons_copy / "02-embedding-lab"
    (looping / "main.py").write_text("while True:\n    pass\n")
    with deadline(120):
        assert main(["lesson", "check", "--timeout", "5", str(looping), str(good)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{looping}: its code ran for more than 5 s (a loop without end?) and was stopped",
        f"{good}: ok",
    ]

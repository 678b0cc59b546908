"""cellar.lessons.lesson in Pyodide: the worker loads a lesson from its fetched files and gives the
same verdicts, errors and output as CPython."""

import json
from pathlib import Path

import pytest

from cellar.lessons.lesson import check_all, find_lessons, lesson_from_files, read_lesson_files, run_learner_code

FOLDERS = find_lessons(Path(__file__).resolve().parents[2] / "lessons")
BROKEN = "def ratio(a, b):\n    return a / b\n\n\nprint('before')\nratio(1, 0)\n"


def as_literal(value) -> str:
    """A Python expression for JSON-able `value`, to paste into code run in Pyodide."""
    return f"json.loads({json.dumps(json.dumps(value))})"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda folder: folder.name)
def test_verdicts_equal_cpython(pyodide, folder):
    files = read_lesson_files(folder)
    lesson = lesson_from_files(files)
    # the starter, the sample solution, and the solution with ranks counted from 0 / text stripped
    sources = [
        lesson.starter,
        lesson.solution,
        lesson.solution.replace("start=1", "start=0").replace('"text": text,', '"text": text.strip(),'),
    ]
    code = f"""
import json
from cellar.lessons.lesson import check_all, lesson_from_files
lesson = lesson_from_files({as_literal(files)})
[{{cid: [v.passed, v.message] for cid, v in check_all(lesson, source).items()}}
 for source in {as_literal(sources)}]
"""
    expected = [{cid: [v.passed, v.message] for cid, v in check_all(lesson, source).items()} for source in sources]
    assert pyodide.run(code) == expected
    assert all(passed for passed, _ in expected[1].values())
    assert not all(passed for passed, _ in expected[2].values())


def test_learner_errors_and_output_equal_cpython(pyodide):
    code = f"""
import json
from cellar.lessons.lesson import run_learner_code
run = run_learner_code({as_literal(BROKEN)})
[run.stdout, run.error, 'File "main.py", line 6, in <module>' in run.traceback,
 "lessons.py" in run.traceback]
"""
    result = run_learner_code(BROKEN)
    assert pyodide.run(code) == [result.stdout, result.error, True, False]

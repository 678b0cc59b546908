"""cellar.lessons.lesson and the shipped lessons: format, runner, checker, validation and the CLI.

The shipped lessons are the test data: every lesson must validate, its sample solution must
pass every checkpoint and its starter none, and a solution broken in one rule must fail the
checkpoint of that rule with a message that says what went wrong.
"""

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from cellar.cli import main
from cellar.lessons.lesson import (
    LessonError,
    check,
    check_all,
    find_lessons,
    lesson_from_files,
    load_lesson,
    read_lesson_files,
    run_learner_code,
    validate_lesson,
)

LESSONS_ROOT = Path(__file__).resolve().parents[2] / "lessons"
LESSONS = find_lessons(LESSONS_ROOT)
PASSAGES = LESSONS_ROOT / "01-passages"
EMBEDDING_LAB = LESSONS_ROOT / "02-embedding-lab"


def checkpoints_of(folder):
    return [(folder, checkpoint.id) for checkpoint in load_lesson(folder).checkpoints]


ALL_CHECKPOINTS = [pair for folder in LESSONS for pair in checkpoints_of(folder)]


# --- the shipped lessons ------------------------------------------------------------------------


def test_both_lessons_ship_in_order():
    assert [load_lesson(folder).id for folder in LESSONS] == ["passages", "embedding-lab"]
    assert [c.id for c in load_lesson(PASSAGES).checkpoints] == ["document_snapshots", "word_chunks", "chunk_coverage"]
    assert [c.id for c in load_lesson(EMBEDDING_LAB).checkpoints] == [
        "cosine_similarity",
        "top_k",
        "reciprocal_rank_fusion",
    ]


@pytest.mark.parametrize("folder", LESSONS, ids=lambda folder: folder.name)
def test_shipped_lesson_validates(folder):
    assert validate_lesson(folder) == []


@pytest.mark.parametrize("folder, checkpoint_id", ALL_CHECKPOINTS, ids=[f"{f.name}:{c}" for f, c in ALL_CHECKPOINTS])
def test_solution_passes_and_starter_fails_with_not_written_yet(folder, checkpoint_id):
    lesson = load_lesson(folder)
    assert check(lesson, checkpoint_id, lesson.solution).passed
    verdict = check(lesson, checkpoint_id, lesson.starter)
    assert not verdict.passed
    assert verdict.message.startswith(f"{checkpoint_id}(")
    assert "is not written yet: NotImplementedError (main.py, line " in verdict.message


def test_lesson_from_files_is_what_the_browser_loads():
    files = read_lesson_files(PASSAGES)
    assert {
        "lesson.en.md",
        "lesson.nl.md",
        "main.py",
        "solution.py",
        "checkpoints.toml",
        "checks.py",
        "widget.json",
    } <= set(files)
    lesson = lesson_from_files(files)
    assert lesson == replace(load_lesson(PASSAGES), source="<lesson>")
    assert lesson.pages["nl"].title.startswith("Knip bronnen in passages")
    assert lesson.checkpoint("word_chunks").title["en"].startswith("Cut a snapshot")
    assert len(lesson.pages["en"].examples) == len(lesson.pages["nl"].examples) == 3
    with pytest.raises(LessonError, match="checks.py is missing"):
        lesson_from_files({name: text for name, text in files.items() if name != "checks.py"})


def test_lab_data_has_the_same_passages_and_queries_in_both_languages():
    lab = json.loads((EMBEDDING_LAB / "lab.json").read_text(encoding="utf-8"))
    en, nl = lab["en"], lab["nl"]
    assert [p["id"] for p in en["passages"]] == [p["id"] for p in nl["passages"]]
    assert [q["id"] for q in en["queries"]] == [q["id"] for q in nl["queries"]]
    passage_ids = {p["id"] for p in en["passages"]}
    for query in en["queries"] + nl["queries"]:
        assert set(query["relevant"]) <= passage_ids
    assert lab["fusion_k"] == 60


# --- one broken rule, one failing checkpoint, one readable message -------------------------------

# (lesson, what the mutant gets wrong, text in solution.py, its replacement,
#  the checkpoints that must fail, words the first failing message must contain)
MUTANTS = [
    (
        PASSAGES,
        "strips the text",
        '"text": text, "revision"',
        '"text": text.strip(), "revision"',
        {"document_snapshots"},
        "snapshot 0 has text 'A  B\\nC D E F G H'; expected '  A  B\\nC D E F G H  ', exactly as given",
    ),
    (
        PASSAGES,
        "accepts an id ending in a newline",
        "ID_PATTERN.fullmatch(doc_id)",
        're.match(r"[A-Za-z0-9_-]{1,40}$", doc_id)',
        {"document_snapshots"},
        "ends with a newline",
    ),
    (
        PASSAGES,
        "accepts duplicate ids",
        "if len(set(ids)) != len(ids):",
        "if False:",
        {"document_snapshots"},
        "the ids 'd' and 'd' are the same",
    ),
    (
        PASSAGES,
        "allows 33 records",
        "len(records) <= MAX_RECORDS",
        "len(records) <= MAX_RECORDS + 1",
        {"document_snapshots"},
        "there are 33 records",
    ),
    (
        PASSAGES,
        "allows a 101-character title",
        'require_text("title", title, MAX_TITLE)',
        'require_text("title", title, MAX_TITLE + 1)',
        {"document_snapshots"},
        "101 characters",
    ),
    (
        PASSAGES,
        "allows a 20,001-character text",
        'require_text("text", text, MAX_TEXT)',
        'require_text("text", text, MAX_TEXT + 1)',
        {"document_snapshots"},
        "20,001 characters",
    ),
    (
        PASSAGES,
        "hashes lone surrogates",
        'text.encode("utf-8")',
        'text.encode("utf-8", "surrogatepass")',
        {"document_snapshots"},
        "lone surrogate",
    ),
    (
        PASSAGES,
        "accepts a bool window",
        "type(window) is not int",
        "not isinstance(window, int)",
        {"word_chunks"},
        "window True is a bool",
    ),
    (
        PASSAGES,
        "accepts a negative overlap",
        "not 0 <= overlap < window",
        "not overlap < window",
        {"word_chunks"},
        "overlap -1 is below 0",
    ),
    (
        PASSAGES,
        "ends each window a word early",
        "last = min(first + window, len(words))",
        "last = min(first + window - 1, len(words))",
        {"word_chunks"},
        "has word_end 3; expected 4",
    ),
    (
        PASSAGES,
        "ends each chunk one character late",
        "words[last - 1][1]\n",
        "words[last - 1][1] + 1\n",
        {"word_chunks"},
        "chunk 0 (d:0) has end 11; expected 10 (just after word 3: end is exclusive)",
    ),
    (
        PASSAGES,
        "does not stop at the chunk that reaches the last word",
        "        if last == len(words):",
        "        if False:",
        {"word_chunks"},
        "overlap=8 returned 4 chunks; expected 3 (log:0, log:32, log:64)",
    ),
    (
        PASSAGES,
        "trusts the revision",
        'if document["revision"] != fresh["revision"]:',
        "if False:",
        {"word_chunks", "chunk_coverage"},
        "revision no longer matches",
    ),
    (
        PASSAGES,
        "divides duplication by all words",
        "occurrences / covered_words if covered_words",
        "occurrences / len(words) if covered_words",
        {"chunk_coverage"},
        "returned duplication_factor 0.75; expected 1.0",
    ),
    (
        PASSAGES,
        "divides by zero without chunks",
        "occurrences / covered_words if covered_words else None",
        "occurrences / covered_words",
        {"chunk_coverage"},
        "raised ZeroDivisionError: division by zero (main.py, line",
    ),
    (
        PASSAGES,
        "trusts a tampered chunk text",
        'if chunk["text"] != document["text"][start:end]:',
        "if False:",
        {"chunk_coverage"},
        "text 'D E F X' is not the source's text[9:16]",
    ),
    (
        PASSAGES,
        "checks the text but not the offsets",
        "if (start, end) != (words[first][0], words[last - 1][1]):",
        "if False:",
        {"chunk_coverage"},
        "in the spaces before its first word",
    ),
    (
        PASSAGES,
        "accepts bool offsets",
        "type(position) is not int",
        "not isinstance(position, int)",
        {"chunk_coverage"},
        "word_end True, a bool",
    ),
    (
        PASSAGES,
        "allows 20,001 chunks",
        "len(chunks) > MAX_CHUNKS",
        "len(chunks) > MAX_CHUNKS + 1",
        {"chunk_coverage"},
        "20,001 chunks",
    ),
    (
        PASSAGES,
        "accepts duplicate chunk ids",
        'if chunk["id"] in seen:',
        "if False:",
        {"chunk_coverage"},
        "the id d:0 occurs twice",
    ),
    (
        PASSAGES,
        "accepts chunks of another document",
        'chunk["document_id"] != document["id"] or ',
        "",
        {"chunk_coverage"},
        "comes from document e",
    ),
    (
        EMBEDDING_LAB,
        "lets zero vectors give nan",
        "np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)",
        "rows / norms",
        {"cosine_similarity", "top_k"},
        "zero vector",
    ),
    (
        EMBEDDING_LAB,
        "returns a 1x5 matrix for a vector and a matrix",
        "    if a_is_vector:\n        return similarities[0]\n",
        "",
        {"cosine_similarity"},
        "returned an array of shape (1, 5); expected shape (5,)",
    ),
    (
        EMBEDDING_LAB,
        "accepts a vector without components",
        "or array.shape[-1] == 0",
        "",
        {"cosine_similarity"},
        "the vectors have no components",
    ),
    (
        EMBEDDING_LAB,
        "reverses ties",
        'np.argsort(-scores, kind="stable")[:k]',
        'np.argsort(scores, kind="stable")[::-1][:k]',
        {"top_k"},
        "ranks [4, 3, 1, 2, 0]",
    ),
    (
        EMBEDDING_LAB,
        "refuses a k larger than the number of rows",
        "    order = np.argsort",
        "    if k > len(scores):\n        raise ValueError('k too large')\n    order = np.argsort",
        {"top_k"},
        "k larger than the number of rows) raised ValueError: k too large",
    ),
    (
        EMBEDDING_LAB,
        "accepts a bool k in top_k",
        "type(k) is not int or k < 1",
        "not isinstance(k, int) or k < 1",
        {"top_k"},
        "k True is a bool",
    ),
    (
        EMBEDDING_LAB,
        "counts ranks from 0",
        "enumerate(ranking, start=1)",
        "enumerate(ranking)",
        {"reciprocal_rank_fusion"},
        "'a' has score 0.03306010928961749; expected 0.03252247488101534",
    ),
    (
        EMBEDDING_LAB,
        "breaks ties alphabetically",
        "key=lambda pair: -pair[1]",
        "key=lambda pair: (-pair[1], str(pair[0]))",
        {"reciprocal_rank_fusion"},
        "ranks ['b', 'd', 'a', 'c']; expected ['d', 'b', 'c', 'a']",
    ),
    (
        EMBEDDING_LAB,
        "accepts a negative k",
        "type(k) is not int or k < 0",
        "type(k) is not int",
        {"reciprocal_rank_fusion"},
        "k -1 is below 0",
    ),
    (
        EMBEDDING_LAB,
        "accepts an id twice in a ranking",
        "if len(set(ranking)) != len(ranking):",
        "if False:",
        {"reciprocal_rank_fusion"},
        "the id 'a' occurs twice in one ranking",
    ),
]


@pytest.mark.parametrize("folder, wrong, old, new, failing, words", MUTANTS, ids=[mutant[1] for mutant in MUTANTS])
def test_a_solution_wrong_in_one_rule_fails_that_checkpoint_readably(folder, wrong, old, new, failing, words):
    lesson = load_lesson(folder)
    assert lesson.solution.count(old) == 1, f"mutation target not found in {folder.name}/solution.py"
    verdicts = check_all(lesson, lesson.solution.replace(old, new))
    assert {cid for cid, verdict in verdicts.items() if not verdict.passed} == failing
    messages = [verdicts[cid].message for cid in verdicts if cid in failing]
    assert words in messages[0]
    for message in messages:
        assert "\n" not in message and "Traceback" not in message and len(message) < 400


def test_a_check_is_not_fooled_by_a_function_that_changes_its_input():
    # Hands back the learner's own records with a revision added: right values, wrong objects.
    lesson = load_lesson(PASSAGES)
    source = lesson.solution + (
        "\n\n_snapshots = document_snapshots\n\n\n"
        "def document_snapshots(records):\n"
        "    for record, snap in zip(records, _snapshots(records)):\n"
        "        record['revision'] = snap['revision']\n"
        "    return records\n"
    )
    verdict = check(lesson, "document_snapshots", source)
    assert not verdict.passed
    assert "changed the arguments it was given" in verdict.message


def test_normalising_in_place_changes_the_callers_array_and_fails():
    lesson = load_lesson(EMBEDDING_LAB)
    source = lesson.solution.replace("np.array(values, dtype=float)", "np.asarray(values, dtype=float)")
    source = source.replace("out=np.zeros_like(rows)", "out=rows")
    verdict = check(lesson, "cosine_similarity", source)
    assert not verdict.passed
    assert "changed an argument it was given" in verdict.message


def test_code_that_fails_on_loading_is_reported_before_any_check():
    lesson = load_lesson(PASSAGES)
    verdict = check(lesson, "word_chunks", "import re\nwindow = undefined_name\n")
    assert not verdict.passed
    assert verdict.message == (
        "main.py stopped before the check could start: "
        "NameError: name 'undefined_name' is not defined (main.py, line 2)"
    )


def test_a_missing_function_is_named():
    verdict = check(load_lesson(PASSAGES), "chunk_coverage", "def word_chunks():\n    pass\n")
    assert verdict.message == "main.py defines no function chunk_coverage"


def test_a_function_that_exits_fails_the_check_instead_of_stopping_it():
    source = "import sys\n\ndef word_chunks(document, window=40, overlap=8):\n    sys.exit(2)\n"
    verdict = check(load_lesson(PASSAGES), "word_chunks", source)
    assert verdict.message == "the check could not finish: SystemExit: 2 (main.py, line 4)"


def test_an_unknown_checkpoint_is_a_lesson_error():
    with pytest.raises(LessonError, match="no checkpoint 'nope'"):
        check(load_lesson(PASSAGES), "nope", "")


# --- running learner code -----------------------------------------------------------------------

BROKEN = """\
def ratio(a, b):
    return a / b


print("before")
ratio(1, 0)
"""


def test_traceback_shows_the_learners_file_lines_and_source(tmp_path, monkeypatch):
    (tmp_path / "main.py").write_text("a different file on disk\n" * 10)
    monkeypatch.chdir(tmp_path)  # the traceback must not read lines from this file
    result = run_learner_code(BROKEN)
    assert not result.ok
    assert result.stdout == "before\n"
    assert result.traceback.startswith("Traceback (most recent call last):\n")
    assert 'File "main.py", line 6, in <module>\n    ratio(1, 0)\n' in result.traceback
    assert 'File "main.py", line 2, in ratio\n    return a / b\n' in result.traceback
    assert "lessons.py" not in result.traceback and "different file" not in result.traceback
    assert result.error == "ZeroDivisionError: division by zero (main.py, line 2)"


def test_a_syntax_error_names_the_learners_line():
    result = run_learner_code("x = 1\nif x = 2:\n    pass\n")
    assert result.error.startswith("SyntaxError") and result.error.endswith("(main.py, line 2)")
    assert 'File "main.py", line 2' in result.traceback
    assert "Traceback (most recent call last)" not in result.traceback


def test_output_streams_are_captured_apart():
    result = run_learner_code(
        "import sys, warnings\nprint('out')\nprint('err', file=sys.stderr)\nwarnings.warn('careful')\n"
    )
    assert result.ok and result.traceback is None and result.error is None
    assert result.stdout == "out\n"
    assert result.stderr.startswith("err\n") and "UserWarning: careful" in result.stderr


def test_every_run_starts_from_a_fresh_namespace():
    assert run_learner_code("total = 41").namespace["total"] == 41
    result = run_learner_code("total += 1")
    assert result.error == "NameError: name 'total' is not defined (main.py, line 1)"


def test_the_main_guard_runs_on_run_but_not_when_checking():
    source = "def f():\n    return 1\n\nif __name__ == '__main__':\n    print('demo')\n"
    assert run_learner_code(source).stdout == "demo\n"
    assert run_learner_code(source, module_name="main").stdout == ""


def test_the_runners_future_imports_do_not_leak_into_learner_code():
    result = run_learner_code("def f(x: int):\n    pass\nprint(f.__annotations__['x'] is int)\n")
    assert result.stdout == "True\n"


def test_exit_status_zero_is_a_normal_end_and_others_are_errors():
    assert run_learner_code("import sys\nprint('bye')\nsys.exit(0)\nprint('never')\n").stdout == "bye\n"
    assert run_learner_code("import sys\nsys.exit(3)\n").error == "SystemExit: 3 (main.py, line 2)"


# --- validating lessons -------------------------------------------------------------------------


@pytest.fixture
def lessons_copy(tmp_path):
    root = tmp_path / "lessons"
    shutil.copytree(LESSONS_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


BREAKAGES = [
    ("lesson.nl.md", "minutes = 35\n", "", "lesson.nl.md: front matter has no 'minutes'"),
    ("lesson.nl.md", "number = 1\n", "number = 3\n", "lesson.nl.md: number is 3 but lesson.en.md has 1"),
    ("lesson.en.md", "minutes = 35\n", "minutes = true\n", "lesson.en.md: minutes must be an integer, not True"),
    ("lesson.en.md", "+++\n\n# Cut", "\n# Cut", "lesson.en.md: front matter is not closed by a +++ line"),
    (
        "lesson.en.md",
        'next = "embedding-lab"',
        'next = "passages"',
        "lesson.nl.md: next is 'embedding-lab' but lesson.en.md has 'passages'",
    ),
    (
        "lesson.en.md",
        "prerequisites = []",
        'prerequisites = ["embedding-lab"]',
        "lesson.nl.md: prerequisites is () but lesson.en.md has ('embedding-lab',)",
    ),
    (
        "checkpoints.toml",
        'check = "check_word_chunks"',
        'check = "check_word_chunkz"',
        "checks.py has no function check_word_chunkz",
    ),
    (
        "checkpoints.toml",
        'title.nl = "Maak een momentopname van elk document"\n',
        "",
        "checkpoints.toml: checkpoint 'document_snapshots': title needs exactly en, nl",
    ),
    (
        "checkpoints.toml",
        'id = "chunk_coverage"',
        'id = "word_chunks"',
        "checkpoints.toml: checkpoint id 'word_chunks' occurs more than once",
    ),
    (
        "lesson.en.md",
        "## Your turn",
        "```python run\nprint(undefined_name)\n```\n\n## Your turn",
        "lesson.en.md: runnable example 4 fails: NameError: name 'undefined_name' is not defined (example4.py, line 1)",
    ),
    ("widget.json", '"widget": "chunk-explorer",', '"widget": "chunk-explorer"', "widget.json: not valid JSON"),
    (
        "solution.py",
        '"text": text, "revision"',
        '"text": text.strip(), "revision"',
        "solution.py fails checkpoint document_snapshots: document_snapshots(records) for the example",
    ),
    (
        "main.py",
        "import re\n",
        "import re\nre.compile(undefined_pattern)\n",
        "main.py (the starter) does not load: NameError: name 'undefined_pattern' is not defined",
    ),
]


@pytest.mark.parametrize("name, old, new, problem", BREAKAGES, ids=[b[3][:50] for b in BREAKAGES])
def test_validate_lesson_reports_each_broken_rule(lessons_copy, name, old, new, problem):
    folder = lessons_copy / "01-passages"
    edit(folder / name, old, new)
    problems = validate_lesson(folder)
    assert any(p.startswith(problem) for p in problems), problems


def test_prerequisites_and_next_must_follow_the_lesson_order(lessons_copy):
    folder = lessons_copy / "01-passages"
    for name in ("lesson.en.md", "lesson.nl.md"):
        edit(folder / name, "prerequisites = []", 'prerequisites = ["embedding-lab", "nowhere"]')
        edit(folder / name, 'next = "embedding-lab"', 'next = ""')
    assert validate_lesson(folder) == [
        "prerequisite 'embedding-lab' is not an earlier lesson",
        "prerequisite 'nowhere' is not an earlier lesson",
        "next is ''; the following lesson is 'embedding-lab'",
    ]


def test_a_starter_that_passes_is_reported(lessons_copy):
    folder = lessons_copy / "02-embedding-lab"
    (folder / "main.py").write_text((folder / "solution.py").read_text())
    assert validate_lesson(folder) == [
        f"main.py (the starter) already passes checkpoint {cid}"
        for cid in ("cosine_similarity", "top_k", "reciprocal_rank_fusion")
    ]


def test_missing_files_and_a_misnamed_folder_are_reported(lessons_copy):
    folder = lessons_copy / "01-passages"
    (folder / "checks.py").unlink()
    assert validate_lesson(folder) == ["checks.py is missing"]
    renamed = lessons_copy / "07-passages"
    shutil.copytree(PASSAGES, renamed)
    assert "the folder is named '07-passages'; number and id say '01-passages'" in validate_lesson(renamed)
    assert validate_lesson(lessons_copy / "99-nothing") == ["not a directory"]


# --- the CLI ------------------------------------------------------------------------------------


def test_cli_check_passes_the_shipped_lessons(capsys):
    assert main(["lesson", "check", *map(str, LESSONS)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{folder}: ok" for folder in LESSONS]


def test_cli_check_fails_a_broken_copy_and_names_it(lessons_copy, capsys):
    broken = lessons_copy / "02-embedding-lab"
    edit(broken / "solution.py", "enumerate(ranking, start=1)", "enumerate(ranking)")
    edit(broken / "lesson.nl.md", "minutes = 40\n", "minutes = 45\n")
    assert main(["lesson", "check", str(lessons_copy / "01-passages"), str(broken)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{lessons_copy / '01-passages'}: ok",
        f"{broken}: lesson.nl.md: minutes is 45 but lesson.en.md has 40",
    ]
    edit(broken / "lesson.nl.md", "minutes = 45\n", "minutes = 40\n")
    assert main(["lesson", "check", str(broken)]) == 1
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{broken}: solution.py fails checkpoint reciprocal_rank_fusion: ")


def test_cli_list_shows_the_lessons_and_their_index(capsys):
    assert main(["lesson", "list", "--root", str(LESSONS_ROOT)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines] == [["01", "passages"], ["02", "embedding-lab"]]
    assert main(["lesson", "list", "--root", str(LESSONS_ROOT), "--json"]) == 0
    index = json.loads(capsys.readouterr().out)
    assert [entry["folder"] for entry in index] == ["01-passages", "02-embedding-lab"]
    assert "lab.json" in index[1]["files"] and index[0]["next"] == "embedding-lab"
    assert index[1]["checkpoints"][2]["title"]["nl"].startswith("Reciprocal rank fusion")


def test_cli_list_of_a_missing_folder_fails(tmp_path, capsys):
    assert main(["lesson", "list", "--root", str(tmp_path / "none")]) == 1
    assert "not a directory" in capsys.readouterr().err

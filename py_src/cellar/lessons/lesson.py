"""Lessons: the lesson workbench's format, its code runner and its checker.

A lesson is a folder `lessons/<NN>-<id>/` (in the browser: a dict of the same files, fetched):

    lesson.en.md, lesson.nl.md   the prose: `+++` TOML front matter `+++`, then Markdown; fenced
                                 blocks opened with ```python run are runnable examples
    main.py                      the starter the learner edits
    solution.py                  the sample solution
    checkpoints.toml             [[checkpoint]] tables: id, check, and title/task/hint per language
    checks.py                    the hidden tests: for each checkpoint a function that gets the
                                 learner's namespace and raises CheckFailure for the first
                                 expectation that fails
    *.json, *.txt, ...           data for the page (optional)

Learner code is compiled as main.py and run in a fresh namespace every time, so tracebacks show
the learner's own line numbers and nothing carries over from one run or check to the next.
Stdlib only: this module runs in the browser's Pyodide worker. Time limits for endless loops
are the worker's business.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import linecache
import re
import sys
import tomllib
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from cellar.text import shortened

LANGUAGES = ("en", "nl")
REQUIRED_FILES = (
    "lesson.en.md",
    "lesson.nl.md",
    "main.py",
    "solution.py",
    "checkpoints.toml",
    "checks.py",
)
TEXT_SUFFIXES = {".md", ".py", ".toml", ".json", ".txt", ".csv"}
# Front matter keys and their types; `module` and `title` are translated, the others must be
# the same in every language. `next` is "" for the last lesson.
FRONT_MATTER = {
    "id": str,
    "module": str,
    "number": int,
    "title": str,
    "minutes": int,
    "prerequisites": list,
    "next": str,
}
TRANSLATED = ("module", "title")
CHECKPOINT_KEYS = ("id", "check", "title", "task", "hint")
LESSON_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
FOLDER = re.compile(r"(\d{2})-([a-z0-9]+(?:-[a-z0-9]+)*)")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A runnable example: from a line "```python run" to the next line "```" (trailing blanks allowed);
# matched line by line (`runnable_examples`): a regex that searches the rest of the text for a
# close after every opening line takes quadratic time on a page of unclosed fences.
RUNNABLE_OPEN = re.compile(r"```python run[ \t]*")
RUNNABLE_CLOSE = re.compile(r"```[ \t]*")
LEARNER_FILE = "main.py"


class LessonError(ValueError):
    """A lesson's files are missing or malformed; the message names the lesson and the problems."""


class CheckFailure(AssertionError):
    """Raised by a check for the first expectation the learner's code does not meet."""


@dataclass(frozen=True)
class Page:
    """One language's prose of a lesson, with its front matter."""

    lang: str
    id: str
    module: str
    number: int
    title: str
    minutes: int
    prerequisites: tuple[str, ...]
    next: str | None
    body: str

    @property
    def examples(self) -> list[str]:
        """The source of each runnable example (```python run fences), in order."""
        return runnable_examples(self.body)


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint: `check` names its function in checks.py; texts are keyed by language."""

    id: str
    check: str
    title: Mapping[str, str]
    task: Mapping[str, str]
    hint: Mapping[str, str]


@dataclass(frozen=True)
class Lesson:
    id: str
    number: int
    minutes: int
    prerequisites: tuple[str, ...]
    next: str | None
    pages: Mapping[str, Page]
    checkpoints: tuple[Checkpoint, ...]
    files: Mapping[str, str]
    source: str

    @property
    def starter(self) -> str:
        return self.files["main.py"]

    @property
    def solution(self) -> str:
        return self.files["solution.py"]

    def checkpoint(self, checkpoint_id: str) -> Checkpoint:
        for checkpoint in self.checkpoints:
            if checkpoint.id == checkpoint_id:
                return checkpoint
        raise LessonError(f"{self.source}: no checkpoint {checkpoint_id!r}")


@dataclass
class RunResult:
    """What a run of learner code printed, where it stopped (if it did), and what it defined."""

    stdout: str
    stderr: str
    traceback: str | None
    error: str | None  # one line: "NameError: name 'x' is not defined (main.py, line 3)"
    namespace: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.traceback is None


@dataclass(frozen=True)
class Verdict:
    passed: bool
    message: str


# --- reading a lesson ---------------------------------------------------------------------------


def read_lesson_files(path: str | PathLike[str]) -> dict[str, str]:
    """The lesson folder's text files by relative POSIX path (hidden and cache folders skipped).

    A symbolic link in the folder (to a file or a folder) is a LessonError naming it: a lesson is
    published as its files, and a link could bring in one from anywhere on the machine.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise LessonError(f"{folder}: not a directory")
    files = {}
    for file in sorted(folder.rglob("*")):  # (rglob lists a linked folder but does not enter it)
        relative = file.relative_to(folder)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        if file.is_symlink():
            raise LessonError(f"{file}: a symbolic link; a lesson folder holds only its own files (not followed)")
        if file.is_file() and file.suffix in TEXT_SUFFIXES:
            try:
                files[relative.as_posix()] = file.read_text(encoding="utf-8")
            except UnicodeDecodeError as error:
                raise LessonError(f"{file}: not UTF-8 text ({error.reason})") from None
    return files


def load_lesson(path: str | PathLike[str]) -> Lesson:
    """The lesson in a folder; a LessonError lists every problem with its files."""
    return lesson_from_files(read_lesson_files(path), source=str(path))


def lesson_from_files(files: Mapping[str, str], source: str = "<lesson>") -> Lesson:
    """The lesson made of these files (name -> text), as the browser fetches them."""
    lesson, problems = _parse_lesson(dict(files), source)
    if lesson is None or problems:
        raise LessonError(f"{source}: " + "; ".join(problems))
    return lesson


def _parse_lesson(files: dict[str, str], source: str) -> tuple[Lesson | None, list[str]]:
    problems = [f"{name} is missing" for name in REQUIRED_FILES if name not in files]
    pages = {}
    for lang in LANGUAGES:
        name = f"lesson.{lang}.md"
        if name in files:
            page, page_problems = parse_page(files[name], lang)
            problems += page_problems
            if page is not None:
                pages[lang] = page
    if len(pages) == len(LANGUAGES):
        first, *others = LANGUAGES
        for lang in others:
            for key in (key for key in FRONT_MATTER if key not in TRANSLATED):
                theirs, ours = getattr(pages[lang], key), getattr(pages[first], key)
                if theirs != ours:
                    problems.append(f"lesson.{lang}.md: {key} is {theirs!r} but lesson.{first}.md has {ours!r}")
    checkpoints: tuple[Checkpoint, ...] = ()
    if "checkpoints.toml" in files:
        checkpoints, checkpoint_problems = parse_checkpoints(files["checkpoints.toml"])
        problems += checkpoint_problems
    if problems:
        return None, problems
    page = pages[LANGUAGES[0]]
    lesson = Lesson(
        id=page.id,
        number=page.number,
        minutes=page.minutes,
        prerequisites=page.prerequisites,
        next=page.next,
        pages=pages,
        checkpoints=checkpoints,
        files=files,
        source=source,
    )
    return lesson, []


def parse_page(text: str, lang: str) -> tuple[Page | None, list[str]]:
    """A lesson.<lang>.md file: its front matter checked key by key, and its Markdown body."""
    name = f"lesson.{lang}.md"
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "+++":
        return None, [f"{name}: does not start with a +++ line (TOML front matter)"]
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "+++"), None)
    if close is None:
        return None, [f"{name}: front matter is not closed by a +++ line"]
    try:
        front = tomllib.loads("".join(lines[1:close]))
    except (tomllib.TOMLDecodeError, RecursionError) as error:  # not TOML, or nested too deeply
        return None, [f"{name}: front matter is not valid TOML: {_toml_problem(error)}"]
    problems = [f"{name}: front matter has an unknown key {key!r}" for key in front if key not in FRONT_MATTER]
    for key, kind in FRONT_MATTER.items():
        if key not in front:
            problems.append(f"{name}: front matter has no {key!r}")
        elif type(front[key]) is not kind:
            problems.append(f"{name}: {key} must be {_kind_name(kind)}, not {front[key]!r}")
    if problems:
        return None, problems
    problems += _front_matter_values(front, name)
    body = "".join(lines[close + 1 :])
    if not body.strip():
        problems.append(f"{name}: has no text after the front matter")
    if problems:
        return None, problems
    page = Page(
        lang=lang,
        id=front["id"],
        module=front["module"],
        number=front["number"],
        title=front["title"],
        minutes=front["minutes"],
        prerequisites=tuple(front["prerequisites"]),
        next=front["next"] or None,
        body=body,
    )
    return page, []


def _toml_problem(error: Exception) -> str:
    # tomllib parses nested arrays and tables by recursion: deep nesting hits the recursion limit
    return "nested too deeply" if isinstance(error, RecursionError) else str(error)


def runnable_examples(body: str) -> list[str]:
    """The source of each runnable example in a page's Markdown `body`, in order; a fence that is
    never closed holds no example (nor does any fence after it)."""
    examples, start = [], None
    lines = body.split("\n")  # "\n" only: a line ending in "\r" is no fence line
    for number, line in enumerate(lines):
        if start is None:
            # an opening line needs a line after it (the example starts on the next line)
            if number + 1 < len(lines) and RUNNABLE_OPEN.fullmatch(line):
                start = number + 1
        elif RUNNABLE_CLOSE.fullmatch(line):
            examples.append("".join(text + "\n" for text in lines[start:number]))
            start = None
    return examples


def _front_matter_values(front: dict[str, Any], name: str) -> list[str]:
    problems = []
    if not LESSON_ID.fullmatch(front["id"]):
        problems.append(f"{name}: id {front['id']!r} must be lower-case words joined by '-'")
    for key in TRANSLATED:
        if not front[key].strip():
            problems.append(f"{name}: {key} is empty")
    for key in ("number", "minutes"):
        if front[key] < 1:
            problems.append(f"{name}: {key} must be at least 1, not {front[key]}")
    for prerequisite in front["prerequisites"]:
        if not isinstance(prerequisite, str) or not LESSON_ID.fullmatch(prerequisite):
            problems.append(f"{name}: prerequisite {prerequisite!r} is not a lesson id")
    if front["next"] and not LESSON_ID.fullmatch(front["next"]):
        problems.append(f'{name}: next {front["next"]!r} is not a lesson id (or "" for none)')
    return problems


def _kind_name(kind: type) -> str:
    return {str: "a string", int: "an integer", list: "a list of lesson ids"}[kind]


def parse_checkpoints(text: str) -> tuple[tuple[Checkpoint, ...], list[str]]:
    """checkpoints.toml: one [[checkpoint]] table per checkpoint, texts in every language."""
    name = "checkpoints.toml"
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as error:  # not TOML, or nested too deeply
        return (), [f"{name}: not valid TOML: {_toml_problem(error)}"]
    problems = [f"{name}: unknown table or key {key!r}" for key in data if key != "checkpoint"]
    entries = data.get("checkpoint")
    if not isinstance(entries, list) or not entries:
        return (), problems + [f"{name}: has no [[checkpoint]] tables"]
    checkpoints = []
    for position, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):  # `checkpoint = [1]`: a list, but not of tables
            problems.append(f"{name}: checkpoint {position} is not a table")
            continue
        where = f"{name}: checkpoint {entry.get('id', position)!r}"
        entry_problems = [f"{where} has an unknown key {key!r}" for key in entry if key not in CHECKPOINT_KEYS]
        for key in ("id", "check"):
            if not isinstance(entry.get(key), str) or not NAME.fullmatch(entry[key]):
                entry_problems.append(f"{where}: {key} must be a Python name")
        for key in ("title", "task", "hint"):
            texts = entry.get(key)
            if not isinstance(texts, dict) or set(texts) != set(LANGUAGES):
                entry_problems.append(f"{where}: {key} needs exactly {', '.join(LANGUAGES)}")
            elif not all(isinstance(value, str) and value.strip() for value in texts.values()):
                entry_problems.append(f"{where}: {key} has an empty text")
        if entry_problems:
            problems += entry_problems
            continue
        checkpoints.append(Checkpoint(entry["id"], entry["check"], entry["title"], entry["task"], entry["hint"]))
    ids = [checkpoint.id for checkpoint in checkpoints]
    problems += [
        f"{name}: checkpoint id {i!r} occurs more than once" for i in sorted({i for i in ids if ids.count(i) > 1})
    ]
    return tuple(checkpoints), problems


# --- running learner code -----------------------------------------------------------------------


def run_learner_code(source: str, *, filename: str = LEARNER_FILE, module_name: str = "__main__") -> RunResult:
    """Run `source` as the file `filename` in a fresh namespace, capturing stdout and stderr.

    `module_name` is what `__name__` is: "__main__" when the learner presses Run, so that an
    `if __name__ == "__main__":` demo runs; the checker uses another name to skip it.
    """
    namespace: dict[str, Any] = {
        "__name__": module_name,
        "__file__": filename,
        "__builtins__": builtins,
    }
    stdout, stderr = io.StringIO(), io.StringIO()
    report = summary = None
    with (
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
        warnings.catch_warnings(),
        _source_lines(filename, source),
    ):
        warnings.showwarning = _show_warning  # on this run's stderr, whoever else listens
        try:
            # dont_inherit: this module's `from __future__` imports must not leak into the learner's
            exec(compile(source, filename, "exec", dont_inherit=True), namespace)
        except SystemExit as error:
            if error.code not in (None, 0):
                report, summary = _learner_traceback(error, filename)
        except BaseException as error:  # KeyboardInterrupt too: the worker's interrupt stops a loop
            report, summary = _learner_traceback(error, filename)
    return RunResult(stdout.getvalue(), stderr.getvalue(), report, summary, namespace)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _learner_traceback(error: BaseException, filename: str) -> tuple[str, str]:
    """The traceback from the learner's first frame on (the runner's own frames dropped).

    Called while the learner's source is in linecache, so the report shows its lines.
    """
    report = traceback.TracebackException.from_exception(error)
    frames = list(report.stack)
    first = next((i for i, frame in enumerate(frames) if frame.filename == filename), len(frames))
    report.stack = traceback.StackSummary.from_list(frames[first:])
    return "".join(report.format()), _describe(error, filename)


@contextlib.contextmanager
def _source_lines(filename: str, source: str) -> Iterator[None]:
    """Let traceback show the learner's lines: they live in no file (or another file) on disk."""
    saved = linecache.cache.get(filename)
    # An entry without a modification time is never checked against the disk.
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    try:
        yield
    finally:
        if saved is None:
            linecache.cache.pop(filename, None)
        else:
            linecache.cache[filename] = saved


def _describe(error: BaseException, filename: str = LEARNER_FILE) -> str:
    """'ZeroDivisionError: division by zero (main.py, line 12)': the exception and its place."""
    text = traceback.format_exception_only(type(error), error)[-1].strip()
    line = getattr(error, "lineno", None) if isinstance(error, SyntaxError) else None
    frame = error.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code.co_filename == filename:
            line = frame.tb_lineno
        frame = frame.tb_next
    return f"{text} ({filename}, line {line})" if line else text


# --- checking -----------------------------------------------------------------------------------


def check(lesson: Lesson, checkpoint_id: str, source: str) -> Verdict:
    """Run the learner's `source` afresh and the checkpoint's hidden test against it."""
    checkpoint = lesson.checkpoint(checkpoint_id)
    check_function = _check_functions(lesson)[checkpoint.check]
    run = run_learner_code(source, module_name="main")
    if not run.ok:
        return Verdict(False, f"main.py stopped before the check could start: {run.error}")
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")  # what the learner's code prints during a check is not shown
        try:
            check_function(run.namespace)
        except CheckFailure as failure:
            return Verdict(False, str(failure))
        except (Exception, SystemExit) as error:
            return Verdict(False, f"the check could not finish: {_describe(error)}")
    return Verdict(True, "passed")


def check_all(lesson: Lesson, source: str) -> dict[str, Verdict]:
    """The verdict of every checkpoint, in the lesson's order."""
    return {checkpoint.id: check(lesson, checkpoint.id, source) for checkpoint in lesson.checkpoints}


def _check_functions(lesson: Lesson) -> dict[str, Callable[[dict[str, Any]], None]]:
    """checks.py's functions, from a fresh run of it, so a check starts with nothing changed."""
    namespace: dict[str, Any] = {"__name__": "checks", "__builtins__": builtins}
    try:
        exec(compile(lesson.files["checks.py"], "checks.py", "exec", dont_inherit=True), namespace)
    except Exception as error:
        raise LessonError(f"{lesson.source}: checks.py fails: {_describe(error, 'checks.py')}") from None
    functions = {}
    for checkpoint in lesson.checkpoints:
        function = namespace.get(checkpoint.check)
        if not callable(function):
            raise LessonError(f"{lesson.source}: checks.py has no function {checkpoint.check}")
        functions[checkpoint.check] = function
    return functions


# --- helpers for checks.py ----------------------------------------------------------------------


def learner_function(namespace: Mapping[str, Any], name: str) -> Callable[..., Any]:
    """The learner's function `name`, or a CheckFailure saying it is missing."""
    function = namespace.get(name)
    if not callable(function):
        raise CheckFailure(f"main.py defines no function {name}")
    return function


def call(label: str, function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Call a learner's function; if it raises, the check fails naming `label`, the call."""
    try:
        return function(*args, **kwargs)
    except Exception as error:
        raise CheckFailure(f"{label} {_raised(error)}") from None


def expect_value_error(label: str, why: str, function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> None:
    """The call must raise ValueError; `why` finishes the sentence "expected a ValueError because"."""
    try:
        result = function(*args, **kwargs)
    except ValueError:
        return
    except Exception as error:
        raise CheckFailure(f"{label} {_raised(error)}; expected a ValueError because {why}") from None
    raise CheckFailure(f"{label} returned {brief(result)}; expected a ValueError because {why}")


def _raised(error: Exception) -> str:
    if isinstance(error, NotImplementedError):
        return f"is not written yet: {_describe(error)}"
    return f"raised {_describe(error)}"


def brief(value: Any, limit: int = 70) -> str:
    """A repr short enough for a one-line message; a long collection is named by its size."""
    text = repr(value)
    if len(text) <= limit:
        return text
    if isinstance(value, (list, tuple, dict, set)):
        return f"a {type(value).__name__} of {len(value)} items"
    return shortened(text, limit)


# --- validating lessons -------------------------------------------------------------------------


def find_lessons(root: str | PathLike[str]) -> list[Path]:
    """The lesson folders (named NN-id) directly under `root`, in order."""
    if not Path(root).is_dir():
        raise LessonError(f"{root}: not a directory")
    return sorted(path for path in Path(root).iterdir() if path.is_dir() and FOLDER.fullmatch(path.name))


def validate_lesson(path: str | PathLike[str]) -> list[str]:
    """Every problem with the lesson in `path`; an empty list for a lesson that is ready.

    Checked: all files present, front matter complete and the same in every language, the
    folder named <number>-<id>, prerequisites and next naming sibling lessons in order, every
    checkpoint backed by a function in checks.py, runnable examples and data files that work,
    the sample solution passing every checkpoint and the starter passing none.
    """
    folder = Path(path)
    try:
        files = read_lesson_files(folder)
    except LessonError as error:
        return [str(error).removeprefix(f"{folder}: ")]
    lesson, problems = _parse_lesson(files, str(folder))
    if lesson is None:
        return problems
    problems += _placement_problems(lesson, folder)
    problems += _data_problems(files)
    problems += _example_problems(lesson)
    try:
        _check_functions(lesson)
    except LessonError as error:
        return problems + [str(error).removeprefix(f"{lesson.source}: ")]
    problems += _program_problems(lesson)
    for checkpoint_id, verdict in check_all(lesson, lesson.solution).items():
        if not verdict.passed:
            problems.append(f"solution.py fails checkpoint {checkpoint_id}: {verdict.message}")
    for checkpoint_id, verdict in check_all(lesson, lesson.starter).items():
        if verdict.passed:
            problems.append(f"main.py (the starter) already passes checkpoint {checkpoint_id}")
    return problems


def _placement_problems(lesson: Lesson, folder: Path) -> list[str]:
    """The folder's name, and the prerequisites and next lesson among the sibling folders."""
    expected = f"{lesson.number:02d}-{lesson.id}"
    problems = (
        [] if folder.name == expected else [f"the folder is named {folder.name!r}; number and id say {expected!r}"]
    )
    siblings = {}
    for sibling in find_lessons(folder.parent):
        match = FOLDER.fullmatch(sibling.name)
        assert match is not None  # find_lessons keeps only folders whose names match FOLDER
        number, lesson_id = match.groups()
        if sibling.resolve() != folder.resolve():
            siblings[lesson_id] = int(number)
    problems += [
        f"lesson number {lesson.number} is also used by {other}"
        for other, number in siblings.items()
        if number == lesson.number
    ]
    for prerequisite in lesson.prerequisites:
        if siblings.get(prerequisite, lesson.number) >= lesson.number:
            problems.append(f"prerequisite {prerequisite!r} is not an earlier lesson")
    later = sorted((number, other) for other, number in siblings.items() if number > lesson.number)
    following = later[0][1] if later else None
    if lesson.next != following:
        problems.append(f"next is {lesson.next or ''!r}; the following lesson is {following or ''!r}")
    return problems


def _data_problems(files: Mapping[str, str]) -> list[str]:
    problems = []
    for name, text in files.items():
        if name.endswith(".json"):
            try:
                json.loads(text)
            except (ValueError, RecursionError) as error:  # not JSON, or nested too deeply
                problems.append(f"{name}: not valid JSON: {error}")
    return problems


def _example_problems(lesson: Lesson) -> list[str]:
    problems = []
    for lang, page in lesson.pages.items():
        for number, example in enumerate(page.examples, 1):
            run = run_learner_code(example, filename=f"example{number}.py")
            if not run.ok:
                problems.append(f"lesson.{lang}.md: runnable example {number} fails: {run.error}")
    return problems


def _program_problems(lesson: Lesson) -> list[str]:
    """The starter must load for the checker; the solution must also run as a program."""
    problems = []
    starter = run_learner_code(lesson.starter, module_name="main")
    if not starter.ok:
        problems.append(f"main.py (the starter) does not load: {starter.error}")
    solution = run_learner_code(lesson.solution, filename="solution.py")
    if not solution.ok:
        problems.append(f"solution.py fails when run: {solution.error}")
    return problems


def lesson_summary(lesson: Lesson) -> dict[str, Any]:
    """What a lesson index needs, JSON-ready: metadata, texts by language, checkpoints, files."""
    return {
        "id": lesson.id,
        "number": lesson.number,
        "minutes": lesson.minutes,
        "prerequisites": list(lesson.prerequisites),
        "next": lesson.next,
        "title": {lang: page.title for lang, page in lesson.pages.items()},
        "module": {lang: page.module for lang, page in lesson.pages.items()},
        "checkpoints": [
            {"id": c.id, "title": dict(c.title), "task": dict(c.task), "hint": dict(c.hint)} for c in lesson.checkpoints
        ],
        "files": sorted(lesson.files),
    }


def catalog(root: str | PathLike[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Summaries of the lessons under `root` (each with its folder), and the folders that fail to load."""
    entries, problems = [], []
    for folder in find_lessons(root):
        try:
            entries.append({"folder": folder.name, **lesson_summary(load_lesson(folder))})
        except LessonError as error:
            problems.append(str(error))
    return entries, problems

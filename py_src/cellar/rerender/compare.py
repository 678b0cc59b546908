r"""Compare a notebook's saved outputs with fresh ones, the way nbval does, and give it a status.

Per code cell, saved and fresh outputs are normalised and then aligned (difflib, so that one extra
warning does not shift every later output); each output is `same`, `changed` (with a unified
diff), `missing` (saved, not produced again) or `new` (produced, never saved). A notebook is

- `stale` when the run failed: it was stopped (a time limit), could not start (a requirement with
  no WebAssembly build), or a cell raised an error that the saved notebook does not have; the
  reason is kept (`cell 2: NotInPathMap: ...`);
- `drifted` when it ran but some output is not the same;
- `clean` when every output is the same.

Normalisation (nbval's rules, adapted):
- volatile fields are skipped: execution counts, output metadata, tracebacks (only an error's
  `ename` and `evalue` count), and `application/javascript`, widget views and other MIME types that
  carry no result;
- consecutive stream outputs of one stream are merged, and a stream left empty by the sanitisers
  is dropped (`%time` lines, for one);
- for rich outputs, text/plain is compared when both sides have it (a DataFrame's HTML repeats it
  with styling that changes between pandas versions); otherwise text/html, text/markdown,
  text/latex or application/json;
- every text passes through the sanitisers: (regex, replacement) pairs, `DEFAULT_SANITIZERS`
  (memory addresses, timestamps, site-packages and interpreter paths, timings) plus any that the
  archive adds in `rerender.json` (`{"sanitizers": [["regex", "replacement"], ...]}`). An
  archive's pattern, and an output built to make one of ours backtrack, must not hold the host:
  on the host the sanitisers run on the `regex` engine, whose matching a time limit stops, and
  all of one comparison may take `SANITIZE_SECONDS` (past it the notebook is stale, the batch
  goes on). In the tab, where Pyodide has no build of `regex`, they run on `re`, and the page's
  time limit on the Re-render call ends the worker instead.

Images: two outputs whose image is byte-identical are the same. Otherwise their sizes must agree
within `SIZE_SLACK` pixels (a tight bounding box rounds differently between renderers), and then,
decoded with Pillow (when it is there), greyscale thumbnails at a quarter of the saved size must
agree: at most `IMAGE_TOLERANCE` (1 %) of their pixels may differ by more than `PIXEL_THRESHOLD`
grey levels. Anti-aliasing, font hinting and a one-pixel shift average out in the thumbnail; a moved
curve, bar or label does not. Without Pillow, images of about the same size are the same. A
different MIME type is a change.
"""

from __future__ import annotations

import base64
import difflib
import io
import re
import struct
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from cellar.ingest.notebook import Notebook, Output

try:  # the host's engine (see the module docstring)
    import regex
except ImportError:  # the tab's
    regex = None

DEFAULT_SANITIZERS: tuple[tuple[str, str], ...] = (
    (r"0x[0-9a-fA-F]{6,16}", "0xADDRESS"),
    (r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?", "TIMESTAMP"),
    # A path starts where a run of path characters starts (the lookbehind): tried from every
    # character of a long run instead, the lazy scan to its end made a saved output of 60,000
    # letters take 100 s.
    (r"(?<![\w./\\~-])(?:[A-Za-z]:)?[\w./\\~-]*?[\\/](?:site|dist)-packages[\\/]", "<site-packages>/"),
    (r"(?<![\w./\\~-])(?:[A-Za-z]:)?[\w./\\~-]*?[\\/]lib[\\/]python3(?:\.?\d+)?(?:\.zip)?[\\/]", "<python>/"),
    (r"(?m)^(?:CPU times|Wall time):.*\n?", ""),
    (r"(?m)^.*\d(?: ?[nµum]?s) ± .* per loop \(mean ± std\. dev\. of .*\n?", ""),
)
SANITIZE_SECONDS = 60.0  # what the sanitisers may take over all the outputs of one comparison
# A compiled pattern (the `regex` engine's on the host, `re`'s in the tab) and its replacement
Sanitizer = tuple[Any, str]
RESULT_MIMES = ("text/plain", "text/html", "text/markdown", "text/latex", "application/json")
IMAGE_TOLERANCE = 0.01  # share of thumbnail pixels that may differ
PIXEL_THRESHOLD = 32  # grey levels (of 255) a thumbnail pixel must move to count
SIZE_SLACK = 2  # pixels: `bbox_inches="tight"` rounds the size by one either way between renderers


@dataclass(frozen=True)
class OutputDiff:
    """One saved/fresh output pair: `status` same | changed | missing | new, `diff` when changed."""

    status: str
    kind: str  # stream:stdout, stream:stderr, result, image/png, error
    saved: int | None  # index among the cell's saved outputs
    fresh: int | None
    diff: str = ""


@dataclass(frozen=True)
class CellDiff:
    cell: int  # index in the notebook's cells
    outputs: tuple[OutputDiff, ...]

    @property
    def same(self) -> bool:
        return all(output.status == "same" for output in self.outputs)


@dataclass(frozen=True)
class NotebookComparison:
    """A notebook's status (clean | drifted | stale), the reason for stale, and the cells that differ."""

    path: str
    status: str
    reason: str | None
    cells: tuple[CellDiff, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Normalised:
    kind: str
    key: str  # what is compared (images: a digest-free description, see `_same`)
    text: str  # what a diff shows
    index: int
    image: bytes | None = None
    error: bool = False


def compile_sanitizers(extra: Sequence[Sequence[str]] = ()) -> tuple[Sanitizer, ...]:
    """The default sanitisers followed by an archive's own `[regex, replacement]` pairs, each
    checked as `re` reads it (the tab's engine): a bad regex, or a replacement that names a group
    the regex lacks, is a ValueError naming it, when the settings are read, not in mid-batch."""
    pairs = list(DEFAULT_SANITIZERS) + [tuple(pair) for pair in extra]
    compiled = []
    for pair in pairs:
        if len(pair) != 2 or not all(isinstance(part, str) for part in pair):
            raise ValueError(f"a sanitizer is [regex, replacement], two strings, not {list(pair)!r}")
        try:
            pattern = re.compile(pair[0])
        except re.error as error:
            raise ValueError(f"sanitizer {pair[0]!r} is not a valid regex: {error}") from None
        try:
            pattern.sub(pair[1], "")  # re reads the replacement's group references here
        except re.error as error:
            raise ValueError(f"the replacement {pair[1]!r} of sanitizer {pair[0]!r} is not valid: {error}") from None
        compiled.append((regex.compile(pair[0]) if regex else pattern, pair[1]))
    return tuple(compiled)


def sanitize(text: str, sanitizers: Sequence[Sanitizer], deadline: float | None = None) -> str:
    """`text` through each sanitiser in turn; on the host, a ValueError naming the pattern once
    `deadline` (`time.monotonic()`; default `SANITIZE_SECONDS` from now) has passed."""
    deadline = time.monotonic() + SANITIZE_SECONDS if deadline is None else deadline
    for pattern, replacement in sanitizers:
        if regex is None:
            text = pattern.sub(replacement, text)
            continue
        try:
            text = pattern.sub(replacement, text, timeout=max(deadline - time.monotonic(), 0.001))
        except TimeoutError:
            raise ValueError(
                f"the outputs took the sanitizers more than {SANITIZE_SECONDS:g} s (sanitizer "
                f"{pattern.pattern!r} over a text of {len(text):,} characters): a pattern that backtracks without end?"
            ) from None
    return text


def normalise(
    outputs: Sequence[Output], sanitizers: Sequence[Sanitizer], deadline: float | None = None
) -> list[_Normalised]:
    """A cell's outputs reduced to what is compared (see the module docstring); `deadline` as
    `sanitize`'s."""
    merged: list[_Normalised] = []
    for output in outputs:
        if output.output_type == "stream":
            kind = f"stream:{output.name}"
            if merged and merged[-1].kind == kind:
                last = merged.pop()
                text = last.text + (output.text or "")
                merged.append(_Normalised(kind, text, text, last.index))
            else:
                merged.append(_Normalised(kind, output.text or "", output.text or "", output.index))
        elif output.output_type == "error":
            text = f"{output.ename}: {output.evalue}"
            merged.append(_Normalised("error", text, text, output.index, error=True))
        elif output.output_type in ("execute_result", "display_data"):
            merged.extend(_rich(output))
    result = []
    for item in merged:
        text = sanitize(item.text, sanitizers, deadline)
        if item.kind.startswith("stream:") and not text:
            continue
        key = item.key if item.image is not None else text
        result.append(_Normalised(item.kind, key, text, item.index, item.image, item.error))
    return result


def _rich(output: Output) -> list[_Normalised]:
    """An execute_result or display_data: its image (if any) and its comparable text."""
    found = []
    images = sorted(mime for mime in output.data if mime.startswith("image/") and mime != "image/svg+xml")
    if images:
        data = _decode(output.data[images[0]])
        found.append(_Normalised(images[0], images[0], f"<{images[0]} {_describe(data)}>", output.index, image=data))
    for mime in RESULT_MIMES:
        if mime in output.data and (mime == "text/plain" or "text/plain" not in output.data):
            if images and mime == "text/plain":
                break  # a figure's text/plain is "<Figure size ...>", implied by the image
            found.append(_Normalised("result", output.data[mime], output.data[mime], output.index))
            break
    return found


def _decode(text: str) -> bytes:
    try:
        return base64.b64decode("".join(text.split()))
    except ValueError:
        return text.encode()


def png_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG's IHDR chunk; None for anything else."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def _describe(data: bytes) -> str:
    size = png_size(data)
    return f"{size[0]}x{size[1]}" if size else f"{len(data)} bytes"


def images_match(a: bytes, b: bytes) -> tuple[bool, str]:
    """Whether two images count as the same (the rule in the module docstring), and why not."""
    if a == b:
        return True, ""
    size_a, size_b = png_size(a), png_size(b)
    if size_a and size_b and max(abs(size_a[0] - size_b[0]), abs(size_a[1] - size_b[1])) > SIZE_SLACK:
        return False, f"size {_describe(a)} -> {_describe(b)}"
    try:
        import numpy
        from PIL import Image
    except ImportError:
        return True, ""
    try:
        first, second = (Image.open(io.BytesIO(data)).convert("L") for data in (a, b))
    except Exception as error:  # noqa: BLE001  (a damaged image is a change, not a crash)
        return False, f"cannot decode: {error}"
    if max(abs(first.width - second.width), abs(first.height - second.height)) > SIZE_SLACK:
        return False, f"size {first.width}x{first.height} -> {second.width}x{second.height}"
    # Thumbnails at a quarter of the saved size: a pixel of shift or of anti-aliasing averages out,
    # a moved curve, bar or label does not.
    thumb = (max(1, first.width // 4), max(1, first.height // 4))
    old, new = (
        numpy.asarray(image.resize(thumb, Image.Resampling.BOX), dtype=numpy.int16) for image in (first, second)
    )
    moved = float((abs(old - new) > PIXEL_THRESHOLD).mean())
    return moved <= IMAGE_TOLERANCE, f"{moved:.1%} of the picture differs"


def _pair(saved: _Normalised, fresh: _Normalised) -> OutputDiff:
    if saved.image is not None and fresh.image is not None and saved.kind == fresh.kind:
        same, why = images_match(saved.image, fresh.image)
        return OutputDiff(
            "same" if same else "changed", saved.kind, saved.index, fresh.index, "" if same else f"image: {why}"
        )
    if saved.kind == fresh.kind and saved.key == fresh.key:
        return OutputDiff("same", saved.kind, saved.index, fresh.index)
    return OutputDiff("changed", fresh.kind, saved.index, fresh.index, text_diff(saved.text, fresh.text))


def text_diff(saved: str, fresh: str, limit: int = 40) -> str:
    """A unified diff, saved -> fresh, cut to `limit` lines."""
    lines = list(difflib.unified_diff(saved.splitlines(), fresh.splitlines(), "saved", "fresh", n=1, lineterm=""))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
    return "\n".join(lines)


def compare_cell(
    cell: int,
    saved: Sequence[Output],
    fresh: Sequence[Output],
    sanitizers: Sequence[Sanitizer],
    deadline: float | None = None,
) -> CellDiff:
    """Align a cell's normalised saved and fresh outputs and label each pair (`deadline` as
    `sanitize`'s)."""
    deadline = time.monotonic() + SANITIZE_SECONDS if deadline is None else deadline
    old, new = normalise(saved, sanitizers, deadline), normalise(fresh, sanitizers, deadline)
    signature = [(item.kind, item.key if item.image is None else item.kind) for item in old]
    matcher = difflib.SequenceMatcher(
        None, signature, [(item.kind, item.key if item.image is None else item.kind) for item in new], autojunk=False
    )
    diffs: list[OutputDiff] = []
    for _, a0, a1, b0, b1 in matcher.get_opcodes():
        pairs = min(a1 - a0, b1 - b0)
        diffs += [_pair(old[a0 + k], new[b0 + k]) for k in range(pairs)]
        diffs += [
            OutputDiff("missing", item.kind, item.index, None, text_diff(item.text, ""))
            for item in old[a0 + pairs : a1]
        ]
        diffs += [
            OutputDiff("new", item.kind, None, item.index, text_diff("", item.text)) for item in new[b0 + pairs : b1]
        ]
    return CellDiff(cell, tuple(diffs))


def first_new_error(saved: Sequence[Output], fresh: Sequence[Output]) -> Output | None:
    """The first fresh error output whose ename and evalue the saved outputs do not have."""
    known = {(output.ename, output.evalue) for output in saved if output.output_type == "error"}
    return next(
        (output for output in fresh if output.output_type == "error" and (output.ename, output.evalue) not in known),
        None,
    )


def compare_notebooks(
    saved: Notebook,
    fresh: Notebook,
    sanitizers: Sequence[Sanitizer] = compile_sanitizers(),
    stopped: str | None = None,
) -> NotebookComparison:
    """The status of a re-run: `fresh` has the same cells as `saved`, with the outputs of the run.

    `stopped` is why the run stopped early (cells after it have no fresh outputs); it makes the
    notebook stale. The sanitisers may take `SANITIZE_SECONDS` over all its outputs (a ValueError
    beyond, naming the pattern).
    """
    deadline = time.monotonic() + SANITIZE_SECONDS
    if len(saved.cells) != len(fresh.cells):
        raise ValueError(f"{saved.path}: {len(saved.cells)} saved cells but {len(fresh.cells)} fresh ones")
    reason = stopped
    cells = []
    for old, new in zip(saved.cells, fresh.cells):
        if old.cell_type != "code":
            continue
        if reason is None and (error := first_new_error(old.outputs, new.outputs)) is not None:
            reason = f"cell {old.index}: {error.ename}: {error.evalue}"
        diff = compare_cell(old.index, old.outputs, new.outputs, sanitizers, deadline)
        if not diff.same:
            cells.append(diff)
    status = "stale" if reason else "drifted" if cells else "clean"
    return NotebookComparison(saved.path, status, reason, tuple(cells))

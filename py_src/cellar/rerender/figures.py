"""Figures described from their objects: what a re-rendered matplotlib figure shows, in words.

In: a matplotlib `Figure` (inside the sandbox, just before the inline backend turns it into an
image/png output). Out: a short plain-English description that the sandbox stores in the
output's metadata (`metadata["cellar"]["figure"]`) and the chunker indexes with the plot chunk:

    describe(fig)
    # 'Figure. "Ballast tank volumes": line plot (2 lines); "forepeak" 50 points y from 0 to
    #  412.1 x from 0 to 10, "aft peak" 50 points y from 188 to 288 x from 0 to 10; x axis
    #  "Time [h]"; y axis "Volume [m3]"; legend: forepeak, aft peak.'

What is read, per axes: the title (and the figure's suptitle), the axis labels (units are what
the labels say, plus a log scale, dates, and categories or fixed tick labels), the legend's entries, the plot type
(line, scatter, bar chart, histogram, image, contour, colour mesh, filled area, pie, and so on),
the number of series and their data ranges. A colour bar is named by its label.

Deterministic (the same figure gives the same bytes: numbers as `.4g`, no ids or addresses) and
bounded (at most MAX_AXES axes, MAX_SERIES series each, MAX_CHARS characters). It never draws
the figure and never raises: a part it cannot read is left out, and a figure it cannot read at
all is described as "" (the output is then indexed with its caption only).

matplotlib is imported on first use, so the module imports without it. A few attributes read are
matplotlib 3.8's private ones (the suptitle, a colour bar's mark, a categorical axis's mapping);
each is read as any other part, so a matplotlib without them only loses that part.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from cellar.text import shortened

Formatter = Callable[[Any], str]

MAX_CHARS = 1200  # the longest description
MAX_AXES = 6  # axes described (a grid of small multiples says the rest as a count)
MAX_SERIES = 6  # series named per axes
MAX_LABEL = 80  # characters of one title, label or legend entry
MAX_CATEGORIES = 8  # category names of a categorical axis


def describe(figure: Any) -> str:
    """The description of `figure` (see the module's docstring); "" when nothing can be read."""
    try:
        parts = _figure(figure)
    except Exception:  # a figure it cannot read must never break a re-run
        return ""
    return _bounded(" ".join(parts)) if parts != ["Figure."] else ""


def _figure(figure: Any) -> list[str]:
    axes = [ax for ax in _safe(lambda: list(figure.axes), []) if _safe(ax.get_visible, True)]
    colourbars = [ax for ax in axes if _is_colourbar(ax)]
    plots = [ax for ax in axes if ax not in colourbars]
    suptitle = _label(_safe(lambda: figure._suptitle.get_text() if figure._suptitle else "", ""))
    head = "Figure" + (f" {_quoted(suptitle)}" if suptitle else "")
    if len(plots) > 1:
        head += f" with {len(plots)} axes"
    parts = [head + "."]
    for number, ax in enumerate(plots[:MAX_AXES], 1):
        described = _axes(ax)
        if described:
            parts.append((f"Axes {number} " if len(plots) > 1 else "") + described)
    if len(plots) > MAX_AXES:
        parts.append(f"{len(plots) - MAX_AXES} more axes.")
    for ax in colourbars:
        label = _label(_safe(ax.get_ylabel, "") or _safe(ax.get_xlabel, ""))
        parts.append(f"Colour bar {_quoted(label)}." if label else "Colour bar.")
    return parts


def _axes(ax: Any) -> str:
    titles = [_label(_safe(lambda loc=loc: ax.get_title(loc=loc), "")) for loc in ("center", "left", "right")]
    title = "; ".join(_quoted(t) for t in titles if t)
    kinds, series = _contents(ax)
    what = ", ".join(kinds) if kinds else "empty axes"
    sentence = [f"{title}: {what}" if title else what[0].upper() + what[1:]]
    if series:
        sentence.append(series)
    for name in ("x", "y", "z") if hasattr(ax, "zaxis") else ("x", "y"):
        axis = _axis(ax, name)
        if axis:
            sentence.append(axis)
    legend = _legend(ax)
    if legend:
        sentence.append(f"legend: {legend}")
    return "; ".join(sentence) + "."


# -- what the axes hold ---------------------------------------------------------------------------


def _contents(ax: Any) -> tuple[list[str], str]:
    """The plot types of `ax` (with counts) and its series, described."""
    from matplotlib import collections as mcoll
    from matplotlib import patches as mpatches
    from matplotlib.container import BarContainer

    kinds: list[str] = []
    series: list[str] = []
    lines = [line for line in _safe(ax.get_lines, []) if _safe(line.get_visible, True) and _length(line) > 0]
    bars = [c for c in _safe(lambda: list(ax.containers), []) if isinstance(c, BarContainer)]
    in_bars = {id(patch) for container in bars for patch in container.patches}
    for container in bars:
        histogram = _is_histogram(container)
        name = "histogram" if histogram else "bar chart"
        if _safe(lambda c=container: c.orientation, "vertical") == "horizontal" and not histogram:
            name = "horizontal bar chart"
        kinds.append(f"{name} ({_count(len(container.patches), 'bin' if histogram else 'bar')})")
        series.append(_bar_series(container, histogram))
    if lines:
        kinds.append(f"line plot ({_count(len(lines), 'line')})")
        x_value, y_value = _formatter(ax, "x"), _formatter(ax, "y")
        series += [_line_series(line, x_value, y_value) for line in lines]
    for collection in _safe(lambda: list(ax.collections), []):
        if not _safe(collection.get_visible, True):
            continue
        kind = _collection_kind(collection, mcoll)
        if kind == "scatter plot":
            offsets = _safe(collection.get_offsets, None)
            count = len(offsets) if offsets is not None else 0
            series.append(_series(collection, count, offsets, _formatter(ax, "x"), _formatter(ax, "y")))
            kind += f" ({_count(count, 'point')})"
        kinds.append(kind)
    for image in _safe(lambda: list(ax.images), []):
        shape = _safe(lambda image=image: image.get_array().shape, ())
        size = f" ({shape[0]} x {shape[1]})" if len(shape) >= 2 else ""
        kinds.append("image" + size)
    patches = [p for p in _safe(lambda: list(ax.patches), []) if id(p) not in in_bars]
    wedges = sum(isinstance(p, mpatches.Wedge) for p in patches)
    if wedges:
        kinds.append(f"pie chart ({_count(wedges, 'wedge')})")
    arrows = sum(isinstance(p, (mpatches.FancyArrow, mpatches.FancyArrowPatch)) for p in patches)
    if arrows:
        kinds.append(f"arrows ({arrows})")
    if any(isinstance(p, mpatches.Polygon) and not isinstance(p, mpatches.FancyArrow) for p in patches):
        kinds.append("filled shape")
    if _safe(lambda: ax.name, "") in ("3d", "polar"):
        kinds = [f"{ax.name} {kind}" for kind in kinds] or [f"{ax.name} axes"]
    if _safe(lambda: ax.name, "") == "3d":
        series = []  # a 3d artist's 2d data is its projection on the screen: no ranges to give
    shown = [text for text in series if text][:MAX_SERIES]
    more = len([text for text in series if text]) - len(shown)
    return _unique(kinds), ", ".join(shown) + (f" and {more} more series" if more > 0 else "")


def _collection_kind(collection: Any, mcoll: Any) -> str:
    from matplotlib.contour import ContourSet

    named = {"Poly3DCollection": "surface", "Line3DCollection": "wireframe"}.get(type(collection).__name__)
    if named:
        return named

    if isinstance(collection, ContourSet):
        return "filled contour plot" if _safe(lambda: collection.filled, False) else "contour plot"
    if isinstance(collection, mcoll.PathCollection):
        return "scatter plot"
    if isinstance(collection, mcoll.QuadMesh):
        return "colour mesh"
    if isinstance(collection, mcoll.PolyCollection):
        return "filled area"
    if isinstance(collection, mcoll.LineCollection):
        return "line segments"
    return type(collection).__name__


def _is_histogram(container: Any) -> bool:
    """Bars that touch, edge to edge, of equal width: what `hist` draws."""
    rects = list(container.patches)
    if len(rects) < 3:
        return False
    horizontal = _safe(lambda: container.orientation, "vertical") == "horizontal"
    starts = [float(r.get_y() if horizontal else r.get_x()) for r in rects]
    sizes = [float(r.get_height() if horizontal else r.get_width()) for r in rects]
    scale = max(abs(s) for s in sizes) or 1.0
    touching = all(abs(starts[i] + sizes[i] - starts[i + 1]) <= 1e-6 * scale for i in range(len(rects) - 1))
    return touching and max(sizes) - min(sizes) <= 1e-6 * scale


def _bar_series(container: Any, histogram: bool) -> str:
    horizontal = _safe(lambda: container.orientation, "vertical") == "horizontal"
    values = [float(r.get_width() if horizontal else r.get_height()) for r in container.patches]
    label = _series_label(container)
    if histogram:
        rects = container.patches
        low = rects[0].get_y() if horizontal else rects[0].get_x()
        last = rects[-1]
        high = (last.get_y() + last.get_height()) if horizontal else (last.get_x() + last.get_width())
        text = f"bins from {_number(low)} to {_number(high)}, counts up to {_number(max(values, default=0))}"
    else:
        text = f"values from {_range(values)}"
    return f"{_quoted(label)} {text}" if label else text


def _line_series(line: Any, x_value: Formatter, y_value: Formatter) -> str:
    x = _safe(lambda: line.get_xdata(orig=False), None)
    y = _safe(lambda: line.get_ydata(orig=False), None)
    label = _series_label(line)
    parts = [f"{_count(_length(line), 'point')}"]
    if y is not None and len(_finite(y)):
        parts.append(f"y from {_range(y, y_value)}")
    if x is not None and len(_finite(x)) and not _is_index(x):
        parts.append(f"x from {_range(x, x_value)}")
    text = " ".join(parts)
    return f"{_quoted(label)} {text}" if label else text


def _series(collection: Any, count: int, offsets: Any, x_value: Formatter, y_value: Formatter) -> str:
    label = _series_label(collection)
    parts = [_count(count, "point")]
    if offsets is not None and count:
        try:
            parts += [f"x from {_range(offsets[:, 0], x_value)}", f"y from {_range(offsets[:, 1], y_value)}"]
        except Exception:
            pass
    text = " ".join(parts)
    return f"{_quoted(label)} {text}" if label else text


def _series_label(artist: Any) -> str:
    label = _label(_safe(artist.get_label, ""))
    return "" if label.startswith("_") else label  # "_child0", "_nolegend_": not a name


def _legend(ax: Any) -> str:
    legend = _safe(ax.get_legend, None)
    if legend is None:
        return ""
    texts = [_label(_safe(text.get_text, "")) for text in _safe(legend.get_texts, [])]
    title = _label(_safe(lambda: legend.get_title().get_text(), ""))
    entries = ", ".join(t for t in texts if t)
    return f"{_quoted(title)}: {entries}" if title and entries else entries or title


def _axis(ax: Any, name: str) -> str:
    """One axis: its label, scale, categories or date span."""
    label = _label(_safe(getattr(ax, f"get_{name}label"), ""))
    axis = getattr(ax, f"{name}axis")
    parts = [f"{name} axis" + (f" {_quoted(label)}" if label else "")]
    scale = _safe(getattr(ax, f"get_{name}scale"), "linear")
    if scale != "linear":
        parts.append(f"{scale} scale")
    categories = _categories(axis)
    if categories:
        parts.append("categories " + categories)
    elif _is_dates(axis):
        low, high = _safe(lambda: getattr(ax.dataLim, f"interval{name}"), (math.nan, math.nan))
        if math.isfinite(low) and math.isfinite(high):
            parts.append(f"dates from {_range((low, high), _date)}")
    return " ".join(parts) if len(parts) > 1 or label else ""


def _categories(axis: Any) -> str:
    """The names along a categorical axis (strings plotted), or its fixed tick labels (pandas'
    bar charts, `set_xticks(..., labels=...)`)."""
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    mapping = _safe(lambda: axis.units._mapping, None)  # matplotlib.category.UnitData
    if not isinstance(mapping, dict) or not mapping:
        fixed = isinstance(_safe(axis.get_major_formatter, None), (FixedFormatter, FuncFormatter))
        texts = [_safe(text.get_text, "") for text in _safe(axis.get_ticklabels, [])] if fixed else []
        named = any(character.isalpha() for text in texts for character in text)
        mapping = {text: None for text in texts if text.strip()} if named else {}
    if not mapping:
        return ""
    names = [_label(str(key)) for key in list(mapping)[:MAX_CATEGORIES]]
    more = len(mapping) - len(names)
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def _is_dates(axis: Any) -> bool:
    from matplotlib import dates

    formatter = _safe(axis.get_major_formatter, None)
    return isinstance(formatter, (dates.AutoDateFormatter, dates.ConciseDateFormatter, dates.DateFormatter))


def _formatter(ax: Any, name: str) -> Formatter:
    """How the values of axis `name` are written: dates as dates, the rest as numbers."""
    return _date if _is_dates(getattr(ax, f"{name}axis")) else _number


def _date(value: Any) -> str:
    """A date axis's value (days since matplotlib's epoch) as an ISO date, or a time within a day."""
    from matplotlib import dates

    moment = dates.num2date(float(value))
    return (
        moment.date().isoformat() if moment.time() == moment.time().min else moment.isoformat(timespec="minutes")[:16]
    )


# -- small helpers --------------------------------------------------------------------------------


def _safe(read: Any, default: Any) -> Any:
    try:
        return read()
    except Exception:
        return default


def _is_colourbar(ax: Any) -> bool:
    return getattr(ax, "_colorbar", None) is not None or _safe(ax.get_label, "") == "<colorbar>"


def _length(line: Any) -> int:
    return _safe(lambda: len(line.get_ydata(orig=False)), 0)


def _finite(values: Any) -> Any:
    """The finite numbers among `values` as a flat NumPy array (empty if they are not numbers):
    NumPy, not a loop, so that a line of a million points costs milliseconds."""
    import numpy as np

    try:
        numbers = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError):
        return np.empty(0)
    return numbers[np.isfinite(numbers)]


def _is_index(values: Any) -> bool:
    """x that is 0, 1, 2, ...: a plot of y alone, whose x range says nothing."""
    import numpy as np

    numbers = _finite(values)
    return len(numbers) > 1 and bool(np.array_equal(numbers, np.arange(len(numbers))))


def _range(values: Iterable[Any], write: Formatter | None = None) -> str:
    write = write or _number
    numbers = _finite(values)
    if not len(numbers):
        return "no finite values"
    low, high = float(numbers.min()), float(numbers.max())
    # rounding noise of a computed zero (-7.105e-14 beside -45) is 0
    noise = 1e-9 * max(abs(low), abs(high))
    low, high = (0.0 if abs(value) < noise else value for value in (low, high))
    try:
        return write(low) if low == high else f"{write(low)} to {write(high)}"
    except Exception:  # a value the axis's converter cannot write
        return _number(low) if low == high else f"{_number(low)} to {_number(high)}"


def _number(value: Any) -> str:
    number = float(value)
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return format(number, ".4g")


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _label(text: Any) -> str:
    """A title, label or entry on one line, mathtext dollars kept, cut to MAX_LABEL characters."""
    words = " ".join(str(text or "").split())
    return shortened(words, MAX_LABEL)


def _quoted(text: str) -> str:
    return f'"{text}"'


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _bounded(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    cut = text[: MAX_CHARS - 1]
    return cut[: cut.rfind(" ")].rstrip(" ,;") + "…" if " " in cut else cut + "…"

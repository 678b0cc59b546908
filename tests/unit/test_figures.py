"""Plots described from the figure itself (cellar.rerender.figures) and indexed with the plot chunk.

`describe(fig)` reads a real matplotlib figure (Agg, the same matplotlib 3.8 that Pyodide
ships): titles, axis labels with their units, legend entries, plot types, series and ranges.
The sandbox puts that text in a re-rendered figure's output metadata; the chunker indexes it
with the plot chunk of a fresh notebook, beside the caption, and never for saved outputs.
"""

from __future__ import annotations

import base64
import json

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from cellar.ingest.chunking import chunk_notebook  # noqa: E402
from cellar.ingest.notebook import read_notebook  # noqa: E402
from cellar.rerender.figures import MAX_CHARS, describe  # noqa: E402
from cellar.retrieval.incremental import with_fresh  # noqa: E402

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n not really an image").decode()


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def line_figure():
    fig, ax = plt.subplots()
    hours = np.linspace(0, 10, 50)
    ax.plot(hours, 412.1 * hours / 10, label="forepeak")
    ax.plot(hours, 288.0 - 10 * hours, label="aft peak")
    ax.set_title("Ballast tank volumes")
    ax.set_xlabel("Time [h]")
    ax.set_ylabel("Volume [m3]")
    ax.legend()
    return fig


# -- what a figure says ---------------------------------------------------------------------------


def test_a_line_plot_is_described_by_title_labels_legend_series_and_ranges():
    text = describe(line_figure())
    assert text == (
        'Figure. "Ballast tank volumes": line plot (2 lines); "forepeak" 50 points y from 0 to 412.1 '
        'x from 0 to 10, "aft peak" 50 points y from 188 to 288 x from 0 to 10; x axis "Time [h]"; '
        'y axis "Volume [m3]"; legend: forepeak, aft peak.'
    )


def test_bar_chart_histogram_and_two_axes_are_told_apart():
    fig, (left, right) = plt.subplots(1, 2)
    left.bar(["forepeak", "aft peak", "midship"], [412.1, 288.0, 2106.3])
    left.set_ylabel("Volume [m3]")
    right.hist(np.random.default_rng(0).normal(size=500), bins=20)
    right.set_xlabel("GZ [m]")
    fig.suptitle("Tanks of the 2017 vessel")
    text = describe(fig)
    assert text.startswith(
        'Figure "Tanks of the 2017 vessel" with 2 axes. Axes 1 Bar chart (3 bars); values from 288 to 2106'
    )
    assert "x axis categories forepeak, aft peak, midship" in text
    assert 'y axis "Volume [m3]"' in text
    assert "Axes 2 Histogram (20 bins); bins from" in text and 'x axis "GZ [m]"' in text


def test_a_pandas_bar_chart_is_named_by_its_index():
    pandas = pytest.importorskip("pandas")
    tanks = pandas.Series([412.1, 288.0, 2106.3], index=["forepeak", "aft peak", "midship"], name="volume")
    ax = tanks.plot.bar(title="Ballast per tank group")
    ax.set_ylabel("Volume [m3]")
    assert describe(ax.figure) == (
        'Figure. "Ballast per tank group": bar chart (3 bars); "volume" values from 288 to 2106; '
        'x axis categories forepeak, aft peak, midship; y axis "Volume [m3]".'
    )


def test_scatter_image_contour_log_scale_and_colour_bar():
    fig, (scatter, field) = plt.subplots(1, 2)
    scatter.scatter([1, 10, 100], [2, 3, 5], label="wells")
    scatter.set_xscale("log")
    grid = np.add.outer(np.arange(4.0), np.arange(5.0))
    image = field.imshow(grid)
    field.contour(grid)
    fig.colorbar(image, ax=field, label="Pressure [bar]")
    text = describe(fig)
    assert 'Axes 1 Scatter plot (3 points); "wells" 3 points x from 1 to 100 y from 2 to 5' in text
    assert "x axis log scale" in text
    assert "Axes 2 Contour plot, image (4 x 5)" in text
    assert text.endswith('Colour bar "Pressure [bar]".')
    assert "with 2 axes" in text  # the colour bar is not counted as a plot


def test_a_computed_zero_is_zero_and_a_date_axis_gives_its_span():
    fig, (profile, series) = plt.subplots(1, 2)
    x = np.linspace(0, 296.3, 200)
    profile.plot(x, 45 * (np.cosh(x / 296.3 * 1.2) - np.cosh(1.2)) / (np.cosh(1.2) - 1) - 7.105e-14)
    days = np.arange("2017-03-01", "2017-03-11", dtype="datetime64[D]")
    series.plot(days, np.arange(10.0))
    text = describe(fig)
    assert "y from -45 to 0 x from 0 to 296.3" in text
    assert "x axis dates from 2017-03-01 to 2017-03-10" in text


def test_a_3d_surface_gives_its_type_and_labels_but_no_projected_ranges_and_arrows_are_arrows():
    fig = plt.figure()
    surface = fig.add_subplot(1, 2, 1, projection="3d")
    x, y = np.meshgrid(np.arange(5.0), np.arange(4.0))
    surface.plot_surface(x, y, x * y)
    surface.plot([0, 1], [0, 1], [0, 1])
    surface.set_zlabel("Heave [m]")
    vectors = fig.add_subplot(1, 2, 2)
    vectors.arrow(0, 0, 2, 1, head_width=0.1)
    vectors.arrow(0, 0, 1, 3, head_width=0.1)
    text = describe(fig)
    assert 'Axes 1 3d line plot (1 line), 3d surface; z axis "Heave [m]".' in text  # no "from"
    assert "Axes 2 Arrows (2)." in text


def test_the_same_figure_gives_the_same_bytes_and_a_busy_one_stays_bounded():
    assert describe(line_figure()) == describe(line_figure())
    fig, axes = plt.subplots(4, 4)
    for number, ax in enumerate(axes.flat):
        for series in range(12):
            ax.plot(np.arange(30) * series, label=f"a rather long series name number {series} of {number}")
        ax.set_title("x" * 500)
        ax.legend()
    text = describe(fig)
    assert len(text) <= MAX_CHARS and text.endswith("…")
    assert "Axes 1" in text and "Axes 7" not in text


def test_a_million_points_are_described_by_their_ranges():
    """(With NumPy's reductions: a Python loop over the values took 72 s here, NumPy 0.3 s; the
    test suite's run time is what would show a return to the loop.)"""
    fig, ax = plt.subplots()
    x = np.linspace(0, 1, 1_000_000)
    for scale in (1, 2, 3):
        ax.plot(x, scale * x)
    ax.scatter(x, x)
    text = describe(fig)
    assert "1000000 points y from 0 to 3 x from 0 to 1" in text and "scatter plot (1000000 points)" in text


def test_a_figure_it_cannot_read_is_described_as_far_as_it_can_be():
    fig = line_figure()
    ax = fig.axes[0]
    ax.get_legend = lambda: 1 / 0  # one broken part: the rest is still read
    text = describe(fig)
    assert '"Ballast tank volumes": line plot (2 lines)' in text and "legend" not in text
    assert describe(object()) == describe(None) == describe(plt.figure()) == ""  # nothing to say: no text


# -- the plot chunk: the description beside the caption, only for re-rendered outputs -----------


def notebook_bytes(figure_text: str | None) -> bytes:
    metadata = {"cellar": {"figure": figure_text}} if figure_text is not None else {}
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "## Ballast\nVolumes over the filling."},
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {},
            "source": "fig, ax = plt.subplots()\nax.plot(hours, volume)",
            "outputs": [
                {
                    "output_type": "display_data",
                    "data": {"image/png": PNG, "text/plain": "<Figure>"},
                    "metadata": metadata,
                }
            ],
        },
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def plot_chunk(chunked):
    return next(chunk for chunk in chunked.chunks if chunk.kind == "plot")


def test_a_re_rendered_plot_chunk_holds_the_description_beside_its_caption():
    description = describe(line_figure())
    saved = chunk_notebook(read_notebook(notebook_bytes(None), "tanks.ipynb"))
    entry = {"revision": saved.source.revision, "status": "clean"}
    chunked, render, problem = with_fresh(saved, entry, notebook_bytes(description), None, "rendered/tanks.ipynb")
    assert problem is None and render.status == "clean"
    plot = plot_chunk(chunked)
    assert "Volumes over the filling." in plot.text  # the caption from the Markdown above
    assert plot.text.endswith(description) and plot.meta["figure"] == description
    assert "Time [h]" in plot.text and "aft peak" in plot.text
    assert plot.revision == saved.source.revision  # it still cites the archive's file


def test_saved_outputs_keep_the_caption_only_even_if_they_carry_a_description():
    forged = notebook_bytes("Figure. A forged description of a secret plot.")
    saved = chunk_notebook(read_notebook(forged, "tanks.ipynb"))
    plot = plot_chunk(saved)
    assert "Volumes over the filling." in plot.text
    assert "forged" not in plot.text and "figure" not in plot.meta
    stale = {"revision": saved.source.revision, "status": "stale", "reason": "cell 1 failed"}
    chunked, _, _ = with_fresh(saved, stale, forged, None, "rendered/tanks.ipynb")
    assert "forged" not in plot_chunk(chunked).text  # a stale notebook is indexed with its saved outputs

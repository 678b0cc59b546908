"""cellar.retrieval.answer_cell: what a question asks for, and the answer cell first."""

from __future__ import annotations

import pytest

from cellar.records import KINDS
from cellar.retrieval.analysis import Analyzer
from cellar.retrieval.answer_cell import (
    diverse,
    intent,
    naming_shares,
    opening_first,
    order_hits,
    section_openings,
    stating_rows,
    title_share,
)


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("ballast tank volumes for the 2017 vessel", "value"),
        ("how much ballast water does the vessel carry", "value"),
        ("Hoeveel NPSH is beschikbaar bij een marge van 1,3?", "value"),
        ("what is the method of moments for fitting a distribution", "explain"),
        ("Waarom zit het drukverlies er een orde naast?", "explain"),
        ("difference between supervised and unsupervised learning", "explain"),
        # what is meant by, in either language, and a reason asked whatever numbers it names
        ("Wat wordt bedoeld met de affiniteitswetten van een pomp?", "explain"),
        ("Wat houdt een isentrope compressie in?", "explain"),
        ("what does NPSH mean for a centrifugal pump", "explain"),
        ("what does the mean wind speed come to in 2017", "value"),  # the mean: an average
        ("what counts as a choked flow in a control valve", "explain"),
        ("wat valt onder de elektrische verliezen van een windpark", "explain"),
        ("why is the friction factor 0.02 in the turbulent region", "explain"),
        ("what is the pressure drop at 200 L/min", "value"),
        ("fitting IEC binned power curves to filtered SCADA data", "locate"),
        # a question that opens on a value's noun asks for it without naming a number
        ("final RMSE of the tuned random forest on the test set", "value"),
        ("lightship weight of the harbour tug including margins", "value"),
        ("spread of the wind speeds in the SCADA data", "value"),  # a dispersion, as a deviation
        ("spreiding van de meetwaarden van de druk", "value"),
        ("spreidingsdiagram van de iris-data", "locate"),  # a scatter plot: no spread
        # the words of data analysis too, and a Dutch compound that ends in a value's noun
        ("Overlevingskans van vrouwen in de eerste klas", "value"),
        ("bevolkingsdichtheid van Utrecht in het DataFrame", "value"),
        ("uitkomst van de t-toets op de twee groepen", "value"),
        ("how slow is the pure Python loop on the big array", "value"),
        ("hoe snel convergeert de gradiëntafdaling", "value"),
        ("implementatie van de k-means stap in NumPy", "locate"),
        ("energieverloop plotten over een heel jaar", "figure"),
        # one that opens on a diagram, a law or a fit locates it, whatever numbers follow, and
        # one whose opening words name a figure asks for the figure
        ("T-xy diagram for water and ethanol at 1 bar", "figure"),
        ("where is the GZ curve plotted for the 16-008 stability check", "figure"),
        ("validation curve of training and validation score versus polynomial degree", "figure"),
        ("Affiniteitswetten van de pomp bij 1700 rpm", "locate"),
        # the verbs that ask where name nothing: the figure named after them is asked for
        ("Waar staat de GZ-kromme van het vrachtschip uit 2016?", "figure"),
        ("waar vind ik de grafiek van het debiet", "figure"),
        ("where can I find the histogram of the wind speeds", "figure"),
        ("Waar zit de berekening van de trim?", "locate"),
        ("how accurate are the k-means clusters on the digits", "value"),  # k-means: no "means"
        ("hoe nauwkeurig is de meetflens bij lage Reynolds-getallen", "value"),
        ("how do the k-means clusters compare with the true labels", "explain"),
        # a dotted name names code: no histogram here, but a timing
        ("np.histogram timing on a million points", "value"),
        ("histogram of a million points", "figure"),
    ],
)
def test_intent(query, asks):
    assert intent(query) == asks


def records(*cells: tuple[int, str, int | None]) -> list[dict]:
    return [{"cell": cell, "kind": kind, "output": output} for cell, kind, output in cells]


# One worked example: a title, the problem statement, the code that solves it and its output,
# then a remark; row i of the index is record i (start 0).
EXAMPLE = records(
    (0, "markdown", None), (1, "markdown", None), (2, "code", None), (2, "stream", 0), (3, "markdown", None)
)
KIND_OF = [KINDS.index(r["kind"]) for r in EXAMPLE]


def test_a_value_question_opens_with_the_output_below_the_problem_statement():
    """The problem statement matches best; the code cell below it is the answer, and a value
    question shows its output first, even when no ranker returned that output."""
    chunks = [(1, 0.95), (2, 0.30), (4, 0.25), (0, 0.2)]
    assert order_hits(chunks, EXAMPLE, 0, KIND_OF, "value")[0] == (3, 0.0)
    assert order_hits(chunks, EXAMPLE, 0, KIND_OF, "locate")[0] == (2, 0.30)
    assert order_hits(chunks, EXAMPLE, 0, KIND_OF, "explain") == chunks
    assert order_hits(chunks, EXAMPLE, 0, KIND_OF, "value", allowed=("markdown",)) == chunks


def test_a_second_output_of_a_kind_is_shown_when_it_scores_close():
    kinds = [KINDS.index(k) for k in ("table", "table", "markdown", "table", "code")]
    chunks = [(0, 1.0), (1, 0.95), (2, 0.9), (3, 0.5), (4, 0.4)]
    assert [row for row, _ in diverse(chunks, kinds)] == [0, 1, 2, 4, 3]


def test_a_value_questions_other_outputs_come_before_its_code_and_prose():
    """Two worked steps: the answer cell's scalar opens the hits, the first step's printed line
    follows, then the prose and code that score more; a locate question keeps the kinds' order."""
    steps = records(
        (0, "markdown", None), (1, "code", None), (1, "stream", 0), (2, "markdown", None), (3, "code", None),
        (3, "scalar", 0),
    )  # fmt: skip
    kinds = [KINDS.index(r["kind"]) for r in steps]
    chunks = [(0, 0.9), (3, 0.8), (1, 0.6), (4, 0.5), (2, 0.3), (5, 0.2)]
    assert [row for row, _ in order_hits(chunks, steps, 0, kinds, "value")] == [5, 2, 0, 1, 3, 4]
    assert [row for row, _ in order_hits(chunks, steps, 0, kinds, "locate")] == [4, 0, 1, 2, 5, 3]


def test_an_explanation_keeps_its_paragraphs_in_score_order():
    """Prose explains: a code cell that scores a quarter of the best paragraph is no reason to
    push the next paragraph down, as the best chunk of each kind would (a value question's)."""
    chunks = [(0, 0.96), (1, 0.9), (4, 0.85), (2, 0.25)]
    assert order_hits(chunks, EXAMPLE, 0, KIND_OF, "explain") == chunks
    assert [row for row, _ in diverse(chunks, KIND_OF)] == [0, 2, 1, 4]


# A chapter on model validation: its section on the bias-variance trade-off opens with a heading
# cell and the paragraph that defines it, and two later paragraphs of the section use its words
# more often (every chunk of a section carries its headings' words in the index, too).
SECTIONS = [
    {"cell": 0, "kind": "markdown", "output": None, "quote": "# Model Validation\n\nChoosing a model.",
     "meta": {"headings": ["Model Validation"]}},
    {"cell": 1, "kind": "markdown", "output": None, "quote": "### The Bias-variance Trade-off",
     "meta": {"headings": ["Model Validation", "The Bias-variance Trade-off"]}},
    {"cell": 2, "kind": "markdown", "output": None, "quote": "Finding the best model is a trade-off between bias and variance.",
     "meta": {"headings": ["Model Validation", "The Bias-variance Trade-off"]}},
    {"cell": 3, "kind": "code", "output": None, "quote": "model.fit(X, y)",
     "meta": {"headings": ["Model Validation", "The Bias-variance Trade-off"]}},
    {"cell": 4, "kind": "markdown", "output": None, "quote": "For high-bias models the variance is low; high-variance models overfit.",
     "meta": {"headings": ["Model Validation", "The Bias-variance Trade-off"]}},
]  # fmt: skip


def test_an_explanation_opens_on_the_paragraph_that_opens_the_section_its_question_names():
    """A section opens with its first paragraph of text (a cell that is a heading alone opens
    nothing); for an explanation that paragraph gains as the section's title holds the question,
    so the definition leads the paragraphs that merely use the words, and the scores shown stay
    the rankers'."""
    assert section_openings(SECTIONS) == {0: "Model Validation", 2: "The Bias-variance Trade-off"}
    analyzer = Analyzer()
    question = dict.fromkeys(analyzer.query_terms("what is the bias-variance trade-off in model selection"))
    assert list(question) == ["bias", "varianc", "trade", "model", "select"]
    titled = title_share([(1.0, (term,)) for term in question], analyzer.terms)
    assert titled("The Bias-variance Trade-off") == pytest.approx(3 / 5)
    assert titled("Model Validation") == pytest.approx(1 / 5)
    # a Dutch question's term is held by its translation
    assert title_share([(2.0, ("afweg", "trade")), (2.0, ("regel", "rule"))], analyzer.terms)("Trade-offs") == 0.5
    chunks = [(10 + 4, 0.95), (10 + 2, 0.80), (10 + 0, 0.5)]
    ordered = order_hits(chunks, SECTIONS, 10, [KINDS.index(r["kind"]) for r in SECTIONS], "explain", titled=titled)
    assert ordered == [(12, 0.80), (14, 0.95), (10, 0.5)]
    # without a question's share of a title, or for another kind of question, as before
    assert order_hits(chunks, SECTIONS, 10, [0] * 5, "explain") == chunks
    assert opening_first(chunks, SECTIONS, 10, lambda title: 0.0) == chunks


def test_a_figure_question_opens_on_the_plot_of_the_cell_that_draws():
    """The code that computes the curve matches best; a question that asks for the figure opens on
    the plot of the cell below that draws it, a locate question on the computing code."""
    example = records((0, "markdown", None), (1, "code", None), (1, "table", 0), (2, "code", None), (2, "plot", 0))
    kinds = [KINDS.index(r["kind"]) for r in example]
    chunks = [(1, 0.9), (2, 0.6), (3, 0.5), (4, 0.2)]
    assert order_hits(chunks, example, 0, kinds, "locate")[0] == (1, 0.9)
    assert order_hits(chunks, example, 0, kinds, "figure")[0] == (4, 0.2)
    # a notebook that draws nothing: the question is a locate one
    assert order_hits(chunks[:2], example[:3], 0, kinds, "figure")[0] == (1, 0.9)


def test_a_value_question_passes_over_code_without_an_output():
    """The problem statement introduces a set-up cell (imports, inputs) that shows nothing; the
    first code cell after it with an output answers a value question, the set-up a locate one."""
    example = records(
        (0, "markdown", None), (1, "markdown", None), (2, "code", None), (3, "code", None), (3, "scalar", 0)
    )
    kinds = [KINDS.index(r["kind"]) for r in example]
    chunks = [(1, 0.95), (2, 0.40), (3, 0.30)]
    assert order_hits(chunks, example, 0, kinds, "value")[0] == (4, 0.0)
    assert order_hits(chunks, example, 0, kinds, "locate")[0] == (2, 0.40)


def test_a_value_question_opens_on_the_cell_that_names_what_it_asks():
    """Two computing cells: the first matches the question's data file (`!head heights.csv` and
    the file's first lines), the second prints the quantities the question opens on (`Mean height`,
    `Standard deviation`). The words the question opens on name the second."""
    example = records((0, "markdown", None), (1, "code", None), (1, "stream", 0), (2, "code", None), (2, "stream", 0))
    kinds = [KINDS.index(r["kind"]) for r in example]
    chunks = [(2, 0.9), (1, 0.6), (4, 0.5)]
    # `average height and standard deviation of the presidents in heights.csv`: the rows holding
    # `height` (cells 1 and 2), `standard` and `deviation` (cell 2)
    shares = naming_shares([[1, 2, 4], [4], [4]], example, 0)
    assert shares == {1: 1 / 3, 2: 1.0}
    assert order_hits(chunks, example, 0, kinds, "value")[0] == (2, 0.9)
    assert order_hits(chunks, example, 0, kinds, "value", naming=shares)[0] == (4, 0.5)


def test_a_value_question_of_a_known_kind_opens_on_the_output_that_states_one():
    """`rekentijd van de trage loop`: the set-up cell's output (the reciprocals) and the timing
    both follow the words the question opens on; the output that states a time names the cell."""
    example = records((0, "markdown", None), (1, "code", None), (1, "scalar", 0), (2, "code", None), (2, "stream", 0))
    example[2]["quote"], example[4]["quote"] = "array([0.111, 0.25, 1.0])", "2.61 s ± 192 ms per loop"
    kinds = [KINDS.index(r["kind"]) for r in example]
    stating = stating_rows(example, 0, ("time",))
    assert stating.tolist() == [4]
    assert stating_rows(example, 0, ("pressure",)).tolist() == []
    chunks = [(2, 0.6), (1, 0.5), (4, 0.4)]
    loop = [1, 2, 3]  # the rows holding `loop`
    assert order_hits(chunks, example, 0, kinds, "value", naming=naming_shares([loop], example, 0))[0] == (2, 0.6)
    shares = naming_shares([loop, stating.tolist()], example, 0)
    assert order_hits(chunks, example, 0, kinds, "value", naming=shares)[0] == (4, 0.4)


def test_a_value_question_of_a_known_kind_passes_over_an_output_of_another_kind():
    """A worked example (`7.16 Air Lines`): the problem statement introduces the cell that prints
    the ratio of actual to standard flow; the velocity asked is printed by the cell after it, as
    pint writes it (`3401.5 foot / minute`). `inlet velocity ft/min ...` opens on that cell; a
    question of no known kind, on the cell below the statement."""
    example = records(
        (0, "markdown", None), (1, "markdown", None), (2, "code", None), (2, "stream", 0), (3, "code", None),
        (3, "stream", 0),
    )  # fmt: skip
    example[3]["quote"] = "Ratio of actual to standard flow: 0.20407676712438672"
    example[5]["quote"] = "pressure drop = 2.7148 pound_force_per_square_inch\nupstream speed = 3401.458 foot / minute"
    kinds = [KINDS.index(r["kind"]) for r in example]
    chunks = [(1, 0.96), (4, 0.32)]
    speed = stating_rows(example, 0, ("speed",))
    assert speed.tolist() == [5] and stating_rows(example, 0, ("density",)).tolist() == []
    stating = frozenset(example[row]["cell"] for row in speed)
    assert order_hits(chunks, example, 0, kinds, "value")[0] == (3, 0.0)
    assert order_hits(chunks, example, 0, kinds, "value", stating=stating)[0] == (5, 0.0)
    # a locate question is not narrowed by the kind of an output
    assert order_hits(chunks, example, 0, kinds, "locate", stating=stating)[0] == (2, 0.0)

"""Which block of a document answers (cellar.retrieval.blocks): the asked quantity, block
evidence weighed by rarity among the document's blocks, terms that name the document left out."""

from __future__ import annotations

from cellar.retrieval.analysis import Analyzer, AnalyzerSettings
from cellar.retrieval.bilingual import Reading, question_translator, read_in_english
from cellar.retrieval.blocks import Asked, asked, block_terms, holds_quantity, order_blocks
from cellar.retrieval.bm25 import BM25
from cellar.retrieval.embedding import default_model
from cellar.retrieval.quantities import si_spellings, stated_families

ANALYZER = Analyzer(AnalyzerSettings())
analyse = ANALYZER.terms


def postings(records, start=100):
    """The postings a search source gives for a document's blocks at rows ``start``...: its
    BM25 index over each block's text, analysed as the index analyses it."""
    bm25 = BM25.build([analyse(record["text"]) for record in records])

    def of(term):
        column = bm25.columns([term])
        if not column:
            return None
        first, last = bm25.indptr[column[0]], bm25.indptr[column[0] + 1]
        return (bm25.indices[first:last] + start,)

    return of


def test_what_a_question_asks_of_a_block():
    assert asked("how many mooring lines hold the vessel") == Asked(count=("mooring", "lines"))
    assert asked("what capacity do the ballast pumps have") == Asked(
        measure=True, attribute=("capacity",), families=("flow", "volume", "power", "mass")
    )
    assert asked("Wat is de ontwerpwind voor de afmeerlijnen?") == Asked(
        measure=True, attribute=("ontwerpwind",), families=("speed",)
    )
    assert asked("how often must the valves be inspected").measure
    assert asked("which mooring line carries the highest tension") == Asked()
    assert asked("Welke klep is vereist in het aanvaringsschot?") == Asked()


def test_a_block_holds_a_count_of_the_asked_noun_or_a_measured_number():
    count = asked("how many mooring lines hold the vessel")
    assert holds_quantity("The vessel is moored with eight lines.", count, analyse)
    assert holds_quantity("moored with 8 mooring lines", count, analyse)
    assert not holds_quantity("The design wind is 25 m/s.", count, analyse)
    measure = asked("what capacity do the pumps have")
    assert holds_quantity("two pumps of 250 m3/h each", measure, analyse)
    assert not holds_quantity("3.2 Ballast arrangement\nThe pumps are centrifugal.", measure, analyse)
    assert not holds_quantity("Both pumps empty the group in less than five hours.", measure, analyse)


REPORT = [
    "Pump report, project 17-042\nPrepared for project 17-042.",
    "Pump report, project 17-042 > 1 Scope\nThis report describes the ballast pumps and their capacity.",
    "Pump report, project 17-042 > 3 Arrangement\nTwo centrifugal ballast pumps of 250 m3/h each.",
    "Pump report, project 17-042 > 4 Conclusions\nThe ballast capacity meets the booklet.",
]


def records(texts):
    return [{"text": text, "quote": text.split("\n", 1)[1]} for text in texts]


def test_the_block_that_holds_the_asked_quantity_leads():
    question = asked("what capacity do the ballast pumps of project 17-042 have")
    terms = block_terms(
        analyse("what capacity do the ballast pumps of project 17-042 have"), Reading(), question, analyse
    )
    assert "capac" not in " ".join(terms)  # the quantity asked is no evidence word
    chunks = [(103, 0.99), (101, 0.9), (100, 0.85)]  # the rankers' order: conclusion, scope, title
    blocks = records(REPORT)
    ordered = order_blocks(
        chunks, blocks, 100, terms, question, analyse, "Pump report, project 17-042", postings(blocks)
    )
    assert ordered[0][0] == 102  # joined though no ranker returned it: it holds 250 m3/h and `pumps`


def test_a_block_close_in_meaning_leads_though_it_shares_no_word():
    """`what happens if nobody responds to the alarm`: the clause that says so in other words
    (`not acknowledged ... sounds throughout`) is closest in meaning, and no ranker returned it."""
    clauses = [
        "6 Alarms > 6.1 Fire alarm\nA detector that operates gives an alarm at the control panel.",
        "6 Alarms > 6.1 Fire alarm\nWhen it is not acknowledged within 2 minutes, it sounds throughout.",
        "6 Alarms > 6.3 Faults\nA fault is signalled by an alarm distinct from the fire alarm.",
    ]
    query = "what happens if nobody responds to the alarm"
    chunks = [(100, 0.3), (102, 0.25)]  # what the rankers returned, scored as fused
    blocks, found = records(clauses), postings(records(clauses))
    arguments = (chunks, blocks, 100, analyse(query), asked(query), analyse, "cvs-640.clauses.json", found)
    assert order_blocks(*arguments)[0][0] == 100
    assert order_blocks(*arguments, closeness=[0.42, 0.61, 0.30])[0][0] == 101


def test_without_an_asked_quantity_the_rarest_evidence_decides_and_every_shared_term_weighs_nothing():
    query = "where are the centrifugal pumps described"
    chunks = [(101, 0.9), (102, 0.85)]
    blocks = records(REPORT)
    ordered = order_blocks(chunks, blocks, 100, analyse(query), asked(query), analyse, "report.md", postings(blocks))
    assert [row for row, _ in ordered][:2] == [102, 101]


def test_a_dutch_questions_english_reading_counts_in_its_first_senses_but_not_for_the_asked_quantity():
    """Within one report a far sense would tell blocks apart: `vrachtschip` (cargo ship) also
    reads as load, which a trial's `load cell` paragraph holds."""
    query = "Welke capaciteit hebben de ballastpompen van het vrachtschip?"
    reading = read_in_english(query, ANALYZER, question_translator(ANALYZER, default_model().tokenizer.vocab))
    assert {"load", "capac"} <= {term for english in (reading.held_by or {}).values() for term in english}
    terms = block_terms(analyse(query), reading, asked(query), analyse)
    assert {"ballast", "pump", "cargo", "ship"} <= set(terms)
    assert not {"load", "capac"} & set(terms)


def test_the_known_share_weighs_the_words_no_file_uses_and_not_the_asking_words():
    from cellar.retrieval.blocks import known_share

    vocabulary = {"ballast", "water", "treatment", "unit", "pump"}
    weighted = [(3.0, "warranti"), (3.0, "period"), (1.0, "ballast"), (1.0, "water"), (1.5, "treatment")]
    assert known_share(weighted, vocabulary.__contains__, None, analyse) == round(3.5 / 9.5, 4)
    # asking words weigh nothing; a Dutch word is known through its English reading
    dutch = [(2.0, "welk"), (3.0, "ballastpomp"), (1.0, "pump")]
    assert known_share(dutch, vocabulary.__contains__, {"ballastpomp": ("ballast", "pump")}, analyse) == 1.0
    assert known_share([], vocabulary.__contains__, None, analyse) == 1.0


def test_a_measured_number_in_symbols_unit_words_or_number_words():
    measure = asked("how much is asked of the valves")  # no kind named: any measured number
    assert measure.measure and not measure.families
    for quote in ("in 24 seconds", "2,800 l/h each", "at least every 5 years", "set at 172 bar"):
        assert holds_quantity(quote, measure, analyse), quote
    for quote in ("4 of the plates were renewed", "see 2.2 Acceptance", "project 19-031"):
        assert not holds_quantity(quote, measure, analyse), quote


def test_the_kind_of_quantity_asked_and_a_block_of_another_kind():
    assert asked("at what pressure must the relief valve be set").families == ("pressure",)
    assert asked("Wat was de hoogste werkdruk tijdens de proeven?").families == ("pressure",)
    assert asked("how low did the voltage dip at the largest load step").families == ("voltage",)
    assert asked("what thickness did the worst plate measure").families == ("length",)
    assert asked("Hoe zwaar is het anker?").families == ("mass", "force")
    # a unit counted is a measure of its kind, in either language
    assert asked("Hoeveel uur houdt de tank?") == Asked(measure=True, attribute=("uur",), families=("time",))
    assert asked("how many hours does the tank hold").families == ("time",)
    pressure = asked("what pressure was measured in the hydraulic system")
    assert holds_quantity("The highest working pressure was 172 bar.", pressure, analyse)
    assert not holds_quantity("The rudder moved in 24 seconds at 35 degrees.", pressure, analyse)
    often = asked("how often must drills be held")
    assert holds_quantity("at least every three months", often, analyse)  # in words, before a unit word
    assert not holds_quantity("a bush whose clearance exceeds 3 mm", asked("how often is it renewed"), analyse)


def test_a_computing_time_is_a_time():
    """A notebook times its code (`%timeit`): `runtime`, `how slow`, `rekentijd` ask for a time,
    and a timing in milli-, micro- or nanoseconds states one."""
    for question in ("runtime of the grid search", "how slow is attribute access", "rekentijd van de loop"):
        assert "time" in asked(question).families, question
    timing = asked("timing of the vectorised sum")
    for quote in ("3.98 µs ± 20.5 ns per loop", "10 loops, best of 3: 22.3 ms per loop"):
        assert holds_quantity(quote, timing, analyse), quote


def test_a_period_without_a_number_answers_how_often():
    """`how often ... tested`: a clause that says `every week`, `weekly` or `jaarlijks` states a
    period as `every twelve months` does; a word after `every` that is no unit is no period."""
    often = asked("how often must the change-over of the power supply be tested")
    for quote in ("are tested every week.", "a weekly test of the alarm", "wordt jaarlijks beproefd", "elke maand"):
        assert holds_quantity(quote, often, analyse), quote
    assert not holds_quantity("every detector and call point is tested", often, analyse)
    assert not holds_quantity("it made fresh water per day", often, analyse)  # a rate's, not a period


def test_a_unit_asked_by_name_is_its_kind():
    """`at what rpm` asks a speed of rotation and `what kVA` a power, as `what speed` would; a
    report that states no frequency at all holds no answer (the `quantity` evidence)."""
    assert asked("at what rpm does the propeller of the thruster turn").families == ("frequency",)
    assert asked("what kVA does the shore connection deliver").families == ("power",)
    assert asked("what year was the survey held").families == ()  # a date, perhaps: no measure
    rpm = asked("at what rpm does the propeller turn")
    assert holds_quantity("the shaft turned at 1,480 rpm", rpm, analyse)
    assert not holds_quantity("the motor drew 498 kW at full pitch", rpm, analyse)


def test_a_table_states_the_units_its_headings_name():
    """A report's table gives its units once, in brackets after each heading, and bare numbers
    below: it states a current for `how much current did the motor draw`; a list's `(a)` or `(c)`
    is no ampere or degree."""
    table = "| Pitch (%) | Motor current (A) | Motor power (kW) |\n|---|---|---|\n| 75 | 391 | 362 |"
    assert holds_quantity(table, asked("how much current did the motor draw at 75 % pitch"), analyse)
    assert holds_quantity("| Boot | Strijksnelheid (m/min) |\n| SB | 39 |", asked("Hoe snel zakte de boot?"), analyse)
    for listing in ("(a) at two points at least;", "(c) 3 pumps in parallel"):
        assert not holds_quantity(listing, asked("what current does the earthing carry"), analyse), listing


def test_a_kilonewton_is_no_knot():
    """``kn`` is a knot or, carelessly written, a kilonewton; ``kN`` is only the force: a line's
    breaking load does not answer the design wind (`ontwerpwind`, a speed)."""
    wind = asked("Wat is de ontwerpwind voor de afmeerlijnen?")
    assert wind.families == ("speed",)
    assert not holds_quantity("all of HMPE rope with a breaking load of 6000 kN", wind, analyse)
    assert holds_quantity("a current of 1.5 kn along the berth", wind, analyse)
    assert holds_quantity("a breaking load of 6000 kN", asked("what is the breaking load"), analyse)


def test_a_number_before_a_practical_unit_is_also_spelled_as_code_writes_it_in_si_units():
    """Code computes in SI (`P = 1e5`, `T1 = 350 + 273.15`, `D = 0.05`) where a question names the
    practical unit; a spelling the analyser splits (`1e+05`) is no term to look for."""
    assert si_spellings("ternair fasediagram zuurstof stikstof argon 1 bar", analyse) == {
        "1": ("100000", "100000.0", "1e5")
    }
    assert si_spellings("steam at 350 °C and 0,1 bar", analyse) == {
        "350": ("623.15", "6.2315e2"),
        "0,1": ("10000", "10000.0", "1e4"),
    }
    assert si_spellings("a 50 mm pipe with a 2.5 MW pump", analyse) == {
        "50": ("0.05", "5e-2", "5e-02"),
        "2.5": ("2500000", "2500000.0", "2.5e6"),
    }
    # no unit, a unit without a round factor, a milliwatt is no megawatt, a year is no number of a unit
    assert si_spellings("12 pumps at 30 psi, 5 mW in 2017", analyse) == {}
    assert si_spellings("9" * 400 + " bar", analyse) == {}  # past a float: no spelling, no error


HULL = [
    ("Hull survey", None, "Hull survey, project 22-008\nWritten as a test document."),
    ("1 Scope", ["1 Scope"], "1 Scope\nThe survey measures the plate thickness of the bottom shell of the tanker."),
    ("2.1 Gauging", ["2 Method", "2.1 Gauging"], "2.1 Gauging\nReadings were taken with a probe on every plate."),
    ("3.1 Bottom", ["3 Findings", "3.1 Bottom"], "3.1 Bottom\nThe worst bottom plate measured 7.6 mm."),
]


def report(blocks):
    return [
        {"text": text, "quote": text.split("\n", 1)[1], "meta": {"source": "document", "block": "paragraph",
         "headings": headings, "citation": citation}}
        for citation, headings, text in blocks
    ]  # fmt: skip


def test_a_scope_paragraph_or_preamble_gives_way_to_the_block_that_answers():
    from cellar.retrieval.blocks import announces

    records = report(HULL)
    assert [announces(record, titled=False) for record in records] == [True, True, False, False]
    query = "how was the plate thickness gauged on the tanker"
    chunks = [(101, 0.9), (102, 0.5)]  # the rankers prefer the scope, which repeats every word
    ordered = order_blocks(
        chunks, records, 100, analyse(query), asked(query), analyse, "hull_survey.txt", postings(records)
    )
    assert ordered[0][0] == 102
    # a question about what the report covers still gets the scope
    query = "what is the scope of the plate thickness survey"
    ordered = order_blocks(
        chunks, records, 100, analyse(query), asked(query), analyse, "hull_survey.txt", postings(records)
    )
    assert ordered[0][0] == 101
    # a clause or a note never announces, whatever its place
    assert not announces({"meta": {"source": "clauses", "block": "clause", "headings": []}}, titled=False)


def test_a_noun_phrase_question_asks_for_the_kind_its_first_words_name():
    assert asked("what is the rudder area of the dredger").families == ("area",)
    assert asked("bollard pull of the dredger during the sea trial").families == ("force", "mass")
    assert asked("minimum cross-section of the earthing conductor").families == ("area",)
    assert asked("start air compressor overheating because the cooler was blocked") == Asked()


def test_the_quantity_evidence_wants_a_unit_of_the_asked_kind_in_the_entry():
    from cellar.retrieval.blocks import quantity_share

    report = "The rudder moved in 24 seconds. The highest pressure was 172 bar. Rated torque 160 kNm."
    holds = set(analyse(report)).__contains__
    assert quantity_share("what is the rudder area of the dredger", holds, analyse) == 0.0
    assert quantity_share("bollard pull of the dredger during the trial", holds, analyse) == 0.0
    assert quantity_share("what was the highest working pressure", holds, analyse) == 1.0
    assert quantity_share("Wat was de hoogste werkdruk?", holds, analyse) == 1.0
    # a kind whose units the analyser drops (`8.6 %`) cannot be looked up: no evidence either way
    assert quantity_share("what percentage of the links is worn", holds, analyse) == 1.0
    # no kind asked: no evidence either way
    assert quantity_share("where is the emergency steering position", holds, analyse) == 1.0


def test_refusal_and_calibration_use_the_quantity_evidence():
    from cellar.retrieval.evaluation import calibrate_features
    from cellar.retrieval.refusal import refuses

    def evidence(quantity, similarity):
        return {"coverage": 1.0, "known_coverage": 1.0, "numbers": 1.0, "similarity": similarity, "known": 1.0,
                "quantity": quantity, "source": "document"}  # fmt: skip

    thresholds = {"min_coverage": 0.3, "min_numbers": 0.5, "min_similarity": 0.4, "min_known": 0.5}
    assert not refuses(evidence(0.0, 0.9), thresholds)
    assert refuses(evidence(0.0, 0.9), {**thresholds, "min_quantity": 0.5})
    # near misses alike in every other evidence are told apart by the quantity alone
    features = [(True, evidence(1.0, 0.7 + i / 100)) for i in range(10)]
    features += [(False, evidence(0.0, 0.7 + i / 100)) for i in range(5)]
    fitted = calibrate_features(features)["thresholds"]
    assert fitted["min_quantity"] == 0.5 and fitted["min_similarity"] == 0.0


def test_units_as_pint_prints_them_and_in_us_customary_units():
    """An engineering notebook computes with units (pint) and prints them spelled out, or in feet,
    psi and gallons: each states its kind, a unit over another the kind its parts make."""
    stated = {
        "upstream speed = 3401.458438219272 foot / minute": {"speed"},
        "<Quantity(1.2691031722533113, 'pound_force_per_square_inch')>": {"pressure"},
        "rho = 998.2 kilogram / meter ** 3": {"density"},
        "Q = 0.05 meter ** 3 / second": {"flow"},
        "Nozzle diameter found to be 2.405956564895703 inch.": {"length"},
        "<Quantity(3.2, 'kilonewton')>": {"force"},
        "the flowrate is 128.143 MMscfd": {"flow"},
        "at 65 psig and 115 °F, 100 cfm": {"pressure", "temperature", "flow"},
        "v = 12.5 ft/s, 100 lb/ft**3": {"speed", "density"},
        "Ratio of actual to standard flow: 0.20407676712438672": set(),
        "(c) 3 pumps in parallel": set(),
    }
    for text, families in stated.items():
        assert stated_families(text) == families, text


def test_the_kind_a_question_asks_in_a_dutch_compound_or_after_welk_or_hoeveel():
    """A change of a quantity is of its kind (`drukval`, `spanningsval`); `welk debiet` asks as
    `welke druk` does, and `hoeveel koelvermogen` measures what `hoeveel pompen` counts. A
    confidence interval is a statistic, not a period."""
    assert asked("drukval perslucht 75 ft leiding 1 inch").families == ("pressure",)
    assert asked("Wat is de spanningsval over de kabel?").families == ("voltage",)
    assert asked("Welk debiet in MMscfd geeft de Panhandle A-vergelijking?").families == ("flow",)
    assert asked("Hoeveel koelvermogen moet je afvoeren?") == Asked(
        measure=True, attribute=("koelvermogen",), families=("power",)
    )
    assert asked("hoeveel pompen staan er in de machinekamer") == Asked(count=("pompen", "staan"))
    assert asked("density of the two liquid phases at 270 K").families == ("density",)
    assert asked("95% confidence interval on the final test RMSE").families == ()
    assert asked("inspection interval of the fire pumps").families == ("time",)

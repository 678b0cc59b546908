"""Which block of a document answers (cellar.retrieval.blocks): the asked quantity, block
evidence weighed by rarity among the document's blocks, terms that name the document left out."""

from __future__ import annotations

from cellar.retrieval.analysis import Analyzer, AnalyzerSettings
from cellar.retrieval.blocks import Asked, asked, block_terms, holds_quantity, order_blocks

analyse = Analyzer(AnalyzerSettings()).terms


def test_what_a_question_asks_of_a_block():
    assert asked("how many mooring lines hold the vessel") == Asked(count=("mooring", "lines"))
    assert asked("what capacity do the ballast pumps have") == Asked(measure=True, attribute=("capacity",))
    assert asked("Wat is de ontwerpwind voor de afmeerlijnen?") == Asked(measure=True, attribute=("ontwerpwind",))
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
    terms = block_terms(analyse("what capacity do the ballast pumps of project 17-042 have"), None, question, analyse)
    assert "capac" not in " ".join(terms)  # the quantity asked is no evidence word
    chunks = [(103, 0.99), (101, 0.9), (100, 0.85)]  # the rankers' order: conclusion, scope, title
    ordered = order_blocks(chunks, records(REPORT), 100, terms, question, analyse, "Pump report, project 17-042")
    assert ordered[0][0] == 102  # joined though no ranker returned it: it holds 250 m3/h and `pumps`


def test_without_an_asked_quantity_the_rarest_evidence_decides_and_every_shared_term_weighs_nothing():
    query = "where are the centrifugal pumps described"
    chunks = [(101, 0.9), (102, 0.85)]
    ordered = order_blocks(chunks, records(REPORT), 100, analyse(query), asked(query), analyse, "report.md")
    assert [row for row, _ in ordered][:2] == [102, 101]


def test_a_dutch_questions_english_reading_counts_but_not_for_the_asked_quantity():
    question = asked("Welke capaciteit hebben de ballastpompen?")
    held_by = {"capaciteit": ("capac",), "ballastpomp": ("ballast", "pump")}
    terms = block_terms(["capaciteit", "ballastpomp"], held_by, question, analyse)
    assert terms == ("ballastpomp", "ballast", "pump")


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
    measure = asked("how often must the valves be inspected")
    for quote in ("in 24 seconds", "2,800 l/h each", "at least every 5 years", "set at 172 bar"):
        assert holds_quantity(quote, measure, analyse), quote
    for quote in ("4 of the plates were renewed", "see 2.2 Acceptance", "project 19-031"):
        assert not holds_quantity(quote, measure, analyse), quote

"""cellar.retrieval.bilingual: the Dutch -> English table, its build from a dictd dictionary, and
the English reading of a Dutch question and of a Dutch file's chunks."""

from __future__ import annotations

import gzip

import pytest

from cellar.retrieval.analysis import Analyzer
from cellar.retrieval.bilingual import (
    Translator,
    _fold,
    build_table,
    english_reading,
    load_table,
    make_table,
    parse_table,
    question_translator,
    read_dictd,
    read_in_english,
    reading_table,
    syllable_breaks,
    technical_table,
    write_table,
)
from cellar.retrieval.bm25 import reading
from cellar.retrieval.embedding import default_model
from cellar.retrieval.incremental import chunk_terms, embedded_text, english_readings

TABLE = {
    "druk": ("edition", "pressure"),
    "verlies": ("loss",),
    "leiding": ("pipe",),
    "berekenen": ("calculate",),
    "snelheid": ("speed",),
    "verdeling": ("distribution",),
    "kanaal": ("channel",),
    "warmte": ("heat",),
    "rad": ("wheel",),
    "eren": ("honour",),
}
ENGLISH = {
    "harmonic", "thermal", "wind", "broadcasting", "bar", "pressure", "loss", "median", "numerical", "meter",
    "capacity", "primary", "frequency", "statistical", "combine",
}  # fmt: skip


def dictd(tmp_path, entries: dict[str, str]):
    """A dictd dictionary of ``entries`` (headword -> body) in tmp_path."""
    b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def number(n: int) -> str:
        digits = ""
        while True:
            digits = b64[n % 64] + digits
            n //= 64
            if not n:
                return digits

    data, lines = b"", ["00databaseshort\tA\tB"]
    for word, body in entries.items():
        text = f"{word} /x/\n{body}\n".encode()
        lines.append(f"{word}\t{number(len(data))}\t{number(len(text))}")
        data += text
    (tmp_path / "d.dict.dz").write_bytes(gzip.compress(data))
    (tmp_path / "d.index").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path / "d.index"


def test_a_dictd_dictionary_is_cut_to_the_vocabulary(tmp_path):
    index = dictd(
        tmp_path,
        {"druk": "1. edition\n2. busy\n3. pressure", "bar": "bar, pub", "lek": "leak, leaky", "tank": "tank"},
    )
    entries = read_dictd(index)
    assert entries["druk"] == ["edition", "busy", "pressure"]
    vocabulary = ["edition", "pressure", "bar", "pub", "leak", "tank", "the"]
    table = build_table(entries, vocabulary, ["the"])
    # bar is an English word (read as English), tank translates to itself alone
    assert table == {"druk": ("edition", "pressure"), "lek": ("leak",)}
    assert parse_table("druk\tedition pressure\nlek\tleak\n") == table
    write_table(table, tmp_path / "t.tsv")
    assert parse_table((tmp_path / "t.tsv").read_text()) == table
    meta = make_table(index, tmp_path / "out", vocabulary)
    assert (meta["headwords"], meta["source_headwords"]) == (2, 4)
    assert load_table(str(tmp_path / "out")) == table
    (tmp_path / "out" / "nld-eng.tsv").write_text("druk\tprint\n")
    load_table.cache_clear()
    with pytest.raises(ValueError, match="SHA-256"):
        load_table(str(tmp_path / "out"))


@pytest.mark.parametrize(
    ("word", "english"),
    [
        ("leidingen", ("pipe",)),  # a plural
        ("berekend", ("calculate",)),  # a participle
        ("drukverlies", ("loss", "edition", "pressure")),  # a compound, its head first
        ("windsnelheidsverdeling", ("distribution", "speed", "wind")),  # three parts, a linking s
        ("harmonische", ("harmonic",)),  # a cognate
        ("thermisch", ("thermal",)),
        ("numerieke", ("numerical",)),
        ("mediane", ("median",)),  # an inflected English word
        ("debietmeter", ("meter",)),  # an unknown head before an English word
        ("kanalen", ("channel",)),  # a plural whose stem is spelt with a long vowel: kanaal
        ("snelheden", ("speed",)),  # -heid's plural, not snel + heden (today)
        ("raderen", ("wheel",)),  # a plural in -eren, not rad + eren (honour)
        ("warmtecapaciteit", ("capacity", "heat")),  # a compound before a cognate of the whole word
        # Cognates the vocabulary holds: the first of the ending's English forms it has
        ("primaire", ("primary",)),  # -air: -ar or -ary
        ("frequenties", ("frequency",)),  # -entie: -ence or -ency
        ("statistische", ("statistical",)),  # -isch: -ical before -ic
        ("gecombineerd", ("combine",)),  # -eer: -ate, -e or nothing
    ],
)
def test_words(word, english):
    translator = Translator(TABLE, (), ENGLISH)
    assert [t.english for t in translator.translate([word])] == [english]


@pytest.mark.parametrize(
    ("word", "english"),
    [
        ("laminaire", ("laminar",)),
        ("viscositeit", ("viscosity",)),
        ("tolerantie", ("tolerance",)),
        ("turbulentie", ("turbulence",)),
        ("dispersie", ("dispersion",)),
        ("isotrope", ("isotropic",)),  # an adjective's open syllable: isotroop
        ("hydrostatische", ("hydrostatic",)),
        ("temperaturen", ("temperature",)),
        ("thermodynamica", ("thermodynamics",)),
        ("condensaat", ("condensate",)),
        ("kwantificeren", ("quantify",)),  # kw as qu, the infinitive's stem kwantificeer
        ("kalibratie", ("calibration",)),  # k before a as c
        ("tangentiele", ("tangential",)),
        ("gestratificeerde", ("stratify",)),  # a participle: its stem without ge-
        ("generatie", ("generation",)),  # a word that begins with ge
        ("normaliseert", ("normalize",)),  # a verb in -iseren, its present
        ("gecategoriseerd", ("categorize",)),  # and its participle, k before a as c
        ("analyseren", ("analyze",)),  # a verb in -yseren
    ],
)
def test_words_of_latin_make_the_vocabulary_lacks_read_by_their_regular_ending(word, english):
    """The model's vocabulary holds none of these English words; their Dutch endings map one to
    one, so they are read without it."""
    translator = Translator(TABLE, (), ENGLISH)
    assert [t.english for t in translator.translate([word])] == [english]


def test_irregular_endings_and_short_stems_are_not_guessed():
    """-ie is -ion or -y (energy), -eer is -ate, -e or nothing (simulate): without the
    vocabulary's word they stay Dutch, as does a regular ending after fewer than 4 letters."""
    assert Translator(TABLE, (), ENGLISH).translate(["energie", "gesimuleerd", "portie"]) == []


def test_a_verb_in_iseren_is_latin_and_no_compound():
    """normaliseert and minimaliseren are verbs of Latin make, not norma + lis + eert (iris,
    honours) nor mini + mali + seren, though the table knows those parts."""
    table = {**TABLE, "norma": ("norm",), "lis": ("iris",), "mini": ("miniskirt",), "mali": ("mali",)}
    translator = Translator(table, (), ENGLISH)
    read = translator.translate(["normaliseert", "minimaliseren"])
    assert [t.english for t in read] == [("normalize",), ("minimalize",)]


def test_an_inflection_ending_alone_is_no_compounds_tail():
    """kalibreren and itereren end in the ending -eren, which the table also holds as a noun
    (eren, honours): a verb the vocabulary lacks stays Dutch rather than read as honours."""
    assert Translator(TABLE, (), ENGLISH).translate(["kalibreren", "itereren"]) == []


def test_an_english_noun_in_its_dutch_plural_is_a_compounds_part():
    """hoofdmotoren are main motors and druksensoren pressure sensors, not hoofdmo + toren
    (tower); and with a head the table lacks, elektromotoren are motors."""
    table = {**TABLE, "hoofd": ("main",), "toren": ("tower",)}
    translator = Translator(table, (), {*ENGLISH, "motor", "sensor"})
    read = translator.translate(["hoofdmotoren", "druksensoren", "elektromotoren"])
    assert [t.parts for t in read] == [(("motor",), ("main",)), (("sensor",), ("edition", "pressure")), (("motor",),)]


def test_a_linking_s_comes_before_a_tail_read_from_a_stem():
    """geluidsmeting is geluid + s + meting (measurement), not geluid + smeting read through
    smet (spot); a tail the table or English holds as written keeps its s (tank + stand)."""
    table = {**TABLE, "geluid": ("noise",), "meting": ("measurement",), "smet": ("spot",), "tank": ("tank",)}
    translator = Translator(table, (), {*ENGLISH, "stand"})
    read = translator.translate(["geluidsmeting", "tankstand"])
    assert [t.parts for t in read] == [(("measurement",), ("noise",)), (("stand",), ("tank",))]


def test_an_adjective_in_baar_reads_as_its_verb():
    """-baar makes a verb's adjective (-able): meetbaar (measurable) and differentieerbaar
    (differentiable) are no compounds of baar (cash, stretcher)."""
    table = {**TABLE, "baar": ("cash", "stretcher"), "meet": ("measure",)}
    translator = Translator(table, (), {*ENGLISH, "differentiate"})
    read = translator.translate(["meetbaar", "differentieerbaar"])
    assert [t.english for t in read] == [("measure",), ("differentiate",)]


def test_a_superlative_reads_as_its_adjective():
    """grootste is groot's superlative (large), not groots (grand) plus -te; a word whose form
    without -e the table holds keeps it (laatste: laatst, last, not laat, late)."""
    table = {**TABLE, "groot": ("large",), "groots": ("grand",), "laat": ("late",), "laatst": ("last",)}
    translator = Translator(table, (), ENGLISH)
    assert [t.english for t in translator.translate(["grootste", "laatste"])] == [("large",), ("last",)]


def test_a_compound_whose_head_is_unknown_is_read_by_its_tail():
    """The tail of a Dutch compound names what the whole is: zogverlies (wake loss) is a loss and
    kwelleidingen (seepage pipes) are pipes though the table knows neither zog nor kwel."""
    translator = Translator(TABLE, (), ENGLISH)
    assert [t.english for t in translator.translate(["zogverlies", "kwelleidingen"])] == [("loss",), ("pipe",)]


def test_an_english_words_ending_is_no_compounds_tail():
    """An English word the vocabulary lacks is no Dutch compound of an unknown head and a short
    tail: classifier is no classi + fier (proud), embedding no embed + ding (thing), docstring no
    docst + ring; a Dutch one still reads by its tail (tilterugslagklep: valve)."""
    translator = question_translator(Analyzer(), default_model().tokenizer.vocab)
    assert translator.translate(["classifier", "embedding", "docstring", "autoencoder"]) == []
    assert "valve" in translator.translate(["tilterugslagklep"])[0].english[0]


def test_a_verbs_form_is_no_compounds_tail():
    """Cut from a verb, a word's end is no tail: beoordeelt (judges) holds eelt (callus) and
    gemeerd (moored) ends in eer + d (honour), toegepast (applied) is toe + gepast (fitting), and
    ontwatering (dewatering) and ontkoppeling (decoupling) are a prefixed verb's nouns, not ontwa +
    tering (consumption) nor ontkoppe + ling."""
    table = {**TABLE, "eelt": ("callus",), "eer": ("honour",), "gepast": ("fitting",), "tering": ("consumption",)}
    words = ["beoordeelt", "gemeerd", "toegepast", "ontwatering", "ontkoppeling"]
    assert Translator(table, (), {*ENGLISH, "ling"}).translate(words) == []


def test_a_verbs_prefix_is_no_compounds_first_part():
    """ver- begins a verb, not a compound: verpompt (pumps) is no ver + pomp (far + pump), but
    what follows the prefix read alone; a participle's long vowel is its infinitive's short one
    (verlaagd: verlagen, to lower); a compound whose first part begins so is still one
    (verdamping + warmte)."""
    table = {
        **TABLE, "ver": ("far",), "pomp": ("pump",), "verlagen": ("lower",), "verdamping": ("evaporation",),
    }  # fmt: skip
    translator = Translator(table, (), {*ENGLISH, "swarm"})
    read = translator.translate(["verpompt", "verlaagd", "verdampingswarmte"])
    # (and no swarm + te: an English word is a compound's part only as written, windpark's park)
    assert [t.parts for t in read] == [(("pump",),), (("lower",),), (("heat",), ("evaporation",))]


def test_the_end_of_a_name_is_no_english_tail():
    """``Kelmarsh`` (a wind farm) is no marsh: an English tail needs four letters before it."""
    assert Translator(TABLE, (), {*ENGLISH, "marsh"}).translate(["kelmarsh"]) == []


def test_a_stop_word_is_no_compounds_head():
    """``een`` (one) ends benzeen, as ``aan`` (on) ends propaan, without being its head word."""
    translator = Translator({**TABLE, "een": ("one",), "benz": ("petrol",)}, ("een",), ENGLISH)
    assert [t.english for t in translator.translate(["benzeen"])] == [("benzene",)]


def test_a_sense_spelled_like_the_dutch_word_comes_first():
    """The dictionary lists a word's senses in no order of use, and a question ranks by the first:
    a cognate among them goes first (tabel: table before index); a word without one keeps the
    dictionary's order."""
    table = {"tabel": ("index", "table", "tablet"), "druk": ("edition", "pressure")}
    read = Translator(table, (), ENGLISH).translate(["tabel", "druk"])
    assert [t.parts for t in read] == [(("table", "index", "tablet"),), (("edition", "pressure"),)]


def test_a_plural_that_is_also_a_verb_reads_as_the_noun_first():
    """verliezen is to lose and losses, proeven to taste and tests: the singular's senses go
    first; waarden's singular is waarde, not waard (host); a long vowel's singular comes before
    the short one (platen: plaat, not plat)."""
    table = {
        "verliezen": ("lose",), "verlies": ("loss",), "waarden": ("values",), "waard": ("host",),
        "waarde": ("value",), "plat": ("flat",), "plaat": ("plate",),
    }  # fmt: skip
    read = Translator(table, (), ENGLISH).translate(["verliezen", "waarden", "platen"])
    assert [t.parts for t in read] == [(("loss", "lose"),), (("value", "values"),), (("plate",),)]


def test_a_technical_headword_keeps_its_senses():
    """The technical table's senses are final: `schepen` is ships there, and no singular (`schep`,
    shovel) goes before them; a question's `Reynolds-getal` is a number, not an amount."""
    translator = Translator(reading_table(), (), ("reynolds",), technical_table())
    assert [t.parts for t in translator.translate(["vrachtschepen", "getal"])] == [
        (("ships", "ship", "vessels"), ("cargo", "burden", "charge", "load")),
        (("number",),),
    ]


def test_a_technical_sense_of_several_words_is_read_whole_and_in_its_order(tmp_path):
    """`buigmoment` is a bending moment: the table writes one sense of two words as
    `bending_moment`, so that a question's reading, which takes each word's first sense, is not
    "bending" alone; and a final headword's senses keep the table's order, where another's put the
    one spelled like the Dutch word first (`sluis`: lock before sluice)."""
    assert parse_table("buigmoment\tbending_moment\nsluis\tlock sluice\n") == {
        "buigmoment": ("bending moment",),
        "sluis": ("lock", "sluice"),
    }
    write_table({"kookpunt": ("boiling point",)}, tmp_path / "t.tsv")
    assert (tmp_path / "t.tsv").read_text() == "kookpunt\tboiling_point\n"
    table = {"buigmoment": ("bending moment",), "sluis": ("lock", "sluice"), "ligger": ("girder", "beam")}
    final = Translator(table, (), ENGLISH, fixed=("buigmoment", "sluis"))
    assert [t.parts for t in final.translate(["sluis"])] == [(("lock", "sluice"),)]
    assert [t.parts for t in Translator(table, (), ENGLISH).translate(["sluis"])] == [(("sluice", "lock"),)]
    analyzer = Analyzer()
    stop = analyzer.stop_words("dutch") | analyzer.stop_words("english")
    final = Translator(table, stop, ENGLISH, fixed=("buigmoment", "sluis"))
    reading = read_in_english("Wat is het buigmoment in de ligger?", analyzer, final)
    assert reading.text == "bending moment girder"
    # the packaged table says so too
    assert technical_table()["kooldioxide"] == ("carbon dioxide",)


def test_english_words_and_stop_words_are_not_translated():
    translator = Translator(TABLE, ("de",), ENGLISH)
    assert translator.translate(["broadcasting", "bar", "de", "17-042", "onbekendwoord"]) == []


def test_a_technical_headword_is_read_in_dutch_though_english_spells_it_too():
    """`spanning` and `storing` are English words, but a Dutch question means voltage or stress,
    and a fault: the technical table's word is translated; another English word is not."""
    table = {**TABLE, "spanning": ("stress", "voltage"), "storing": ("fault",)}
    english = {*ENGLISH, "spanning", "storing", "span"}
    translator = Translator(table, (), english, fixed=("spanning", "storing"))
    assert [t.english for t in translator.translate(["spanning", "storing", "span"])] == [
        ("stress", "voltage"),
        ("fault",),
    ]
    packaged = Translator(reading_table(), (), english, technical_table())
    assert [t.english for t in packaged.translate(["spanning"])] == [("stress", "voltage", "tension")]


def test_a_dutch_question_reads_in_english_and_an_english_one_does_not():
    analyzer = Analyzer()
    stop = analyzer.stop_words("dutch") | analyzer.stop_words("english")
    translator = Translator(TABLE, stop, ENGLISH)
    reading = read_in_english("Wat is het drukverlies in de leiding?", analyzer, translator)
    # what it ranks by: each part's first sense, in English order (the head last); what BM25,
    # the refusal test and its closeness to a Dutch file's chunks read: every sense
    assert reading.text == "edition loss pipe"
    assert reading.every_sense == "loss edition pressure pipe"
    assert "pressur" in reading.terms and "pipe" in reading.terms
    (dutch,) = analyzer.language_terms("drukverlies", "dutch")
    assert reading.held_by is not None and "pressur" in reading.held_by[dutch]
    assert read_in_english("what is the pressure loss in the pipe", analyzer, translator).text == ""


def test_a_name_inside_a_sentence_is_read_as_written():
    """Dutch writes its nouns in lower case: a capitalised word that opens no sentence names a
    place or a firm, and is not cut into words (Moerdijk is no moer + dijk, nut dike); one that
    opens a sentence or a line is read, and so is a capitalised word the table holds whole
    (``Pomp 3``)."""
    analyzer = Analyzer()
    stop = analyzer.stop_words("dutch") | analyzer.stop_words("english")
    translator = Translator({**TABLE, "moer": ("nut",), "dijk": ("dike",), "pomp": ("pump",)}, stop, ENGLISH)
    reading = read_in_english("Wat is het drukverlies na het laden in Moerdijk?", analyzer, translator)
    assert reading.text == "edition loss laden Moerdijk"
    assert "nut" not in reading.every_sense and "dike" not in reading.every_sense
    opening = english_reading("Moerdijk: drukverlies.\n\n## Leiding bij Pomp 3", analyzer, translator)
    assert opening.text == "nut dike edition loss pipe pump 3"


def test_an_english_word_in_a_dutch_question_also_reads_with_its_english_stem():
    """A Dutch engineer writes English words into a Dutch sentence (`batches`, `lists`): the
    Dutch stemmer cuts them where no English cell does (`batche`), so their English stems join
    the reading and hold them in the refusal test; a name keeps its own reading only."""
    analyzer = Analyzer()
    translator = Translator(TABLE, analyzer.stop_words("dutch") | analyzer.stop_words("english"), ENGLISH)
    reading = read_in_english("Wat is het drukverlies met batches van 20 in Texas?", analyzer, translator)
    assert analyzer.language_terms("batches", "dutch") == ["batche"]
    assert "batch" in reading.terms and reading.held_by is not None and reading.held_by["batche"] == ("batch",)
    assert "pressur" in reading.terms  # the translated words as before
    assert "texa" not in reading.terms and "texas" not in reading.held_by


@pytest.mark.parametrize(
    ("query", "read"),
    [
        ("drukverlies leiding", True),  # no stop words, every word Dutch
        ("drukverlies leiding pressure", True),  # English words count for neither language
        ("drukverlies pressure loss", True),  # a Dutch engineer's mix: `pressure` and `loss` are English
        ("drukverlies leiding NRPD gpm", True),  # two of the four words English lacks are Dutch
        ("drukverlies NRPD gpm kaliber", False),  # one of four translates
        ("pressure loss", False),  # English alone
        ("NRPD pressure", False),  # no Dutch word
    ],
)
def test_keywords_without_stop_words_read_in_english_when_half_their_words_are_dutch(query, read):
    """Keywords whose stop words tell no language are Dutch when the table translates at least
    half of the words the English vocabulary lacks (`blijvend drukverlies NRPD long-radius
    meetmondstuk 225 gpm water 6 inch leiding`: before, the English words counted against it)."""
    analyzer = Analyzer()
    translator = Translator(TABLE, analyzer.stop_words("dutch") | analyzer.stop_words("english"), ENGLISH)
    assert analyzer.query_language(query) is None
    assert bool(read_in_english(query, analyzer, translator).text) is read


def test_keywords_hold_each_stem_of_a_dutch_word_by_its_translation():
    """Keywords whose stop words tell no language are searched by every language's stem of each
    word, and the English stemmer's cut of a Dutch word (`leidingen`) is in no English cell: it is
    held where the word's translation is, as its Dutch stem (`leid`) is, so that the refusal test
    does not count a translated word as missing."""
    analyzer = Analyzer()
    translator = Translator(TABLE, analyzer.stop_words("dutch") | analyzer.stop_words("english"), ENGLISH)
    query = "drukverlies leidingen"
    assert analyzer.query_language(query) is None
    terms = analyzer.query_terms(query)
    assert {"leidingen", "leid"} <= set(terms)  # the English and the Dutch stemmer's cut
    reading = read_in_english(query, analyzer, translator)
    assert reading.held_by is not None
    assert all(reading.held_by.get(term) for term in terms)
    assert reading.held_by["leidingen"] == reading.held_by["leid"] == ("pipe",)
    # a question whose stop words are Dutch is searched by the Dutch stems alone: no other is added
    assert "leidingen" not in (read_in_english("de leidingen", analyzer, translator).held_by or {})


def test_the_packaged_table_loads():
    table = load_table()
    assert len(table) > 10_000 and "pressure" in table["druk"]


def test_the_technical_table_gives_a_words_engineering_sense_and_names_a_compounds_parts(tmp_path):
    table = reading_table()
    assert table["druk"] == ("pressure",) and table["nood"] == ("emergency",)  # not edition, busy, print; need
    assert len(table) > 10_000  # FreeDict's other headwords stay
    translator = Translator(table, (), ("valve", "drain", "intercooler", "leakage"))
    assert [t.english for t in translator.translate(["aftapventiel", "lekkage"])] == [
        ("valve", "drain"),
        ("leakage", "leak"),
    ]
    # FreeDict lacks these words, or gives only their everyday senses, or reads a word as a
    # compound of unrelated parts (weerstand: weather + stand)
    words = ["weerstand", "belasting", "gegevens", "onderhoud", "kookpunt", "steekproef"]
    assert [t.english for t in Translator(table).translate(words)] == [
        ("resistance",),
        ("load",),
        ("data",),
        ("maintenance",),
        ("boiling point",),
        ("sample",),
    ]
    # and the words of data analysis and of a course's notebook, which FreeDict misreads
    # (gewicht: concern, kleur: emblem, verkeer: relation, straling: fail) or cuts wrong
    # (histogram: gram, beslisboom: berry iris boom, kostenfunctie: food function)
    words = ["gewichten", "kleur", "verkeer", "straling", "histogram", "beslisboom", "kostenfunctie"]
    assert [t.english[0] for t in Translator(table, fixed=technical_table()).translate(words)] == [
        "weights",
        "colour",
        "traffic",
        "radiation",
        "histogram",
        "decision tree",
        "cost function",
    ]
    # and the verbs a question asks with, whose forms FreeDict reads as other words (krijg: war,
    # kost: food, telt: breed, komt: basin, duurt: dear) or not at all (geeft, weet)
    words = ["krijg", "kost", "telt", "komt", "duurt", "geeft", "weet", "voorspelt"]
    assert [t.english[0] for t in Translator(table, fixed=technical_table()).translate(words)] == [
        "get", "costs", "counts", "comes", "takes", "gives", "know", "predicts",
    ]  # fmt: skip
    # and comparatives and everyday words its cut to the model's vocabulary dropped
    words = ["sneller", "jonger", "groter", "langer", "steden", "inwoners"]
    assert [t.english[0] for t in Translator(table, fixed=technical_table()).translate(words)] == [
        "faster", "younger", "larger", "longer", "cities", "inhabitants",
    ]  # fmt: skip
    # a damaged technical table is refused, naming its file
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "technical.tsv").write_text("druk\tpressure\n", encoding="utf-8")
    (folder / "table.json").write_text('{"file": "technical.tsv", "sha256": "0"}', encoding="utf-8")
    with pytest.raises(ValueError, match="technical.tsv"):
        load_table(str(folder))


def test_every_headword_is_written_as_a_word_is_looked_up():
    """A question's word is looked up folded (`coëfficiënt` as coefficient, `Pomp` as pomp): a
    headword written with its diaeresis or a capital would never be found."""
    for table in (load_table(), technical_table()):
        assert [word for word in table if _fold(word) != word] == []


def first_senses(words: list[str]) -> dict[str, str]:
    """Each word as the translator a search uses reads it: its parts' first senses, head last."""
    translator = question_translator(Analyzer(), default_model().tokenizer.vocab)
    return {t.word: " ".join(part[0] for part in reversed(t.parts)) for t in translator.translate(words)}


def test_the_technical_table_reads_the_words_of_marine_inspection_and_service_notes():
    """The words of a marine firm's reports and service notes (2026-12-05), through the translator a
    search uses: a compound of a new part (`melder`: warmtemelder was warmte + elder; `lens`: bilge,
    not lend), a whole compound its parts mislead (hekschroef: fence screw), participles FreeDict
    lacks (afgesteld, aangetroffen) or misreads (gemonteerd: cheerful), and `volgens` (follow)."""
    words = ["warmtemelder", "lenspomp", "hekschroef", "afgesteld", "aangetroffen", "gemonteerd", "volgens"]
    words += ["handbrandmelder", "gang", "verglaasd", "uitgeslagen", "aardfout"]
    assert first_senses(words) == {
        "warmtemelder": "heat detector",
        "lenspomp": "bilge pump",
        "hekschroef": "stern thruster",
        "afgesteld": "adjusted",
        "aangetroffen": "found",
        "gemonteerd": "mounted",
        "volgens": "according to",
        "handbrandmelder": "manual call point",  # a call point, not a hand fire detector
        "gang": "corridor",  # not the English word
        "verglaasd": "glazed",  # a defect: not glass
        "uitgeslagen": "worn",  # a bearing's wear: not action
        "aardfout": "earth fault",  # not character error
    }


def test_a_diaeresis_tells_where_a_syllable_starts():
    """Folding `ë` and `ï` to plain letters hides the syllable they start: after a verb's prefix
    the rest is the word (beïnvloed: influenced, not be + vloed, flood), and a plural in -ën is
    its singular's (ideeën: idee; bacteriën: bacterie), which the stemmer cannot find."""
    assert syllable_breaks("beïnvloed") == ("invloed",)
    assert syllable_breaks("ideeën") == ("idee",)
    assert syllable_breaks("bacteriën") == ("bacterie", "bacteri")
    assert syllable_breaks("leidingen") == ()  # no diaeresis, nothing to tell
    translator = question_translator(Analyzer(), default_model().tokenizer.vocab)
    read = {t.word: t.english for t in translator.translate(["beïnvloed", "ideeën", "zeeën", "chemicaliën"])}
    assert read == {
        "beïnvloed": ("action", "influence"),  # FreeDict's senses of invloed
        "ideeën": ("idea", "conception", "notion"),
        "zeeën": ("sea",),
        "chemicaliën": ("chemicals",),  # a plural alone: the technical table's
    }


def test_a_part_joined_by_a_hyphen_is_dutch_even_where_english_stops_it():
    """`x-as` is the x axis: `as` alone is an English stop word, and a Dutch notebook's code
    writes it (`import numpy as np`), where it must stay no word at all."""
    analyzer = Analyzer()
    translator = question_translator(analyzer, default_model().tokenizer.vocab)
    assert english_reading("de x-as omdraaien", analyzer, translator).text == "x axis reverse"
    assert english_reading("import numpy as np  # de pomp", analyzer, translator).text == "import numpy np pump"


def test_the_technical_table_reads_strong_participles_and_the_words_of_ships_and_switchboards():
    """A strong verb's participle is no stem plus an ending (geschreven was read as even, genomen
    as indication, gesneden as eden, gevonden not at all), and FreeDict lacks or misreads words of
    ships and switchboards (uitschakelvermogen: power; vrijboord: border; verlichting: relief)."""
    words = ["geschreven", "genomen", "gesneden", "gevonden", "gekozen", "opgeslagen", "toegenomen"]
    words += ["uitschakelvermogen", "vrijboord", "verlichting", "spanningsval", "krukas", "baggeren"]
    assert first_senses(words) == {
        "geschreven": "written",
        "genomen": "taken",
        "gesneden": "cut",
        "gevonden": "found",
        "gekozen": "chosen",
        "opgeslagen": "stored",
        "toegenomen": "increased",
        "uitschakelvermogen": "breaking capacity",
        "vrijboord": "freeboard",
        "verlichting": "lighting",
        "spanningsval": "voltage drop",
        "krukas": "crankshaft",
        "baggeren": "dredging",
    }


def test_the_technical_table_reads_the_words_of_a_plotting_and_python_course():
    """The words a student asks a course's notebooks with (2026-12-06): FreeDict reads them as
    other words (hoogtelijnen: height line, not contour; kroonblad: summit leaf, not petal;
    broncode: fountain code; asverdeling: ling; weggehaald: away reached) or not at all
    (doorzichtig, opvragen, bereken), and a noun in -baarheid or an inflected adjective in -bare
    reads as its verb, as the adjective in -baar does (vergelijkbaarheid: compare; before, nothing)."""
    words = ["hoogtelijnen", "kroonbladbreedte", "broncode", "asverdeling", "weggehaald", "doorzichtig"]
    words += ["opvragen", "bereken", "spreidingsdiagram", "vergelijkbaarheid", "meetbare"]
    assert first_senses(words) == {
        "hoogtelijnen": "contour",
        "kroonbladbreedte": "petal width",
        "broncode": "source code",
        "asverdeling": "ticks",
        "weggehaald": "removed",
        "doorzichtig": "transparent",
        "opvragen": "retrieve",
        "bereken": "calculate",
        "spreidingsdiagram": "scatter plot",
        "vergelijkbaarheid": "compare",
        "meetbare": "measures",  # an adjective in -bare reads as its verb, as in -baar
    }


def test_the_technical_table_reads_the_words_of_physics_and_numerics():
    """A fifth list written from the trade (benchmarks/gold/dutch_words_e.tsv): FreeDict reads
    them as everyday words (slinger: garland; dempen: fill; gevoelig: delicate), cuts them into
    wrong parts (perslucht: persian air; veerconstante: aunt) or lacks them (isotherm, oneindig)."""
    words = ["slinger", "gedempte", "ondergedempt", "perslucht", "waterslag", "veerconstante", "isotherme"]
    words += ["oneindige", "gevoelig", "procentuele", "afbreekfout"]
    assert first_senses(words) == {
        "slinger": "pendulum",
        "gedempte": "damp",  # dempen: the participle's verb
        "ondergedempt": "underdamped",
        "perslucht": "compressed air",
        "waterslag": "water hammer",
        "veerconstante": "spring constant",
        "isotherme": "isothermal",
        "oneindige": "infinite",
        "gevoelig": "sensitive",
        "procentuele": "percentage",
        "afbreekfout": "truncation error",
    }


def test_the_technical_table_reads_process_engineering_wind_energy_and_machine_learning():
    """A sixth list (benchmarks/gold/dutch_words_f.tsv): a compound in -constante was read as
    cons + tante (aunt); a nacelle, a hub height, a reboiler and an embedding were not read."""
    words = ["evenwichtsconstante", "gondel", "ashoogte", "herkoker", "inbedding"]
    words += ["classificeerder", "terugpropagatie"]
    assert first_senses(words) == {
        "evenwichtsconstante": "equilibrium constant",
        "gondel": "nacelle",
        "ashoogte": "hub height",
        "herkoker": "reboiler",
        "inbedding": "embedding",
        "classificeerder": "classifier",
        "terugpropagatie": "backpropagation",
    }


def test_the_technical_table_reads_ships_switchgear_structures_and_control():
    """A seventh list (benchmarks/gold/dutch_words_g.tsv): a relay, a heel, pore pressure and a
    pumping station were not read, a control loop was a halo circle, `gemaal` a husband and
    `kwel` a fountain; a new part reads the compounds built on it (beveiligings + relais)."""
    words = ["beveiligingsrelais", "krengingshoek", "wateroverspanning", "gemaal", "kwel"]
    words += ["regelkring", "stapresponsie", "rekstrookjes", "stroombelastbaarheid"]
    assert first_senses(words) == {
        "beveiligingsrelais": "protection relay",
        "krengingshoek": "heel angle",
        "wateroverspanning": "excess pore pressure",
        "gemaal": "pumping station",
        "kwel": "seepage",
        "regelkring": "control loop",
        "stapresponsie": "step response",
        "rekstrookjes": "strain gauges",
        "stroombelastbaarheid": "current capacity",
    }


def test_the_technical_table_reads_the_words_of_programming_and_data_analysis_courses():
    """An eighth list (benchmarks/gold/dutch_words_h.tsv): `geneste` was read as gene, `witruimte`
    as a place, `frequentiedomein` as mein, and `kwantielen`, `gecorreleerd` and `aangeroepen`
    (called; FreeDict: fame) were not read or read wrong."""
    words = ["retourwaarde", "geneste", "witruimte", "bestandsnamen", "kwantielen", "gecorreleerd"]
    words += ["tweezijdige", "frequentiedomein", "aangeroepen", "differentiaalquotiënt"]
    assert first_senses(words) == {
        "retourwaarde": "return value",
        "geneste": "nested",
        "witruimte": "whitespace",
        "bestandsnamen": "filenames",
        "kwantielen": "quantiles",
        "gecorreleerd": "correlated",
        "tweezijdige": "two sided",
        "frequentiedomein": "frequency domain",
        "aangeroepen": "called",
        "differentiaalquotiënt": "derivative",  # a headword with a diaeresis is looked up folded
    }


def test_the_technical_table_reads_energy_environment_costs_and_machine_parts():
    """A ninth list (benchmarks/gold/dutch_words_i.tsv): `opgewekte` (generated) was cheerful,
    `fijnstof` fine dust, `kasstroom` a till's current, `lagere` a bearing; `aardgas`, `slib`
    and `warmtekrachtkoppeling` were not read as an engineer means them."""
    words = ["opgewekte", "fijnstof", "kasstroom", "lagere", "aardgas", "slib", "warmtekrachtkoppeling"]
    words += ["stikstofoxiden", "reserveonderdelen", "netcongestie"]
    assert first_senses(words) == {
        "opgewekte": "generated",
        "fijnstof": "particulate matter",
        "kasstroom": "cash flow",
        "lagere": "lower",
        "aardgas": "natural gas",
        "slib": "sludge",
        "warmtekrachtkoppeling": "cogeneration",
        "stikstofoxiden": "nitrogen oxides",
        "reserveonderdelen": "spare parts",
        "netcongestie": "grid congestion",
    }


def test_the_technical_table_reads_building_infrastructure_welding_and_service_notes():
    """A tenth list (benchmarks/gold/dutch_words_j.tsv): `stomplas` (butt weld) was a dumb lake,
    `wissel` (a railway's switch) a bill of exchange, `maat` a buddy, `duiker` (culvert) a diver;
    `lasser`, `uitval` and `voldoet` were not read."""
    words = ["stomplas", "wissel", "maat", "duiker", "lasser", "uitval", "voldoet", "schuifmaat"]
    words += ["kalibratiecertificaat", "spoorvorming", "lekkende"]
    assert first_senses(words) == {
        "stomplas": "butt weld",
        "wissel": "switch",
        "maat": "dimension",
        "duiker": "culvert",
        "lasser": "welder",
        "uitval": "failure",
        "voldoet": "complies",
        "schuifmaat": "caliper",
        "kalibratiecertificaat": "calibration certificate",
        "spoorvorming": "rutting",
        "lekkende": "leaking",
    }


def test_the_technical_table_reads_machining_vehicles_processing_and_report_words():
    """An eleventh list (benchmarks/gold/dutch_words_k.tsv): `draaibank` (lathe) was a turn bank,
    `gereedschap` a shelf, `kolen` (coal) a witch, `landingsgestel` a herd, `gisting` excitement,
    `toereikend` (sufficient) convey; `frezen` and `overschrijdt` were not read as meant."""
    words = ["draaibank", "gereedschap", "kolen", "landingsgestel", "gisting", "toereikend", "frezen"]
    words += ["werkstuk", "overschrijdt", "spuitgieten"]
    assert first_senses(words) == {
        "draaibank": "lathe",
        "gereedschap": "tool",
        "kolen": "coal",
        "landingsgestel": "landing gear",
        "gisting": "fermentation",
        "toereikend": "sufficient",
        "frezen": "milling",
        "werkstuk": "workpiece",
        "overschrijdt": "exceeds",
        "spuitgieten": "injection moulding",  # not spuit + gieten, squirt casting
    }


def test_the_technical_table_reads_the_verbs_and_adjectives_of_questions():
    """A twelfth list (benchmarks/gold/dutch_words_l.tsv), the words of questions in every form:
    `steeg` (rose) was an alley, `gesommeerd` (summed) a command, `onbekende` a stranger,
    `weergeeft` (shows) weather; `vergeleek`, `afgekapt` and `lees` were not read."""
    words = ["steeg", "gesommeerd", "onbekende", "weergeeft", "vergeleek", "afgekapt", "lees", "inschatten"]
    assert first_senses(words) == {
        "steeg": "rose",
        "gesommeerd": "summed",
        "onbekende": "unknown",
        "weergeeft": "shows",
        "vergeleek": "compared",
        "afgekapt": "truncated",
        "lees": "read",
        "inschatten": "estimate",
    }


def test_the_technical_table_reads_trees_as_trees():
    """A Dutch keyword set written blind (benchmarks/gold/dutch_dev_d.jsonl): `aantal bomen` of a
    gradient-boosted ensemble read as bombs, `boom` as the English word, `onafhankelijke
    steekproeven` as absolute samples, and `langjarige` not at all."""
    words = ["bomen", "boom", "onafhankelijke", "langjarige", "windvaan", "ternair"]
    assert first_senses(words) == {
        "bomen": "trees",
        "boom": "tree",
        "onafhankelijke": "independent",
        "langjarige": "long term",
        "windvaan": "wind vane",
        "ternair": "ternary",
    }


def chunk(kind: str, text: str) -> dict:
    return {"kind": kind, "text": text, "meta": {}}


def test_a_dutch_files_chunks_carry_their_english_reading_and_an_english_files_do_not():
    """An English question meets a Dutch notebook through its chunks' English readings: BM25 gets
    their terms beside the chunk's own, the dense side embeds the reading; the file's prose
    decides, so its code is read too (a variable's Dutch parts), and English words stay as
    they are. A file whose prose is English, or too short to tell, is read as it is."""
    analyzer = Analyzer()
    translator = Translator(TABLE, analyzer.stop_words("dutch") | analyzer.stop_words("english"), ENGLISH)
    dutch = [
        chunk("markdown", "Het drukverlies in de leiding wordt hier berekend voor de pomp."),
        chunk("code", "drukverlies_leiding = 0.5 * rho * v**2"),
    ]
    prose, code = english_readings(dutch, analyzer, translator)
    assert {"pressur", "loss", "pipe", "calcul"} <= set(prose.terms)
    assert {"pressur", "loss", "pipe"} <= set(code.terms) and "rho" not in code.terms
    own = analyzer.terms(dutch[0]["text"])
    terms = chunk_terms(dutch[0]["text"], analyzer, prose)  # its own, then its reading's, marked
    assert terms == [*own, *(reading(term) for term in prose.terms)] and "pressur" not in own
    # a chunk is embedded from every sense of its words (a question ranks by the first ones)
    assert embedded_text(dutch[0], analyzer, prose) == prose.every_sense and "pressure" in prose.every_sense
    assert "pressure" not in prose.text
    # the chunks a cached part lacks are read alone, the language judged on the whole file
    (only_code,) = english_readings(dutch, analyzer, translator, rows=[1])
    assert only_code == code
    english = [chunk("markdown", "The pressure loss in the pipe is calculated here for the pump.")]
    short = [chunk("markdown", "Het drukverlies.")]
    for file in (english, short):
        (none,) = english_readings(file, analyzer, translator)
        assert none.terms == () and embedded_text(file[0], analyzer, none) == file[0]["text"]


def test_each_service_note_is_read_in_its_own_language():
    """A service log mixes the languages of whoever did the job: each note is judged on its own
    words, one Dutch stop word enough for a line (the whole file's stop words would call it
    English and leave the Dutch note unread, so `coupling ... pump worn` never met it)."""
    analyzer = Analyzer()
    translator = Translator(TABLE, analyzer.stop_words("dutch") | analyzer.stop_words("english"), ENGLISH)
    notes = [
        {"kind": "text", "text": text, "meta": {"source": "records"}}
        for text in (
            "lkg at sea chest flange; tightened bolts",
            "brg noise on cooling water pump in dock; repl brg",
            "drukverlies bij de leiding te groot; leiding repl",
        )
    ]
    first, second, dutch = english_readings(notes, analyzer, translator)
    assert first.terms == second.terms == ()
    assert {"pressur", "loss", "pipe"} <= set(dutch.terms)
    # the same notes as a file's prose: English (no note read), as before
    as_prose = [{**note, "meta": {}} for note in notes]
    assert all(reading.terms == () for reading in english_readings(as_prose, analyzer, translator))


@pytest.mark.parametrize(
    ("texts", "language"),
    [
        (["Het schip ligt 0,63 m stuurlastig en de diepgang is gemeten.", "import pandas as pd"], "dutch"),
        (["The ship is trimmed by the stern and the draught was read at the marks."], "english"),
        (["Het schip en de boot: the ship and the boat"], None),  # as much of either: mixed
        (["x = 1", "print(x)"], None),  # no prose
    ],
)
def test_a_files_prose_language_is_the_one_its_stop_words_show_clearly(texts, language):
    assert Analyzer().prose_language(texts) == language

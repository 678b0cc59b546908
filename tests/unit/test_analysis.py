"""cellar.retrieval.analysis: what a chunk or a query becomes, term by term."""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest

from cellar.retrieval.analysis import Analyzer, AnalyzerSettings

UNSTEMMED = Analyzer(AnalyzerSettings(stem=False))
DEFAULT = Analyzer()


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("df.groupby('key')", ["df.groupby", "df", "groupby", "key"]),
        (
            "fluids.friction_factor(Re=Re)",
            ["fluids.friction_factor", "fluids", "friction_factor", "friction", "factor", "re", "re"],
        ),
        ("median_house_value", ["median_house_value", "median", "house", "value"]),
        ("RandomForestRegressor", ["randomforestregressor", "random", "forest", "regressor"]),
        ("HTTPServer XMLHttpRequest", ["httpserver", "http", "server", "xmlhttprequest", "xml", "http", "request"]),
        ("np.random.RandomState", ["np.random.randomstate", "np", "random", "randomstate", "state"]),
        ("res.gas_beta", ["res.gas_beta", "res", "gas_beta", "gas", "beta"]),
        ("__init__ x_1", ["__init__", "init", "x_1", "x", "1"]),
        ("x-axis", ["x-axis", "x", "axis"]),  # a one-letter part: kept whole, like a code
    ],
)
def test_identifiers_keep_the_whole_and_split_into_parts(text, terms):
    assert UNSTEMMED.terms(text) == terms


@pytest.mark.parametrize("attribute", ["gas_beta", "friction_factor", "RandomState", "max_iter"])
def test_a_question_naming_an_attribute_holds_no_word_the_cell_lacks(attribute):
    """A cell writes an attribute after its object (`res.gas_beta`); the question names it alone."""
    cell = set(DEFAULT.terms(f"print(res.{attribute})"))
    assert set(DEFAULT.query_terms(f"what is the {attribute}")) <= cell


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("1284.6", ["1284.6"]),
        ("3.5e-3 1E5", ["3.5e-3", "1e5"]),
        ("1,284.6 bar", ["1284.6", "bar"]),  # thousands separator dropped
        ("1,000, 2,000", ["1000", "2000"]),
        ("SG 0,815", ["sg", "0.815", "0", "815"]),  # Dutch decimal comma, parts kept for code like (3,4)
        ("tekening 17-042", ["tekening", "17-042", "17", "042"]),
        ("E-407", ["e-407", "e", "407"]),
        ("2019-01-01", ["2019-01-01", "2019", "01"]),
        ("50mm", ["50mm", "50", "mm"]),
        ("3.5mm", ["3.5mm", "3", "5", "mm"]),  # a number's decimals are no dotted name's segment
    ],
)
def test_numbers_and_codes_stay_whole(text, terms):
    assert UNSTEMMED.terms(text) == terms


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("Peng-Robinson", ["peng", "robinson"]),
        ("Froude-getal", ["froude", "getal"]),
        ("Bernoulli-effect", ["bernoulli", "effect"]),
        ("DataFrame-object", ["dataframe", "data", "frame", "object"]),
        ("E-407 17-042 R-22", ["e-407", "e", "407", "17-042", "17", "042", "r-22", "r", "22"]),
        ("12-inch 30-olie 3.5-inch", ["12", "inch", "30", "olie", "3.5", "inch"]),  # a number and words
        ("x-axis 2-3", ["x-axis", "x", "axis", "2-3", "2", "3"]),  # a one-letter part, digits alone: codes
    ],
)
def test_hyphenated_compounds_of_words_are_their_words(text, terms):
    """A compound is its words alone (no whole to go missing), and so is a number joined to words
    (a cell writes `12 inch` as often as `12-inch`); codes keep the whole as before."""
    assert UNSTEMMED.terms(text) == terms


def test_a_dutch_compound_question_meets_the_english_words():
    """A Dutch query's ``Froude-getal`` and ``Bernoulli-effect`` meet a cell's "Froude number" and
    "Bernoulli effect", and leave no term of their own that the archive would lack."""
    cell = set(DEFAULT.terms("the Froude number and the Bernoulli effect"))
    query = set(DEFAULT.query_terms("Wat is het Froude-getal bij het Bernoulli-effect?"))
    assert {"bernoulli", "effect"} <= cell & query and cell & query & {"froude", "froud"}
    assert all("-" not in term for term in query)


def test_accents_and_compatibility_characters_fold():
    folded = ["cafe", "naive", "angstrom", "strasse", "file", "m2", "m", "2"]
    assert UNSTEMMED.terms("Café NAÏVE Ångström straße ﬁle m²") == folded
    # A decomposed accent (e + combining acute) is the same word as the precomposed one.
    assert UNSTEMMED.terms("Cafe\u0301") == UNSTEMMED.terms("Café") == ["cafe"]


def test_a_power_written_in_ascii_reads_as_its_superscript():
    """`50 m³` in a question meets a notebook's `50 m^3` (markdown, LaTeX) and `m**3` (code); a
    number's power (`10**3`) and a negative one (`m^-1`) are left alone."""
    assert UNSTEMMED.terms("50 m^3") == UNSTEMMED.terms("50 m**3") == UNSTEMMED.terms("50 m³") == ["50", "m3", "m", "3"]
    assert UNSTEMMED.terms("kg/m^3 r^2") == ["kg", "m3", "m", "3", "r2", "r", "2"]
    assert UNSTEMMED.terms("10**3 m^-1") == ["10", "3", "m", "1"]


def test_non_latin_letters_stay_words():
    assert UNSTEMMED.terms("Δp = ρ·v² 船") == ["δp", "ρ", "v2", "v", "2", "船"]


def test_stop_words_of_both_languages_go():
    assert UNSTEMMED.terms("the pressure of the pipe") == ["pressure", "pipe"]
    assert UNSTEMMED.terms("de inhoud van het ballast") == ["inhoud", "ballast"]
    keep = Analyzer(AnalyzerSettings(stem=False, stopwords=False))
    assert keep.terms("the pipe") == ["the", "pipe"]


@pytest.mark.parametrize(
    ("english", "dutch"),
    [
        ("losses between the turbines and the meter", "verliezen tussen de turbines en de meter"),
        ("the load during each voyage", "de belasting tijdens elke reis"),
        ("only the tanks above both decks", "slechts de tanks boven beide dekken"),
        ("the pump with which the tank is filled", "de pomp waarmee de tank gevuld wordt"),
        ("the valve so that the pressure falls off", "de klep zodat de druk afvalt"),
    ],
)
def test_a_dutch_question_drops_the_words_its_english_twin_drops(english, dutch):
    """Snowball's Dutch list lacks the Dutch of many English stop words (between, during, each,
    only, above, both, so that, with which): without them a Dutch question counted `tussen` as a word the notebook
    must hold, and its refusal named it missing. Each twin keeps its two or three nouns."""
    assert len(UNSTEMMED.query_terms(english)) == len(UNSTEMMED.query_terms(dutch))


def test_dutch_stop_words_are_no_english_words():
    """The Dutch added to the list are never English words too (`hen`, `deed`, `elk` are left
    out), since a chunk drops the stop words of both languages."""
    assert UNSTEMMED.terms("the hen, the deed and the elk") == ["hen", "deed", "elk"]


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("How many ballast pumps", ["ballast", "pumps"]),
        ("how much fuel", ["fuel"]),
        ("Hoeveel ballastpompen", ["ballastpompen"]),
        ("Welke diepgang, waar en wanneer, en waarom", ["diepgang"]),
    ],
)
def test_a_questions_asking_words_are_not_what_it_asks_for(question, asked):
    """The question words NLTK's lists lack (English many, much; Dutch hoeveel, welk(e), waar,
    wanneer, waarom) go with the rest, so a refusal never counts them as missing."""
    assert UNSTEMMED.query_terms(question) == asked


def shared(a: str, b: str, analyse=DEFAULT.terms) -> set[str]:
    return set(analyse(a)) & set(analyse(b))


def test_english_stemming_matches_inflections():
    assert shared("pumps", "pumping") == {"pump"}
    assert shared("pressures", "pressure") == {"pressur"}
    assert shared("DataFrames", "dataframe")  # a camelCase word is stemmed like the plain word


def test_british_and_american_spellings_meet():
    """An archive's authors and the people asking it need not spell alike: a British word is
    read in its American spelling, in a chunk's identifier parts and in a query alike."""
    assert shared("vapour fraction", "vapor fraction") == {"vapor", "fraction"}
    assert shared("litres", "liters") == {"liter"}
    assert DEFAULT.terms("normalise") == DEFAULT.terms("normalize")
    assert DEFAULT.query_terms("what is the colour of the plot") == DEFAULT.query_terms("what is the color of the plot")
    assert "color" in DEFAULT.terms("plot_colour")
    # not the pairs that are two things to an engineer: a tonne is no (short) ton, a gauge no gage
    assert not shared("tonnes", "tons") and not shared("gauge", "gage")


def test_a_british_word_in_isation_the_table_lacks_reads_by_its_verb():
    """`vapourisation` is in no table, but the table spells vapour -> vapor and vaporise ->
    vaporize, so it is vaporization; a word whose verb the table does not hold stays as written."""
    assert DEFAULT.terms("vapourisation") == DEFAULT.terms("vaporization")
    assert DEFAULT.terms("minimisation") == DEFAULT.terms("minimization")
    assert DEFAULT.terms("improvisation") == ["improvis", "improvisation"]  # no improvize
    assert DEFAULT.terms("expertise") == ["expertis"]


def test_dutch_stemming_matches_inflections():
    assert shared("leidingen", "leiding") == {"leid"}
    assert shared("berekening", "berekenen") == {"berekeen"}
    assert shared("schakelaars", "schakelaar") == {"schakel", "schakelaar"}


def test_stemmers_are_snowballstemmers_own_without_the_rest_of_the_package():
    """The English and Dutch stemmers are snowballstemmer's, imported without the package's
    ``__init__`` and its 34 other stemmers (half a second or more of a tab's boot): a fresh
    interpreter that builds an Analyzer has imported two stemmer modules and not the package,
    and they stem as the package's public API does."""
    probe = (
        "import sys\nfrom cellar.retrieval.analysis import Analyzer\nAnalyzer()\n"
        "print(sorted(m for m in sys.modules if 'stemmer' in m or 'snowball' in m))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == str(
        [
            "cellar._snowball",
            "cellar._snowball.among",
            "cellar._snowball.basestemmer",
            "cellar._snowball.dutch_stemmer",
            "cellar._snowball.english_stemmer",
        ]
    )
    import snowballstemmer

    from cellar.retrieval.analysis import _stemmer

    words = (
        "pumps pumping pressures generalizations leidingen berekening schakelaars ballasttanks kortsluitstroom".split()
    )
    for language in ("english", "dutch"):
        assert list(map(_stemmer(language), words)) == snowballstemmer.stemmer(language).stemWords(words)


def test_chunks_carry_both_stems_and_queries_their_own_language():
    assert DEFAULT.terms("leidingen") == ["leidingen", "leid"]  # English stem, then Dutch
    assert DEFAULT.query_terms("wat is het drukverlies in de leidingen") == ["drukverlie", "leid"]
    assert DEFAULT.query_terms("what is the pressure in the pipes") == ["pressur", "pipe"]
    # Without stop-word evidence a query carries both stems, like a chunk.
    assert DEFAULT.query_terms("leidingen") == DEFAULT.terms("leidingen")
    # Whatever language a query is read in, its terms are among the chunk's terms for the same words.
    chunk = set(DEFAULT.terms("Het drukverlies in de leidingen; the pressures in the pipes"))
    assert set(DEFAULT.query_terms("het drukverlies in de leidingen")) <= chunk
    assert set(DEFAULT.query_terms("the pressures in the pipes")) <= chunk


GLOSSARY = AnalyzerSettings(glossary={"kk vk": "kortsluiting vermogensschakelaar", "VK": "vermogensschakelaar"})


def test_glossary_expands_chunks_and_queries_alike():
    analyzer = Analyzer(GLOSSARY)
    chunk = analyzer.terms("De KK VK van veld 3 is vervangen")
    assert {"kk", "vk", "kortsluit", "vermogensschakelaar"} <= set(chunk)
    # The abbreviation finds the written-out chunk, and the written-out query finds the abbreviation.
    assert set(analyzer.query_terms("kk vk")) & set(analyzer.terms("kortsluiting vermogensschakelaar defect"))
    written_out = analyzer.query_terms("kortsluiting vermogensschakelaar")
    assert {"kortsluit", "vermogensschakelaar"} <= set(chunk) & set(written_out)


def test_glossary_prefers_the_longest_key_and_ignores_case_and_accents():
    glossary = {"kk vk": "kortsluiting", "vk": "vermogensschakelaar", "café": "bar"}
    analyzer = Analyzer(AnalyzerSettings(stem=False, glossary=glossary))
    assert analyzer.terms("kk vk") == ["kk", "vk", "kortsluiting"]
    assert analyzer.terms("Vk") == ["vk", "vermogensschakelaar"]
    assert analyzer.terms("CAFE") == ["cafe", "bar"]
    assert Analyzer(AnalyzerSettings(stem=False)).terms("kk vk") == ["kk", "vk"]


def test_settings_round_trip_through_json():
    glossary = {"kk vk": "kortsluiting vermogensschakelaar"}
    settings = AnalyzerSettings(languages=["dutch"], stopwords=False, glossary=glossary)
    restored = AnalyzerSettings.from_dict(json.loads(json.dumps(settings.to_dict())))
    assert restored == settings
    assert restored.languages == ("dutch",) and restored.glossary == (("kk vk", "kortsluiting vermogensschakelaar"),)
    text = "De KK VK van de leidingen"
    assert Analyzer(restored).terms(text) == Analyzer(settings).terms(text)
    assert AnalyzerSettings.from_dict(AnalyzerSettings().to_dict()) == AnalyzerSettings()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"languages": ["klingon"]}, "unsupported analyser language"),
        ({"stemming": True}, "unknown analyser setting"),
        ({"glossary": {"kk": ""}}, "non-empty strings"),
        ({"glossary": {"---": "dash"}}, "without word characters"),
    ],
)
def test_bad_settings_are_refused(data, message):
    with pytest.raises(ValueError, match=message):
        Analyzer(AnalyzerSettings.from_dict(data))


def test_terms_on_the_shared_corpus_cover_the_gold_evidence(shared_corpus):
    """Every gold evidence string, analysed alone, yields terms that the same analyser finds in the
    cell source or output that holds it: the analyser loses nothing that a question needs."""
    gold = [json.loads(line) for line in (shared_corpus.parent / "gold" / "dev.jsonl").read_text().splitlines()]
    checked = 0
    for question in gold:
        for expect in question["expect"]:
            cell = nbformat.read(shared_corpus / expect["path"], as_version=4).cells[expect["cell"]]
            texts = [cell.source] + [t for output in cell.get("outputs", []) for t in output_texts(output)]
            holder = next(t for t in texts if expect["evidence"] in t)
            evidence = DEFAULT.terms(expect["evidence"])
            assert evidence and set(evidence) <= set(DEFAULT.terms(holder)), expect
            checked += 1
    assert checked >= 50


def output_texts(output: dict) -> list[str]:
    """Every string an output carries: stream text, each MIME type's text, an error's name and value."""
    data = [v for v in output.get("data", {}).values() if isinstance(v, str)]
    return [output.get("text", ""), output.get("ename", ""), output.get("evalue", ""), *data]

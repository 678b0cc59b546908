"""Turn text into BM25 terms: the same analysis for chunks at build time and queries in the browser.

A text is cut into raw tokens with one regular expression, and each distinct raw token is expanded
once (memoised) into its terms:

- words: accents folded (NFKD, combining marks dropped), case folded, stop words dropped, then
  stemmed by every configured Snowball stemmer; when the English and the Dutch stems differ both are
  kept, so that an English query and a Dutch query each meet the stem their own stemmer makes
  (``pressures`` -> ``pressur``; ``leidingen`` -> ``leidingen``, ``leid``); a query whose stop words
  show its language is stemmed in that language alone (``Analyzer.query_terms``);
- code identifiers: the whole identifier is kept verbatim (``fluids.friction_factor``,
  ``df.groupby``) and its parts are split on ``.``, ``-``, ``_`` and camelCase boundaries and
  analysed as words (``fluids``, ``friction``, ``factor``); a camelCase word without separators is
  itself a word (``DataFrame`` -> ``datafram``, ``data``, ``frame``); each segment of a dotted
  name is also read as a token of its own (``res.gas_beta`` -> ``gas_beta`` too), so that a
  question naming an attribute meets the cell that writes it after its object;
- numbers stay whole: ``1284.6``, ``3.5e-3``; a thousands separator is removed (``1,284.6`` ->
  ``1284.6``, the English reading of ``[1-9]d{0,2}(,ddd)+``); any other digit-comma-digit is read as a
  Dutch decimal comma and kept both ways (``0,815`` -> ``0.815``, ``0``, ``815``: code such as
  ``(3,4)`` keeps its parts);
- codes joined by ``-`` or ``.`` are identifiers: ``17-042`` -> ``17-042``, ``17``, ``042`` and
  ``E-407`` -> ``e-407``, ``e``, ``407``;
- a hyphenated compound of words (every part letters only, at least two of them) is its words
  alone: ``Froude-getal`` -> ``froude``, ``getal`` and ``Bernoulli-effect`` -> ``bernoulli``,
  ``effect``, on chunks and queries alike, so that a question's compound meets a cell's
  "Froude number" and is not counted as a word the archive lacks; so is a number joined to words
  (``12-inch`` -> ``12``, ``inch``; ``30-olie``), which a cell writes apart as often (a code of
  digits or with a one-letter part, ``17-042``, ``E-407``, ``x-axis``, stays whole as above);
- a power written after a unit's letters loses its sign (``m^3``, ``m**3`` -> ``m3``, as ``m³``
  folds; ``r^2`` -> ``r2``, as ``R²``), so that a question's ``m³`` meets a notebook's ``m^3``;
- a word spelled the British way is read in its American spelling first (``vapour`` -> ``vapor``,
  ``litres`` -> ``liters``, ``normalise`` -> ``normalize``; ``american_spellings``; a word in
  -isation the table lacks by its verb's, ``vapourisation`` -> ``vaporization``: ``american``), on
  chunks and queries alike, so that an archive's authors and the people asking it need not spell alike;
- a glossary (``kk vk`` -> ``kortsluiting vermogensschakelaar``) adds the analysed expansion for
  every occurrence of a key, on chunks and queries alike, so that either spelling finds the other.

BM25 is a bag of words, so the order of the terms carries no meaning; their counts do.
"""

from __future__ import annotations

import importlib
import importlib.resources
import importlib.util
import json
import re
import sys
import types
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import Any

from cellar.ingest.discovery import lone_surrogate
from cellar.ingest.provenance import revision

# A power written in ASCII after a unit's letters (``m^3``, ``kg/m**3``, ``r^2``): its sign is
# dropped, so that it reads as the superscript does once folded (``m³`` -> ``m3``).
_POWER = re.compile(r"\b([A-Za-z]{1,3})(?:\^|\*\*)(\d)\b")
# One raw token: a number with thousands separators, a number with a decimal comma, or a run of word
# characters joined by single dots or hyphens (identifiers, dotted names, codes, decimals, dates).
# At most six groups of thousands (10**21): unbounded, the run `1,111,111,...` that fails the
# look-ahead at its end was scanned again from each of its digits (a 100 KB query never ended).
_TOKEN = re.compile(r"[1-9]\d{0,2}(?:,\d{3}){1,6}(?:\.\d+)?(?!\d|,\d)|\d+,\d+|\w+(?:[.\-]\w+)*")
_THOUSANDS = re.compile(r"[1-9]\d{0,2}(?:,\d{3}){1,6}(?:\.\d+)?")
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")
_SEPARATORS = re.compile(r"[.\-_]+")
# An abbreviation's expansion is a phrase (`kk` -> `kortsluiting`): each use of it in a query or a
# note adds all its words, so one of 20,000 words made a question of a hundred `xq`s take 18 s.
MAX_GLOSSARY_CHARS = 200
# A glossary is copied whole into the shard's manifest, which every search and every page reads at
# boot: 100,000 entries (24 MB) made a 24.5 MB manifest, and `cellar search` 2.5 s and 332 MB. A
# service department's abbreviations number tens to hundreds (the demo's: 9); 5,000 entries of at
# most MAX_GLOSSARY_CHARS a side are at most 2 MB.
MAX_GLOSSARY_ENTRIES = 5_000
# Parts of an identifier piece: acronym before a capitalised word (HTTPServer), a word (an optional
# capital, then letters other than ASCII capitals, so ``straße`` and ``Δp`` stay whole), a trailing
# acronym, digits.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[^\W\d_A-Z]+|[A-Z]+|\d+")

# NLTK's stop lists for English and Dutch (both from the Snowball project's), without the
# fragments of contractions (``don``, ``re``, ``s``, ``t``, ``m``, ``d`` ...): the tokeniser splits
# ``don't`` anyway, and those fragments are also variables and units (``Re``, ``m``, ``s``, ``d``).
# With the question words they lack, so that a question's asking words are never what it asks
# for (nor a missing word its refusal counts): English has what, which, when, where, why and how,
# but not many and much (``how many pumps``); Dutch has wat, wie and hoe, but not welk(e), waar,
# wanneer, waarom and hoeveel (``Welke diepgang``, ``Hoeveel pompen``). And with the Dutch for the
# English list's words that Snowball's Dutch list lacks (between, above, during, each, both, all,
# only, very, until, while ...: ``tussen``, ``boven``, ``tijdens``; ``zodat``, so that; a verb's
# particles ``af`` and ``mee``, off and with; ``waarbij``, ``erop``, ``daarmee``, the pronominal
# adverbs that English writes as which, it, there), so that a Dutch question does not count as
# missing a word its English twin never looks for; not those that are also English words
# (``hen``, ``deed``, ``elk``, ``doe``, ``toe``, ``erin``) or Dutch content words (``eigen``
# gewicht, het ``weer``).
STOP_WORDS: dict[str, frozenset[str]] = {
    "english": frozenset(
        """a about above after again against all am an and any are as at be because been before being
        below between both but by can did do does doing down during each few for from further had has
        have having he her here hers herself him himself his how i if in into is it its itself just many me
        more most much my myself no nor not now of off on once only or other our ours ourselves out over own same
        she should so some such than that the their theirs them themselves then there these they this
        those through to too under until up very was we were what when where which while who whom why
        will with you your yours yourself yourselves""".split()
    ),
    "dutch": frozenset(
        """aan al alles als altijd andere ben bij daar dan dat de der deze die dit doch doen door dus een
        eens en er ge geen geweest haar had heb hebben heeft hem het hier hij hoe hoeveel hun iemand iets ik in is
        ja je kan kon kunnen maar me meer men met mij mijn moet na naar niet niets nog nu of om omdat onder
        ons ook op over reeds te tegen toch toen tot u uit uw van veel voor waar waarom wanneer want waren was
        wat welk welke werd wezen wie wil worden wordt zal ze zelf zich zij zijn zo zonder zou
        alle allebei alleen ander beide beneden boven daarna deden dezelfde doet eenmaal elke enig enige
        hadden haarzelf hemzelf hetzelfde ieder iedere indien jezelf jij jou jouw jullie meest meeste mezelf
        mijzelf nadat neer noch onszelf onze slechts sommige terwijl tijdens totdat tussen vanaf vanuit
        verder voordat we weinig wij zeer zelfde zichzelf zodra zulk zulke zullen
        af mee zodat waarbij waarin waarmee waardoor waarvan waarop waaruit waarna waarvoor erop ervan
        ermee erbij eruit ervoor erover eraan daarbij daarin daarmee daardoor daarvan daarop daaruit
        daarvoor daaraan daarover hierbij hierin hiermee hiervan hierop hieruit hiervoor""".split()
    ),
}
LANGUAGES = tuple(STOP_WORDS)
SPELLING_ID = "en-spelling"  # models/en-spelling/: British -> American spellings


def packaged_table_dir(table_id: str) -> Path:
    """The folder of a table that ships inside the package (``models/<table_id>/``)."""
    return Path(str(importlib.resources.files("cellar.retrieval") / "models" / table_id))


def checked_table(folder: Path) -> str:
    """The text of the data file that ``folder``'s table.json names, checked against the SHA-256
    table.json records for it (the spellings here, the Dutch tables in ``cellar.retrieval.bilingual``)."""
    meta = json.loads((folder / "table.json").read_text(encoding="utf-8"))
    data = (folder / meta["file"]).read_bytes()
    if revision(data) != meta["sha256"]:
        raise ValueError(f"{folder / meta['file']}: SHA-256 {revision(data)} is not table.json's {meta['sha256']}")
    return data.decode("utf-8")


@lru_cache(maxsize=1)
def american_spellings() -> dict[str, str]:
    """British spelling -> American of 1,723 English words (``models/en-spelling/``: breame's
    table, Apache-2.0, without the pairs that are two words to an engineer: `gauge` is no `gage`,
    a `tonne` no `ton`, an `axe` no `ax`), checked against its table.json. Read once per process."""
    text = checked_table(packaged_table_dir(SPELLING_ID))
    return dict(line.split("\t") for line in text.splitlines())


# British verb endings in -is- and their American ones, longest first (``american``).
_IS_ENDINGS = (
    ("isations", "izations"), ("isation", "ization"), ("isers", "izers"), ("ising", "izing"), ("ised", "ized"),
    ("ises", "izes"), ("iser", "izer"), ("ise", "ize"),
)  # fmt: skip


def american(word: str, spellings: Mapping[str, str]) -> str:
    """``word`` in its American spelling: the table's (``american_spellings``), else, for a
    word in -isation, -ise, -ised... that the table lacks, its ending in -iz- when the table
    spells the verb so, the stem in its American spelling too (``vapourisation`` -> vaporization,
    as the table has vapour -> vapor and vaporise -> vaporize; ``minimisation`` -> minimization).
    A word whose verb the table does not hold stays as written (``improvisation``, ``expertise``)."""
    if word in spellings:
        return spellings[word]
    for british, american_ending in _IS_ENDINGS:
        if word.endswith(british):
            stem = word[: -len(british)]
            stem = spellings.get(stem, stem)
            return stem + american_ending if f"{stem}ise" in spellings else word
    return word


# snowballstemmer's modules, imported as submodules of this name (see _stemmer).
_SNOWBALL = "cellar._snowball"


@dataclass(frozen=True)
class AnalyzerSettings:
    """How text becomes terms. Stored in the shard manifest (``to_dict``) so that the browser
    analyses a query exactly as the index analysed the chunks.

    ``languages``: Snowball stemmers and stop lists to apply, in order (``english``, ``dutch``).
    ``stem`` / ``stopwords``: switch stemming / stop-word removal off for all languages.
    ``glossary``: (abbreviation, expansion) pairs; a mapping is accepted and stored as pairs.
    """

    languages: tuple[str, ...] = ("english", "dutch")
    stem: bool = True
    stopwords: bool = True
    glossary: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        languages = tuple(self.languages)
        unknown = [lang for lang in languages if lang not in STOP_WORDS]
        if unknown:
            raise ValueError(f"unsupported analyser language(s) {unknown}; choose from {list(LANGUAGES)}")
        pairs = self.glossary.items() if isinstance(self.glossary, Mapping) else self.glossary
        glossary = tuple((key, value) for key, value in pairs)
        if len(glossary) > MAX_GLOSSARY_ENTRIES:
            raise ValueError(
                f"a glossary of {len(glossary):,} entries, over the limit of {MAX_GLOSSARY_ENTRIES:,}: "
                "it is copied into the shard manifest every search reads"
            )
        for key, value in glossary:
            if not (isinstance(key, str) and isinstance(value, str) and key.strip() and value.strip()):
                raise ValueError(f"glossary entry {key!r} -> {value!r}: both sides must be non-empty strings")
            if lone_surrogate([key, value]):  # no UTF-8 spells one
                raise ValueError(f"glossary entry {key!r} -> {value!r}: a lone surrogate is no character")
            if len(key) > MAX_GLOSSARY_CHARS or len(value) > MAX_GLOSSARY_CHARS:
                raise ValueError(
                    f"glossary entry {key[:40]!r}: an abbreviation and its expansion are at most "
                    f"{MAX_GLOSSARY_CHARS} characters each, not {len(key):,} and {len(value):,}"
                )
        # Frozen: the coercions above (list -> tuple, mapping -> pairs) must bypass __setattr__.
        object.__setattr__(self, "languages", languages)
        object.__setattr__(self, "glossary", glossary)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict; ``from_dict(to_dict())`` gives back equal settings."""
        return {
            "languages": list(self.languages),
            "stem": self.stem,
            "stopwords": self.stopwords,
            "glossary": dict(self.glossary),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnalyzerSettings:
        """Settings from ``to_dict`` output (e.g. a shard manifest); unknown keys are an error."""
        unknown = set(data) - {"languages", "stem", "stopwords", "glossary"}
        if unknown:
            raise ValueError(f"unknown analyser setting(s): {sorted(unknown)}")
        return cls(**data)


class _Memo(dict):
    """A dict that fills itself: ``memo[key]`` computes ``fn(key)`` once, then remembers it."""

    def __init__(self, fn: Callable[[str], Any]) -> None:
        super().__init__()
        self._fn = fn

    def __missing__(self, key: str) -> Any:
        value = self[key] = self._fn(key)
        return value


def _stemmer(language: str) -> Callable[[str], str]:
    """The ``stemWord`` of snowballstemmer's stemmer for ``language``, imported alone.

    ``import snowballstemmer`` imports all of the package's 36 stemmers, which costs a tab 0.4 to
    0.9 s of its boot (Pyodide compiles every module it imports); the English and Dutch modules
    alone cost about a seventh of that. So the package's own directory is mounted as the namespace
    ``cellar._snowball`` without running its ``__init__``, and only ``<language>_stemmer`` is
    imported from it: its relative imports (``.basestemmer``, ``.among``) resolve there. (This
    also skips the ``__init__``'s switch to the C PyStemmer when that is installed, so CPython
    stems exactly as Pyodide does.)"""
    package = sys.modules.get(_SNOWBALL)
    if package is None:
        spec = importlib.util.find_spec("snowballstemmer")  # finds the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("cellar.retrieval.analysis needs the snowballstemmer package (pure Python)")
        package = types.ModuleType(_SNOWBALL, "snowballstemmer's modules, without its __init__")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules[_SNOWBALL] = package
    module = importlib.import_module(f"{_SNOWBALL}.{language}_stemmer")
    return getattr(module, f"{language.capitalize()}Stemmer")().stemWord


def _fold(text: str) -> str:
    """Accent folding: compatibility decomposition without combining marks (``é`` -> ``e``, ``ﬁ`` -> ``fi``)."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _raw_tokens(text: str) -> list[str]:
    if not text.isascii():
        # \w matches precomposed letters only; recompose so that a decomposed accent splits nothing.
        text = unicodedata.normalize("NFC", text)
    if "^" in text or "**" in text:
        text = _POWER.sub(r"\1\2", text)  # m^3, m**3: m3, as m³ folds
    return _TOKEN.findall(text)


class _Expansion:
    """Raw token -> terms for one set of stemmers, memoised: a notebook archive repeats a few
    hundred thousand distinct tokens, so each is stemmed once however often it occurs."""

    def __init__(
        self, stop: frozenset[str], stemmers: list[Callable[[str], str]], spellings: Mapping[str, str]
    ) -> None:
        self._stop = stop
        self._stemmers = stemmers
        self._spellings = spellings
        self._words = _Memo(self._word)
        self.tokens = _Memo(self._expand)

    def _word(self, word: str) -> tuple[str, ...]:
        """Terms of one case-folded word, in its American spelling: nothing for a stop word, else
        its distinct stems."""
        word = american(word, self._spellings)
        if word in self._stop:
            return ()
        if not self._stemmers or not word.isalpha():
            return (word,)
        return _unique(stem(word) for stem in self._stemmers)

    def _expand(self, raw: str) -> tuple[str, ...]:
        """Terms of one raw token (see the module docstring for the rules)."""
        folded = _fold(raw)
        if folded is not raw and _TOKEN.fullmatch(folded) is None:
            # Folding produced a separator (``½`` -> ``1⁄2``): tokenise the folded text again.
            return tuple(chain.from_iterable(map(self._expand, _TOKEN.findall(folded))))
        if "," in folded:
            if _THOUSANDS.fullmatch(folded):
                return (folded.replace(",", ""),)
            whole, fraction = folded.split(",")
            return _unique((f"{whole}.{fraction}", whole, fraction))
        lower = folded.casefold()
        if _NUMBER.fullmatch(lower):
            return (lower,)
        pieces = folded.split("-")
        words = pieces[1:] if len(pieces) > 1 and _NUMBER.fullmatch(pieces[0]) else pieces
        if len(pieces) > 1 and all(len(piece) > 1 and piece.isalpha() for piece in words):
            # A compound of words (``Froude-getal``, ``Bernoulli-effect``), or of a number and
            # words (``12-inch``, ``30-olie``): its parts alone, so that a query's compound is no
            # missing word when the archive holds its parts apart.
            return _unique(chain.from_iterable(self.tokens[piece] for piece in pieces))
        segments = folded.split(".")
        if len(segments) > 1 and not folded[0].isdigit():
            # A dotted name (``res.gas_beta``): the whole verbatim, and each segment read as a
            # token of its own, so that a question naming the attribute alone (``gas_beta``)
            # meets the cell that writes it after its object. Not a number's (``3.5mm`` holds
            # no ``5mm``).
            return _unique(chain((lower,), *(self.tokens[segment] for segment in segments)))
        parts = [p.casefold() for piece in _SEPARATORS.split(folded) for p in _CAMEL.findall(piece)]
        if not parts:
            return ()
        if parts == [lower]:
            return self._words[lower]
        # A letters-only whole (camelCase) is a word like any other, so ``DataFrame`` and
        # ``dataframes`` meet; anything with separators or digits is kept verbatim.
        whole_terms = self._words[lower] if lower.isalpha() else (lower,)
        return _unique(chain(whole_terms, *(self._words[p] for p in parts)))

    def terms(self, raws: Iterable[str]) -> list[str]:
        return list(chain.from_iterable(map(self.tokens.__getitem__, raws)))


class Analyzer:
    """Text -> BM25 terms, the same for chunks (``terms``) and queries (``query_terms``)."""

    def __init__(self, settings: AnalyzerSettings | None = None) -> None:
        self.settings = settings = settings or AnalyzerSettings()
        languages = settings.languages
        stop = frozenset().union(*(STOP_WORDS[lang] for lang in languages if settings.stopwords))
        stemmers = {lang: _stemmer(lang) for lang in languages if settings.stem}
        spellings = american_spellings() if "english" in languages else {}
        self._all = _Expansion(stop, list(stemmers.values()), spellings)
        # With several stemmers, a query in one language is stemmed by that language's alone, and
        # the stop words that belong to one language only are the evidence (see query_terms).
        self._single = (
            {lang: _Expansion(stop, [stem], spellings) for lang, stem in stemmers.items()} if len(stemmers) > 1 else {}
        )
        self._markers = {
            lang: STOP_WORDS[lang].difference(*(STOP_WORDS[other] for other in self._single if other != lang))
            for lang in self._single
        }
        self._folded = _Memo(lambda raw: _fold(raw).casefold())
        self._glossary = {
            tuple(map(self._folded.__getitem__, _raw_tokens(key))): _raw_tokens(expansion)
            for key, expansion in settings.glossary
        }
        if () in self._glossary:
            wordless = [key for key, _ in settings.glossary if not _raw_tokens(key)]
            raise ValueError(f"glossary key(s) without word characters: {wordless[:5]}")
        self._key_lengths = sorted({len(key) for key in self._glossary}, reverse=True)
        self._key_starts = {key[0] for key in self._glossary}

    def terms(self, text: str) -> list[str]:
        """The terms of a chunk's text, one entry per occurrence (BM25 counts them): words carry
        the stems of every configured language, so that a query in any of them matches."""
        return self._analyse(_raw_tokens(text), self._all)

    def query_terms(self, text: str) -> list[str]:
        """The terms of a query. A query whose stop words are all of one language (``wat``, ``het``
        vs ``what``, ``the``) is stemmed in that language alone, because the chunks carry every
        language's stem; otherwise (no stop words, or mixed) as ``terms`` does. Measured on the dev
        gold set (benchmarks/bm25.py): notebook hit@1 .904 and MRR .938 against .846 and .904 when
        queries too carry both stems, and .865 / .920 with English stemming alone."""
        raws = _raw_tokens(text)
        language = self._language([self._folded[raw] for raw in raws])
        return self._analyse(raws, self._single[language] if language else self._all)

    def query_language(self, text: str) -> str | None:
        """The language ``query_terms`` stems ``text`` in: the one whose own stop words alone it
        holds, or None (no stop words, mixed, or a single stemmer)."""
        return self._language([self._folded[raw] for raw in _raw_tokens(text)])

    def prose_language(self, texts: Iterable[str], at_least: int = 2) -> str | None:
        """The language of a file's prose (``texts``, its markdown and paragraphs): the one whose
        own stop words it holds at least twice as often as any other's, and ``at_least`` times;
        None for a mixed or a wordless file, or a single stemmer. A notebook or a document is
        judged as a file, not chunk by chunk, so that its code and tables are read in its language
        too (a service note, written on its own, is judged alone: ``incremental.english_readings``)."""
        votes = self._votes([self._folded[raw] for text in texts for raw in _raw_tokens(text)])
        for language, count in votes.items():
            if count >= at_least and all(count >= 2 * other for lang, other in votes.items() if lang != language):
                return language
        return None

    def language_terms(self, text: str, language: str) -> list[str]:
        """The terms of ``text`` stemmed in ``language`` alone (as a query in that language), or as
        ``terms`` does when the analyser has no separate stemmer for it."""
        expansion = self._single.get(language, self._all)
        return self._analyse(_raw_tokens(text), expansion)

    def stop_words(self, language: str) -> frozenset[str]:
        """The stop words of ``language`` the analyser drops (none when it drops none)."""
        return STOP_WORDS.get(language, frozenset()) if self.settings.stopwords else frozenset()

    def glossary_words(self, text: str) -> list[str]:
        """The words of the glossary's expansions of the abbreviations ``text`` holds (``brg``
        -> ``bearing lager``), in order: what the dense side of a service note is embedded with
        beside its own words, as its terms carry their analysed forms."""
        return self._glossary_tokens(_raw_tokens(text)) if self._glossary else []

    def raw_tokens(self, text: str) -> list[str]:
        """The raw tokens the analyser cuts ``text`` into (before folding and stemming)."""
        return _raw_tokens(text)

    def _votes(self, folded: list[str]) -> dict[str, int]:
        """How many of the words ``folded`` are stop words of one language alone, per language."""
        return {lang: sum(t in markers for t in folded) for lang, markers in self._markers.items()}

    def _language(self, folded: list[str]) -> str | None:
        votes = self._votes(folded)
        winners = [lang for lang, n in votes.items() if n and n == max(votes.values())]
        return winners[0] if len(winners) == 1 else None

    def _analyse(self, raws: list[str], expansion: _Expansion) -> list[str]:
        terms = expansion.terms(raws)
        if self._glossary:
            terms.extend(expansion.terms(self._glossary_tokens(raws)))
        return terms

    def _glossary_tokens(self, raws: list[str]) -> list[str]:
        """Raw tokens of the expansions of the glossary keys found in ``raws`` (case- and
        accent-folded), longest key first, without overlaps."""
        folded = [self._folded[raw] for raw in raws]
        found: list[str] = []
        i = 0
        while i < len(folded):
            step = 1
            if folded[i] in self._key_starts:
                for n in self._key_lengths:
                    expansion = self._glossary.get(tuple(folded[i : i + n]))
                    if expansion is not None:
                        found.extend(expansion)
                        step = n
                        break
            i += step
        return found

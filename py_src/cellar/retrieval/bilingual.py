"""Dutch questions over English cells: a Dutch -> English term table, and what it adds to a query.

The static model is distilled from an English encoder and does not cross the two languages, and
BM25 finds no English cell for a Dutch word. So a Dutch question also looks for the English
translations of its words:

- **the table** (``models/nld-eng/nld-eng.tsv``, one ``dutch<TAB>english english ...`` line per
  headword) is derived at build time from FreeDict's Dutch-English dictionary (GPL-2+, Debian's
  ``dict-freedict-nld-eng``) by ``cellar model bilingual`` (``build_table``): single-word
  headwords, each with at most ``MAX_TRANSLATIONS`` single-word translations, in the dictionary's
  order, that are whole words of the embedding model's vocabulary and no English stop word; a
  headword that is itself a whole word of that vocabulary (``bar``, ``per``, ``gallon``: read
  as English) or whose only translation is itself is left out. It ships as a separate data file under
  its own licence, and the query path reads it with the standard library alone;
- **a question's words** (``Translator.translate``): each word of a Dutch question (not a stop
  word) is looked up as written, then without a plural or inflection ending (``leidingen`` ->
  ``leiding``, ``verliezen`` -> ``verlies``), then as a compound of two headwords with an optional
  linking ``s``/``e``/``en`` (``drukverlies`` -> ``druk`` + ``verlies`` -> pressure loss), the
  longest known last part (the head of a Dutch compound) first, unless a linking ``s`` leaves a
  part the table holds as written (``geluidsmeting``: meting, not smeting), the part before it
  perhaps a compound too, a part that is a whole English word read as one (``windpark``), or
  an English noun in its Dutch plural (``hoofdmotoren``: motor, not toren); a word the table
  lacks is read as its English cognate when that is a whole word of the model's vocabulary
  (``harmonische`` -> harmonic, ``thermisch`` -> thermal, ``numerieke`` -> numerical), or when
  it is not and the word has a Latin or Greek ending that maps one to one (``viscositeit`` ->
  viscosity, ``laminaire`` -> laminar: ``_COGNATES``; a verb in -iseren, ``normaliseert`` ->
  normalize, before any compound, as no Dutch compound ends so), or as the
  English word an inflection ending hides (``mediane`` -> median), or as the English word a
  compound ends in (``debietmeter`` -> meter); a word that is itself a whole word of that
  vocabulary is read as English and not translated (``broadcasting``, ``bar``), and so is a name
  (``proper_names``: capitalised inside a sentence, ``Moerdijk``, not moer + dijk); an
  untranslated word that is no name adds its English stem (``batches`` -> batch), which the
  Dutch stemmer, reading a Dutch question alone, does not make;
- **what a search does with them** (``cellar.retrieval.search``): BM25 adds the translations'
  scores at a lower weight, the dense ranker blends the query's vector with that of its English
  reading, and the refusal test counts a Dutch word as held where one of its translations is.
"""

from __future__ import annotations

import gzip
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from pathlib import Path
from typing import Any

from cellar.ingest.provenance import revision
from cellar.retrieval.analysis import STOP_WORDS, Analyzer, checked_table, packaged_table_dir

TABLE_ID = "nld-eng"
TABLE_FILE = "nld-eng.tsv"
MAX_TRANSLATIONS = 4  # translations kept per headword
MIN_PART = 3  # letters of a compound's shorter part
# Letters of the longest word read: Dutch compounds of engineering run to about 30
# (kortsluitstroomberekening: 25); the compound search is quadratic in a word's length, and a
# question or a notebook may hold a run of a million letters.
MAX_WORD = 40
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_WORD = re.compile(r"[a-z]+")
# What joins the words of a compound, an identifier or a dotted name (a dot between letters only:
# ``2.5`` stays a number).
_PIECES = re.compile(r"[-_]|(?<=[^\W\d_])\.(?=[^\W\d_])")
# A capitalised word (``Moerdijk``, ``Froude``), and what may stand between a sentence's start (the
# text's, a line's, or after . ! ? :) and its first word: spaces, Markdown marks, a list's number,
# an opening bracket or quote.
_CAPITALISED = re.compile(r"(?<![\w'])[A-Z][a-z\u00df-\u00ff]+\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?:]|\n)[\s#>*|(\[\-\d.)\"'`]*$")
# Inflection endings of a Dutch word, longest first, with what replaces them: plurals (-en, -s),
# adjective -e, the spelling changes of a plural (verliezen -> verlies, golven -> golf, snelheden ->
# snelheid: not snel + heden, today; raderen -> rad: not rad + eren, honour), a verb's noun (-ing),
# participles (-d, -t, -de, -te) and a verb's adjective in -baar (-bare when inflected) and its noun
# in -baarheid (meetbaar, meetbare, meetbaarheid -> meet, measurable: not meet + baar, cash; nor
# terugwinbare terugwin + bare); each stem is also tried as a verb (+ -en). None is a compound's part.
_ENDINGS = (
    ("baarheid", ""), ("baar", ""), ("bare", ""), ("heden", "heid"), ("eren", ""), ("zen", "s"), ("ven", "f"), ("ing", ""), ("en", ""), ("de", ""), ("te", ""),
    ("s", ""), ("e", ""), ("d", ""), ("t", ""),
)  # fmt: skip
_ENDING_WORDS = frozenset(ending for ending, _ in _ENDINGS)
# Dutch endings of words that English shares (cognates), longest first where they overlap, their
# English forms, and the one regular enough to trust without the English vocabulary (or none). A
# word the table lacks is read as the first English form that is a whole word of the vocabulary;
# failing that (and failing a compound), with the regular form: the model's 30,000 words
# lack much of engineering (laminar, viscosity, isentropic, tolerance, condensate), while Latin and
# Greek endings map one to one (laminair -> laminar, viscositeit -> viscosity, isotroop ->
# isotropic, classificeer -> classify, normaliseer -> normalize). The irregular ones guess (-ie is
# -ion or -y; -eer is -ate, -e or nothing: simuleer, combineer, converteer, comprimeer) and need
# the vocabulary's word.
_COGNATES = (
    ("ificeer", ("ify",), "ify"), ("ifieer", ("ify",), "ify"), ("iteit", ("ity",), "ity"), ("teit", ("ty",), ""),
    ("antie", ("ance", "ancy"), "ance"), ("entie", ("ence", "ency"), "ence"), ("atie", ("ation",), "ation"),
    ("sie", ("sion",), "sion"), ("tie", ("tion",), "tion"), ("ie", ("ion", "y"), ""),
    ("ische", ("ical", "ic", "al", "ian"), "ic"), ("isch", ("ical", "ic", "al", "ian"), "ic"),
    ("ieke", ("ic", "ical"), ""), ("iek", ("ic", "ical"), ""), ("iele", ("ial",), "ial"),
    ("ieel", ("ial",), "ial"), ("ieve", ("ive",), "ive"), ("ief", ("ive",), "ive"), ("isme", ("ism",), "ism"),
    ("air", ("ar", "ary"), "ar"), ("uur", ("ure",), "ure"), ("oop", ("opic",), "opic"), ("ica", ("ics",), "ics"),
    ("aat", ("ate",), "ate"), ("een", ("ene",), "ene"), ("aan", ("an", "ane"), ""),
    ("yseer", ("yze", "yse"), "yze"), ("iseer", ("ize", "ise"), "ize"), ("eer", ("ate", "e", ""), ""),
    ("aal", ("al",), ""), ("ale", ("al",), ""), ("ele", ("al",), ""), ("eel", ("al",), ""),
)  # fmt: skip
MIN_COGNATE_STEM = 4  # letters before a regular ending read without the vocabulary (capaciteit: 5)
COGNATE_RATIO = 0.6  # how alike a sense must be spelled to come first (_cognate_first)
MIN_ENGLISH_PART = 4  # letters of a compound's part read as an English word (wind + park)
MIN_PLURAL_STEM = 5  # letters of an English noun read in a compound's Dutch plural part (motor of motoren)
_LINKS = ("", "s", "e", "en")  # linking letters between the parts of a compound
# A verb's separable particles and inseparable prefixes: the start of a verb, not a compound's head.
_PARTICLES = frozenset(
    "aan af bij door in mee na om onder op over toe uit voor weg terug samen be ge her ont ver er".split()
)
_VERB_ENDINGS = ("d", "t", "de", "te", "ing")  # a tail that ends so may be a verb's form
_ENGLISH_ENDINGS = ("ing", "er", "or")  # a short tail so ended is an English word's end (Translator._tail)
_LATIN_VERBS = ("ize", "yze")  # the regular cognates of verbs no Dutch compound ends like: -iseren, -yseren
_PREFIXES = ("be", "ge", "ont", "ver", "her")  # a verb's inseparable prefixes
_DIAERESES = frozenset("äëïöü")  # a vowel that starts a syllable of its own (syllable_breaks)
# Question words, beside the analyser's Dutch stop words: never translated (``waar`` is "where",
# not the dictionary's "true").
QUESTION_WORDS = frozenset("waar welke welk hoeveel wanneer waarom hoe wie wat".split())


def _fold(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c)).casefold()


def syllable_breaks(raw: str) -> tuple[str, ...]:
    """The readings of a Dutch word that its diaeresis tells, to try before the word itself:
    Dutch writes one where a vowel starts a new syllable, which folding to plain letters hides.
    After a verb's prefix the rest is the word (`beïnvloed`: invloed, influenced; not be + vloed,
    flood); a plural in -ën is its singular in -e or in what comes before (`bacteriën`:
    bacterie; `ideeën`, `zeeën`: idee, zee), which the stemmer cannot find (an -en after a vowel
    is no ending to it). Empty for a word without a diaeresis."""
    text = unicodedata.normalize("NFC", raw).casefold()
    if _DIAERESES.isdisjoint(text):
        return ()
    breaks = [i for i, letter in enumerate(text) if letter in _DIAERESES]
    readings = [_fold(text[i:]) for i in breaks if _fold(text[:i]) in _PREFIXES]
    stem = _fold(text[:-2])
    if text.endswith("ën") and len(stem) >= MIN_PART:
        readings += [stem] if stem.endswith("e") else [stem + "e", stem]
    return tuple(dict.fromkeys(readings))


def _cognate_first(word: str, senses: Sequence[str]) -> tuple[str, ...]:
    """``senses`` with the one spelled most like ``word`` first when it is a cognate (a ratio of
    at least ``COGNATE_RATIO``: tabel -> table before index, constructie -> structure before
    building): the dictionary lists a word's senses in no order of use, and a question ranks by
    its first; English shares most of the trade's words with Dutch."""
    ratios = [SequenceMatcher(None, word, sense).ratio() for sense in senses]
    best = max(range(len(senses)), key=ratios.__getitem__, default=0)
    if best == 0 or ratios[best] < COGNATE_RATIO:
        return tuple(senses)
    return (senses[best], *senses[:best], *senses[best + 1 :])


def _long_vowel(stem: str) -> str:
    """``stem`` with its last vowel written twice when a single a, e, o or u stands between two
    consonants at its end (temperatur -> temperatuur), else empty."""
    vowels = "aeiouy"
    if len(stem) >= 4 and stem[-1] not in vowels and stem[-2] in "aeou" and stem[-3] not in vowels:
        return stem[:-1] + stem[-2:]
    return ""


def _short_vowel(stem: str) -> str:
    """A participle's or a verb's stem with its long vowel written once, as its infinitive spells
    it in an open syllable (verlaag of verlaagd -> verlag, of verlagen; gestuur -> gestur), else
    empty: ``_long_vowel`` the other way."""
    vowels = "aeiouy"
    if len(stem) >= 5 and stem[-1] not in vowels and stem[-2] == stem[-3] and stem[-2] in "aeou":
        return stem[:-3] + stem[-2:] if stem[-4] not in vowels else ""
    return ""


def _spellings(word: str) -> tuple[str, ...]:
    """``word`` as written, then in the spelling English keeps for Latin and Greek words: ``kw``
    as ``qu`` (kwadratuur), then ``k`` before a, o, u, l, r or t as ``c`` (kalibratie, kritisch,
    elektron); the last is the most English."""
    qu = word.replace("kw", "qu")
    return tuple(dict.fromkeys((word, qu, re.sub(r"k(?=[aoulrt])", "c", qu))))


def _b64(text: str) -> int:
    value = 0
    for char in text:
        value = value * 64 + _B64.index(char)
    return value


def read_dictd(index: str | Path, data: bytes | None = None) -> dict[str, list[str]]:
    """A dictd dictionary (``.index`` beside its ``.dict.dz``, or ``data`` given) as headword ->
    translation phrases, in the dictionary's order (numbered senses flattened)."""
    index = Path(index)
    if data is None:
        data = gzip.decompress((index.with_suffix("").with_suffix(".dict.dz")).read_bytes())
    entries: dict[str, list[str]] = {}
    for line in index.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) != 3 or fields[0].startswith("00database"):
            continue
        offset, length = _b64(fields[1]), _b64(fields[2])
        body = data[offset : offset + length].decode("utf-8", "replace").splitlines()[1:]
        phrases = entries.setdefault(fields[0].strip(), [])
        for text in body:
            text = re.sub(r"^\s*\d+\.\s*", "", text)
            phrases.extend(p.strip() for p in re.split(r"[,;]", text) if p.strip())
    return entries


def build_table(
    entries: Mapping[str, Sequence[str]], vocabulary: Iterable[str], stop_words: Iterable[str] = ()
) -> dict[str, tuple[str, ...]]:
    """The cut table (see the module docstring): Dutch headword -> English words."""
    known = {token for token in vocabulary if _WORD.fullmatch(token)}
    stop = set(stop_words)
    table: dict[str, tuple[str, ...]] = {}
    for headword, phrases in entries.items():
        word = _fold(headword)
        if not _WORD.fullmatch(word) or len(word) < 3 or word in known:
            continue  # a word the English model knows whole is read as English (bar, per, gallon)
        words = [_fold(p) for p in phrases]
        kept = [w for w in dict.fromkeys(words) if w in known and w not in stop and len(w) > 2]
        if kept and kept != [word]:
            table.setdefault(word, tuple(kept[:MAX_TRANSLATIONS]))
    return dict(sorted(table.items()))


def write_table(table: Mapping[str, Sequence[str]], path: str | Path) -> None:
    lines = [f"{word}\t{' '.join(sense.replace(' ', '_') for sense in english)}\n" for word, english in table.items()]
    Path(path).write_text("".join(lines), encoding="utf-8")


def parse_table(text: str) -> dict[str, tuple[str, ...]]:
    """The table from its TSV text: senses apart by spaces, the words of one sense joined by ``_``
    (``buigmoment<TAB>bending_moment``: one sense, not bending or moment)."""
    table = {}
    for line in text.splitlines():
        word, _, english = line.partition("\t")
        if word and english:
            table[word] = tuple(sense.replace("_", " ") for sense in english.split())
    return table


def default_table_dir() -> Path:
    """The table that ships inside the package."""
    return packaged_table_dir(TABLE_ID)


@lru_cache(maxsize=2)
def load_table(directory: str | None = None) -> dict[str, tuple[str, ...]]:
    """The table in ``directory`` (the packaged one by default), checked against its table.json."""
    return parse_table(checked_table(Path(directory) if directory else default_table_dir()))


TECHNICAL_ID = "nld-eng-technical"


@lru_cache(maxsize=2)
def reading_table(directory: str | None = None) -> dict[str, tuple[str, ...]]:
    """The table a Dutch question is read with: FreeDict's (``load_table(directory)``) with the
    packaged technical table (``models/nld-eng-technical/``) laid over it. A technical headword
    replaces FreeDict's translations: those give a word's everyday senses (`druk`: edition, busy,
    pressure, print) where an engineering archive means one, and each wrong sense is a BM25 term
    that finds the wrong block."""
    return {**load_table(directory), **technical_table()}


@lru_cache(maxsize=1)
def technical_table() -> dict[str, tuple[str, ...]]:
    """The packaged technical table (``models/nld-eng-technical/``): the engineering senses,
    final (``Translator.fixed``). Read and checked once: the reading table and a translator's
    final headwords both ask for it."""
    return load_table(str(default_table_dir().parent / TECHNICAL_ID))


@dataclass(frozen=True)
class Translation:
    """One Dutch word of a question and its English words: ``parts``, one tuple of senses per
    part of a compound (its head first), in the table's order but a cognate first (``_cognate_first``)
    unless the headword's senses are final (``Translator.fixed``);
    ``english``, all of them."""

    word: str
    parts: tuple[tuple[str, ...], ...]

    @property
    def english(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(sense for part in self.parts for sense in part))


class Translator:
    """Dutch words -> English words with the table (see the module docstring)."""

    def __init__(
        self,
        table: Mapping[str, Sequence[str]],
        stop_words: Iterable[str] = (),
        english: Iterable[str] = (),
        fixed: Iterable[str] = (),
    ) -> None:
        self.table = table
        self.fixed = frozenset(fixed)  # headwords whose senses are final, in their order
        self.stop = frozenset(stop_words)
        self.english = frozenset(w for w in english if _WORD.fullmatch(w))
        self._memo: dict[str, tuple[tuple[str, ...], ...]] = {}

    def translate(self, words: Iterable[str], joined: Iterable[str] = ()) -> list[Translation]:
        """The translations of ``words`` (raw tokens of a question), in order; words with none,
        stop words and anything but letters are left out. ``joined``: the words that stood
        joined by a hyphen to another (`x-as`, `Froude-getal`): such a part is Dutch, so the
        technical table reads it even where a stop list holds it (`as`: axis, not the English
        `as`, which a Dutch notebook's code writes too: `import numpy as np`)."""
        result = []
        parts_of_compounds = frozenset(joined)
        for raw in words:
            word = _fold(raw)
            stopped = word in self.stop and not (raw in parts_of_compounds and word in self.fixed)
            if len(word) > MAX_WORD or not _WORD.fullmatch(word) or stopped:
                continue
            # A word the English vocabulary holds whole is read as English, unless the technical
            # table says what it means in Dutch (spanning: stress, voltage).
            if word in self.english and word not in self.fixed:
                continue
            parts = next(filter(None, map(self._memoised, (*syllable_breaks(raw), word))), ())
            if parts:
                result.append(Translation(raw, parts))
        return result

    def _memoised(self, word: str) -> tuple[tuple[str, ...], ...]:
        if word not in self._memo:
            self._memo[word] = self._word(word)
        return self._memo[word]

    def reads_whole(self, word: str) -> bool:
        """Whether ``word`` has a reading as one word, not cut into parts: in the table as written
        or inflected (``Pomp``, ``Tabellen``), or as a cognate (``Gaussische``: Gaussian)."""
        return bool(self._lookup(_fold(word)))

    def _forms(self, word: str) -> list[str]:
        """``word`` and its stems (see ``_ENDINGS``), each also as a verb, without a ``ge-``; a
        stem that an ending left in an open syllable first with its long vowel written twice, as
        Dutch spells it when closed (temperaturen -> temperatuur, platen -> plaat before plat,
        meten -> meet), and a participle's the other way (verlaagd -> verlagen). A superlative's
        adjective comes right after the word without its -e (grootste: groot, large, before groots,
        grand; laatste: laatst, last, before laat)."""
        forms = [word]
        if word.endswith("ste") and len(word) - 3 >= MIN_PART:
            forms += [word[:-1], word[:-3]]
        for base in (word, word[2:] if word.startswith("ge") and len(word) > 5 else ""):
            for ending, replacement in _ENDINGS:
                if base and base.endswith(ending) and len(base) - len(ending) >= MIN_PART:
                    stem = base[: -len(ending)] + replacement
                    undoubled = stem[:-1] if len(stem) > 3 and stem[-1] == stem[-2] else ""
                    long = _long_vowel(stem) if ending in ("en", "e") else ""
                    short = _short_vowel(stem) if ending in ("d", "t", "de", "te") else ""
                    stems = [f for f in (long, stem, undoubled, short) if f]
                    forms += stems + [f + "en" for f in stems]
        return list(dict.fromkeys(forms))

    def _lookup(self, word: str, part: bool = False) -> tuple[str, ...]:
        """The English words of one word: the table's for it or a form of it, else its cognate
        in the English vocabulary; a compound's ``part`` that is itself an English word is that word."""
        forms = self._forms(word)
        for form in forms:
            if form in self.table:
                senses = self._senses(form)
                plural = form == word and word.endswith("en") and word not in self.fixed
                return self._noun_first(word, forms, senses) if plural else senses
        if part and len(word) >= MIN_ENGLISH_PART and word in self.english:
            return (word,)
        if part and self._english_plural(word):
            return (self._english_plural(word),)
        # an inflected English word (mediane -> median), not as a compound's part: swarmte, of
        # verdampingswarmte, is no swarm + te but s + warmte
        for form in forms[1:] if not part else ():
            if len(form) >= MIN_ENGLISH_PART and form in self.english:
                return (form,)
        for stem, english, _ in self._cognates(word):
            for suffix in english:
                if stem + suffix in self.english:
                    return (stem + suffix,)
        return ()

    def _noun_first(self, word: str, forms: Sequence[str], senses: tuple[str, ...]) -> tuple[str, ...]:
        """The ``senses`` of a headword in -en with its singular's first: such a word is often a
        verb and a noun's plural at once (verliezen: lose, and losses; proeven: taste, and tests),
        the dictionary gives the verb, and a question about a calculation means the noun more
        often. The singular is the -e noun's (waarden: waarde, not waard, host) or a stem of
        ``_forms`` (platen: plaat, its long vowel first)."""
        singulars = (word[:-1], *forms[1:])
        noun = next((f for f in singulars if f in self.table and not f.endswith("en")), None)
        return tuple(dict.fromkeys((*self._senses(noun), *senses))) if noun else senses

    def _senses(self, headword: str) -> tuple[str, ...]:
        """A headword's senses: a final one's as listed, any other's a cognate first."""
        senses = self.table[headword]
        return tuple(senses) if headword in self.fixed else _cognate_first(headword, senses)

    def _cognates(self, word: str) -> Iterable[tuple[str, tuple[str, ...], str]]:
        """(stem, English endings, the regular one or "") for each of ``word``'s forms and
        spellings that ends in a cognate ending (``_COGNATES``), in the order they are tried."""
        forms = self._forms(word)
        # not a stem made a verb (zogverlies -> zogverlie + en is no -een word: benzeen, benzene)
        forms = [f for f in forms if f == word or f[:-2] not in forms[1:]]
        if forms[0].startswith("ge"):  # a participle's stem before its ge- (gestratificeerde)
            forms = forms[:1] + sorted(forms[1:], key=lambda form: form.startswith("ge"))
        for form in forms:
            for spelling in _spellings(form):
                for ending, english, regular in _COGNATES:
                    if spelling.endswith(ending) and len(spelling) - len(ending) >= MIN_PART:
                        yield spelling[: -len(ending)], english, regular

    def _word(self, word: str, depth: int = 0) -> tuple[tuple[str, ...], ...]:
        """``word``'s parts (see ``Translation``), or none."""
        found = self._lookup(word, part=depth > 0)
        if found or depth > 1:
            return (found,) if found else ()
        if depth == 0:
            # A verb in -iseren or -yseren is Latin, no compound: normaliseert is no norma + lis +
            # eert (iris, honour), minimaliseren no mini + mali + seren.
            latin = self._regular_cognate(word, _LATIN_VERBS)
            if latin:
                return ((latin,),)
        # A compound: the longest known tail (the head word of a Dutch compound), then what is left
        # before it, which may itself be a compound. A stop word is no compound's head (benzeen is
        # no benz + een, propaan no prop + aan), though a part before it may be one (voorbeeld).
        # A verb's inseparable prefix, joined without a linking letter, is no part: what follows
        # it is read alone (verpompt pumps, verdampt vaporises: no far + pump, side + damp).
        for cut in range(MIN_PART, len(word) - MIN_PART + 1):
            ending = word[cut:] in self.stop or word[cut:] in _ENDING_WORDS  # no part: meetbaar is no meet + baar
            tail = self._lookup(word[cut:], part=True) if not ending else ()
            if not tail:
                continue
            written = word[cut:] in self.table or word[cut:] in self.english
            if word[cut] == "s" and not written and word[cut + 1 :] in self.table:
                # a linking s before a tail the table holds as written (geluid + s + meting)
                # rather than a tail read from its stem (smeting: smet, spot)
                continue
            for link in _LINKS:
                head_word = word[:cut]
                if link and not head_word.endswith(link):
                    continue
                head_word = head_word[: len(head_word) - len(link)]
                if not link and head_word in _PREFIXES:
                    return (tail,)
                head = self._word(head_word, depth + 1) if len(head_word) >= MIN_PART else ()
                if head:
                    return (tail, *head)
        if depth > 0:
            return ()
        # A word of Latin or Greek make that the vocabulary lacks: its regular cognate.
        cognate = self._regular_cognate(word)
        if cognate:
            return ((cognate,),)
        # A compound whose head part is unknown: its tail's reading, which names what the whole
        # is (debietmeter -> meter, zogverlies -> loss, tilterugslagklep -> valve; see _tail).
        for cut in range(MIN_PART, len(word) - MIN_ENGLISH_PART + 1):
            tail = self._tail(word[:cut], word[cut:])
            if tail:
                return (tail,)
        return ()

    def _english_plural(self, word: str) -> str:
        """The English noun that ``word`` is the Dutch plural (-en) of, of at least
        ``MIN_PLURAL_STEM`` letters (motoren: motor, sensoren: sensor), else "": as a compound's
        last part, hoofdmotoren is main + motor, not hoofdmo + toren (tower)."""
        noun = word[:-2]
        return noun if word.endswith("en") and len(noun) >= MIN_PLURAL_STEM and noun in self.english else ""

    def _regular_cognate(self, word: str, endings: Sequence[str] | None = None) -> str:
        """``word``'s regular cognate (``_COGNATES``; only those ending in one of ``endings`` when
        given), from the most English spelling (kalibratie -> calibration, not kalibration); ""
        when it has none."""
        for stem, _, regular in self._cognates(word):
            if regular and len(stem) >= MIN_COGNATE_STEM and stem == _spellings(stem)[-1]:
                if endings is None or regular in endings:
                    return stem + regular
        return ""

    def _tail(self, head: str, tail: str) -> tuple[str, ...]:
        """The reading of a compound's ``tail`` when its ``head`` is unknown: an English word of
        at least four letters after as many (a name's end is no part: Kelmarsh), or a noun of the
        table as written or plural (not what an ending leaves of a verb: beoordeelt holds no eelt,
        callus, nor gekalibreerd eer, honour), else an English noun in its Dutch plural. A verb's particle or prefix is no head (toegepast
        is applied, not toe + gepast), nor a verb's noun in -ing after its prefix a compound
        (ontwatering is dewatering, no ontwa + tering, consumption; ontkoppeling no ling). Nor is
        an inflection ending alone a tail: kalibreren is no kalibr + eren, honours. Nor a short
        tail that is an English word's ending, of a word the vocabulary lacks: classifier is no
        classi + fier (proud), embedding no embed + ding (thing), docstring no docst + ring."""
        if (
            tail in self.stop
            or tail in _ENDING_WORDS
            or head in _PARTICLES
            or (head.startswith(_PREFIXES) and tail.endswith("ing"))
            or (len(tail) <= MIN_ENGLISH_PART and tail.endswith(_ENGLISH_ENDINGS))
        ):
            return ()
        if tail in self.english:
            return (tail,) if len(head) >= MIN_ENGLISH_PART else ()
        if tail.endswith(_VERB_ENDINGS):  # then only as written, and longer than a stray piece
            forms = [tail] if len(tail) > MIN_ENGLISH_PART else []
        else:
            forms = self._forms(tail)
        form = next((f for f in forms if f in self.table), None)
        if form and len(form) >= MIN_ENGLISH_PART:
            return self._lookup(tail, part=True)
        plural = self._english_plural(tail)  # (elektromotoren: motor, the table knowing neither)
        return (plural,) if plural and len(head) >= MIN_ENGLISH_PART else ()


@dataclass(frozen=True)
class Reading:
    """What a question adds in English: ``text`` (the question with each translated word replaced
    by the first sense of each of its parts, in English order: ``koelwaterleiding`` -> cool water
    pipe; what a question ranks by), ``every_sense`` (the same with every sense of each word: what
    a Dutch file's chunk is embedded from, so a question's closeness in meaning counts it too),
    ``terms`` (the English terms of every sense, and the English stems of the words left
    untranslated, for BM25) and ``held_by`` (a Dutch term -> the
    English terms that hold it, for the refusal test). Empty for a text with nothing to translate."""

    text: str = ""
    every_sense: str = ""
    terms: tuple[str, ...] = ()
    held_by: Mapping[str, tuple[str, ...]] | None = None


def question_translator(analyzer: Analyzer, vocabulary: Iterable[str]) -> Translator:
    """The translator a search and an index read Dutch with: the reading table, neither
    language's stop words nor a question word translated, the model's ``vocabulary`` as English."""
    stop = QUESTION_WORDS.union(*(analyzer.stop_words(lang) for lang in ("dutch", "english")))
    return Translator(reading_table(), stop, vocabulary, technical_table())


def read_in_english(query: str, analyzer: Analyzer, translator: Translator) -> Reading:
    """The English reading of ``query`` (``Reading``) when it is Dutch: the analyser reads it so
    (its stop words are Dutch alone) or, for one whose stop words tell nothing (keywords:
    ``ballasttanks inhoud``, ``GZ-kromme vrachtschip``), the table translates at least half of
    its words that the English vocabulary lacks (a word it holds whole, `water`, `turbine`,
    `energy`, is of neither language: a Dutch engineer's keywords mix the two, `standaardafwijking
    turbine ideal energy onzekerheid windpark`); empty for any other."""
    language = analyzer.query_language(query)
    if language == "english":
        return Reading()
    reading = english_reading(query, analyzer, translator)
    held = len(reading.held_by or ())
    if language is None and (not held or 2 * held < len(_content_words(query, analyzer, translator))):
        return Reading()
    if not held:  # a Dutch sentence with no word the table reads
        return reading
    reading = _with_english_words(query, reading, analyzer, translator)
    return _with_every_stem(query, reading, analyzer) if language is None else reading


def _with_every_stem(query: str, reading: Reading, analyzer: Analyzer) -> Reading:
    """``reading`` with each word's every stem held where its Dutch stem is. A question whose stop
    words tell no language (keywords: `gemiddelde lengte Amerikaanse presidenten in cm`) is
    searched by every language's stem of each word (``Analyzer.query_terms``), and the English
    stemmer's cut of a Dutch word (`gemiddeld`, `presidenten`) is in no English cell: without its
    translations it counted as a word the notebook lacks, beside the Dutch stem that its
    translation holds (`middel`: mean, average)."""
    held_by = dict(reading.held_by or {})
    for word in _words(query, analyzer):
        stems = analyzer.terms(word)
        english = tuple(dict.fromkeys(t for stem in stems for t in held_by.get(stem, ())))
        for stem in stems:
            if english and stem not in held_by:
                held_by[stem] = english
    return Reading(reading.text, reading.every_sense, reading.terms, held_by)


def _with_english_words(query: str, reading: Reading, analyzer: Analyzer, translator: Translator) -> Reading:
    """``reading`` with the English stems of the words of Dutch ``query`` that the table does
    not translate: English words in a Dutch sentence (``batches``, ``lists``, ``sorted``), which
    the Dutch stemmer alone cuts where no English cell does (``batche``, ``lists``; ``batch``,
    ``list``), so that a cell's ``batch`` holds a question's ``batches``. Names are left as written."""
    held_by = dict(reading.held_by or {})
    added: list[str] = []
    names = proper_names(query)
    for word in _words(query, analyzer):
        if word in names or not _WORD.fullmatch(_fold(word)) or _fold(word) in translator.stop:
            continue
        dutch = analyzer.language_terms(word, "dutch")
        if any(term in held_by for term in dutch):  # translated
            continue
        english = tuple(t for t in analyzer.language_terms(word, "english") if t not in dutch)
        if not english:
            continue
        added.extend(english)
        for term in dutch:
            held_by[term] = tuple(dict.fromkeys((*held_by.get(term, ()), *english)))
    if not added:
        return reading
    return Reading(reading.text, reading.every_sense, tuple(dict.fromkeys((*reading.terms, *added))), held_by)


def _content_words(text: str, analyzer: Analyzer, translator: Translator) -> set[str]:
    """The Dutch analyser's terms of ``text``'s words (letters only, no stop word, none the
    English vocabulary holds whole): what ``Reading.held_by`` counts when each is translated."""
    kept = [
        word
        for word in _words(text, analyzer)
        if _WORD.fullmatch(_fold(word)) and _fold(word) not in translator.stop and _fold(word) not in translator.english
    ]
    return {term for word in kept for term in analyzer.language_terms(word, "dutch")}


def _words(text: str, analyzer: Analyzer) -> list[str]:
    """``text``'s raw tokens, a word joined by ``-``, ``_`` or ``.`` cut into its parts."""
    return _pieces(analyzer.raw_tokens(text))


def _pieces(raws: Iterable[str]) -> list[str]:
    return [piece for raw in raws for piece in _PIECES.split(raw) if piece]


def proper_names(text: str) -> set[str]:
    """The words of Dutch ``text`` that are names: capitalised where a sentence does not open
    (``na het laden in Moerdijk``, ``windpark Kelmarsh``, ``het Froude-getal``). Dutch writes its
    nouns in lower case, so such a word names a place, a person or a firm, and ``english_reading``
    reads it as written unless it has a reading as one word (``Pomp 3``, ``zie Tabel 2``,
    ``Gaussische``): cut into parts, it would be read as words (Moerdijk: moer + dijk, nut dike)."""
    return {
        match.group()
        for match in _CAPITALISED.finditer(text)
        if not _SENTENCE_START.search(text, max(0, match.start() - 40), match.start())
    }


def english_reading(text: str, analyzer: Analyzer, translator: Translator) -> Reading:
    """The English reading of Dutch ``text``: a question's (``read_in_english``) or a chunk's of a
    Dutch file (``cellar.retrieval.incremental``). A word joined by ``-``, ``_`` or ``.`` is read
    part by part (``Froude-getal``; ``kortsluitstroom_ka``, a variable of a Dutch notebook).

    A question ranks by the first senses (``Reading.text``): its vector is a few words, and each
    further sense pulls it from what was asked. A chunk is embedded from every sense
    (``Reading.every_sense``): its vector is found by any of them."""
    raws = analyzer.raw_tokens(text)
    words = _pieces(raws)
    names = {name for name in proper_names(text) if not translator.reads_whole(name)}  # Pomp 3 is a pump
    joined = {piece for raw in raws if "-" in raw for piece in raw.split("-") if piece}
    translated = {t.word: t for t in translator.translate((word for word in words if word not in names), joined)}
    if not translated:
        return Reading()
    held_by: dict[str, tuple[str, ...]] = {}
    expansion: list[str] = []
    for word, translation in translated.items():
        english_terms = tuple(dict.fromkeys(analyzer.language_terms(" ".join(translation.english), "english")))
        expansion.extend(english_terms)
        for term in analyzer.language_terms(word, "dutch"):
            held_by[term] = tuple(dict.fromkeys((*held_by.get(term, ()), *english_terms)))
    content = [word for word in words if _fold(word) not in translator.stop or word in translated]

    def read(english: Callable[[Translation], Iterable[str]]) -> str:
        return " ".join(" ".join(english(translated[word])) if word in translated else word for word in content)

    return Reading(
        read(lambda t: (part[0] for part in reversed(t.parts))),  # a compound's head last
        read(lambda t: t.english),
        tuple(dict.fromkeys(expansion)),
        held_by,
    )


def make_table(index: str | Path, out: str | Path, vocabulary: Iterable[str]) -> dict[str, Any]:
    """``cellar model bilingual``: read the dictd dictionary at ``index``, cut it (``build_table``)
    to the model's ``vocabulary``, write ``out``/nld-eng.tsv and ``out``/table.json (what it is,
    where it came from, its SHA-256, which ``load_table`` checks); returns table.json's content."""
    entries = read_dictd(index)
    table = build_table(entries, vocabulary, STOP_WORDS["english"])
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    write_table(table, folder / TABLE_FILE)
    data = (folder / TABLE_FILE).read_bytes()
    meta = {
        "id": TABLE_ID,
        "file": TABLE_FILE,
        "sha256": revision(data),
        "bytes": len(data),
        "headwords": len(table),
        "source_headwords": len(entries),
        "source": f"FreeDict Dutch-English ({Path(index).name}, Debian package dict-freedict-nld-eng)",
        "licence": "GPL-2.0-or-later (see LICENSE)",
        "command": f"cellar model bilingual --dict {index} --out {out}",
        "max_translations": MAX_TRANSLATIONS,
    }
    (folder / "table.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta

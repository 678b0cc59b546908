"""The kind of a quantity: which unit family a question asks for, and which a text states.

"What pressure ...", "how low did the voltage dip", "Tot welke temperatuur ..." ask for a number
of one kind, and a report's block that holds a number of another kind (a section with `24
seconds` when the question asks a pressure) does not answer it, however many of the question's
words it repeats. So a question's quantity is read as a set of unit families (``asked_families``:
from the noun it asks about, `pressure` / `druk` / `werkdruk`, or from its asking words, `how
deep`, `hoe zwaar`, `hoeveel uur`), and a text's measured numbers as the families of their units
(``stated_families``: `172 bar` is a pressure, `36 hours` a time, `250 kVA` a power). A question
whose kind is not known asks for no family (any measured number may answer it).

Notebooks that compute with units print them as pint spells them (`3401.5 foot / minute`,
`<Quantity(1.27, 'pound_force_per_square_inch')>`), and US worked examples in feet, psi, gpm and
°F: both are read as the symbols of ``UNITS``, and a unit over another that no table names is of
the family its parts make (``RATIOS``: `ft/min` a speed, `lb/ft3` a density).

A unit symbol may belong to several families (`t` is a mass and, as in `a bollard pull of 60 t`,
a force; `°` an angle or a temperature): a text states each family its units may mean. A number
in words counts before a unit word (`every three months`, `five minutes`), since a question of
that family names the kind itself, not before a symbol (`one m` is no measure).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable

# Unit symbols and words (casefolded), per family.
UNITS: dict[str, tuple[str, ...]] = {
    family: tuple(units.split())
    for family, units in {
        "pressure": "bar mbar pa kpa mpa psi psia psig atm torr mmhg inhg",
        "length": "mm cm m km metres meters metre meter µm ft feet foot inch inches mi mile miles yd",
        "area": "m2 mm2 cm2 km2 ft2 in2",
        "volume": "m3 l litres liters litre liter cm3 gal gallons gallon ft3 bbl",
        "flow": "m3/h l/h l/min m3/s m3/min t/h kg/h kg/s l/s gpm cfm scfm acfm mmscfd lb/h lb/s",
        "mass": "kg t tonnes tonne tons ton g lb lbs lbm",
        "force": "n kn mn t tonnes tonne tons ton lbf kgf",
        "torque": "nm knm",
        "density": "kg/m3 g/cm3 g/l kg/l lb/ft3",
        "time": "s ms µs ns sec seconds second min minutes minute h hr hours hour days day weeks week months month "
        "years year seconden minuten uur dagen weken maand maanden jaar",
        "temperature": "°c ° degrees degree graden c k °f f degc degf °r degr",
        "angle": "° degrees degree graden rad",
        "voltage": "v kv mv",
        "current": "a ka ma",
        "power": "w kw mw kva mva hp kvar bhp btu/h",
        "frequency": "hz khz rpm /min",
        "speed": "m/s m/min knots knot kn km/h mph",
        "percentage": "% percent procent pct",
        "energy": "j kj mj kwh mwh btu kcal cal",
        "resistance": "ω mω kω ohm mohm",
    }.items()
}
# A unit over another that no table names (`ft/min`, `kg/min`, `mi/h`) is of the family its parts'
# families make.
RATIOS: dict[tuple[str, str], str] = {
    ("length", "time"): "speed",
    ("volume", "time"): "flow",
    ("mass", "time"): "flow",
    ("mass", "volume"): "density",
    ("energy", "time"): "power",
}
# The units as pint prints them (`3401.5 foot / minute`, `<Quantity(1.27, 'pound_force_per_square_inch')>`,
# `kilogram / meter ** 3`), read as the symbols above: engineering notebooks compute with units, and
# a calculation's answer is often printed so.
PINT_NAMES: dict[str, str] = {
    "meter": "m", "metre": "m", "millimeter": "mm", "centimeter": "cm", "kilometer": "km", "micrometer": "µm",
    "foot": "ft", "feet": "ft", "inch": "inch", "mile": "mi", "yard": "yd",
    "square_meter": "m2", "square_foot": "ft2", "square_inch": "in2",
    "liter": "l", "litre": "l", "gallon": "gal", "cubic_meter": "m3", "cubic_foot": "ft3", "barrel": "bbl",
    "gram": "g", "kilogram": "kg", "pound": "lb", "tonne": "t", "metric_ton": "t",
    "newton": "n", "kilonewton": "kN", "pound_force": "lbf", "kilogram_force": "kgf",
    "second": "s", "millisecond": "ms", "microsecond": "µs", "minute": "min", "hour": "h", "day": "day",
    "pascal": "pa", "kilopascal": "kpa", "megapascal": "mpa", "bar": "bar", "millibar": "mbar", "psi": "psi",
    "pound_force_per_square_inch": "psi", "atmosphere": "atm", "standard_atmosphere": "atm", "torr": "torr",
    "watt": "w", "kilowatt": "kw", "megawatt": "mw", "horsepower": "hp",
    "joule": "j", "kilojoule": "kj", "megajoule": "mj", "kilowatt_hour": "kwh", "british_thermal_unit": "btu",
    "calorie": "cal", "kilocalorie": "kcal",
    "kelvin": "k", "degree_Celsius": "degc", "degree_Fahrenheit": "degf", "degree_Rankine": "degr",
    "degC": "degc", "degF": "degf", "delta_degC": "degc", "delta_degF": "degf",
    "hertz": "hz", "revolutions_per_minute": "rpm", "volt": "v", "ampere": "a", "ohm": "ohm",
    "radian": "rad", "percent": "%",
}  # fmt: skip
# Nouns (English; Dutch also as the end of a compound: `werkdruk`, `noodstroomvermogen`) that name
# a kind of quantity.
NOUN_FAMILIES: dict[str, tuple[str, ...]] = {
    "pressure": ("pressure",), "druk": ("pressure",),
    "length": ("length",), "lengte": ("length",), "width": ("length",), "breedte": ("length",),
    "height": ("length",), "hoogte": ("length",), "depth": ("length",), "diepte": ("length",),
    "draught": ("length",), "draft": ("length",), "diepgang": ("length",), "diameter": ("length",),
    "thickness": ("length",), "dikte": ("length",), "distance": ("length",), "afstand": ("length",),
    "clearance": ("length",), "speling": ("length",), "radius": ("length",), "straal": ("length",),
    "area": ("area",), "oppervlakte": ("area",), "cross-section": ("area",), "doorsnede": ("area",),
    "volume": ("volume",), "inhoud": ("volume",),
    "capacity": ("flow", "volume", "power", "mass"), "capaciteit": ("flow", "volume", "power", "mass"),
    "flow": ("flow",), "debiet": ("flow",), "consumption": ("flow", "mass", "volume"), "verbruik": ("flow", "mass", "volume"),
    "weight": ("mass",), "gewicht": ("mass",), "mass": ("mass",), "massa": ("mass",),
    "load": ("force", "mass"), "belasting": ("force", "mass"), "force": ("force",), "kracht": ("force",),
    "pull": ("force", "mass"), "tension": ("force", "mass"),
    "torque": ("torque",), "koppel": ("torque",),
    "time": ("time",), "tijd": ("time",), "duration": ("time",), "timing": ("time",), "runtime": ("time",),
    "latency": ("time",), "duur": ("time",), "period": ("time",),
    "periode": ("time",), "interval": ("time",),
    "temperature": ("temperature",), "temperatuur": ("temperature",),
    "angle": ("angle",), "hoek": ("angle",),
    "voltage": ("voltage",), "spanning": ("voltage",),
    "current": ("current",), "stroom": ("current",),
    "power": ("power",), "vermogen": ("power",), "rating": ("power", "current", "voltage"),
    "frequency": ("frequency",), "frequentie": ("frequency",), "toerental": ("frequency",),
    "speed": ("speed", "frequency"), "velocity": ("speed",), "snelheid": ("speed",), "wind": ("speed",),
    "percentage": ("percentage",), "wear": ("percentage", "length"), "slijtage": ("percentage", "length"),
    "energy": ("energy",), "energie": ("energy",),
    "resistance": ("resistance",), "weerstand": ("resistance",),
    "density": ("density",), "dichtheid": ("density",),
}  # fmt: skip
# Asking words that name the kind themselves.
_ASKING = (
    (re.compile(r"\bhow\s+often\b|\bhoe\s+vaak\b", re.I), ("time",)),
    (re.compile(r"\bhow\s+long\b|\bhoe\s+lang\b", re.I), ("time", "length")),
    (re.compile(r"\bhow\s+heavy\b|\bhoe\s+zwaar\b", re.I), ("mass", "force")),
    (re.compile(r"\bhow\s+(?:fast|slow)\b|\bhoe\s+(?:snel|traag)\b", re.I), ("speed", "frequency", "time")),
    (re.compile(r"\bhow\s+hot\b|\bhoe\s+(?:heet|warm)\b", re.I), ("temperature",)),
)  # fmt: skip
# Open asking words: the kind comes from a quantity noun anywhere in the question ("how low did
# the voltage dip").
_OPEN = re.compile(r"\bhow\s+(?:much|large|big|low|high|great)\b|\bhoe\s+(?:groot|hoog|laag)\b", re.I)
_DEEP = re.compile(r"\bhow\s+(?:deep|wide|far|thick|tall)\b|\bhoe\s+(?:diep|breed|ver|dik)\b", re.I)
_WORD = re.compile(r"[\w-]+")
# A number, and what follows it: a unit symbol (up to three letters, perhaps a digit and a `/` part)
# or a unit word. The number's separators bounded, as in `blocks._MEASURED` (linear time).
_NUMBER_UNIT = re.compile(
    r"(?<![\w.-])\d+(?:[.,]\d+){0,6}\s?(%|°\s?c?|[a-zµ°Ωω]{1,8}\d?(?:/[a-z]{1,3}\d?)?)(?![\w/-])", re.I
)
# A unit in brackets after a heading's name (`Motor current (A)`, `Vermogen [kW]`, `(m3/h)`).
_HEADED_UNIT = re.compile(r"(?<=\w)\s*[(\[]\s*(%|°\s?c?|[a-zµ°Ωω]{1,5}\d?(?:/[a-z]{1,3}\d?)?)\s*[)\]]", re.I)
_DIGIT = re.compile(r"\d")
# A unit as pint spells it after a number, perhaps over another or to a power (`foot / minute`,
# `meter ** 3 / hour`), or inside a Quantity's repr (`<Quantity(1.27, 'psi')>`).
_UNIT_NAME = r"[A-Za-zµ°_]+(?:\s*\*\*\s*[23])?"
_SPELLED_UNIT = re.compile(rf"(?<=\d)(?:\s+|,\s*')({_UNIT_NAME}(?:\s*/\s*{_UNIT_NAME})?)(?![\w/])")
_POWER = re.compile(r"\s*\*\*\s*")
# One letter in brackets is a unit only as a unit is written (`(A)`, `(m)`), not a list's `(a)`, `(c)`.
_HEADED_LETTERS = frozenset("AVWNKJmshtgl%°")
NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty hundred "
    "een twee drie vier vijf zes zeven acht negen tien elf twaalf vijftien twintig dertig honderd".split()
)
# A period stated without a number is a time: `every week`, `each month`, `elke maand` (such a
# word before a unit word of time), and the adverbs of one (`weekly`, `jaarlijks`); `per day` is
# a rate's, not a period.
EVERY_WORDS = frozenset("every each elke iedere ieder".split())
PERIOD_WORDS = frozenset(
    "hourly daily weekly monthly quarterly yearly annually dagelijks wekelijks maandelijks jaarlijks".split()
)
_FAMILIES_OF: dict[str, frozenset[str]] = {}
for _family, _units in UNITS.items():
    for _unit in _units:
        _FAMILIES_OF[_unit] = _FAMILIES_OF.get(_unit, frozenset()) | {_family}
# Symbols whose case tells which of their families is meant: `kN` is a kilonewton, never a knot
# (`kn`, which may be either as written).
_AS_WRITTEN: dict[str, frozenset[str]] = {"kN": frozenset({"force"})}


def families_of_noun(word: str) -> tuple[str, ...]:
    """The families a noun names: the noun itself (singular or plural), or a Dutch compound's
    last part of at least four letters (`werkdruk` -> druk, `noodstroomvermogen` -> vermogen)."""
    word = word.casefold()
    for form in (word, word[:-1] if word.endswith("s") else word, word[:-2] if word.endswith("es") else word):
        if form in NOUN_FAMILIES:
            return NOUN_FAMILIES[form]
    # Only the cuts that leave a tail no longer than the longest one (a pasted 200,000-letter
    # "word" took 14 s of slicing when every cut was tried); still longest tail first.
    for cut in range(max(1, len(word) - _LONGEST_TAIL), len(word) - 3):
        if word[cut:] in _DUTCH_TAILS:
            return NOUN_FAMILIES[word[cut:]]
    # a change of a quantity is of its kind: `drukval`, `drukverlies`, `spanningsval`, `temperatuurstijging`
    change = next((tail for tail in _CHANGES if word.endswith(tail)), None)
    if change:
        head = word[: -len(change)]
        head = head[:-1] if head.endswith("s") and head[:-1] in _DUTCH_TAILS else head
        if head in _DUTCH_TAILS:
            return NOUN_FAMILIES[head]
    return ()


# Dutch nouns that end a compound (an English noun inside a longer word, `overload`, is no compound).
_DUTCH_TAILS = frozenset(
    "druk lengte breedte hoogte diepte diepgang dikte afstand speling oppervlakte doorsnede inhoud capaciteit debiet "
    "verbruik gewicht massa belasting kracht koppel tijd duur periode temperatuur hoek spanning stroom vermogen "
    "frequentie toerental snelheid wind slijtage energie weerstand dichtheid".split()
)
_LONGEST_TAIL = max(map(len, _DUTCH_TAILS))
# The Dutch nouns of a change that end a compound whose first part names the quantity changed.
_CHANGES = ("verlies", "verschil", "daling", "stijging", "toename", "afname", "sprong", "stoot", "val")
# The words that make a statistic of the noun after them: a confidence or prediction interval is
# no period of time.
STATISTICS = frozenset("confidence prediction credible tolerance".split())


def asked_families(query: str, nouns: Iterable[str]) -> tuple[str, ...]:
    """The unit families ``query`` asks for: those its quantity ``nouns`` name (the words after
    "what / which", or of "how many"), else those its asking words name; empty when the kind is
    not known."""
    named = _named(nouns)
    if named:
        return named
    if _DEEP.search(query):
        return ("length",)
    for pattern, families in _ASKING:
        if pattern.search(query):
            return families
    opened = _OPEN.search(query)
    # the first quantity noun after the asking words: "the voltage" of "how low did the voltage dip
    # at the largest load step"
    for word in _WORD.findall(query[opened.end() :]) if opened else ():
        if families_of_noun(word):
            return families_of_noun(word)
    return ()


def _named(nouns: Iterable[str]) -> tuple[str, ...]:
    nouns = list(nouns)
    measures = [noun for before, noun in zip(["", *nouns], nouns) if before not in STATISTICS]
    return tuple(
        dict.fromkeys(family for noun in measures for family in families_of_noun(noun) or symbol_families(noun))
    )


def symbol_families(word: str) -> tuple[str, ...]:
    """The families of a unit symbol asked for by name (`at what rpm`, `in what kVA`): one of two or
    three letters (`m` or `a` after "what" is no unit asked); a unit word (`what year`) names none,
    as it may ask for a date rather than a measure."""
    word = word.casefold()
    return tuple(sorted(_FAMILIES_OF.get(word, ()))) if len(word) >= 2 and _is_symbol(word) else ()


def unit_word_families(word: str) -> frozenset[str]:
    """The families of a unit written as a word (`hours`, `uur`, `months`); empty for a symbol
    (`m`, `bar`) or any other word."""
    return frozenset() if _is_symbol(word.casefold()) else _FAMILIES_OF.get(word.casefold(), frozenset())


def stated_families(text: str) -> frozenset[str]:
    """The families of the measured numbers ``text`` states: a number with a unit symbol or word,
    or a number in words before a unit word (`every three months`); a period stated without a
    number (`tested every week`, `jaarlijks`) is a time; and a table or listing with numbers states
    the families of the units its headings name in brackets (`Motor current (A)`, `P [kW]`)."""
    text = _SPELLED_UNIT.sub(_as_symbols, text)
    found: set[str] = set()
    headed = (
        [u for u in _HEADED_UNIT.findall(text) if len(u) > 1 or u in _HEADED_LETTERS] if _DIGIT.search(text) else []
    )
    for unit in [*_NUMBER_UNIT.findall(text), *headed]:
        unit = unit.replace(" ", "")
        found |= _AS_WRITTEN.get(unit) or _FAMILIES_OF.get(unit.casefold()) or _ratio_families(unit.casefold())
    words = _WORD.findall(text.casefold())
    for word, after in zip(words, words[1:]):
        if word in NUMBER_WORDS and not _is_symbol(after):
            found |= _FAMILIES_OF.get(after, frozenset())
        elif word in EVERY_WORDS and "time" in unit_word_families(after):
            found.add("time")
    if PERIOD_WORDS.intersection(words):
        found.add("time")
    return frozenset(found)


def _as_symbols(match: re.Match[str]) -> str:
    """A unit as pint spells it, in the symbols ``UNITS`` knows: `foot / minute` -> `ft/min`,
    `pound_force_per_square_inch` -> `psi`, `kilogram / meter ** 3` -> `kg/m3`."""
    return " " + "/".join(_symbol(_POWER.sub("", part.strip())) for part in match.group(1).split("/"))


def _symbol(name: str) -> str:
    """A unit's name, perhaps with its power (`meter3`), as its symbol (`m3`)."""
    base = name.rstrip("23")
    return PINT_NAMES.get(base, base) + name[len(base) :]


def _ratio_families(unit: str) -> frozenset[str]:
    """The families of a unit over another that no table names (`ft/min` a speed, `lb/ft3` a
    density), from its parts' families (``RATIOS``)."""
    over, _, under = unit.partition("/")
    pairs = [(a, b) for a in _FAMILIES_OF.get(over, ()) for b in _FAMILIES_OF.get(under, ())]
    return frozenset(RATIOS[pair] for pair in pairs if pair in RATIOS)


def _is_symbol(unit: str) -> bool:
    """A unit written as a symbol (`m`, `kN`), not a word (`months`): a number in words before a
    symbol is not a measure."""
    return len(unit) <= 3 and unit not in ("day", "uur", "jaar")


# A unit as written -> (factor, offset) to its SI unit: code computes in SI (`P = 1e5`, `T1 =
# 350 + 273.15`, `D = 0.05`) where a question names the practical unit (`1 bar`, `350 °C`, `50 mm`).
# Written with its case (`MW` is no `mW`); only units whose factor is a round power of ten, or a
# constant code writes as a number (101325, 273.15), since another conversion's digits are not
# spelled alike twice.
TO_SI: dict[str, tuple[float, float]] = {
    "bar": (1e5, 0.0), "mbar": (1e2, 0.0), "kPa": (1e3, 0.0), "MPa": (1e6, 0.0),
    "GPa": (1e9, 0.0), "atm": (101325.0, 0.0),
    "mm": (1e-3, 0.0), "cm": (1e-2, 0.0), "km": (1e3, 0.0), "µm": (1e-6, 0.0),
    "kN": (1e3, 0.0), "MN": (1e6, 0.0), "kW": (1e3, 0.0), "MW": (1e6, 0.0), "GW": (1e9, 0.0),
    "kJ": (1e3, 0.0), "MJ": (1e6, 0.0), "kWh": (3.6e6, 0.0), "kV": (1e3, 0.0), "kA": (1e3, 0.0),
    "kHz": (1e3, 0.0), "MHz": (1e6, 0.0), "g": (1e-3, 0.0), "t": (1e3, 0.0), "min": (60.0, 0.0),
    "h": (3600.0, 0.0), "ms": (1e-3, 0.0), "%": (1e-2, 0.0),
    **dict.fromkeys(("°C", "°c", "° C", "° c", "degC", "degc"), (1.0, 273.15)),
}  # fmt: skip
_PLAIN_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def si_spellings(query: str, terms: Callable[[str], list[str]]) -> dict[str, tuple[str, ...]]:
    """Each number of ``query`` written before a unit of ``TO_SI`` (`1 bar`, `0,1 bar`, `350 °C`),
    and the ways code and its outputs write that value in SI units that ``terms`` (the
    analyser's) reads as one term: `1e5`, `100000`, `100000.0`; `623.15` (not `1e+05`, which it
    reads as four). A question's numbers are held where any of their spellings is
    (``cellar.retrieval.evidence``): `1 bar` by a notebook that sets `P = 1e5`."""
    spellings: dict[str, tuple[str, ...]] = {}
    for match in _NUMBER_UNIT.finditer(query):
        number = match.group(0)[: match.start(1) - match.start(0)].strip()
        unit = match.group(1).strip()
        if unit not in TO_SI or not _PLAIN_NUMBER.fullmatch(number):
            continue
        factor, offset = TO_SI[unit]
        value = float(number.replace(",", ".")) * factor + offset
        if not math.isfinite(value):  # 400 digits pasted before `bar`: no float, and no code writes it
            continue
        read = (terms(written) for written in dict.fromkeys(_written(round(value, 9))))
        spellings[number] = tuple(term for one in read if len(one) == 1 for term in one)
    return spellings


def _written(value: float) -> list[str]:
    """How Python code or its output may write ``value``: as the shortest decimal, its float repr,
    an integer, and in scientific notation (`1e5`, `1e+05`)."""
    forms = [f"{value:.12g}", repr(value)]
    if value.is_integer() and abs(value) < 1e15:
        forms.append(str(int(value)))
    mantissa, exponent = f"{value:.12e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    forms += [f"{mantissa}e{int(exponent)}", f"{mantissa}e{exponent[0]}{exponent[1:].zfill(2)}"]
    return forms

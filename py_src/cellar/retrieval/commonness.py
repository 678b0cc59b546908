"""How common a question's words are in everyday English or Dutch, and so how much a word that a
source lacks says about whether the source answers the question.

A question that a notebook answers often asks in words the notebook never uses: `found`, `seven`,
`instead`, `versus`, `staat`, `jaar` (the author wrote `fit`, `7`, `vs`). A question that no
source answers usually differs from the nearest one by a word of its subject: `nitrogen` where the
notebook compresses oxygen, `skewness` where it computes the mean, `Weibull`, `Penmanshiel`. The
archive's idf cannot tell the two apart (both kinds are rare in a set of notebooks); how often a
word is said in everyday language can. So the refusal's coverage (``cellar.retrieval.evidence``) weighs
each of the question's terms by its idf times its ``specificity``: 1 for a word rarer than
``RARE``, down to ``FLOOR`` for one as common as ``COMMON``.

The frequencies are wordfreq's (``models/word-frequency/``, CC BY-SA 4.0), on the Zipf scale (the
base-10 log of a word's frequency per billion words: `the` 7.7, `found` 5.7, `temperature` 4.6,
`nitrogen` 3.8). (Measured on the tuning sets, dev, course_dev, near_miss, the demo's notebooks and
documents, documents_c: the coverage's area under the ROC curve, answerable against out of scope,
rose on every one, .925 -> .940 on dev, .811 -> .842 on course_dev, .769 -> .792 on near_miss;
a step at one frequency instead of the ramp separated less on course_dev and documents_c.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from cellar.retrieval.analysis import checked_table, packaged_table_dir

TABLE_ID = "word-frequency"
RARE = 3.5  # Zipf: about 3 in a million words (`nitrogen` 3.8, `skewness` 2.4); rarer weighs fully
COMMON = 6.0  # Zipf: 1 in a thousand (`jaar` 6.2, `found` 5.7); as common weighs FLOOR
FLOOR = 0.2
_WORD = re.compile(r"[\w'-]+")


@lru_cache(maxsize=1)
def zipf_frequencies() -> dict[str, float]:
    """Lower-case word -> its Zipf frequency, the higher of its English and Dutch ones, for the
    26,136 words of either language at or above ``RARE`` (a word not listed is rarer); checked
    against the table's table.json. Read once per process."""
    fields = checked_table(packaged_table_dir(TABLE_ID)).split()  # word, zipf, word, zipf, ...
    # 41 distinct frequencies: each parsed once (the first question in the tab waits on this read,
    # 11 ms in CPython a float per line, 5 ms so)
    parsed = {zipf: float(zipf) for zipf in set(fields[1::2])}
    return dict(zip(fields[::2], map(parsed.__getitem__, fields[1::2]), strict=True))


def specificity(zipf: float) -> float:
    """How much a word of this Zipf frequency tells: 1 up to ``RARE``, ``FLOOR`` from ``COMMON``,
    on a straight line between."""
    share = min(1.0, max(0.0, (zipf - RARE) / (COMMON - RARE)))
    return 1.0 - (1.0 - FLOOR) * share


def term_specificities(query: str, analyse: Callable[[str], list[str]]) -> dict[str, float]:
    """Each term of ``query`` that a listed word gives (``analyse``: a word's terms) -> the
    ``specificity`` of the most common word of the question that gives it; a term of no listed
    word (a name, a unit, a stem of a rare word) is absent, and weighs fully."""
    frequencies = zipf_frequencies()
    result: dict[str, float] = {}
    for word in dict.fromkeys(_WORD.findall(query)):  # each word once: a pasted page repeats them
        zipf = frequencies.get(word.casefold())
        if zipf is not None:
            for term in analyse(word):
                result[term] = min(result.get(term, 1.0), specificity(zipf))
    return result

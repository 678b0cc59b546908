"""How well a Dutch question's words are read in English: the translator a search uses
(``cellar.retrieval.bilingual.question_translator``) on a list of Dutch words of engineering.

    PYTHONPATH=py_src .venv/bin/python benchmarks/dutch_words.py [benchmarks/gold/dutch_words.tsv]

Prints the share of words whose English reading holds one of the expected words (as the
English analyser stems them: `isolate` reads `isolated` right, as a search matches it; a word the
English vocabulary holds whole, `matrix`, is its own reading), beside the
reference of the table alone (the word looked up as written, nothing guessed), and the words read
wrong or not at all.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cellar.retrieval.analysis import Analyzer
from cellar.retrieval.bilingual import _fold, question_translator, reading_table
from cellar.retrieval.embedding import default_model

WORDS = Path(__file__).parent / "gold" / "dutch_words.tsv"


def read_words(path: Path) -> list[tuple[str, set[str]]]:
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    return [(dutch, set(english.split())) for dutch, english in (r for r in rows if len(r) == 2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("words", nargs="?", type=Path, default=WORDS)
    words = read_words(parser.parse_args().words)
    analyzer = Analyzer()
    translator = question_translator(analyzer, default_model().tokenizer.vocab)

    def stems(words: set[str]) -> set[str]:
        return {term for word in words for term in analyzer.language_terms(word, "english")}

    table = reading_table()
    right, by_table, wrong = 0, 0, []
    for dutch, expected in words:
        found = translator.translate([dutch])
        english = [word for sense in found[0].english for word in sense.split()] if found else []
        if not found and _fold(dutch) in translator.english:  # read as the English word it is (`matrix`)
            english = [_fold(dutch)]
        read_right = bool(stems(expected) & stems(set(english)))
        right += read_right
        by_table += bool(stems(expected) & stems({w for sense in table.get(_fold(dutch), ()) for w in sense.split()}))
        if not read_right:
            wrong.append(f"{dutch} -> {' '.join(english) or '(nothing)'}")
    print(f"{len(words)} words: read right {right} ({right / len(words):.3f}); the table alone {by_table}")
    print("read wrong or not at all:\n  " + "\n  ".join(wrong))


if __name__ == "__main__":
    main()

"""`cellar.text.shortened`: the one way a title, a heading, a table cell or a quoted question is
cut to a length."""

import pytest

from cellar.text import shortened


def test_a_text_that_fits_is_kept_whole():
    assert shortened("Ballast tanks", 13) == "Ballast tanks"


@pytest.mark.parametrize("limit", [1, 2, 7, 40])
def test_a_cut_text_fills_the_limit_and_ends_with_an_ellipsis(limit):
    cut = shortened("x" * 100, limit)
    assert len(cut) == limit and cut.endswith("…") and cut[:-1] == "x" * (limit - 1)


def test_blanks_before_the_ellipsis_are_dropped():
    """`Ballast …` reads as a word and a mark; the cut should end on the word."""
    assert shortened("Ballast tank volumes", 9) == "Ballast…"

"""The one normaliser, the graph's key folding and number words."""

from __future__ import annotations

import pytest

from reagent_local.text import (
    NUMBER_WORDS, YES_NO, digits_for_number_words, fold, is_yes_no_value, normalize, strip_accents,
)


@pytest.mark.parametrize(("text", "expected"), [
    ("  The  São-Paulo!! ", "sao paulo"),
    ("Zürich", "zurich"),
    ("Los Angeles", "los angeles"),
    ("Bank of the West", "bank of west"),  # articles go anywhere, not only in front
    ("A Tale of Two Cities", "tale of two cities"),
    ("the", ""),
    ("Theatre and Anthem", "theatre and anthem"),  # only whole words are articles
    ("O'Brien, Jr.", "o brien jr"),
    ("snake_case", "snake case"),
    ("ﬁve", "five"),  # NFKD folds compatibility forms
    ("Montgomery – Alabama", "montgomery – alabama"),  # non-ASCII punctuation is kept
])
def test_normalize(text: str, expected: str) -> None:
    assert normalize(text) == expected


def test_strip_accents() -> None:
    assert strip_accents("Núria Espert, Sardà") == "Nuria Espert, Sarda"


@pytest.mark.parametrize(("text", "expected"), [
    ("Núria  Espert!", "nuria espert"),
    ("The Hague", "the hague"),  # graph keys keep articles: titles start with them
    ("Montgomery – Alabama", "montgomery alabama"),
    ("snake_case", "snake case"),
    ("Straße", "strasse"),  # casefold, not lower
    ("", ""),
])
def test_fold(text: str, expected: str) -> None:
    assert fold(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("yes", True), ("No.", True), (" YES! ", True), ("the yes", True),
    ("yes, in 1950", False), ("Norway", False), ("", False),
])
def test_is_yes_no_value(text: str, expected: bool) -> None:
    assert is_yes_no_value(text) is expected
    assert YES_NO == {"yes", "no"}


def test_number_words_become_digits() -> None:
    assert digits_for_number_words("five films") == "5 films"
    assert digits_for_number_words("forty years") == "40 years"
    assert digits_for_number_words("twenty one") == "20 1"  # word by word, no arithmetic
    assert digits_for_number_words("someone") == "someone"
    assert NUMBER_WORDS["zero"] == "0" and NUMBER_WORDS["ninety"] == "90" and "hundred" not in NUMBER_WORDS

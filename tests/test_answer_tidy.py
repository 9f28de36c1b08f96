"""The final answer leaves without stray separators around it (issue 52: answers that began with ": ")."""

import pytest

from reagent_local.reasoning.answer import tidy_answer


@pytest.mark.parametrize("raw, tidy", [
    (": Paris", "Paris"),
    (" : Paris ", "Paris"),
    ("; 1987,", "1987"),
    ("- Marie Curie", "Marie Curie"),
    ("• yes", "yes"),
    (": - Paris :", "Paris"),
    ("Paris |", "Paris"),
    ("Paris —", "Paris"),
    (":", "unknown"),
    ("", "unknown"),
])
def test_separators_around_the_answer_are_stripped(raw: str, tidy: str) -> None:
    assert tidy_answer(raw) == tidy


@pytest.mark.parametrize("kept", [".NET", "-5 degrees", "U.S.", "Apple Inc.", "C++", "Jean-Luc Picard", "10:30",
                                  "rock, paper", "\"Hey Jude\"", "(2001)", "unknown"])
def test_punctuation_that_belongs_to_the_answer_stays(kept: str) -> None:
    assert tidy_answer(kept) == kept

"""The official HotpotQA answer metrics and the supporting-passage scores, on hand-worked cases."""

from __future__ import annotations

import pytest

from reagent_local.bench.metrics import (
    best_em_f1,
    exact_match,
    f1_precision_recall,
    f1_score,
    normalize_answer,
    support_scores,
)


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("The  Eiffel-Tower!", "eiffeltower"),  # punctuation goes before articles: the hyphen joins the words
        ("An apple a day", "apple day"),
        ("Theatre of the Absurd", "theatre of absurd"),  # "the" only as a whole word
        ("  U.S.A. ", "usa"),
        ("Rush", "rush"),
        ("", ""),
    ],
)
def test_normalize_answer(text: str, normalized: str) -> None:
    assert normalize_answer(text) == normalized


def test_exact_match_ignores_case_articles_and_punctuation() -> None:
    assert exact_match("rush.", "Rush") == 1.0
    assert exact_match("The Beatles", "Beatles") == 1.0
    assert exact_match("Rush band", "Rush") == 0.0


def test_f1_partial_overlap() -> None:
    # pred tokens [rush, band], gold [rush]: P = 1/2, R = 1, F1 = 2/3
    f1, precision, recall = f1_precision_recall("the Rush band", "Rush")
    assert (precision, recall) == (0.5, 1.0)
    assert f1 == pytest.approx(2 / 3)


def test_f1_counts_repeated_tokens_once_per_gold_occurrence() -> None:
    # common = {new: 1, york: 1}: P = 2/4, R = 2/2, F1 = 2/3
    assert f1_score("new york new york", "New York") == pytest.approx(2 / 3)


def test_f1_no_overlap_and_empty_prediction() -> None:
    assert f1_score("Paris", "London") == 0.0
    assert f1_score("", "London") == 0.0


def test_yes_no_rule_of_the_official_script() -> None:
    assert f1_score("yes", "yes") == 1.0
    assert f1_score("Yes.", "yes") == 1.0
    # a yes/no on either side scores 0 unless both are identical, despite token overlap
    assert f1_score("yes it is", "yes") == 0.0
    assert f1_score("no", "no way") == 0.0
    assert f1_score("noanswer", "no answer") == 0.0
    # but EM is plain string equality after normalisation
    assert exact_match("No", "no") == 1.0


def test_best_over_aliases() -> None:
    assert best_em_f1("USA", ("United States", "USA")) == (1.0, 1.0)
    em, f1 = best_em_f1("United States of America", ("United States", "America"))
    # vs "united states": P = 2/4, R = 1 -> 2/3; vs "america": P = 1/4, R = 1 -> 0.4
    assert em == 0.0
    assert f1 == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        best_em_f1("x", ())


def test_support_by_title_when_no_text_is_given() -> None:
    cited = [("A", "anything"), ("B", "b"), ("C", "c")]
    precision, recall = support_scores(cited, [("A", None), ("D", None)])
    assert precision == pytest.approx(1 / 3)
    assert recall == 0.5


def test_support_by_title_and_text() -> None:
    gold = [("Paris", "Paris is the capital of France."), ("Paris", "Paris is a city in Texas.")]
    # same title, other paragraph: no match
    assert support_scores([("Paris", "Paris hosted the 1900 Olympics.")], gold) == (0.0, 0.0)
    # a chunk of a gold paragraph (whitespace aside) matches that paragraph only
    assert support_scores([("Paris", "the capital  of France")], gold) == (1.0, 0.5)
    # as a prompt showed it: cut with a trailing "..." (the cut text is not inside the gold text as it stands)
    assert support_scores([("Paris", "Paris is the capital ...")], gold) == (1.0, 0.5)
    # focused into pieces joined by "…": every piece must be in the gold paragraph
    assert support_scores([("Paris", "Paris is … a city in Texas.")], gold) == (1.0, 0.5)
    assert support_scores([("Paris", "Paris is … the capital of Texas ...")], gold) == (0.0, 0.0)


def test_support_when_nothing_is_cited_or_nothing_is_gold() -> None:
    assert support_scores([], [("A", None)]) == (None, 0.0)
    assert support_scores([("A", "x")], []) == (0.0, None)

"""Chunking into ~100-word passages, passage ids, and reciprocal-rank fusion."""

from __future__ import annotations

import pytest

from reagent_local.retrieval.fusion import rrf
from reagent_local.retrieval.passages import index_text, passage_id, split_passages


def _sentences(prefix: str, count: int) -> str:
    return " ".join(f"{prefix} number {i} has five words." for i in range(count))  # 6 words each


def test_passages_are_about_100_words_and_end_at_sentences():
    text = _sentences("Sentence", 60)  # 360 words
    passages = split_passages(text)
    assert len(passages) == 4
    assert all(50 <= len(p.split()) <= 100 for p in passages)
    assert all(p.endswith("words.") for p in passages)
    assert " ".join(passages) == text  # nothing lost, nothing repeated


def test_a_heading_opens_the_next_passage_instead_of_closing_one():
    text = _sentences("Early", 16) + "\nHistory\n" + _sentences("Later", 16)  # 96 words, heading, ...
    first, second = split_passages(text)[:2]
    assert not first.endswith("History")
    assert second.startswith("History\nLater number 0")


def test_long_sentences_are_cut_and_short_tails_merged():
    long = " ".join(f"w{i}" for i in range(250))
    parts = split_passages(long)
    assert [len(p.split()) for p in parts] == [100, 100, 50]
    tail = _sentences("Body", 17) + " Short end."  # 96 words, then an 8-word tail that joins them
    assert split_passages(tail) == [tail]
    assert split_passages("") == [] and split_passages(" \n \n") == []
    with pytest.raises(ValueError):
        split_passages("x", target_words=0)


def test_ids_and_indexed_text():
    assert passage_id("Actrius", 0) == "Actrius#0"
    assert index_text("Actrius", "A film.") == "Actrius\nA film."
    assert index_text("", "A film.") == "A film."


def test_rrf_sums_reciprocal_ranks():
    fused = rrf([["a", "b", "c"], ["c", "a", "d"]], k=60)
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["d"] == pytest.approx(1 / 63)
    assert [key for key, _ in fused] == ["a", "c", "b", "d"]


def test_rrf_ties_follow_first_seen_order_and_repeats_count_once():
    assert [k for k, _ in rrf([["x", "y"], ["y", "x"]], k=10)] == ["x", "y"]
    assert dict(rrf([["a", "a", "b"]], k=0)) == {"a": 1.0, "b": pytest.approx(1 / 3)}
    assert rrf([[], []]) == []
    with pytest.raises(ValueError):
        rrf([["a"]], k=-1)

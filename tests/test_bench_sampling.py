"""Sampling: the same seed draws the same questions, exactly as the standard library does."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from reagent_local.bench.sampling import sample_questions
from reagent_local.errors import BenchRunError


def test_same_seed_same_questions_and_stdlib_semantics() -> None:
    items = [f"q{i}" for i in range(200)]
    first = sample_questions(items, 50, seed=13)
    assert first == sample_questions(list(items), 50, seed=13)
    random.seed(13)
    assert first == random.sample(items, 50)
    assert len(set(first)) == 50
    assert sample_questions(items, 50, seed=14) != first


def test_n_none_takes_all_in_file_order() -> None:
    items = list(range(7))
    assert sample_questions(items, None, seed=3) == items


@pytest.mark.parametrize("n", [0, 8])
def test_bad_n_is_a_user_error(n: int) -> None:
    with pytest.raises(BenchRunError) as info:
        sample_questions(list(range(7)), n, seed=1)
    assert "--n" in str(info.value)


def test_real_hotpot_sample_draw_is_stable(shared_data: Path) -> None:
    from reagent_local.datasets import load_questions

    questions = load_questions(shared_data / "hotpotqa" / "hotpot_dev_distractor_sample200.json", "hotpotqa")
    ids = [q.id for q in sample_questions(questions, 50, seed=13)]
    random.seed(13)
    assert ids == [q.id for q in random.sample(questions, 50)]
    assert ids == [q.id for q in sample_questions(load_questions(
        shared_data / "hotpotqa" / "hotpot_dev_distractor_sample200.json", "hotpotqa"), 50, seed=13)]

"""The small logistic regression behind the supervisor's learned decisions."""

from __future__ import annotations

import json
import random

import pytest

from reagent_local.agents.logistic import LogisticModel, fit_logistic


def test_it_learns_which_feature_decides_and_round_trips_through_json() -> None:
    rng = random.Random(3)
    rows, labels = [], []
    for _ in range(400):
        signal, noise = rng.random(), rng.random()
        rows.append({"confidence": signal, "length": noise * 10})
        labels.append(int(rng.random() < 0.1 + 0.8 * signal))  # only confidence matters
    model = fit_logistic(rows, labels, ["confidence", "length"], l2=1.0)
    assert model.weights[0] > 0.8 and abs(model.weights[1]) < 0.3
    assert model.probability({"confidence": 0.95, "length": 3}) > 0.7
    assert model.probability({"confidence": 0.05, "length": 3}) < 0.3
    again = LogisticModel.from_json(json.loads(json.dumps(model.to_json())))
    assert again.probability({"confidence": 0.5, "length": 1}) == pytest.approx(model.probability({"confidence": 0.5, "length": 1}))
    shares = model.contributions({"confidence": 0.95, "length": 3})
    assert shares["confidence"] > 0 and set(shares) == {"confidence", "length"}


def test_a_constant_feature_gets_no_weight_and_a_missing_one_is_an_error() -> None:
    rows = [{"a": float(i % 2), "b": 1.0} for i in range(50)]
    model = fit_logistic(rows, [i % 2 for i in range(50)], ["a", "b"])
    assert model.weights[1] == 0.0
    with pytest.raises(KeyError, match="b"):
        model.probability({"a": 1.0})
    with pytest.raises(ValueError):
        fit_logistic([], [], ["a"])

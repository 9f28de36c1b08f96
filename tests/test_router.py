"""The adaptive baseline's learned router: its file, its decisions, its features."""

from __future__ import annotations

import json
import math

import pytest

from reagent_local.agents.logistic import LogisticModel
from reagent_local.agents.router import (KINDS, Reading, Router, choice_features, default_path, load_router, overlap,
                                         question_features, stop_features, write_router)
from reagent_local.errors import ConfigError


def constant(probability: float, threshold: float = 0.5) -> LogisticModel:
    """A model that gives every question the same probability (no features)."""
    return LogisticModel((), (), (), (), math.log(probability / (1 - probability)), threshold)


def router_file(tmp_path, stop: LogisticModel | None, choose: LogisticModel | None, kind: str = "adaptive"):
    path = tmp_path / f"{kind}-router.json"
    write_router(Router(kind, stop, choose, {"commit": "test"}), path)
    return path


# -- the file ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_the_package_ships_a_router_of_each_kind_that_loads(kind):
    router = load_router(kind=kind)
    assert router.kind == kind and router.path == str(default_path(kind))
    for model in (router.stop, router.choose):
        assert model is None or 0.5 <= model.threshold <= 1.0
    if router.fitted:  # fitted on train questions only, and it says where from
        files = router.provenance["question_files"]
        assert files and all(str(name).endswith("-train.txt") for name in files)
        assert router.provenance["command"].startswith("reagent bench fit-router")


def test_a_router_file_round_trips_and_a_broken_one_says_what_to_do(tmp_path):
    model = LogisticModel(("first_confidence",), (0.6,), (0.2,), (1.5,), -0.3, 0.8)
    path = router_file(tmp_path, model, None)
    back = load_router(path)
    assert back.stop == model and back.choose is None and back.provenance == {"commit": "test"}
    with pytest.raises(ConfigError, match="no router file") as missing:
        load_router(tmp_path / "nope.json")
    assert "fit-router" in missing.value.hint
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="is not a router file"):
        load_router(path)
    with pytest.raises(ConfigError, match="is a 'reagent' router"):  # the agents' router, removed
        load_router(router_file(tmp_path, None, None, kind="reagent"), kind="adaptive")


# -- the decisions -------------------------------------------------------------------------------
def test_a_decision_shows_its_probability_threshold_and_each_features_share():
    model = LogisticModel(("first_confidence", "first_grounded"), (0.5, 0.5), (0.25, 0.5), (2.0, 1.0), 0.0, 0.7)
    router = Router("adaptive", stop=model)
    sure = router.decide_stop({"first_confidence": 0.9, "first_grounded": 1.0})
    unsure = router.decide_stop({"first_confidence": 0.3, "first_grounded": 0.0})
    assert sure.taken and not unsure.taken
    assert sure.contributions == {"first_confidence": 3.2, "first_grounded": 1.0}
    assert sure.probability == pytest.approx(1 / (1 + math.exp(-4.2)))
    assert "P = 0.985 >= 0.70" in sure.reason("rag") and "< 0.70" in unsure.reason("rag")
    assert json.loads(json.dumps(sure.to_json()))["threshold"] == 0.7


def test_a_router_without_a_model_never_stops_and_never_prefers_the_first_road():
    router = Router("adaptive")
    assert not router.fitted
    stop, choose = router.decide_stop({}), router.decide_choice({})
    assert not stop.taken and stop.probability is None and not choose.taken
    assert "no learned stop model" in stop.reason("rag")


def test_the_features_name_each_road_and_what_the_question_asks():
    first = Reading("Ilse Lind", 0.9, True, True, cited=2)
    second = Reading("the painter Ilse Lind", 0.4, False, True, cited=1)
    features = choice_features("Who is older, Ann or Bo?", first, second)
    assert features["first_confidence"] == 0.9 and features["second_grounded"] == 0.0
    assert features["question_either_or"] == 1.0 and features["question_compares"] == 1.0
    assert 0 < features["overlap"] < 1 and overlap("The Beatles", "beatles") == 1.0 and overlap("a", "") == 0.0
    assert set(stop_features("Is Paris in France?", first)) < set(features)
    assert question_features("Is Paris in France?")["question_yes_no"] == 1.0
    assert Reading.from_json(first.to_json()) == first

"""The supervisor's learned router: its file, its decisions, its features, and the pipeline it steers."""

from __future__ import annotations

import json
import math

import pytest

from reagent_local.agents.logistic import LogisticModel
from reagent_local.agents.router import (KINDS, ChainShape, Reading, Router, choice_features, default_path,
                                         load_router, overlap, question_features, stop_features, write_router)
from reagent_local.errors import ConfigError
from reagent_local.reasoning.pipeline import Pipeline

from scenario_runs import scenario_config
from test_pipeline_scripted import MOTHER_Q, index, log, roads_index, two_roads_llm  # noqa: F401 (fixtures)


def constant(probability: float, threshold: float = 0.5) -> LogisticModel:
    """A model that gives every question the same probability (no features)."""
    return LogisticModel((), (), (), (), math.log(probability / (1 - probability)), threshold)


def router_file(tmp_path, stop: LogisticModel | None, choose: LogisticModel | None, kind: str = "reagent"):
    path = tmp_path / f"{kind}-router.json"
    write_router(Router(kind, stop, choose, {"commit": "test"}), path)
    return path


def routed(llm, index, log, path, router: str = "learned", **kw) -> Pipeline:
    config = scenario_config(two_roads=True, min_confidence=0.0, router=router, router_file=path, **kw)
    return Pipeline(config, llm=llm, retriever=roads_index(index), log=log)


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
    with pytest.raises(ConfigError, match="is a 'adaptive' router"):
        load_router(router_file(tmp_path, None, None, kind="adaptive"), kind="reagent")


# -- the decisions -------------------------------------------------------------------------------
def test_a_decision_shows_its_probability_threshold_and_each_features_share():
    model = LogisticModel(("first_confidence", "first_grounded"), (0.5, 0.5), (0.25, 0.5), (2.0, 1.0), 0.0, 0.7)
    router = Router("reagent", stop=model)
    sure = router.decide_stop({"first_confidence": 0.9, "first_grounded": 1.0})
    unsure = router.decide_stop({"first_confidence": 0.3, "first_grounded": 0.0})
    assert sure.taken and not unsure.taken
    assert sure.contributions == {"first_confidence": 3.2, "first_grounded": 1.0}
    assert sure.probability == pytest.approx(1 / (1 + math.exp(-4.2)))
    assert "P = 0.985 >= 0.70" in sure.reason("whole question's") and "< 0.70" in unsure.reason("whole question's")
    assert json.loads(json.dumps(sure.to_json()))["threshold"] == 0.7


def test_a_router_without_a_model_never_stops_and_never_prefers_the_first_road():
    router = Router("reagent")
    assert not router.fitted
    stop, choose = router.decide_stop({}), router.decide_choice({})
    assert not stop.taken and stop.probability is None and not choose.taken
    assert "no learned stop model" in stop.reason("whole question's")


def test_the_features_name_each_road_and_what_the_question_asks():
    first = Reading("Ilse Lind", 0.9, True, True, cited=2)
    second = Reading("the painter Ilse Lind", 0.4, False, True, cited=1)
    shape = ChainShape(steps=2, answered=2, local_backtracks=1, graph_facts=3)
    features = choice_features("Who is older, Ann or Bo?", first, second, shape)
    assert features["first_confidence"] == 0.9 and features["second_grounded"] == 0.0
    assert features["question_either_or"] == 1.0 and features["question_compares"] == 1.0
    assert features["chain_local_backtracks"] == 1.0 and features["chain_answered_share"] == 1.0
    assert 0 < features["overlap"] < 1 and overlap("The Beatles", "beatles") == 1.0 and overlap("a", "") == 0.0
    assert set(stop_features("Is Paris in France?", first)) < set(features)
    assert question_features("Is Paris in France?")["question_yes_no"] == 1.0
    assert Reading.from_json(first.to_json()) == first and ChainShape.from_json(shape.to_json()) == shape


# -- the pipeline it steers ------------------------------------------------------------------------
def test_a_sure_whole_question_answer_read_first_stops_the_run_before_any_plan(index, log, tmp_path):
    llm = two_roads_llm("the painter", 0.2, "Ilse Lind", 0.9)
    answer = routed(llm, index, log, router_file(tmp_path, constant(0.95, 0.9), None)).ask(MOTHER_Q)
    assert answer.answer == "Ilse Lind" and answer.subquestions == ()
    assert llm.requests_for("Decomposition") == [] and len(llm.requests_for("SubAnswer")) == 1
    assert answer.route["winner"] == "whole question" and answer.route["stop"]["taken"]
    assert answer.route["stop"]["features"]["first_confidence"] == pytest.approx(0.9, abs=0.01)
    assert answer.passages and answer.road_line().startswith("road: whole question (learned stop: P = 0.950 >= 0.90")
    (event,) = [e for e in log.events(answer.run_id) if e.type == "route"]
    assert event.agent == "supervisor" and event.payload["stage"] == "stop" and event.payload["taken"]
    assert answer.answer_before_backtracking is None  # the chain never ran: its answer is not known


def test_when_the_run_goes_on_the_learned_choice_settles_disagreeing_roads_without_a_rollback(index, log, tmp_path):
    llm = two_roads_llm("the painter", 0.2, "Ilse Lind", 0.9)
    path = router_file(tmp_path, constant(0.3, 0.9), constant(0.8, 0.6))
    answer = routed(llm, index, log, path).ask(MOTHER_Q)
    assert answer.answer == "Ilse Lind" and answer.backtracks["global"] == 0
    assert llm.requests_for("OptionAnswer") == []  # no model call chose
    assert answer.route["winner"] == "whole question" and answer.route["choose"]["taken"]
    assert answer.route["chain"] == "the painter" and answer.route["whole"] == "Ilse Lind"
    assert answer.roads["winner"] == "whole question" and "learned choose: P = 0.800 >= 0.60" in answer.roads["reason"]
    assert answer.answer_before_backtracking == "the painter"
    stages = [e.payload["stage"] for e in log.events(answer.run_id) if e.type == "route"]
    assert stages == ["stop", "choose"]
    features = answer.route["choose"]["features"]
    assert features["second_confidence"] == pytest.approx(0.2, abs=0.01) and features["chain_steps"] == 2.0
    # the whole question was read once, first, before the plan
    first_call = llm.requests[0]
    assert first_call.schema == "SubAnswer" and MOTHER_Q in first_call.messages[-1]["content"]


def test_a_chain_the_router_prefers_stands(index, log, tmp_path):
    llm = two_roads_llm("the painter", 0.2, "Ilse Lind", 0.9)
    answer = routed(llm, index, log, router_file(tmp_path, None, constant(0.2, 0.6))).ask(MOTHER_Q)
    assert answer.answer == "the painter" and answer.route["winner"] == "chain"
    assert "road: chain (learned choose: P = 0.200 < 0.60" in answer.road_line()
    assert not [e for e in log.events(answer.run_id) if e.type == "rule_fired" and e.payload["stage"] == "trust"]


def test_collecting_reads_both_roads_and_keeps_the_chains_answer_whatever_a_router_file_says(index, log, tmp_path):
    llm = two_roads_llm("the painter", 0.2, "Ilse Lind", 0.9)
    path = router_file(tmp_path, constant(0.99, 0.5), constant(0.99, 0.5))  # would stop; collecting never does
    answer = routed(llm, index, log, path, router="collect").ask(MOTHER_Q)
    assert answer.answer == "the painter" and answer.route["router"] is not None
    assert answer.route["whole"] == "Ilse Lind" and answer.route["chain"] == "the painter"
    assert answer.route["stop"]["probability"] is None and answer.route["choose"]["features"]
    assert answer.backtracks["global"] == 0 and llm.requests_for("OptionAnswer") == []


def test_router_off_keeps_the_hand_set_roads(index, log, tmp_path):
    llm = two_roads_llm("the painter", 0.2, "Ilse Lind", 0.9)
    answer = routed(llm, index, log, None, router="off").ask(MOTHER_Q)
    assert answer.route is None and answer.backtracks["global"] == 1  # the losing chain rolled back, as before
    assert not [e for e in log.events(answer.run_id) if e.type == "route"]


def test_the_trace_names_the_decision_and_the_features_that_pushed_it_most(index, log, tmp_path):
    from reagent_local.core import events as ev
    from reagent_local.trace.describe import summarize

    llm = two_roads_llm("the painter", 0.2, "Ilse Lind", 0.9)
    model = LogisticModel(("first_confidence", "question_words"), (0.5, 2.0), (0.2, 1.0), (2.0, 0.1), 0.0, 0.9)
    answer = routed(llm, index, log, router_file(tmp_path, model, None)).ask(MOTHER_Q)
    (event,) = [e for e in log.events(answer.run_id) if e.type == "route"]
    line = summarize(ev.decode(event))
    assert line.startswith("router stop: learned stop: P = ") and "(most: first_confidence +" in line
    assert line.index("first_confidence") < line.index("question_words")  # the larger share first


def test_a_router_that_learned_neither_decision_never_reads_the_whole_question(index, log, tmp_path):
    llm = two_roads_llm("the painter", 0.2, "Ilse Lind", 0.9)
    answer = routed(llm, index, log, router_file(tmp_path, None, None)).ask(MOTHER_Q)
    assert answer.answer == "the painter" and answer.route["winner"] == "chain" and "whole" not in answer.route
    assert len(llm.requests_for("SubAnswer")) == 2  # the two steps only
    assert answer.road_line() == "road: chain (the whole question was not needed)" == answer.to_dict()["road"]
    assert not [e for e in log.events(answer.run_id) if e.type == "route"]


def test_a_router_with_only_a_choice_reads_the_whole_question_after_the_chain_over_its_own_passages(index, log,
                                                                                                   tmp_path):
    llm = two_roads_llm("the painter", 0.2, "Ilse Lind", 0.9)
    answer = routed(llm, index, log, router_file(tmp_path, None, constant(0.8, 0.6))).ask(MOTHER_Q)
    assert answer.answer == "Ilse Lind" and answer.route["whole"] == "Ilse Lind" and "stop" not in answer.route
    assert llm.requests[0].schema == "Decomposition" and MOTHER_Q in llm.requests[-1].messages[-1]["content"]
    whole = [e for e in log.events(answer.run_id) if e.type == "message"
             and e.payload["body"] == "EvidenceFound" and e.payload["payload"]["step"] is None]
    assert len(whole) == 1 and len(whole[0].payload["payload"]["passages"]) <= 6

"""Which commit and configuration each record came from, and the one-of-each rule."""

from __future__ import annotations

import pytest

from reagent_local.bench.provenance import (check_one_machine, check_single, config_differences, config_id,
                                            describe, legacy_config_id, mix_line, origins, record_origin,
                                            resolve_threads)
from reagent_local.errors import BenchRunError

CONFIG = {"paths": {"home": "/a"}, "llm": {"model": "m", "n_threads": 2, "seed": 0},
          "pipeline": {"two_roads": True, "rules": ["all"], "role_models": {}}}


def test_config_id_ignores_where_files_live_but_not_the_threads() -> None:
    moved = {**CONFIG, "paths": {"home": "/elsewhere"}, "llm": {**CONFIG["llm"], "use_server": True}}
    assert config_id(CONFIG) == config_id(moved) and len(config_id(CONFIG)) == 12
    threads = {**CONFIG, "llm": {**CONFIG["llm"], "n_threads": 1}}
    assert config_id(threads) != config_id(CONFIG)  # a 1-thread and a 2-thread run are two configurations
    assert config_differences(CONFIG, threads) == ["llm.n_threads: 2 -> 1"]
    other = {**CONFIG, "pipeline": {**CONFIG["pipeline"], "two_roads": False}}
    assert config_id(other) != config_id(CONFIG)
    assert config_id(None) == "unknown"
    assert config_differences(CONFIG, other) == ["pipeline.two_roads: True -> False"]
    assert config_differences(CONFIG, moved) == []


def test_legacy_ids_leave_threads_out_as_records_stamped_before_did() -> None:
    threads = {**CONFIG, "llm": {**CONFIG["llm"], "n_threads": 8}}
    assert legacy_config_id(CONFIG) == legacy_config_id(threads) != config_id(CONFIG)
    assert legacy_config_id(None) == "unknown"


def test_unset_threads_resolve_to_a_count_and_a_set_count_stays() -> None:
    unset = {**CONFIG, "llm": {**CONFIG["llm"], "n_threads": None}}
    assert resolve_threads(unset, 4)["llm"]["n_threads"] == 4 and unset["llm"]["n_threads"] is None
    assert resolve_threads(CONFIG, 4)["llm"]["n_threads"] == 2
    assert config_id(resolve_threads(unset, 2)) == config_id(CONFIG)


def test_records_without_a_config_id_take_their_folders() -> None:
    assert record_origin({"code": "0.1+gabc"}, "f0f0") == ("0.1+gabc", "f0f0")
    assert record_origin({"code": "0.1+gabc", "config_id": "c1"}, "f0f0") == ("0.1+gabc", "c1")
    assert record_origin({}) == ("unknown", "unknown")


def test_one_commit_and_one_configuration_or_a_labelled_mix() -> None:
    single = origins([{"code": "x", "config_id": "c"}] * 3)
    assert single == {"commits": {"x": 3}, "configs": {"c": 3}, "machines": {"unknown": 3}, "mixed": False}
    check_single(single, "t", allow_mixed=False)
    assert mix_line(single) is None
    mixed = origins([{"code": "x", "config_id": "c"}, {"code": "y", "config_id": "c"}, {"code": "x"}], "d")
    assert mixed["commits"] == {"x": 2, "y": 1} and mixed["configs"] == {"c": 2, "d": 1} and mixed["mixed"]
    with pytest.raises(BenchRunError, match="t mixes records of commits x [(]2 records[)], y [(]1 record[)]"):
        check_single(mixed, "t", allow_mixed=False)
    check_single(mixed, "t", allow_mixed=True)
    assert mix_line(mixed) == ("**Mixed**: these records come from commits x (2 records), y (1 record); "
                               "configurations c (2 records), d (1 record).")


def test_records_of_two_machines_are_a_mix_and_old_records_read_as_one_unknown_machine() -> None:
    old = origins([{"code": "x", "config_id": "c"}] * 2)
    assert not old["mixed"] and describe(old) == "commit x (2 records); configuration c (2 records)"
    one = origins([{"code": "x", "config_id": "c", "machine_id": "m1"}] * 2)
    assert not one["mixed"] and describe(one).endswith("; machine m1 (2 records)")
    two = origins([{"code": "x", "config_id": "c", "machine_id": "m1"}, {"code": "x", "config_id": "c",
                                                                        "machine_id": "m2"}])
    assert two["mixed"] and two["machines"] == {"m1": 1, "m2": 1}
    with pytest.raises(BenchRunError, match="machines m1 [(]1 record[)], m2 [(]1 record[)]") as info:
        check_single(two, "t", allow_mixed=False)
    assert "one machine" in info.value.hint and "--allow-mixed" in info.value.hint
    # an old record beside a new one: nothing says it ran on that machine
    beside = origins([{"code": "x", "config_id": "c", "machine_id": "m1"}, {"code": "x", "config_id": "c"}])
    assert beside["mixed"] and beside["machines"] == {"m1": 1, "unknown": 1}
    assert "machines m1 (1 record), unknown (1 record)" in (mix_line(beside) or "")


def test_two_sides_of_different_machines_are_refused_unless_allowed_and_then_labelled() -> None:
    m1, m2, old = ({"machines": {"m1": 3}}, {"machines": {"m2": 3}}, {"machines": {"unknown": 3}})
    assert check_one_machine({"A": m1, "B": m1}, "compare", allow_mixed=False) is None
    assert check_one_machine({"A": old, "B": old}, "compare", allow_mixed=False) is None  # old folders still pair
    for other in (m2, old):
        with pytest.raises(BenchRunError, match="compare would pair records of different machines") as info:
            check_one_machine({"A": m1, "B": other}, "compare", allow_mixed=False)
        assert "--allow-mixed" in info.value.hint
    label = check_one_machine({"A": m1, "B": m2}, "compare", allow_mixed=True)
    assert label == ("**Mixed machines**: A on m1; B on m2; a difference here includes the difference "
                     "between machines.")

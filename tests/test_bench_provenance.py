"""Which commit and configuration each record came from, and the one-of-each rule."""

from __future__ import annotations

import pytest

from reagent_local.bench.provenance import (check_single, config_differences, config_id, mix_line, origins,
                                            record_origin)
from reagent_local.errors import BenchRunError

CONFIG = {"paths": {"home": "/a"}, "llm": {"model": "m", "n_threads": 2, "seed": 0},
          "pipeline": {"two_roads": True, "rules": ["all"], "role_models": {}}}


def test_config_id_ignores_where_files_live_and_the_cores_but_nothing_else() -> None:
    same = {**CONFIG, "paths": {"home": "/elsewhere"}, "llm": {**CONFIG["llm"], "n_threads": 8}}
    assert config_id(CONFIG) == config_id(same) and len(config_id(CONFIG)) == 12
    other = {**CONFIG, "pipeline": {**CONFIG["pipeline"], "two_roads": False}}
    assert config_id(other) != config_id(CONFIG)
    assert config_id(None) == "unknown"
    assert config_differences(CONFIG, other) == ["pipeline.two_roads: True -> False"]
    assert config_differences(CONFIG, same) == []


def test_records_without_a_config_id_take_their_folders() -> None:
    assert record_origin({"code": "0.1+gabc"}, "f0f0") == ("0.1+gabc", "f0f0")
    assert record_origin({"code": "0.1+gabc", "config_id": "c1"}, "f0f0") == ("0.1+gabc", "c1")
    assert record_origin({}) == ("unknown", "unknown")


def test_one_commit_and_one_configuration_or_a_labelled_mix() -> None:
    single = origins([{"code": "x", "config_id": "c"}] * 3)
    assert single == {"commits": {"x": 3}, "configs": {"c": 3}, "mixed": False}
    check_single(single, "t", allow_mixed=False)
    assert mix_line(single) is None
    mixed = origins([{"code": "x", "config_id": "c"}, {"code": "y", "config_id": "c"}, {"code": "x"}], "d")
    assert mixed["commits"] == {"x": 2, "y": 1} and mixed["configs"] == {"c": 2, "d": 1} and mixed["mixed"]
    with pytest.raises(BenchRunError, match="t mixes records of commits x [(]2 records[)], y [(]1 record[)]"):
        check_single(mixed, "t", allow_mixed=False)
    check_single(mixed, "t", allow_mixed=True)
    assert mix_line(mixed) == ("**Mixed**: these records come from commits x (2 records), y (1 record); "
                               "configurations c (2 records), d (1 record).")

"""Statements, quantities, snapshots and the fold (pure, no database)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reagent_local.errors import LogError
from reagent_local.core.knowledge import (
    KnowledgeState, Statement, StateFolder, discarded_between, fold, make_statement,
    statement_from_dict, statement_to_dict, with_time,
)


@dataclass
class Ev:
    """A minimal event for the fold."""

    seq: int
    time: int
    agent: str
    type: str
    payload: dict[str, Any] = field(default_factory=dict)


@pytest.mark.parametrize("value, number, unit", [
    ("508,000", 508000.0, None),
    ("1.6 million people", 1600000.0, "people"),
    ("4,858,979 (2015 est.)", 4858979.0, None),
    ("12%", 12.0, "percent"),
    ("12 March 1950", None, None),
    ("Los Angeles", None, None),
])
def test_make_statement_parses_quantities_with_dates_parse_quantity(value: str, number, unit) -> None:
    s = make_statement(subject="S", relation="population", value=value)
    assert (s.value_number, s.unit) == (number, unit)


def test_make_statement_structured_fills_text_number_and_stable_id() -> None:
    s = make_statement(subject="Sacramento", relation="Population", value="508,000", subquestion=2,
                       provenance=[("p1", 0.5)], confidence=0.8)
    assert s.relation == "population" and s.text == "population(Sacramento) = 508,000"
    assert (s.value_number, s.unit) == (508000.0, None)
    assert s.provenance == (("p1", 0.5),) and s.structured and s.time is None
    again = make_statement(subject="Sacramento", relation="population", value="508,000", subquestion=2,
                           provenance=[("p1", 0.5)], confidence=0.3, agent="other")
    assert again.id == s.id  # the id names the content, not who holds it or how sure they are
    other = make_statement(subject="Sacramento", relation="population", value="1,600,000", subquestion=2)
    assert other.id != s.id


def test_make_statement_free_text_and_numbers_as_values() -> None:
    s = make_statement("California hosted the 1984 Summer Olympics", agent="answerer")
    assert not s.structured and s.value is None and s.agent == "answerer"
    n = make_statement(subject="X", relation="population", value=1200)
    assert n.value == "1200" and n.value_number == 1200.0


@pytest.mark.parametrize("kwargs, message", [
    ({"subject": "X", "relation": "capital"}, "together"),
    ({"subject": "X", "relation": "capital_of", "value": "Y"}, "unknown relation"),
    ({}, "needs text"),
    ({"text": "  "}, "empty"),
    ({"text": "t", "confidence": 1.5}, "confidence"),
])
def test_make_statement_rejects_bad_input(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_statement(**kwargs)


def test_statement_dict_round_trip() -> None:
    s = with_time(make_statement(subject="A", relation="capital", value="B", provenance=[("p", 1.0)]), "v", 7)
    data = statement_to_dict(s)
    assert data["provenance"] == [["p", 1.0]] and data["time"] == 7 and data["agent"] == "v"
    assert statement_from_dict(data) == s
    assert set(data) == {f.name for f in fields(Statement)}  # a new field must be serialised too


def _assert(seq: int, agent: str, text: str) -> Ev:
    s = with_time(make_statement(text), agent, seq)
    return Ev(seq, seq, agent, "assert", {"statement": statement_to_dict(s)})


def test_fold_assert_retract_checkpoint_rollbacks() -> None:
    a, b, c = _assert(1, "x", "a"), _assert(2, "y", "b"), _assert(4, "x", "c")
    a_id = a.payload["statement"]["id"]
    events = [a, b, Ev(3, 3, "sys", "checkpoint", {"checkpoint_id": 1, "label": "l"}), c,
              Ev(5, 5, "x", "retract", {"statement_id": a_id, "reason": "r"})]
    state = fold(events)
    assert [s.text for s in state.local("x")] == ["c"] and [s.text for s in state.local("y")] == ["b"]
    local = fold(events + [Ev(6, 6, "x", "rollback_local", {"checkpoint_id": 1})])
    assert [s.text for s in local.local("x")] == ["a"] and [s.text for s in local.local("y")] == ["b"]
    assert fold(events, until=3) == fold(events[:3])
    glob = fold(events + [_assert(6, "z", "d"), Ev(7, 7, "s", "rollback_global", {"checkpoint_id": 1})])
    assert sorted(glob.locals) == ["x", "y"] and [s.text for s in glob.global_state()] == ["a", "b"]


def test_fold_refuses_an_inconsistent_log() -> None:
    with pytest.raises(LogError, match="does not hold"):
        fold([Ev(1, 1, "x", "retract", {"statement_id": "s1", "reason": "r"})])
    with pytest.raises(LogError, match="not before it"):
        fold([Ev(1, 1, "x", "rollback_local", {"checkpoint_id": 9})])
    with pytest.raises(LogError, match="already holds"):
        fold([_assert(1, "x", "a"), _assert(1, "x", "a")])


def test_snapshot_round_trip_and_discarded_between() -> None:
    folder = StateFolder()
    for e in (_assert(1, "x", "a"), _assert(2, "y", "b")):
        folder.apply(e)
    state = folder.state()
    snap = state.to_snapshot()
    assert [g[0] for g in snap["global"]] == ["x", "y"]
    assert KnowledgeState.from_snapshot(snap) == state
    folder.apply(_assert(3, "y", "c"))
    assert [s.text for s in discarded_between(folder.state(), state)] == ["c"]


# -- property: the fold agrees with a direct model of the operations ------------------------------
AGENTS = ["a", "b", "c"]
ops = st.lists(st.tuples(st.sampled_from(["assert", "retract", "checkpoint", "local", "global"]),
                         st.sampled_from(AGENTS), st.integers(0, 5)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_fold_matches_direct_model(operations: list) -> None:
    model: dict[str, dict[str, str]] = {a: {} for a in AGENTS}
    saved: list[dict[str, dict[str, str]]] = []
    events: list[Ev] = []
    for t, (op, agent, n) in enumerate(operations, start=1):
        if op == "assert":
            s = with_time(make_statement(f"fact {n}"), agent, t)
            if s.id in model[agent]:
                continue
            model[agent][s.id] = s.text
            events.append(Ev(t, t, agent, "assert", {"statement": statement_to_dict(s)}))
        elif op == "retract" and model[agent]:
            sid = sorted(model[agent])[n % len(model[agent])]
            del model[agent][sid]
            events.append(Ev(t, t, agent, "retract", {"statement_id": sid, "reason": ""}))
        elif op == "checkpoint":
            saved.append({a: dict(h) for a, h in model.items()})
            events.append(Ev(t, t, "sys", "checkpoint", {"checkpoint_id": len(saved)}))
        elif op in ("local", "global") and saved:
            cid = n % len(saved) + 1
            if op == "local":
                model[agent] = dict(saved[cid - 1][agent])
            else:
                model = {a: dict(h) for a, h in saved[cid - 1].items()}
            events.append(Ev(t, t, agent, f"rollback_{op}", {"checkpoint_id": cid}))
    state = fold(events)
    assert {a: {s.id: s.text for s in state.local(a)} for a in AGENTS} == model
    assert all(isinstance(s, Statement) and s.agent == a for a, held in state.locals.items() for s in held)

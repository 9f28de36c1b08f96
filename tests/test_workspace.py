"""Workspace: stamped asserts, retracts, checkpoints, both rollbacks, state_at, replay, resume."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reagent_local.core import events as ev
from reagent_local.core.conflicts import ConflictChecker, Verdict
from reagent_local.errors import RunNotFoundError
from reagent_local.core.knowledge import KnowledgeState, Statement, make_statement
from reagent_local.core.log import EventLog
from reagent_local.core.workspace import Workspace, replay


def fact(subject: str, value: str, relation: str = "capital", **kw) -> Statement:
    return make_statement(subject=subject, relation=relation, value=value, **kw)


@pytest.fixture
def ws() -> Workspace:
    return Workspace.start(EventLog(":memory:"), "q", {})


def texts(statements) -> list[str]:
    return [s.text for s in statements]


def test_start_checkpoint_and_stamped_asserts(ws: Workspace) -> None:
    assert [(c.label, c.time) for c in ws.checkpoints()] == [("start", 1)]
    s = ws.assert_statement("verifier", fact("A", "B", agent="someone else"))
    assert (s.agent, s.time) == ("verifier", 2)
    assert ws.local_state("verifier") == (s,) and ws.global_state() == (s,)
    with pytest.raises(ValueError, match="already holds"):
        ws.assert_statement("verifier", s)
    assert ws.assert_statement("answerer", s).agent == "answerer"  # another agent may hold the same claim
    assert len(ws.global_state()) == 2 and ws.holders(s.id) == ["answerer", "verifier"]


def test_retract_and_errors(ws: Workspace) -> None:
    s = ws.assert_statement("v", fact("A", "B"))
    assert ws.retract("v", s.id, "wrong") == s and ws.local_state("v") == ()
    with pytest.raises(ValueError, match="does not hold"):
        ws.retract("v", s.id, "again")
    event = ws.events()[-1]
    assert (event.type, event.agent, event.payload) == ("retract", "v", {"statement_id": s.id, "reason": "wrong"})
    with pytest.raises(ValueError, match="changes the state"):
        ws.record("v", ev.Assert(statement=fact("C", "D")))
    with pytest.raises(ValueError, match="not a checkpoint"):
        ws.rollback_global(99, "no such checkpoint")


def test_checkpoint_stores_snapshot_in_the_log(ws: Workspace) -> None:
    a = ws.assert_statement("v", fact("A", "B"))
    b = ws.assert_statement("r", make_statement("free text"))
    cp = ws.checkpoint("after two", agent="controller")
    stored = ws.log.checkpoints(ws.run_id)[-1]
    assert stored == cp and stored.label == "after two"
    assert KnowledgeState.from_snapshot(stored.snapshot) == ws.state()
    assert stored.snapshot["global"] == [["v", a.id], ["r", b.id]]
    assert ws.events()[-1].type == "checkpoint" and ws.events()[-1].agent == "controller"


def test_rollback_local_touches_one_agent_and_restores_retracted(ws: Workspace) -> None:
    keep = ws.assert_statement("v", fact("S", "508,000", "population"))
    cp = ws.checkpoint("before weaker")
    weaker = ws.assert_statement("v", fact("S", "1,600,000", "population", confidence=0.3))
    other = ws.assert_statement("r", make_statement("retriever note"))
    ws.retract("v", keep.id, "mistake")
    discarded = ws.rollback_local("v", cp.id, "drop the weaker")
    assert discarded == [weaker]
    assert ws.local_state("v") == (keep,) and ws.local_state("r") == (other,)
    event = ws.events()[-1]
    assert event.type == "rollback_local" and event.payload == {
        "checkpoint_id": cp.id, "reason": "drop the weaker", "discarded": [weaker.id], "restored": [keep.id]}


def test_rollback_global_and_abandoned_branch_stays_in_log(ws: Workspace) -> None:
    a = ws.assert_statement("v", fact("A", "B"))
    cp = ws.checkpoint("mid")
    b = ws.assert_statement("v", fact("C", "D"))
    c = ws.assert_statement("r", make_statement("x"))
    discarded = ws.rollback_global(cp.id, "conflict")
    assert sorted(texts(discarded)) == sorted(texts([b, c])) and ws.global_state() == (a,)
    event = ws.events()[-1]
    assert event.agent == "supervisor" and event.payload["discarded"] == [["v", b.id], ["r", c.id]]
    assert sum(e.type == "assert" for e in ws.log.events(ws.run_id)) == 3  # nothing deleted


def test_state_at_and_checkpoint_before(ws: Workspace) -> None:
    a = ws.assert_statement("v", fact("A", "B"))             # t2
    cp = ws.checkpoint("cp")                                  # t3
    b = ws.assert_statement("v", fact("C", "D"))             # t4
    ws.rollback_global(cp.id, "r")                            # t5
    c = ws.assert_statement("v", fact("E", "F"))             # t6
    assert ws.state_at(1).global_state() == ()
    assert ws.state_at(2).global_state() == (a,)
    assert ws.state_at(4).global_state() == (a, b)
    assert ws.state_at(5).global_state() == (a,)
    assert ws.state_at(6).global_state() == (a, c) == ws.global_state()
    assert ws.checkpoint_before([b, c]) == cp
    assert ws.checkpoint_before([a, c]).label == "start"
    with pytest.raises(ValueError, match="asserted statements"):
        ws.checkpoint_before([fact("X", "Y")])


def test_replay_resume_and_missing_run(tmp_path: Path) -> None:
    path = tmp_path / "log.duckdb"
    with EventLog(path) as log:
        ws = Workspace.start(log, "q", {})
        ws.assert_statement("v", fact("A", "B"))
        cp = ws.checkpoint("c")
        ws.assert_statement("v", fact("C", "D"))
        ws.rollback_local("v", cp.id, "r")
        live, run = ws.state(), ws.run_id
    with EventLog(path) as log:
        assert replay(log, run) == live
        resumed = Workspace(log, run)
        assert resumed.state() == live and len(resumed.checkpoints()) == 2
        s = resumed.assert_statement("v", fact("E", "F"))
        assert s.time == len(log.events(run)) == 6
        resumed.rollback_global(cp.id, "resumed rollback uses the replayed snapshot")
        assert replay(log, run) == resumed.state()
        with pytest.raises(RunNotFoundError):
            Workspace(log, "nope")


def test_judgement_events(ws: Workspace) -> None:
    seen: list[bool] = []

    class Judge:
        def judge(self, a: Statement, b: Statement) -> Verdict:
            return Verdict(True, "scripted")

    checker = ConflictChecker(Judge(), on_judgement=lambda a, b, v, c: (seen.append(c), ws.record_judgement("verifier", a, b, v, c)))
    x, y = make_statement("x"), make_statement("y")
    checker.conflict(x, y)
    checker.conflict(x, y)
    judged = [e for e in ws.events() if e.type == "judgement"]
    assert [e.payload["cached"] for e in judged] == [False, True] and judged[0].payload["a_text"] == "x"


# -- properties -------------------------------------------------------------------------------
AGENTS = ["a", "b"]
operations = st.lists(st.tuples(st.sampled_from(["assert", "assert", "retract", "checkpoint", "local", "global"]),
                                st.sampled_from(AGENTS), st.integers(0, 7)), max_size=25)


def run_ops(ws: Workspace, ops: list) -> None:
    """Apply random operations, skipping the ones that are invalid in the current state."""
    for op, agent, n in ops:
        cps = ws.checkpoints()
        if op == "assert":
            s = fact(f"subject {n}", f"value {n % 3}")
            if not ws.holds(agent, s.id):
                ws.assert_statement(agent, s)
        elif op == "retract" and ws.local_state(agent):
            held = ws.local_state(agent)
            ws.retract(agent, held[n % len(held)].id, "random")
        elif op == "checkpoint":
            ws.checkpoint(f"cp {n}")
        elif op == "local":
            ws.rollback_local(agent, cps[n % len(cps)].id, "random")
        elif op == "global":
            ws.rollback_global(cps[n % len(cps)].id, "random")


def content(state: KnowledgeState) -> dict[str, set[str]]:
    """A state without logical times: which agent holds which statement ids."""
    return {a: {s.id for s in held} for a, held in state.locals.items()}


@settings(max_examples=25, deadline=None)
@given(operations)
def test_replay_equals_live_state_and_every_past_state(ops: list) -> None:
    with EventLog(":memory:") as log:
        ws = Workspace.start(log, "q", {})
        history = []
        for op in ops:
            run_ops(ws, [op])
            history.append((ws.clock.now, ws.state()))
        assert replay(log, ws.run_id) == ws.state()
        for time, state in history:
            assert ws.state_at(time) == state == replay(log, ws.run_id, until=time)
        for cp in log.checkpoints(ws.run_id):
            assert KnowledgeState.from_snapshot(cp.snapshot) == ws.state_at(cp.time)


@settings(max_examples=25, deadline=None)
@given(operations, operations, operations)
def test_rollback_then_replay_equals_never_taking_the_branch(before: list, branch: list, after: list) -> None:
    with EventLog(":memory:") as log:
        taken = Workspace.start(log, "q", {})
        run_ops(taken, before)
        cp = taken.checkpoint("fork")
        run_ops(taken, [op for op in branch if op[0] not in ("local", "global", "checkpoint")])
        taken.rollback_global(cp.id, "abandon the branch")
        run_ops(taken, after)

        straight = Workspace.start(log, "q", {})
        run_ops(straight, before)
        straight.checkpoint("fork")
        run_ops(straight, after)
        assert content(replay(log, taken.run_id)) == content(taken.state()) == content(straight.state())

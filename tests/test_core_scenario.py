"""The paper's example, scripted without any LLM: local and global backtracking end to end.

"What is the population of the capital of the state that hosted the 1984 Summer Olympics?"
A verifier accepts three partial answers, meets a weaker population figure (local
conflict, dropped by a local rollback), then a second thread claims Los Angeles is
the capital (global conflict: the supervisor finds the minimal conflict set and rolls
everything back to the checkpoint before that claim).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from reagent_local.core import events as ev
from reagent_local.core.channel import Channel, Message
from reagent_local.core.conflicts import ConflictChecker, Verdict, minimal_conflict_set
from reagent_local.core.knowledge import Statement, make_statement
from reagent_local.core.log import EventLog
from reagent_local.core.workspace import Workspace, replay

QUESTION = "What is the population of the capital of the state that hosted the 1984 Summer Olympics?"


class NoConflictJudge:
    """A scripted free-text judge: nothing in this story contradicts the Olympics statement."""

    def __init__(self) -> None:
        self.calls = 0

    def judge(self, a: Statement, b: Statement) -> Verdict:
        self.calls += 1
        return Verdict(False, "unrelated")


def say(channel: Channel, sender: str, statement: Statement) -> Statement:
    """Broadcast one assert (only the sender holds it) and deliver it; returns the applied (stamped) statement."""
    channel.post(Message("assert", sender, ("*",), (statement,)))
    result = channel.deliver_round()
    assert result.escalations == ()
    (applied,) = result.applied
    return applied


def values(statements) -> list[str]:
    return [s.value or s.text for s in statements]


def test_sacramento_scenario(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log.duckdb")
    ws = Workspace.start(log, QUESTION, {"pipeline": {"backtracking": "both"}}, run_id="sacramento")
    judge = NoConflictJudge()
    checker = ConflictChecker(judge, on_judgement=partial(ws.record_judgement, "supervisor"))
    channel = Channel(ws, checker)

    # sub-questions 1-3, a checkpoint before each
    ws.checkpoint("before step 1")
    olympics = say(channel, "verifier", make_statement(
        "California hosted the 1984 Summer Olympics", subquestion=1, provenance=[("p-1984", 0.92)], confidence=0.9))
    ws.checkpoint("before step 2")
    capital = say(channel, "verifier", make_statement(
        subject="California", relation="capital", value="Sacramento", subquestion=2,
        provenance=[("p-california", 0.88)], confidence=0.9))
    ws.checkpoint("before step 3")
    population = say(channel, "verifier", make_statement(
        subject="Sacramento", relation="population", value="508,000", subquestion=3,
        provenance=[("p-sacramento", 0.81)], confidence=0.8))

    # local conflict: a weaker figure (the metro area) from a second passage
    ws.checkpoint("before more evidence for step 3")
    metro = say(channel, "verifier", make_statement(
        subject="Sacramento", relation="population", value="1,600,000", subquestion=3,
        provenance=[("p-metro", 0.40)], confidence=0.4))
    assert values(ws.local_state("verifier")) == [olympics.text, "Sacramento", "508,000", "1,600,000"]
    (a, b, verdict), = checker.find_conflicting_pairs(ws.local_state("verifier"))
    assert {a.id, b.id} == {population.id, metro.id} and verdict.conflict
    drop = min((a, b), key=lambda s: s.confidence)  # the scenario gives up the less sure figure
    assert drop == metro
    local_target = ws.checkpoint_before([drop])
    assert local_target.label == "before more evidence for step 3"
    discarded = ws.rollback_local("verifier", local_target.id, f"weaker than {population.text}: {verdict.reason}")
    assert discarded == [metro]
    assert values(ws.local_state("verifier")) == [olympics.text, "Sacramento", "508,000"]

    # global conflict: a second thread claims Los Angeles
    before_thread2 = ws.checkpoint("before thread 2")
    la = say(channel, "thread2", make_statement(
        subject="California", relation="capital", value="Los Angeles", subquestion=2,
        provenance=[("p-la", 0.55)], confidence=0.6))
    state_before_global = ws.global_state()
    assert values(state_before_global) == [olympics.text, "Sacramento", "508,000", "Los Angeles"]
    assert not checker.is_consistent(state_before_global)
    ws.record("assembler", ev.Escalate(to="supervisor", round=channel.round, reason="two capitals of California",
                                       statements=state_before_global, source="assembler"))

    judge_calls_before = judge.calls
    mcs = minimal_conflict_set(list(state_before_global), checker)
    assert mcs == [capital, la]  # exactly the two capital statements
    assert judge.calls == judge_calls_before  # the rule conflict needed no judge call
    culprit = min(mcs, key=lambda s: s.confidence)
    assert culprit == la
    target = ws.checkpoint_before([culprit])
    assert target == before_thread2
    ws.record("supervisor", ev.ConflictSet(statements=tuple(s.id for s in mcs), texts=tuple(s.text for s in mcs),
                                           discard=culprit.id, reason="two capitals", checkpoint=target.id))
    discarded = ws.rollback_global(target.id, "capital(California): Sacramento vs Los Angeles")
    assert discarded == [la]

    final = ws.global_state()
    assert values(final) == [olympics.text, "Sacramento", "508,000"]
    assert "Los Angeles" not in values(final) and "1,600,000" not in values(final)

    # the log: every step is an event, rollbacks point at their checkpoints, nothing deleted
    events = log.events("sacramento")
    state_events = [(e.type, e.agent) for e in events if e.type in ("assert", "rollback_local", "rollback_global")]
    assert state_events == [("assert", "verifier")] * 4 + [("rollback_local", "verifier"), ("assert", "thread2"),
                                                            ("rollback_global", "supervisor")]
    rollbacks = [e for e in events if e.type.startswith("rollback")]
    assert [r.payload["checkpoint_id"] for r in rollbacks] == [local_target.id, before_thread2.id]
    assert rollbacks[0].payload["discarded"] == [metro.id]
    assert rollbacks[1].payload["discarded"] == [["thread2", la.id]]
    labels = [e.payload["label"] for e in events if e.type == "checkpoint"]
    assert labels == ["start", "before step 1", "before step 2", "before step 3",
                      "before more evidence for step 3", "before thread 2"]
    assert sum(e.type == "message" for e in events) == 5 and sum(e.type == "round" for e in events) == 5
    judgements = [e for e in events if e.type == "judgement"]
    assert sum(not e.payload["cached"] for e in judgements) == judge.calls == checker.stats["judge_calls"]
    assert sum(e.payload["cached"] for e in judgements) == checker.stats["judge_cache_hits"] > 0

    # the abandoned branches are still visible through time travel, and replay gives the live state
    assert "1,600,000" in values(ws.state_at(metro.time).local("verifier"))
    assert "Los Angeles" in values(ws.state_at(la.time).global_state())
    log.close()
    with EventLog(tmp_path / "log.duckdb", read_only=True) as reader:
        assert replay(reader, "sacramento") == ws.state()

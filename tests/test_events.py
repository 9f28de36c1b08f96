"""Typed events: every kind written through a real Workspace on a DuckDB file and decoded back equal."""

from __future__ import annotations

import inspect
import json

import pytest

from conftest import append_raw
from reagent_local.agents.messages import StepAnswer
from reagent_local.core import events as ev, messages
from reagent_local.core.channel import Channel, Message
from reagent_local.core.conflicts import Verdict
from reagent_local.core.knowledge import make_statement
from reagent_local.core.log import Event, EventLog
from reagent_local.core.workspace import Workspace, replay

SAC = make_statement(subject="California", relation="capital", value="Sacramento", subquestion=1,
                     provenance=[("California#0", 0.8)], confidence=0.9)
LA = make_statement(subject="California", relation="capital", value="Los Angeles", subquestion=3)
POP = make_statement("Sacramento has 508,000 people", subject="Sacramento", relation="population", value="508,000")

# one body of every non-state kind, written with Workspace.record
RECORDED: list[tuple[str, ev.EventBody]] = [
    ("verifier", ev.Message(kind="assert", recipients=("assembler",), statements=(SAC,),
                            payload={"step": 1, "answer": "Sacramento", "passages": [{"id": "p", "score": 0.5}]})),
    ("controller", ev.Message(kind="challenge", recipients=["retriever", "verifier"], statements=[LA],
                              payload={"step": 3})),
    ("channel", ev.Round(round=2, messages=(4, 5), applied=[["verifier", SAC.id]],
                         escalated=[[["v", SAC.id], ["r", LA.id]]])),
    ("channel", ev.Escalate(to="supervisor", round=2, reason="capital has one value", messages=(4, 5),
                            statements=(SAC, LA))),
    ("channel", ev.Escalate(to="supervisor", round=3, reason="two capitals", messages=(6,), statements=(SAC, LA),
                            kind="contradiction", source="assembler")),
    ("verifier", ev.Judgement(a=("verifier", SAC.id), b=("retriever", LA.id), a_text=SAC.text, b_text=LA.text,
                              conflict=True, reason="two capitals", cached=True)),
    ("supervisor", ev.ConflictSet(statements=(SAC.id, LA.id), texts=(SAC.text, LA.text), discard=LA.id,
                                  reason="capital(California) has one value", checkpoint=3, affected_steps=[3, 4],
                                  reassert=[POP.id], source="assembler")),
    ("controller", ev.Override(step=2, decision="keep best candidate", answer="Sacramento")),
    ("controller", ev.Skipped(step=3, reason="depends on unanswered step(s) [3]")),
    ("controller", ev.FallbackAnswer(answer="Sacramento", passages=("California#0",))),
    ("controller", ev.BudgetExhausted(what="LLM calls", answer="Sacramento")),
    ("verifier", ev.InvalidOutput(error="output is not JSON")),
    ("verifier", ev.LLMError(error="output is not JSON", raw="@@@ \x1b[31m")),
    ("decomposer", ev.DecompositionFailed(error="truncated", raw='{"subquestions": [')),
    ("decomposer", ev.Plan(subquestions=["Where were the 1984 Olympics?", "What is the capital of #1?"],
                           depends_on=[[], [0]], attempt=2, reason="step 2 named neither option")),
    ("verifier", ev.Decision(step=1, decision="retry", answer="Nevada", confidence=0.25,
                             reasons=["'Nevada' is in none of the passages"], query="1984 Olympics host state")),
    ("verifier", ev.Decision(step=1, decision="accept", answer="California", confidence=1)),
    ("assembler", ev.RuleFired(rule="either-or-options", stage="assemble", step=2, detail="options A, B")),
    ("supervisor", ev.Signal(signal="two-roads", fired=True, step=None, detail="chain 'X' vs whole question 'Y'",
                             values={"chain": "X", "whole": "Y", "scores": [0.5, 0.25]})),
    ("supervisor", ev.Signal(signal="same-answer-twice", fired=False)),
    ("decomposer", ev.Rewrite(question="and its capital?", standalone="What is the capital of California?",
                              conversation="c-0123456789", turn=2, earlier=["Where were the 1984 Olympics?"])),
    ("controller", ev.Answer(answer="508,000", uncertain=True, reason="a step could not be verified",
                             rules=("either-or-options",))),
    ("supervisor", ev.TrustScored(probability=0.31, threshold=0.54, label="likely wrong", grounded=False,
                                  caught=True, features={"backtracked": 1.0, "answer_grounded": 0.0},
                                  contributions={"backtracked": -0.2, "answer_grounded": 0.05})),
]


@pytest.fixture
def path(tmp_path):
    return tmp_path / "events.duckdb"


def written_run(path) -> tuple[str, dict[int, ev.EventBody]]:
    """Every kind through the Workspace; returns the run id and what each event seq should decode to."""
    expected: dict[int, ev.EventBody] = {}
    with EventLog(path) as log:
        ws = Workspace.start(log, "What is the population of the capital of California?", {})
        start = ws.checkpoints()[0]
        expected[start.seq] = ev.Checkpoint(checkpoint_id=start.id, label="start")
        sac = ws.assert_statement("verifier", SAC)
        expected[ws.events()[-1].seq] = ev.Assert(statement=sac)
        cp = ws.checkpoint("before step 2", agent="controller")
        expected[cp.seq] = ev.Checkpoint(checkpoint_id=cp.id, label="before step 2")
        ws.retract("verifier", sac.id, "doubt")
        expected[ws.events()[-1].seq] = ev.Retract(statement_id=sac.id, reason="doubt")
        la = ws.assert_statement("verifier", LA)
        ws.rollback_local("verifier", cp.id, "LA is in no passage")
        expected[ws.events()[-1].seq] = ev.RollbackLocal(checkpoint_id=cp.id, reason="LA is in no passage",
                                                         discarded=(la.id,), restored=(sac.id,))
        pop = ws.assert_statement("retriever", POP)
        ws.rollback_global(start.id, "conflict")
        expected[ws.events()[-1].seq] = ev.RollbackGlobal(
            checkpoint_id=start.id, reason="conflict", discarded=(("verifier", sac.id), ("retriever", pop.id)))
        for agent, body in RECORDED:
            expected[ws.record(agent, body).seq] = body
        ws.finish("508,000", "ok", {})
        return ws.run_id, expected


def test_every_kind_round_trips_through_the_log(path):
    run_id, expected = written_run(path)
    with EventLog(path, read_only=True) as log:
        events = log.events(run_id)
        decoded = {e.seq: ev.decode(e, strict=True) for e in events}
        assert {e.seq for e in events} >= set(expected)
        for seq, body in expected.items():
            assert decoded[seq] == body, seq
            assert type(decoded[seq]) is type(body)
        assert {type(b).KIND for b in expected.values()} == set(ev.EVENT_TYPES)  # every kind was written
        assert replay(log, run_id).global_state() == ()  # the fold reads the typed payloads as before


def test_payloads_are_json_with_the_kind_as_event_type(path):
    run_id, expected = written_run(path)
    with EventLog(path, read_only=True) as log:
        for event in log.events(run_id):
            if event.seq in expected:
                body = expected[event.seq]
                assert event.type == body.KIND and event.payload == body.to_payload()
                assert json.loads(json.dumps(body.to_payload())) == body.to_payload()


def test_sequences_become_tuples_and_statements_stay_statements():
    plan = ev.Plan(subquestions=["a", "b"], depends_on=[[], [0]])
    assert plan.subquestions == ("a", "b") and plan.depends_on == ((), (0,))
    round_ = ev.Round.from_payload({"round": 1, "escalated": [[["a", "x"], ["b", "y"]]]})
    assert round_.escalated == ((("a", "x"), ("b", "y")),)
    message = ev.Message.from_payload(json.loads(json.dumps(ev.Message(
        kind="reject", recipients=["*"], statements=[SAC]).to_payload())))
    assert message.statements == (SAC,) and message.statements[0].provenance == (("California#0", 0.8),)
    assert ev.Decision(step=0, decision="accept", answer="x", confidence=1).confidence == 1.0


def test_fields_are_checked_when_a_body_is_built():
    with pytest.raises(ValueError, match="decision must be one of"):
        ev.Decision(step=0, decision="retyr", answer="x", confidence=0.5)
    with pytest.raises(ValueError, match="kind must be one of"):
        ev.Message(kind="shout", recipients=("*",))
    with pytest.raises(TypeError, match="step must be int"):
        ev.Skipped(step="2", reason="no")
    with pytest.raises(ValueError, match="a must have 2 items"):
        ev.Judgement(a=("verifier",), b=("r", "y"), a_text="", b_text="", conflict=False, reason="")
    with pytest.raises(TypeError):
        ev.Retract("s1", "positional")  # keyword-only, so a payload key can never land in the wrong field
    with pytest.raises(AttributeError):
        ev.Skipped(step=1, reason="x").step = 2  # frozen


def _old(kind: str, payload: dict) -> Event:
    return Event(1, "r", 1, 0.0, "controller", kind, payload, None)


# payloads exactly as run.py writes them today with ws.note
OLD_PAYLOADS = [
    ("conflict_set", {"statements": ["s1", "s2"], "texts": ["A", "B"], "discard": "s2", "reason": "one capital",
                      "checkpoint": 4},
     ev.ConflictSet(statements=("s1", "s2"), texts=("A", "B"), discard="s2", reason="one capital", checkpoint=4)),
    ("override", {"step": 1, "decision": "no usable answer"}, ev.Override(step=1, decision="no usable answer")),
    ("override", {"step": 1, "decision": "keep best candidate", "answer": "Paris"},
     ev.Override(step=1, decision="keep best candidate", answer="Paris")),
    ("skipped", {"step": 2, "reason": "depends on unanswered step(s) [1]"},
     ev.Skipped(step=2, reason="depends on unanswered step(s) [1]")),
    ("fallback_answer", {"answer": "unknown", "rejected": "1999", "reason": "a date for 'where'"},
     ev.FallbackAnswer(answer="unknown", rejected="1999", reason="a date for 'where'")),
    ("fallback_answer", {"answer": "Paris", "passages": ["Paris#0"]},
     ev.FallbackAnswer(answer="Paris", passages=("Paris#0",))),
    ("budget_exhausted", {"what": "seconds", "answer": "unknown"}, ev.BudgetExhausted(what="seconds", answer="unknown")),
    ("invalid_output", {"error": "bad"}, ev.InvalidOutput(error="bad")),
    ("escalate", {"to": "supervisor", "round": 1, "reason": "one capital", "messages": [2, 3], "statements": []},
     ev.Escalate(to="supervisor", round=1, reason="one capital", messages=(2, 3))),
    ("llm_error", {"error": "bad", "raw": "@@"}, ev.LLMError(error="bad", raw="@@")),
    ("decomposition_failed", {"error": "bad", "raw": "{"}, ev.DecompositionFailed(error="bad", raw="{")),
]


@pytest.mark.parametrize("kind, payload, body", OLD_PAYLOADS)
def test_payloads_of_the_old_code_path_decode(kind, payload, body):
    assert ev.decode(_old(kind, payload), strict=True) == body


def test_the_channel_and_old_writers_events_decode(path):
    with EventLog(path) as log:
        ws = Workspace.start(log, "q", {})
        channel = Channel(ws)
        channel.post(Message.of(StepAnswer(step=1), "verifier", ("assembler",), (SAC,)))
        channel.post(Message("assert", "retriever", ("assembler",), (LA,)))
        result = channel.deliver_round()
        ws.record_judgement("verifier", SAC, LA, Verdict(True, "two capitals"), cached=False)
        append_raw(ws, "supervisor", "conflict_set", OLD_PAYLOADS[0][1])
        bodies = [ev.decode(e, strict=True) for e in log.events(ws.run_id)]
    kinds = [type(b) for b in bodies]
    assert kinds == [ev.Checkpoint, ev.Message, ev.Message, ev.Round, ev.Escalate, ev.Judgement, ev.ConflictSet]
    first, escalate, judged = bodies[1], bodies[4], bodies[5]
    assert first.kind == "assert" and first.statements == (SAC,) and first.body == "StepAnswer"
    assert messages.decode(first.body, first.payload) == StepAnswer(step=1)
    assert bodies[3].escalated == ((("verifier", SAC.id), ("retriever", LA.id)),)
    assert escalate.statements[0].value == "Sacramento" and escalate.round == result.round == 1
    assert judged == ev.Judgement(a=("", SAC.id), b=("", LA.id), a_text=SAC.text, b_text=LA.text, conflict=True,
                                  reason="two capitals", cached=False)


def test_unknown_kinds_and_payloads_that_do_not_fit():
    assert ev.decode(_old("custom_kind", {"detail": 1})) == ev.UnknownEvent("custom_kind", {"detail": 1})
    bad = ev.decode(_old("skipped", {"reason": "no step"}))
    assert isinstance(bad, ev.UnknownEvent) and bad.kind == "skipped" and bad.error == "no step in the payload"
    assert bad.to_payload() == {"reason": "no step"}
    with pytest.raises(ValueError, match="'skipped' event does not fit Skipped"):
        ev.decode(_old("skipped", {"reason": "no step"}), strict=True)
    assert isinstance(ev.decode(_old("decision", {"step": 0, "decision": "maybe", "answer": "", "confidence": 1})),
                      ev.UnknownEvent)
    assert ev.decode(_old("skipped", {"step": 1, "reason": "r", "later_key": True})) == ev.Skipped(step=1, reason="r")


def test_a_route_event_of_the_removed_learned_router_still_reads_and_describes():
    from reagent_local.trace.describe import summarize

    payload = {"stage": "stop", "probability": 0.42, "threshold": 0.9, "taken": False, "reason": "learned stop"}
    old = ev.decode(_old("route", payload))  # logs written before 2026-12-07 may hold these
    assert old == ev.UnknownEvent("route", payload)
    assert summarize(old).startswith('route: {"stage": "stop"')


def test_an_escalation_of_the_removed_assembler_contradictions_still_reads_and_describes():
    from reagent_local.trace.describe import summarize

    from reagent_local.core.knowledge import statement_to_dict

    statements = [statement_to_dict(SAC), statement_to_dict(LA)]
    # logs written before the assembler's escalations were removed: its reject to the supervisor, then the escalation
    reject = ev.decode(_old("message", {"kind": "reject", "recipients": ["supervisor"], "statements": statements,
                                        "payload": {"kind": "bridge", "reason": "step 2 never mentions Sacramento"},
                                        "body": "Contradiction"}))
    assert isinstance(reject, ev.Message) and messages.decode(reject.body, reject.payload) is None
    assert summarize(reject).endswith("— step 2 never mentions Sacramento")
    escalate = ev.decode(_old("escalate", {"to": "supervisor", "round": 3, "reason": "step 2 never mentions Sacramento",
                                           "messages": [6], "statements": statements, "kind": "bridge",
                                           "source": "assembler"}))
    assert isinstance(escalate, ev.Escalate) and "(bridge from assembler)" in summarize(escalate)


def test_registry_covers_every_class_once():
    classes = [c for _, c in inspect.getmembers(ev, inspect.isclass)
               if issubclass(c, ev.EventBody) and c is not ev.EventBody]
    assert sorted(ev.EVENT_TYPES.values(), key=lambda c: c.KIND) == sorted(classes, key=lambda c: c.KIND)
    assert all(ev.EVENT_TYPES[c.KIND] is c for c in classes) and len(set(ev.EVENT_TYPES)) == len(classes)
    assert ev.STATE_KINDS == {"assert", "retract", "checkpoint", "rollback_local", "rollback_global"}
    assert {type(b).KIND for _, b in RECORDED} | ev.STATE_KINDS == set(ev.EVENT_TYPES)


def test_record_refuses_state_kinds_and_untyped_bodies():
    ws = Workspace.start(EventLog(":memory:"), "q", {})
    with pytest.raises(ValueError, match="changes the state"):
        ws.record("verifier", ev.Assert(statement=SAC))
    with pytest.raises(TypeError, match="typed event"):
        ws.record("verifier", {"kind": "inform"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="typed event"):
        ws.record("kg", ev.UnknownEvent("custom", {}))  # type: ignore[arg-type]
    event = ws.record("controller", ev.Skipped(step=0, reason="r"), parent_seq=1)
    assert (event.type, event.agent, event.parent_seq, event.payload) == (
        "skipped", "controller", 1, {"step": 0, "reason": "r"})

"""The trace of a run written with typed events: the loop's new kinds (plan, decision, rule_fired, signal, answer)
are summarised, drawn and linked; an unreadable payload of a known kind still shows."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console

from conftest import append_raw
from reagent_local.agents.messages import StepAnswer
from reagent_local.core import events as ev
from reagent_local.core.channel import Channel, Message
from reagent_local.core.knowledge import make_statement
from reagent_local.core.log import EventLog
from reagent_local.core.workspace import Workspace
from reagent_local.trace import load_trace, render_html
from reagent_local.trace.terminal import render

QUESTION = "Which is older, the Eiffel Tower or the Statue of Liberty?"


def typed_run(log: EventLog) -> str:
    """A run the new loop could write: a plan, a retry with a local rollback, a conflict from two roads, an answer."""
    ws = Workspace.start(log, QUESTION, {})
    channel = Channel(ws)
    ws.record("decomposer", ev.Plan(subquestions=["When was the Eiffel Tower built?",
                                                  "When was the Statue of Liberty built?"], depends_on=[[], []]))
    cp = ws.checkpoint("before step 1")
    wrong = make_statement("When was the Eiffel Tower built? -> 1900", subquestion=0)
    channel.post(Message.of(StepAnswer(step=0, answer="1900"), "verifier", ("assembler",), (wrong,)))
    channel.deliver_round()
    ws.record("verifier", ev.Decision(step=0, decision="retry", answer="1900", confidence=0.2,
                                      reasons=["'1900' is in none of the passages"], query="Eiffel Tower built"))
    ws.rollback_local("verifier", cp.id, "'1900' is in none of the passages")
    right = ws.assert_statement("verifier", make_statement("When was the Eiffel Tower built? -> 1889", subquestion=0))
    ws.record("verifier", ev.Decision(step=0, decision="accept", answer="1889", confidence=0.9))
    liberty = ws.assert_statement("verifier", make_statement("When was the Statue of Liberty built? -> 1886",
                                                             subquestion=1))
    ws.record("assembler", ev.RuleFired(rule="either-or-options", stage="assemble", detail="options: Eiffel Tower, "
                                        "Statue of Liberty"))
    ws.record("supervisor", ev.Signal(signal="two-roads", fired=True, detail="chain 'Statue of Liberty' vs whole "
                                      "question 'Eiffel Tower'", values={"chain": "Statue of Liberty"}))
    ws.record("supervisor", ev.Signal(signal="same-value", fired=False, step=1))
    ws.record("supervisor", ev.ConflictSet(statements=(right.id, liberty.id), texts=(right.text, liberty.text),
                                           discard=liberty.id, reason="two roads disagree", checkpoint=cp.id,
                                           affected_steps=[1], source="two-roads"))
    ws.rollback_global(cp.id, "conflict: two roads disagree")
    append_raw(ws, "controller", "skipped", {"reason": "a payload without its step"})
    ws.record("controller", ev.Answer(answer="Statue of Liberty", uncertain=True, reason="two roads disagreed",
                                      rules=["either-or-options"]))
    ws.finish("Statue of Liberty", "ok", {"uncertain_reason": "two roads disagreed"}, uncertain=True)
    return ws.run_id


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    with EventLog(tmp_path_factory.mktemp("typed") / "log.duckdb") as log:
        return load_trace(log, typed_run(log))


def summaries(trace, kind: str) -> list[str]:
    return [it.summary for it in trace.items if it.type == kind]


def test_new_kinds_have_short_summaries(trace):
    assert summaries(trace, "plan") == ["plan: 1. When was the Eiffel Tower built?; 2. When was the Statue of "
                                        "Liberty built?"]
    assert summaries(trace, "decision") == [
        "decision step 1: retry \"1900\" (confidence 0.20) — '1900' is in none of the passages",
        "decision step 1: accept \"1889\" (confidence 0.90)"]
    assert summaries(trace, "rule_fired") == [
        "rule either-or-options fired (assemble): options: Eiffel Tower, Statue of Liberty"]
    assert summaries(trace, "signal") == [
        "signal two-roads: chain 'Statue of Liberty' vs whole question 'Eiffel Tower'",
        "signal same-value step 2 (no conflict)"]
    assert summaries(trace, "answer") == [
        "answer \"Statue of Liberty\" (uncertain: two roads disagreed); rules: either-or-options"]
    (conflict,) = summaries(trace, "conflict_set")
    assert conflict.startswith("MINIMAL CONFLICT SET (from two-roads) {") and conflict.endswith("; redoes step(s) 2")


def test_a_known_kind_with_a_payload_that_does_not_fit_still_shows(trace):
    (skipped,) = summaries(trace, "skipped")
    assert skipped.startswith("skipped (unreadable: no step in the payload): ") and "a payload without" in skipped


def test_the_model_carries_the_new_fields(trace):
    (conflict,) = trace.conflict_sets
    assert (conflict.source, conflict.affected_steps, conflict.reassert) == ("two-roads", [1], [])
    assert conflict.rollback_seq == next(r.seq for r in trace.rollbacks if r.scope == "global")
    assert trace.final.rules == ["either-or-options"]
    assert trace.agents[:3] == ["decomposer", "verifier", "assembler"]
    local = next(r for r in trace.rollbacks if r.scope == "local")
    assert [trace.entries[s].text.endswith("1900") for s in local.discarded] == [True]


def test_terminal_marks_decisions_signals_and_the_answer(trace):
    out = Console(width=100, record=True, file=io.StringIO())
    render(trace, out)
    flat = " ".join(out.export_text(styles=False).split())
    for shown in ("decomposer ≡ plan: 1.", "verifier ↻ decision step 1: retry", "verifier ✓ decision step 1: accept",
                  "assembler § rule either-or-options fired", "supervisor ≠ signal two-roads",
                  "supervisor = signal same-value", "controller ★ answer \"Statue of Liberty\""):
        assert shown in flat


def test_the_page_embeds_the_typed_payloads(trace):
    page = render_html(trace)
    data = json.loads(re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', page, re.S)[1])
    kinds = [it["type"] for it in data["items"]]
    assert {"plan", "decision", "rule_fired", "signal", "answer", "conflict_set"} <= set(kinds)
    decision = next(it for it in data["items"] if it["type"] == "decision")
    assert decision["payload"]["decision"] == "retry" and decision["payload"]["reasons"]
    assert data["conflict_sets"][0]["source"] == "two-roads" and data["final"]["rules"] == ["either-or-options"]
    for shape in ('plan: "plan"', 'decision: "decision"', 'signal: "signal"', 'rule_fired: "rule"', 'answer: "star"'):
        assert shape in page  # trace.js draws each new kind with its own mark

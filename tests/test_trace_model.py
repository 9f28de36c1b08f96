"""Loading a run into the trace model: rollbacks, discarded entries, conflict sets, linked LLM calls."""

from __future__ import annotations

import pytest

from reagent_local.errors import RunNotFoundError
from reagent_local.core.knowledge import make_statement
from reagent_local.core.log import Event, EventLog
from reagent_local.trace import load_trace
from reagent_local.trace.load import call_purpose, link_calls
from reagent_local.trace.runs import export_run, list_runs, resolve_run_id
from reagent_local.core.workspace import Workspace
from scenario_runs import PLANTED, WRONG_CAPITAL, WRONG_STATE, rollback_run, simple_run


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "log.duckdb"
    with EventLog(path) as log:
        run_id = rollback_run(log)
        other = simple_run(log)
    with EventLog(path, read_only=True) as log:
        yield log, run_id, other


def test_rollbacks_name_their_checkpoint_and_discarded_entries(scenario):
    log, run_id, _ = scenario
    trace = load_trace(log, run_id)
    local, global_ = trace.rollbacks
    assert (local.scope, local.agent, local.checkpoint_label) == ("local", "verifier", "before step 1")
    assert [trace.entries[s].text.endswith("-> " + WRONG_STATE) for s in local.discarded] == [True]
    assert (global_.scope, global_.agent, global_.checkpoint_label) == ("global", "supervisor", "before step 4")
    assert [trace.entries[s].value for s in global_.discarded] == [WRONG_CAPITAL]
    assert local.checkpoint_time < local.time and global_.checkpoint_time < global_.time
    for rollback in (local, global_):
        for seq in rollback.discarded:
            entry = trace.entries[seq]
            assert entry.fate == "discarded" and entry.ended_seq == rollback.seq
            assert trace.item(seq).abandoned  # the assert event
            assert entry.message_seq is None  # the verifier held it itself: it was never published


def test_kept_statements_are_not_abandoned_and_the_final_state_matches_the_fold(scenario):
    from reagent_local.core.workspace import replay

    log, run_id, _ = scenario
    trace = load_trace(log, run_id)
    held = {(trace.entries[s].agent, trace.entries[s].id) for s in trace.final.held}
    assert held == {(s.agent, s.id) for s in replay(log, run_id).global_state()}
    assert all(trace.entries[s].fate == "held" and not trace.item(s).abandoned for s in trace.final.held)
    values = sorted(trace.entries[s].value or trace.entries[s].text.split("-> ")[-1] for s in trace.final.held)
    assert values == sorted(["508,000", "California", "Sacramento", "Sacramento"] * 2)  # verifier and assembler
    assert {trace.entries[s].agent for s in trace.final.held} == {"verifier", "assembler"}
    assert trace.final.answer == "508,000"


def test_conflict_set_is_linked_to_its_rollback(scenario):
    log, run_id, _ = scenario
    trace = load_trace(log, run_id)
    (conflict,) = trace.conflict_sets
    assert sorted(conflict.texts) == sorted([
        "What is the capital of California? -> Sacramento",
        f"Which city is the seat of the government of California? -> {WRONG_CAPITAL}"])
    assert conflict.rollback_seq == trace.rollbacks[1].seq
    given_up = trace.entries[trace.rollbacks[1].discarded[0]]
    assert conflict.discard_id == given_up.id


def test_each_llm_call_is_linked_to_the_event_it_led_to(scenario):
    log, run_id, _ = scenario
    trace = load_trace(log, run_id)
    assert len(trace.calls) == 9 and all(c.event_seq is not None for c in trace.calls)
    for call in trace.calls:
        item = trace.item(call.event_seq)
        assert item.agent == call.agent and call.id in item.calls
        if call.purpose == "answer":  # the verifier's answer is the statement it then holds
            assert item.type == "assert"
            answer = item.payload["statement"]["text"].split("-> ")[-1]
            assert f'"answer": "{answer}"' in call.output
    reformulate = next(c for c in trace.calls if c.purpose == "reformulate")
    assert trace.item(reformulate.event_seq).payload["payload"]["query"] == "1984 Summer Olympics host state"
    assert [c.purpose for c in trace.calls][:2] == ["decompose", "answer"]
    assert any("Passages:" in m["content"] for m in trace.calls[1].prompt)  # the rendered prompt is kept


def test_passages_keep_their_text_verbatim(scenario):
    log, run_id, _ = scenario
    trace = load_trace(log, run_id)
    assert PLANTED in trace.passages["1984 Summer Olympics#0"].text
    assert "1984 Summer Olympics#0" in trace.final.passages


def test_a_rollback_restores_an_entry_it_had_taken_out():
    with EventLog(":memory:") as log:
        ws = Workspace.start(log, "q?", {})
        a = ws.assert_statement("verifier", make_statement("A holds"))
        cp = ws.checkpoint("before")
        ws.retract("verifier", a.id, "doubt")
        ws.assert_statement("verifier", make_statement("B holds"))
        ws.rollback_local("verifier", cp.id, "B was wrong")
        trace = load_trace(log, ws.run_id)
    first, second = sorted(trace.entries.values(), key=lambda e: e.seq)
    assert (first.text, first.fate, first.ended_seq) == ("A holds", "held", None)
    assert (second.text, second.fate) == ("B holds", "discarded")
    (rollback,) = trace.rollbacks
    assert rollback.restored == [first.seq] and rollback.discarded == [second.seq]
    assert trace.final.held == [first.seq]


def _event(seq, agent, type_, wall):
    return Event(seq, "r", seq, wall, agent, type_, {})


def test_judge_calls_go_to_judgements_and_other_calls_skip_them():
    events = [_event(1, "verifier", "judgement", 10.0), _event(2, "verifier", "message", 11.0),
              _event(3, "retriever", "message", 12.0)]
    rows = [{"id": i, "agent": agent, "model": "m", "prompt": [{"role": "user", "content": "x"}], "output": out,
             "prompt_tokens": 1, "completion_tokens": 1, "seconds": 0.1, "wall_time": wall, "seq": None}
            for i, (agent, out, wall) in enumerate([("verifier", '{"answer": "x", "passages": [1]}', 9.0),
                                                    ("verifier", '{"contradict": true}', 9.5),
                                                    ("retriever", '{"query": "q"}', 11.5),
                                                    ("verifier", "not json", 20.0)], 1)]
    linked = {c.id: (c.purpose, c.event_seq) for c in link_calls(rows, events)}
    assert linked == {1: ("answer", 2), 2: ("judge", 1), 3: ("reformulate", 3), 4: ("call", None)}


@pytest.mark.parametrize("output, purpose", [('{"subquestions": ["a"]}', "decompose"), ('{"answer": "x"}', "assemble"),
                                             ('{"answer": "x", "passages": []}', "answer"), ("@@", "call"),
                                             ('{"question": "Where was Mara Lind born?"}', "rewrite")])
def test_call_purpose_from_the_output_schema(output, purpose):
    assert call_purpose(output) == purpose


def test_run_references_and_listing(scenario):
    log, run_id, other = scenario
    assert resolve_run_id(log, "last") == other
    assert resolve_run_id(log, run_id) == run_id
    assert resolve_run_id(log, run_id[:-2]) == run_id  # a unique prefix
    with pytest.raises(RunNotFoundError, match="matches 2 runs"):
        resolve_run_id(log, run_id[:8])
    with pytest.raises(RunNotFoundError, match="no run 'nope'"):
        resolve_run_id(log, "nope")
    runs = list_runs(log, 5)
    assert [r.run_id for r in runs] == [other, run_id]
    assert (runs[1].backtracks_local, runs[1].backtracks_global, runs[1].llm_calls) == (1, 1, 9)
    assert list_runs(log, 1)[0].run_id == other


def test_export_has_every_event_checkpoint_and_call(scenario):
    log, run_id, _ = scenario
    data = export_run(log, run_id)
    assert [e["seq"] for e in data["events"]] == [e.seq for e in log.events(run_id)]
    assert len(data["checkpoints"]) == len(log.checkpoints(run_id)) and "snapshot" in data["checkpoints"][0]
    assert len(data["llm_calls"]) == 9 and all(c["event_seq"] is not None for c in data["llm_calls"])
    assert {e["type"] for e in data["events"]} >= {"rollback_local", "rollback_global", "conflict_set"}

"""The terminal timeline at 100 columns: rollbacks, discarded statements, conflict set, answer."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from reagent_local.core.knowledge import make_statement
from reagent_local.core.log import EventLog
from reagent_local.trace import load_trace
from reagent_local.trace.runs import list_runs
from reagent_local.trace.terminal import render, runs_table
from reagent_local.core.workspace import Workspace
from scenario_runs import (WRONG_CAPITAL, WRONG_STATE, challenge_run, channel_run, nonsense_run, rollback_run,
                           simple_run)

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "log.duckdb"
    with EventLog(path) as writer:
        rollback_run(writer)
        simple_run(writer)
    with EventLog(path, read_only=True) as reader:
        yield reader


def shown(trace, **console) -> str:
    out = Console(width=100, record=True, file=io.StringIO(), **console)
    render(trace, out)
    return out.export_text(styles=False)


def test_timeline_shows_both_rollbacks_with_target_and_discarded_statements(log):
    run_id = log.runs(2)[1]["run_id"]
    text = shown(load_trace(log, run_id))
    flat = " ".join(text.split())
    assert 'LOCAL ROLLBACK to checkpoint #' in flat and '"before step 1"' in flat
    assert 'GLOBAL ROLLBACK to checkpoint #' in flat and '"before step 4"' in flat
    assert 'discarded verifier' in flat
    assert f'Olympics held? -> {WRONG_STATE}"' in flat
    assert f'California? -> {WRONG_CAPITAL}"' in flat
    assert "abandoned: discarded by the rollback at t=" in flat
    assert "rollbacks: 1 local, 1 global (2 statements discarded); conflict sets: 1" in flat


def test_timeline_shows_the_conflict_set_messages_rounds_and_answer(log):
    run_id = log.runs(2)[1]["run_id"]
    text = shown(load_trace(log, run_id))
    flat = " ".join(text.split())
    assert "MINIMAL CONFLICT SET" in flat
    assert "✗ given up" in flat and "• kept" in flat
    for kind in ("assert → assembler", "inform → verifier", "reject → retriever", "escalates to supervisor"):
        assert kind in flat
    rounds = [int(r) for r in re.findall(r"\br(\d+)\b", text)]
    assert rounds == sorted(rounds) and rounds[0] == 1  # rounds in order
    assert "Answer: 508,000" in flat
    assert "Supporting passages:" in flat and "[Sacramento#0]" in flat
    assert "llm #" in flat  # the calls behind messages


def test_every_line_fits_100_columns_and_no_colour_when_not_a_terminal(log):
    for row in log.runs(2):
        out = Console(width=100, record=True, file=io.StringIO())
        render(load_trace(log, row["run_id"]), out)
        raw = out.file.getvalue()
        assert not ANSI.search(raw)
        assert max(len(line) for line in raw.splitlines()) <= 100


def test_colours_when_the_terminal_supports_them(log):
    out = Console(width=100, file=io.StringIO(), force_terminal=True, color_system="standard")
    render(load_trace(log, log.runs(2)[1]["run_id"]), out)
    assert ANSI.search(out.file.getvalue())


def test_model_text_is_printed_literally_and_cannot_send_control_codes(log):
    run_id = log.runs(2)[1]["run_id"]
    flat = " ".join(shown(load_trace(log, run_id)).split())
    assert "</script><script>window.__pwned = 1;" in flat  # markup is text, rich markup is not parsed
    with EventLog(":memory:") as mem:
        ws = Workspace.start(mem, "q [bold]x[/bold]?", {})
        ws.assert_statement("verifier", make_statement("evil \x1b[31mred\x1b[0m [red]text[/red] \x07"))
        ws.finish("ok", "ok", {})
        out = Console(width=100, record=True, file=io.StringIO(), force_terminal=True)
        render(load_trace(mem, ws.run_id), out)
    raw = out.file.getvalue()
    assert "\x1b[31mred" not in raw and "\x07" not in raw
    assert "[red]text[/red]" in ANSI.sub("", raw) and "q [bold]x[/bold]?" in ANSI.sub("", raw)


def test_unfinished_run_says_so(tmp_path):
    with EventLog(tmp_path / "l.duckdb") as writer:
        ws = Workspace.start(writer, "still thinking?", {})
        text = shown(load_trace(writer, ws.run_id))
    assert "No answer: the run has not finished" in text and "running" in text


def test_run_list_table_fits_and_shows_the_counts(log):
    out = Console(width=100, record=True, file=io.StringIO())
    out.print(runs_table(list_runs(log, 10)))
    text = out.export_text()
    assert max(len(line) for line in text.splitlines()) <= 100
    scenario = log.runs(2)[1]["run_id"]
    lines = [line for line in text.splitlines() if line.startswith(scenario)]
    assert lines and "1/1" in lines[0] and " 9 " in lines[0] and "508,000" in lines[0]
    assert "Mara Lind" in text and "0/0" in text


@pytest.mark.parametrize("make_run, expected", [
    (challenge_run, ["challenge → retriever, verifier", "drops", "challenged by the controller", "GLOBAL ROLLBACK"]),
    (nonsense_run, ["llm error: output is not JSON", "invalid output", "(uncertain: no answer found)", "llm #",
                    "?+? tok"]),
    (channel_run, ["escalates to supervisor", "judge:", "CONFLICT", "override, step 1: no usable answer",
                   "budget exhausted (LLM calls)",
                   'custom_kind: {"detail": "<b>not markup</b>"}', "Answer: Sacramento (uncertain: budget exhausted"]),
])
def test_every_kind_of_event_is_shown(tmp_path, make_run, expected):
    with EventLog(tmp_path / "l.duckdb") as writer:
        trace = load_trace(writer, make_run(writer))
    out = Console(width=100, record=True, file=io.StringIO(), force_terminal=True)
    render(trace, out)
    raw = out.file.getvalue()
    flat = " ".join(ANSI.sub("", raw).split())
    for text in expected:
        assert text in flat
    assert "@@@ not json \x1b" not in raw  # the model's control code was dropped, not sent to the terminal
    assert max(len(line) for line in ANSI.sub("", raw).splitlines()) <= 100


def test_retriever_messages_name_the_infobox_facts_they_carried():
    from reagent_local.trace.describe import describe
    from reagent_local.trace.model import Item

    payload = {"kind": "inform", "recipients": ["verifier"], "statements": [],
               "payload": {"step": 0, "query": "population of Aruba",
                           "passages": [{"id": "Aruba#2", "title": "Aruba", "text": "102,484 inhabitants"}],
                           "facts": ["Aruba: population = 103,400"]}}
    item = Item(seq=5, time=5, agent="retriever", type="message", kind="inform", summary="", payload=payload)
    line = describe(item, {}, {})
    assert "1 passages" in line and "1 infobox facts: Aruba: population = 103,400" in line
    # a typed body logs each fact whole (an older log, above, only its text): the trace shows the same line
    payload["payload"]["facts"] = [{"subject": "Aruba", "relation": "population", "value": "103,400",
                                    "passage_id": "Aruba#0", "text": "Aruba: population = 103,400"}]
    assert describe(item, {}, {}) == line

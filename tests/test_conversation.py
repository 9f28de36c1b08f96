"""Follow-up questions: the rewriter, a conversation's runs in the log, the server's history, `reagent chat`."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import httpx
import pytest

from reagent_local.agents.rewriter import Turn, history_text, rewrite
from reagent_local.api import ReAgent
from reagent_local.cli import main
from reagent_local.reasoning.conversation import ask_in_conversation, conversation_turns, turn_of
from reagent_local.core import events as ev
from reagent_local.core.log import EventLog
from reagent_local.reasoning.pipeline import Pipeline
from reagent_local.testing import InMemoryIndex, ScriptedLLM
from reagent_local.trace import load_trace
from reagent_local.trace.describe import summarize

from scenario_runs import scenario_config
from serve_support import MODEL, OLYMPICS, running, scripted_service

FIRST = "Who directed the film Blue Harbour?"
FOLLOW = "and where was she born?"
STANDALONE = "Where was Mara Lind born?"


@pytest.fixture
def index() -> InMemoryIndex:
    idx = InMemoryIndex()
    idx.add("Blue Harbour", "Blue Harbour is a 1998 drama film directed by Mara Lind.")
    idx.add("Mara Lind", "Mara Lind is a Danish film director. She was born in Aarhus.")
    return idx


def film_llm() -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.add_rule({"question": STANDALONE}, schema="Rewritten", contains="where was she born")
    llm.add_rule({"subquestions": [FIRST]}, schema="Decomposition", contains=f"Question: {FIRST}")
    llm.add_rule({"subquestions": [STANDALONE]}, schema="Decomposition", contains=f"Question: {STANDALONE}")
    llm.add_rule({"answer": "Mara Lind", "passages": [1], "subject": "Blue Harbour", "relation": "director"},
                 schema="SubAnswer", contains=FIRST)
    llm.add_rule({"answer": "Aarhus", "passages": [1], "subject": "Mara Lind", "relation": "birth_place"},
                 schema="SubAnswer", contains=STANDALONE)
    return llm


@pytest.fixture
def log(tmp_path: Path):
    with EventLog(tmp_path / "log.duckdb") as event_log:
        yield event_log


def test_the_history_shows_questions_answers_and_cited_titles_latest_last() -> None:
    turns = [Turn(f"Q{i}?", f"A{i}", ("T1", "T1", "T2", "T3", "T4")) for i in range(6)]
    text = history_text(turns).splitlines()
    assert len(text) == 4 and text[0].startswith("Q: Q2? A: A2") and text[-1].startswith("Q: Q5?")
    assert text[-1].endswith("(read in: T1, T2, T3)")


def test_no_earlier_turn_means_no_call_and_bad_output_keeps_the_question() -> None:
    llm = ScriptedLLM()
    assert rewrite(llm, FOLLOW, []).standalone == FOLLOW and llm.requests == []
    llm.add_rule(lambda messages, schema: "not json", schema="Rewritten")
    made = rewrite(llm, FOLLOW, [Turn(FIRST, "Mara Lind")])
    assert made.standalone == FOLLOW and made.error and not made.changed


def test_a_follow_up_is_rewritten_before_the_run_and_the_run_says_so(index, log) -> None:
    llm = film_llm()
    pipeline = Pipeline(scenario_config(), llm=llm, retriever=index, log=log)
    first = ask_in_conversation(pipeline, FIRST, (), conversation="c-test")
    assert first.answer == "Mara Lind" and llm.requests_for("Rewritten") == []  # a first turn costs no call
    assert first.extra["rewrite"] == {"question": FIRST, "standalone": FIRST, "changed": False,
                                      "conversation": "c-test", "turn": 1}
    follow = ask_in_conversation(pipeline, FOLLOW, [turn_of(first, FIRST)], conversation="c-test")
    assert follow.answer == "Aarhus" and follow.question == STANDALONE
    prompt = llm.requests_for("Rewritten")[0].messages[-1]["content"]
    assert f"Q: {FIRST} A: Mara Lind (read in: Blue Harbour)" in prompt and FOLLOW in prompt
    assert follow.extra["rewrite"]["changed"] and follow.extra["rewrite"]["turn"] == 2
    events = log.events(follow.run_id)
    assert [e.type for e in events][:2] == ["checkpoint", "rewrite"]  # right after the run's opening checkpoint
    body = ev.decode(events[1])
    assert isinstance(body, ev.Rewrite) and body.earlier == (FIRST,) and body.standalone == STANDALONE
    assert f'"{FOLLOW}" → "{STANDALONE}"' in summarize(body)
    calls = log.llm_calls(follow.run_id)
    assert calls[0]["agent"] == "decomposer" and STANDALONE in calls[0]["output"]
    assert follow.llm_calls == len(calls)  # the rewrite's call is counted with the run's
    assert log.get_run(follow.run_id)["question"] == STANDALONE
    trace = load_trace(log, follow.run_id)
    assert any(item.type == "rewrite" for item in trace.items)
    found = conversation_turns(log, "c-test")
    assert [t.question for _, t in found] == [FIRST, FOLLOW] and found[0][1].titles == ("Blue Harbour",)
    assert conversation_turns(log, "c-other") == []


def test_a_question_outside_a_conversation_is_a_plain_run(index, log) -> None:
    llm = film_llm()
    answer = ask_in_conversation(Pipeline(scenario_config(), llm=llm, retriever=index, log=log), FIRST)
    assert "rewrite" not in answer.extra and "rewrite" not in [e.type for e in log.events(answer.run_id)]


def test_chat_keeps_the_conversation_and_resumes_it_from_the_log(index, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("REAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("REAGENT_CONFIG", raising=False)
    log_path = tmp_path / "home" / "reagent-log.duckdb"
    log_path.parent.mkdir()
    llm = film_llm()

    def load(cls, *args, **kwargs):
        return ReAgent(Pipeline(scenario_config(), llm=llm, retriever=index, log=EventLog(log_path)))

    monkeypatch.setattr(ReAgent, "load", classmethod(load))
    lines = iter([FIRST, "", FOLLOW, "/exit"])
    monkeypatch.setattr(builtins, "input", lambda prompt="": next(lines))
    main(["chat"])
    out, err = capsys.readouterr()
    assert "Answer: Mara Lind" in out and f"Read as: {STANDALONE}" in out and "Answer: Aarhus" in out
    conversation = err.strip().splitlines()[-1].split()[1].rstrip(":")
    assert conversation.startswith("c-")
    lines = iter([FOLLOW, "/exit"])
    main(["chat", "--resume", conversation])
    prompt = llm.requests_for("Rewritten")[-1].messages[-1]["content"]
    assert prompt.count("Q: ") == 2  # both earlier turns, read back from the log
    with pytest.raises(SystemExit):
        main(["chat", "--resume", "c-nothing"])
    assert "no finished turn of conversation" in capsys.readouterr().err


@pytest.fixture
def server(tmp_path):
    service = scripted_service(tmp_path / "log.duckdb")
    service.agent.pipeline.llm.add_rule({"question": OLYMPICS}, schema="Rewritten", contains="its capital")
    with running(service) as srv:
        yield srv


def test_the_openai_endpoint_reads_the_whole_history(server) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)
    reply = client.chat.completions.create(model=MODEL, messages=[
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "In which state were the 1984 Summer Olympics held?"},
        {"role": "assistant", "content": "California"},
        {"role": "user", "content": "And how many people live in its capital?"}])
    assert reply.choices[0].message.content == "508,000"
    rewrite_info = reply.model_extra["reagent"]["extra"]["rewrite"]
    assert rewrite_info["standalone"] == OLYMPICS and rewrite_info["turn"] == 2
    assert rewrite_info["conversation"].startswith("openai-")
    prompt = server.service.agent.pipeline.llm.requests_for("Rewritten")[-1].messages[-1]["content"]
    assert "Q: In which state were the 1984 Summer Olympics held? A: California" in prompt
    with EventLog(server.service.log.path, read_only=True) as log:
        assert [e.type for e in log.events(reply.model_extra["reagent"]["run_id"])][:2] == ["checkpoint", "rewrite"]


def test_the_page_api_takes_a_history_and_refuses_a_bad_one(server) -> None:
    history = [{"question": "In which state were the 1984 Summer Olympics held?", "answer": "California",
                "titles": ["1984 Summer Olympics"]}]
    reply = httpx.post(server.url + "/api/ask", json={"question": "and what is the population of its capital?",
                                                      "history": history, "conversation": "c-page"}, timeout=60)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["answer"] == "508,000" and data["extra"]["rewrite"]["conversation"] == "c-page"
    bad = httpx.post(server.url + "/api/ask", json={"question": "and then?", "history": [{"answer": 3}]}, timeout=30)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "history"
    page = httpx.get(server.url + "/assets/page.js", timeout=30).text
    assert "history: turns.slice(-4)" in page and "conversation: conversationId" in page
    assert json.dumps(data)  # the answer object stays JSON

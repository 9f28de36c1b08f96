"""`reagent mcp`: the tools in-process (a scripted model), and the server through the SDK's own stdio client."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from reagent_local.api import ReAgent
from reagent_local.config import load_config
from reagent_local.core.log import EventLog
from reagent_local.errors import ReagentError
from reagent_local.serve.mcp_tools import ReagentTools
from reagent_local.reasoning.pipeline import Pipeline
from reagent_local.retrieval import build_index
from reagent_local.testing import InMemoryIndex, ScriptedLLM

from scenario_runs import scenario_config

mcp = pytest.importorskip("mcp", reason="the MCP SDK is the `mcp` extra (pip install -e '.[mcp]')")

QUESTION = "Who directed the film Blue Harbour?"
NOTES = [{"title": "Blue Harbour", "text": "Blue Harbour is a 1998 drama film directed by Mara Lind."}]
PEOPLE = [{"title": "Mara Lind", "text": "Mara Lind is a Danish film director. She was born in Aarhus."}]


def scripted_agent(log_path: Path) -> ReAgent:
    index = InMemoryIndex()
    index.add("Blue Harbour", NOTES[0]["text"])
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": [QUESTION]}, schema="Decomposition")
    llm.add_rule({"answer": "Mara Lind", "passages": [1], "subject": "Blue Harbour", "relation": "director"},
                 schema="SubAnswer")
    return ReAgent(Pipeline(scenario_config(), llm=llm, retriever=index, log=EventLog(log_path)))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with two small indexes (hash embedder) and one finished run in its log."""
    config = load_config({"paths.home": str(tmp_path), "retrieval.embedder": "hash-64"}, env={})
    for name, corpus in (("films", NOTES), ("people", PEOPLE)):
        source = tmp_path / f"{name}.json"
        source.write_text(json.dumps(corpus), encoding="utf-8")
        build_index(source, name, config, progress=False, kg=False)
    with scripted_agent(config.paths.log) as agent:
        agent.ask(QUESTION)
    return tmp_path


def test_the_ask_tool_returns_answer_trust_citations_and_run_id(tmp_path: Path) -> None:
    config = load_config({"paths.home": str(tmp_path)}, env={})
    made: list[str] = []

    def make_agent(cfg):
        made.append(cfg.retrieval.index)
        return scripted_agent(tmp_path / "log.duckdb")

    tools = ReagentTools(config, make_agent=make_agent)
    first = tools.ask(QUESTION)
    assert first["answer"] == "Mara Lind" and first["trusted"] is True and first["uncertain_reason"] is None
    assert first["citations"] == [{"id": "Blue Harbour#0", "title": "Blue Harbour"}]
    assert first["subquestions"][0]["citations"][0]["title"] == "Blue Harbour"
    assert first["run_id"] and first["run_id"] in first["trace"]
    tools.ask(QUESTION)
    assert made == ["enwiki-sample"]  # one agent (one model) for every question of an index
    with pytest.raises(ReagentError, match="empty"):
        tools.ask("   ")
    tools.close()


def test_search_index_list_and_trace_in_process(home: Path) -> None:
    config = load_config({"paths.home": str(home), "retrieval.embedder": "hash-64", "retrieval.index": "films"},
                         env={})
    tools = ReagentTools(config)
    assert [i["name"] for i in tools.index_list()] == ["films", "people"]
    assert [i["default"] for i in tools.index_list()] == [True, False]
    hits = tools.search("Mara Lind", index="films,people", k=2, mode="sparse")
    assert {h["index"] for h in hits} == {"films", "people"}
    text = tools.trace("last")
    assert "Mara Lind" in text and "\x1b[" not in text  # the timeline, without colour codes
    with pytest.raises(ReagentError):
        tools.search("x", mode="fuzzy")


def _server_params(home: Path):
    from mcp.client.stdio import StdioServerParameters

    env = {**os.environ, "REAGENT_HOME": str(home), "REAGENT_RETRIEVAL_EMBEDDER": "hash-64",
           "REAGENT_RETRIEVAL_INDEX": "films"}
    env.pop("REAGENT_CONFIG", None)
    return StdioServerParameters(command=sys.executable, args=["-m", "reagent_local", "mcp"], env=env,
                                 cwd=str(Path(__file__).resolve().parents[1]))


def _text(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def test_an_mcp_client_lists_the_tools_searches_lists_indexes_and_reads_a_trace(home: Path) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def session_run() -> dict:
        async with stdio_client(_server_params(home)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                search = await session.call_tool("search", {"query": "Mara Lind born", "index": "films,people", "k": 2})
                indexes = await session.call_tool("index_list", {})
                trace = await session.call_tool("trace", {"run_id": "last"})
                missing = await session.call_tool("search", {"query": "x", "index": "nope"})
                return {"tools": tools, "search": search, "indexes": indexes, "trace": trace, "missing": missing}

    got = anyio.run(session_run)
    names = {t.name: t for t in got["tools"].tools}
    assert set(names) == {"ask", "search", "index_list", "trace"}
    assert set(names["ask"].input_schema["properties"]) == {"question", "index"}
    assert names["ask"].input_schema["required"] == ["question"]
    hits = json.loads(_text(got["search"])) if not got["search"].structured_content else \
        got["search"].structured_content["result"]
    assert not got["search"].is_error and {h["index"] for h in hits} == {"films", "people"}
    assert "people|Mara Lind#0" in _text(got["search"])
    assert '"films"' in _text(got["indexes"]) and '"people"' in _text(got["indexes"])
    assert "Mara Lind" in _text(got["trace"]) and "Answer" in _text(got["trace"])
    assert got["missing"].is_error and "no index named 'nope'" in _text(got["missing"])


def test_without_the_sdk_the_command_says_how_to_install_it(tmp_path: Path, monkeypatch, capsys) -> None:
    from reagent_local.cli import main

    monkeypatch.setenv("REAGENT_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if not installed
    with pytest.raises(SystemExit):
        main(["mcp"])
    err = capsys.readouterr().err
    assert "needs the `mcp` package" in err and "reagent-local[mcp]" in err and "Traceback" not in err


def test_search_refuses_an_unknown_mode_over_mcp_too(home: Path) -> None:
    config = load_config({"paths.home": str(home), "retrieval.embedder": "hash-64"}, env={})
    tools = ReagentTools(replace(config, retrieval=replace(config.retrieval, index="films")))
    assert tools.search("Blue Harbour", k=1)[0]["title"] == "Blue Harbour"


def test_the_ask_tool_goes_to_a_running_server_of_the_home_and_loads_no_model(tmp_path: Path, monkeypatch) -> None:
    from serve_support import OLYMPICS, RunningServer, home_config, scripted_service

    from reagent_local.share.presence import Announcement

    config = home_config(tmp_path)
    service = scripted_service(Path(config.paths.log), config=config)
    announcement = Announcement(Path(config.paths.home))
    monkeypatch.setattr("reagent_local.api.build_pipeline", lambda *a, **kw: pytest.fail("a model was loaded"))
    with RunningServer(service) as server:
        announcement.hold()
        announcement.publish(server.url, model="scripted-olympics", index="olympics",
                             identity=service.settings.identity)
        try:
            payload = ReagentTools(config).ask(OLYMPICS)
        finally:
            announcement.withdraw()
    assert payload["answer"] == "508,000" and "served_by" in payload and server.url in payload["served_by"]
    assert payload["citations"] and payload["run_id"]

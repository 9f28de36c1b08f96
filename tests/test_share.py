"""One machine, one model: a server of the home answers asks and benchmarks as they would answer themselves.

Scripted models throughout (the real-model check is tests/test_share_real.py): a server announced
in a temporary home, ReAgent.load and `reagent ask` finding it, the answer and the trace equal to a
local run's, a server killed mid-question, and a benchmark's model calls sent to the server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, create_model

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenario_runs import QUESTION, olympics_index, olympics_llm  # noqa: E402
from serve_support import RunningServer, home_config, scripted_service  # noqa: E402

from reagent_local.api import ReAgent  # noqa: E402
from reagent_local.core.log import EventLog  # noqa: E402
from reagent_local.reasoning.pipeline import Pipeline  # noqa: E402
from reagent_local.share import compat  # noqa: E402
from reagent_local.share.client import ServerFailed  # noqa: E402
from reagent_local.share.presence import Announcement, live_servers, serve_dir  # noqa: E402

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def config(tmp_path):
    return home_config(tmp_path)


class Served:
    """A scripted server of ``config``'s home, announced there as `reagent serve` announces itself."""

    def __init__(self, config: Any, **service: Any) -> None:
        self.service = scripted_service(Path(config.paths.log), config=config, **service)
        self.server = RunningServer(self.service)
        self.announcement = Announcement(Path(config.paths.home))

    def __enter__(self) -> "Served":
        self.server.__enter__()
        self.announcement.hold()
        self.announcement.publish(self.server.url, model="scripted-olympics", index="olympics",
                                  identity=self.service.settings.identity)
        return self

    def __exit__(self, *exc: object) -> None:
        self.announcement.withdraw()
        self.server.__exit__(*exc)


def comparable_trace(log_path: Path, run_id: str) -> list[Any]:
    from reagent_local.trace.compare import comparable_events

    return comparable_events(log_path, run_id)


def local_answer(config: Any, log_path: Path) -> Any:
    pipeline = Pipeline(config, llm=olympics_llm(), retriever=olympics_index(), log=EventLog(log_path))
    try:
        return pipeline.ask(QUESTION)
    finally:
        pipeline.log.close()


# --- presence -------------------------------------------------------------------------------------

def test_an_announced_server_is_found_and_a_withdrawn_one_is_not(tmp_path):
    announcement = Announcement(tmp_path)
    announcement.hold()
    assert list(live_servers(tmp_path)) == []  # holding the lock, still loading: no address yet
    announcement.publish("http://127.0.0.1:9", model="m", index="i", identity={"a": 1})
    (found,) = live_servers(tmp_path)
    assert (found.url, found.pid, found.identity) == ("http://127.0.0.1:9", os.getpid(), {"a": 1})
    assert oct(found.path.stat().st_mode & 0o777) == "0o600"  # it may carry the API key
    announcement.withdraw()
    assert list(live_servers(tmp_path)) == [] and list(serve_dir(tmp_path).iterdir()) == []


def test_a_killed_server_announcement_goes_stale_safely(tmp_path):
    script = ("import sys, time; from reagent_local.share.presence import Announcement\n"
              "a = Announcement(sys.argv[1]); a.hold(); a.publish('http://127.0.0.1:9', model='m', index='i', "
              "identity={}); print('ready', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    assert [s.pid for s in live_servers(tmp_path)] == [child.pid]
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert list(live_servers(tmp_path)) == []  # its lock is free: stale, whatever the file says
    assert list(serve_dir(tmp_path).iterdir()) == []  # and removed


# --- compatibility ----------------------------------------------------------------------------------

def test_identity_holds_what_changes_an_answer_and_names_the_difference(config):
    mine = compat.identity(config)
    assert compat.mismatch(mine, compat.identity(config)) is None
    threads = replace(config, llm=replace(config.llm, n_threads=1, use_server=False))  # speed only
    assert compat.mismatch(compat.identity(threads), mine) is None
    backtracking = replace(config, pipeline=replace(config.pipeline, backtracking="none"))  # travels with a question
    assert compat.mismatch(compat.identity(backtracking), mine) is None
    hot = replace(config, llm=replace(config.llm, temperature=0.7, model="smollm2-135m"))
    why = compat.mismatch(compat.identity(hot), mine)
    assert "llm.temperature: the server has 0.0, this process 0.7" in why and "model:" in why
    assert compat.mismatch({**mine, "code": "0.0.9"}, mine).startswith("code: the server has")


def test_a_question_carries_its_pipeline_settings_and_bad_ones_are_refused(config):
    wanted = replace(config, pipeline=replace(config.pipeline, backtracking="local", rules=("all", "-both-yes")))
    settings = compat.question_settings(wanted)
    assert "role_models" not in settings and json.dumps(settings)
    assert compat.with_question_settings(config, settings).pipeline == wanted.pipeline
    from reagent_local.errors import ReagentError

    with pytest.raises(ReagentError, match="unknown per-question settings"):
        compat.with_question_settings(config, {"role_models": {}})
    with pytest.raises(ReagentError, match="pipeline.backtracking"):
        compat.with_question_settings(config, {"backtracking": "sideways"})


# --- questions through the server -------------------------------------------------------------------

def test_a_served_question_gets_the_local_answer_and_trace_in_the_same_log(config, tmp_path):
    wanted = replace(config, pipeline=replace(config.pipeline, backtracking="local"))  # not the server's own
    local = local_answer(wanted, tmp_path / "local.duckdb")
    with Served(config):
        with ReAgent.load(config=wanted) as agent:
            assert agent.served and agent.route.note().startswith("asking the server at http://127.0.0.1:")
            served = agent.ask(QUESTION)
            assert agent._pipeline is None  # no model, index or log opened here
    assert served.backtracks == local.backtracks == {"local": 1, "global": 0}
    drop = ("run_id", "seconds", "llm_seconds")
    assert {k: v for k, v in served.to_dict().items() if k not in drop} == \
        {k: v for k, v in local.to_dict().items() if k not in drop}
    assert [p.text for p in served.passages] == [p.text for p in local.passages]
    assert comparable_trace(Path(config.paths.log), served.run_id) == comparable_trace(tmp_path / "local.duckdb",
                                                                                     local.run_id)
    with EventLog(Path(config.paths.log), read_only=True) as log:
        assert log.get_run(served.run_id)["config"]["pipeline"]["backtracking"] == "local"


def test_a_process_that_differs_says_why_and_loads_its_own(config, monkeypatch):
    built = []
    monkeypatch.setattr("reagent_local.api.build_pipeline", lambda c, **kw: built.append(c) or object())
    hot = replace(config, llm=replace(config.llm, temperature=0.5))
    with Served(config):
        agent = ReAgent.load(config=hot)
        assert not agent.served and built
        assert "llm.temperature: the server has 0.0, this process 0.5" in agent.route.note()
        assert "--local" in agent.route.note()
        assert not ReAgent.load(config=config, use_server=False).served  # --local
        assert ReAgent.load(config=config, log_path=Path(config.paths.home) / "other.duckdb").route.reason
        assert ReAgent.load(config=config).served


def test_reagent_ask_on_the_command_line_is_answered_by_the_server(config, tmp_path, monkeypatch, capsys):
    from reagent_local.cli import main
    from reagent_local.config import load_config

    for name, value in {"REAGENT_HOME": str(tmp_path), "REAGENT_RETRIEVAL_TOP_K": "3",
                        "REAGENT_PIPELINE_TWO_ROADS": "false"}.items():
        monkeypatch.setenv(name, value)
    cli_config = load_config()
    local = local_answer(cli_config, tmp_path / "local.duckdb")
    with Served(cli_config):
        main(["ask", QUESTION, "--json"])
    out, err = capsys.readouterr()
    printed = json.loads(out)
    assert "asking the server at http://127.0.0.1:" in err
    expected = json.loads(json.dumps(local.to_dict()))
    assert {k: v for k, v in printed.items() if k not in ("run_id", "seconds", "llm_seconds")} == \
        {k: v for k, v in expected.items() if k not in ("run_id", "seconds", "llm_seconds")}


def test_a_server_killed_mid_question_is_one_error_and_the_next_question_loads_its_own(config, tmp_path,
                                                                                        monkeypatch):
    port_file = tmp_path / "url"
    child = subprocess.Popen([sys.executable, str(TESTS / "serve_support.py"), str(config.paths.log), str(port_file),
                              "0.5", str(config.paths.home)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(live_servers(Path(config.paths.home))):
            assert child.poll() is None and time.monotonic() < deadline, child.stderr.read() if child.poll() else ""
            time.sleep(0.1)
        seen: list[str] = []

        def on_event(kind: str, data: Any) -> None:
            seen.append(kind)
            if kind == "event" and seen.count("event") == 3:
                child.send_signal(signal.SIGKILL)

        agent = ReAgent.load(config=config, on_event=on_event)
        assert agent.served
        with pytest.raises(ServerFailed) as failed:
            agent.ask(QUESTION)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
    message = str(failed.value)
    assert f"(pid {child.pid}" in message and "ended while answering" in message
    assert f"run {failed.value.run_id} is interrupted in the log" in message
    assert "loads its own model" in message and len(message.splitlines()) == 2  # the error and what to do
    with EventLog(Path(config.paths.log), read_only=True) as log:
        assert log.get_run(failed.value.run_id)["status"] == "interrupted"
    local = Pipeline(config, llm=olympics_llm(), retriever=olympics_index(), log=EventLog(tmp_path / "own.duckdb"))
    monkeypatch.setattr("reagent_local.api.build_pipeline", lambda c, **kw: local)
    assert agent.ask(QUESTION).answer == "508,000" and not agent.served  # no server now: its own pipeline


# --- a benchmark's model calls through the server ---------------------------------------------------

class RawScripted:
    """A scripted model that also takes raw calls (``chat_raw``), as the served LlamaModel does."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.raw_calls = 0

    def generate_json(self, messages: Any, schema: type, **kw: Any) -> Any:
        return self.inner.generate_json(messages, schema, **kw)

    def chat_raw(self, messages: Any, *, json_schema: dict | None = None, max_tokens: int | None = None,
                 temperature: float | None = None, seed: int | None = None) -> Any:
        self.raw_calls += 1
        schema = create_model(json_schema["title"], __config__=ConfigDict(extra="allow"), __base__=None)
        return self.inner.generate_json(messages, schema, max_tokens=max_tokens).call


def test_a_benchmark_sends_its_model_calls_to_the_server_and_gets_the_local_records(config, tmp_path):
    from bench_support import river_answers

    from reagent_local.bench.runner import run_benchmark
    from reagent_local.datasets import load_questions, open_corpus
    from reagent_local.share.remote import RemoteLLM
    from reagent_local.testing import InMemoryIndex, Rule, ScriptedLLM

    data = tmp_path / "rivers.json"
    data.write_text(json.dumps([{"_id": f"q{i}", "type": "bridge", "level": "hard", "answer": f"City{i}",
                                 "question": f"What is the capital of the country where the river Riv{i} flows?",
                                 "supporting_facts": [[f"Riv{i}", 0], [f"Land{i}", 0]],
                                 "context": [[f"Riv{i}", [f"Riv{i} is a river.", f" Riv{i} flows through Land{i}."]],
                                             [f"Land{i}", [f"Land{i} is a country.", f" Its capital is City{i}."]]]}
                                for i in range(3)]))
    index = InMemoryIndex()
    for n, p in enumerate(open_corpus(load_questions(data, "hotpotqa"))):
        index.add(p.title, p.text, n)
    methods = ["closed-book", "rag", "reagent-both"]

    def run(llm: Any, out: str) -> list[dict]:
        run_benchmark("hotpotqa", data, config=config, methods=methods, out=tmp_path / out, llm=llm, retriever=index)
        return [json.loads(line) for line in (tmp_path / out / "records.jsonl").read_text().splitlines()]

    local = run(ScriptedLLM(rules=[Rule(river_answers)]), "local")
    served_model = RawScripted(ScriptedLLM(rules=[Rule(river_answers)]))
    served = Served(config)
    served.service.agent.pipeline.llm = served_model
    with served:
        (info,) = live_servers(Path(config.paths.home))
        remote = run(RemoteLLM(info, "scripted"), "served")
    assert served_model.raw_calls == sum(r["llm_calls"] for r in remote) > 0
    drop = ("seconds", "run_id", "machine", "cold_start")
    assert [{k: v for k, v in r.items() if k not in drop} for r in remote] == \
        [{k: v for k, v in r.items() if k not in drop} for r in local]
    assert {r["machine"]["via"] for r in remote} == {"server"} and {r["machine"]["via"] for r in local} == {"local"}
    # the server's prompt cache is not this process's to empty: its seconds are not said to start cold
    assert {r["cold_start"] for r in remote} == {False} and {r["cold_start"] for r in local} == {None}


def test_a_benchmark_finds_a_compatible_server_or_says_why_not(config, monkeypatch):
    from reagent_local.share.remote import served_model

    monkeypatch.setattr("reagent_local.runtime.models.resolve_model", lambda name, models: (Path(name), name))
    notes: list[str] = []
    with Served(config):
        assert served_model(config, notes.append) is not None and notes[-1].startswith("asking the server")
        other_index = replace(config, retrieval=replace(config.retrieval, index="elsewhere"))
        assert served_model(other_index, notes.append) is not None  # calls only: the index stays the benchmark's
        hot = replace(config, llm=replace(config.llm, max_tokens=99))
        assert served_model(hot, notes.append) is None and "llm.max_tokens" in notes[-1]
        assert served_model(replace(config, llm=replace(config.llm, use_server=False)), notes.append) is None

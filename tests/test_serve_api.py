"""`reagent serve`'s own endpoints: ask, runs, trace pages, live events; cancelling; who may call; binding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from reagent_local.core.log import EventLog
from reagent_local.errors import ReagentError
from reagent_local.serve import check_binding
from reagent_local.trace.runs import list_runs
from reagent_local.trace.terminal import runs_table
from scenario_runs import PLANTED
from serve_support import OLYMPICS, running, scripted_service


def iter_sse(lines):
    """(event name, data) pairs of a Server-Sent Events stream, as they arrive."""
    name = "message"
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            yield name, json.loads(line[5:])
            name = "message"


def sse_events(lines) -> list[tuple[str, dict]]:
    """All (event name, data) pairs of a stream."""
    return list(iter_sse(lines))


def wait_for(predicate, timeout: float = 20.0, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def run_row(log_path: Path, run_id: str) -> dict:
    with EventLog(log_path, read_only=True) as log:
        return log.get_run(run_id)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running(scripted_service(tmp_path_factory.mktemp("serve") / "log.duckdb")) as srv:
        yield srv


@pytest.fixture
def slow(tmp_path):
    """A server whose model takes 0.3 s a call (a run takes a few seconds)."""
    with running(scripted_service(tmp_path / "log.duckdb", seconds_per_call=0.3)) as srv:
        yield srv


def test_api_ask_gives_the_ask_json_object(server):
    response = httpx.post(server.url + "/api/ask", json={"question": OLYMPICS}, timeout=60)
    assert response.status_code == 200
    data = response.json()
    assert data["answer"] == "508,000" and data["question"] == OLYMPICS
    assert set(data) >= {"run_id", "subquestions", "backtracks", "passages", "uncertain", "uncertain_reason",
                         "llm_calls", "prompt_tokens", "completion_tokens", "seconds"}


def test_api_ask_streams_queue_run_events_and_the_answer_with_passage_text(server):
    with httpx.stream("POST", server.url + "/api/ask", json={"question": OLYMPICS, "stream": True},
                      timeout=60) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response.iter_lines())
    names = [n for n, _ in events]
    assert names[0] == "queued" and names[1] == "run" and names[-1] == "answer"
    run_id = events[1][1]["run_id"]
    logged = [e for n, e in events if n == "event"]
    with EventLog(server.service.log.path, read_only=True) as log:
        assert [e["seq"] for e in logged] == [e.seq for e in log.events(run_id)]
    assert {"agent", "type", "summary", "payload", "time"} <= set(logged[0])
    answer = events[-1][1]
    assert answer["answer"]["run_id"] == run_id and answer["answer"]["answer"] == "508,000"
    assert any(PLANTED in p["text"] for p in answer["passages"])  # the page gets the text, and shows it as text


def test_runs_list_export_and_trace_page(server):
    asked = httpx.post(server.url + "/api/ask", json={"question": OLYMPICS}, timeout=60).json()
    runs = httpx.get(server.url + "/api/runs?last=3").json()
    assert runs[0]["run_id"] == asked["run_id"] and runs[0]["status"] == "ok"
    exported = httpx.get(server.url + f"/api/runs/{asked['run_id']}").json()
    assert exported["format"] == "reagent-run-export" and exported["run"]["answer"] == "508,000"
    assert httpx.get(server.url + "/api/runs/last").json()["run"]["run_id"] == asked["run_id"]
    page = httpx.get(server.url + f"/runs/{asked['run_id']}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "Content-Security-Policy" in page.text and asked["run_id"] in page.text
    missing = httpx.get(server.url + "/runs/nope-nope")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "run_not_found"
    assert httpx.get(server.url + "/api/runs?last=zero").status_code == 400


def test_events_follow_a_run_as_it_is_written(slow):
    started = {}

    def ask():
        with httpx.stream("POST", slow.url + "/api/ask", json={"question": OLYMPICS, "stream": True},
                          timeout=60) as response:
            for name, data in iter_sse(response.iter_lines()):
                if name == "run":
                    started["run_id"] = data["run_id"]

    asker = threading.Thread(target=ask)
    asker.start()
    run_id = wait_for(lambda: started.get("run_id"), what="the run to start")
    time.sleep(0.5)  # join mid-run: the events so far come first, then each as it is written
    arrivals = []
    with httpx.stream("GET", slow.url + f"/events/{run_id}", timeout=60) as response:
        events = []
        for name, data in iter_sse(response.iter_lines()):
            events.append((name, data))
            arrivals.append(time.monotonic())
    asker.join(30)
    assert events[-1][0] == "end" and events[-1][1]["status"] == "ok" and events[-1][1]["answer"] == "508,000"
    seqs = [d["seq"] for n, d in events if n == "event"]
    with EventLog(slow.service.log.path, read_only=True) as log:
        assert seqs == [e.seq for e in log.events(run_id)]
    assert arrivals[-1] - arrivals[0] > 1.0, "events arrived while the run went on, not all at its end"
    rollback = next(d for n, d in events if n == "event" and d["type"] == "rollback_local")
    assert '"before step 1"' in rollback["summary"]  # checkpoint names known to the live describer

    # a finished run: all its events, then end; Last-Event-ID resumes after an event
    with httpx.stream("GET", slow.url + f"/events/{run_id}", headers={"Last-Event-ID": str(seqs[-3])}) as response:
        again = sse_events(response.iter_lines())
    assert [d["seq"] for n, d in again if n == "event"] == seqs[-2:] and again[-1][0] == "end"


def test_events_of_a_run_written_by_another_writer_are_polled_from_the_log(server):
    log_path = server.service.log.path
    with EventLog(log_path) as other:  # not the server's pipeline: as another process would write
        run_id = other.start_run("Who else?", {})
        other.append(run_id, "note", agent="controller", payload={"n": 1}, time=1)

        def later():
            time.sleep(1.2)
            other.append(run_id, "note", agent="controller", payload={"n": 2}, time=2)
            other.finish_run(run_id, "someone", "ok", {})

        writer = threading.Thread(target=later)
        writer.start()
        with httpx.stream("GET", server.url + f"/events/{run_id}", timeout=30) as response:
            events = sse_events(response.iter_lines())
        writer.join()
    assert [d["payload"]["n"] for n, d in events if n == "event"] == [1, 2]
    assert events[-1] == ("end", {"run_id": run_id, "status": "ok", "answer": "someone", "error": None})


def test_a_client_that_disconnects_has_its_run_cancelled_at_the_next_step(slow):
    log_path = slow.service.log.path
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(slow.url + "/api/ask", json={"question": OLYMPICS}, timeout=1.0)
    run_id = wait_for(lambda: (httpx.get(slow.url + "/api/runs?last=1").json() or [{}])[0].get("run_id"))
    row = wait_for(lambda: (r := run_row(log_path, run_id))["status"] != "running" and r, what="the cancel")
    assert row["status"] == "cancelled" and row["error"] == "the client disconnected"
    assert row["answer"] is None and 0 < row["events"]
    calls_at_cancel = slow.service.agent.pipeline.llm.calls
    time.sleep(0.8)
    assert slow.service.agent.pipeline.llm.calls == calls_at_cancel  # nothing more was asked of the model
    with EventLog(log_path, read_only=True) as log:
        table = runs_table(list_runs(log, 1))
    from rich.console import Console

    console = Console(width=160, record=True)
    console.print(table)
    text = console.export_text()
    assert "cancelled" in text and "events, last:" in text


def test_a_stream_closed_by_its_client_cancels_the_run(slow):
    with httpx.stream("POST", slow.url + "/v1/chat/completions", timeout=30, json={
            "model": "scripted-olympics", "stream": True, "messages": [{"role": "user", "content": OLYMPICS}]}) as r:
        for line in r.iter_lines():
            if "reagent_run_id" in line:
                run_id = json.loads(line[5:])["reagent_run_id"]
                break
    row = wait_for(lambda: (x := run_row(slow.service.log.path, run_id))["status"] != "running" and x)
    assert row["status"] == "cancelled" and row["error"] == "the client disconnected"


def test_a_waiting_client_that_leaves_is_dropped_from_the_queue(slow):
    results = {}
    first = threading.Thread(target=lambda: results.setdefault("first", httpx.post(
        slow.url + "/api/ask", json={"question": OLYMPICS}, timeout=60)))
    first.start()
    wait_for(lambda: slow.service.worker.status()["running"], what="the first run")
    with httpx.stream("POST", slow.url + "/api/ask", json={"question": OLYMPICS, "stream": True}, timeout=30) as r:
        name, data = next(iter_sse(r.iter_lines()))
    assert data["ahead"] == 1 and "waiting: 1 question ahead" in data["line"]
    wait_for(lambda: slow.service.worker.status()["cancelled"] == 1, what="the waiting job to be dropped")
    first.join(60)
    assert results["first"].status_code == 200
    status = slow.service.worker.status()
    assert status["accepted"] == 2 and status["done"] == 1 and status["cancelled"] == 1
    with EventLog(slow.service.log.path, read_only=True) as log:
        assert len(log.runs(10)) == 1  # the dropped question never became a run


def test_other_origins_and_hosts_are_refused(server):
    cross = httpx.post(server.url + "/api/ask", json={"question": OLYMPICS},
                       headers={"Origin": "https://evil.example"})
    assert cross.status_code == 403 and cross.json()["error"]["code"] == "cross_origin"
    rebound = httpx.get(server.url + "/api/runs", headers={"Host": "evil.example:8080"})
    assert rebound.status_code == 403 and rebound.json()["error"]["code"] == "host_not_allowed"
    same = httpx.get(server.url + "/api/status", headers={"Origin": server.url})
    assert same.status_code == 200


def test_listening_beyond_this_machine_needs_a_key():
    check_binding("127.0.0.1", None)
    check_binding("::1", None)
    check_binding("localhost", None)
    check_binding("0.0.0.0", "k")
    with pytest.raises(ReagentError) as info:
        check_binding("0.0.0.0", None)
    assert "--api-key" in str(info.value)


def reagent(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "REAGENT_API_KEY"}
    environment.update({"REAGENT_HOME": str(home), "HF_HUB_OFFLINE": "1", **env})
    return subprocess.run([sys.executable, "-m", "reagent_local", *args], capture_output=True, text=True,
                          env=environment, timeout=120)


def test_the_cli_refuses_a_public_address_without_a_key_in_one_line(tmp_path):
    result = reagent("serve", "--host", "0.0.0.0", home=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "refusing to listen on 0.0.0.0" in result.stderr and "--api-key" in result.stderr


def test_the_cli_says_which_model_to_pull_before_serving(tmp_path):
    result = reagent("serve", "--port", "0", home=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "reagent models pull qwen2.5-coder-1.5b" in result.stderr


def test_the_cli_says_when_the_port_is_taken(tmp_path, server):
    result = reagent("serve", "--port", str(server.port), home=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"port {server.port} on 127.0.0.1 is already in use" in result.stderr


def test_another_process_asks_and_reads_the_same_log_while_the_server_answers(slow):
    """`reagent ask` and `reagent trace` in another terminal keep working: here a scripted ask in another process."""
    log_path = slow.service.log.path
    tests = Path(__file__).parent
    script = ("import sys; from reagent_local.core.log import EventLog; from scenario_runs import simple_run\n"
              f"with EventLog({str(log_path)!r}) as log: print(simple_run(log))")
    with httpx.stream("POST", slow.url + "/api/ask", json={"question": OLYMPICS, "stream": True},
                      timeout=60) as response:
        events = iter_sse(response.iter_lines())
        served = next(d["run_id"] for n, d in events if n == "run")
        path = os.pathsep.join(filter(None, [str(tests), os.environ.get("PYTHONPATH")]))  # keep the caller's
        other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                               env={**os.environ, "PYTHONPATH": path})
        listed = subprocess.run([sys.executable, "-m", "reagent_local", "trace", "list", "--json", "--log",
                                 str(log_path)], capture_output=True, text=True, timeout=120)
        rest = list(events)
    assert other.returncode == 0, other.stderr
    assert listed.returncode == 0, listed.stderr
    seen = {r["run_id"]: r["status"] for r in json.loads(listed.stdout)}
    assert seen[served] in ("running", "ok") and seen[other.stdout.strip()] == "ok"
    assert rest[-1][0] == "answer" and rest[-1][1]["answer"]["answer"] == "508,000"
    assert run_row(log_path, served)["status"] == "ok"


@pytest.mark.parametrize("body, needle", [
    ({}, "the question is empty"), ({"question": "  "}, "the question is empty"),
    ({"question": 42}, "must be a string"), ({"question": "why " * 600}, "the limit is 2,000"),
    ({"question": "Who?", "stream": 1}, "'stream' must be true or false"),
])
def test_api_ask_refuses_bad_questions_with_a_400(server, body, needle):
    response = httpx.post(server.url + "/api/ask", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert needle in error["message"] and error["param"] in ("question", "stream")

"""`reagent serve` under load and at its end: 20 clients at once, and Ctrl-C with a run in progress."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from reagent_local.core.log import EventLog
from serve_support import MODEL, OLYMPICS, running, scripted_service

CLIENTS = 20


def test_twenty_clients_at_once_each_get_an_answer_or_a_429_and_the_log_holds_each_run_once(tmp_path):
    log_path = tmp_path / "log.duckdb"
    outcomes: list[httpx.Response | BaseException] = []
    barrier = threading.Barrier(CLIENTS)
    with running(scripted_service(log_path, seconds_per_call=0.02, max_queue=4)) as srv:
        def client(number: int) -> None:
            body = {"model": MODEL, "messages": [{"role": "user", "content": f"{OLYMPICS} ({number})"}],
                    "stream": number % 2 == 1}
            barrier.wait()
            try:
                with httpx.Client(timeout=120) as http:
                    outcomes.append(http.post(srv.url + "/v1/chat/completions", json=body))
            except BaseException as exc:  # noqa: BLE001 - counted below: there must be none
                outcomes.append(exc)

        started = time.monotonic()
        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        elapsed = time.monotonic() - started
        assert httpx.get(srv.url + "/v1/models").status_code == 200  # still up
        status = srv.service.worker.status()

    assert all(isinstance(o, httpx.Response) for o in outcomes), [o for o in outcomes if not isinstance(o, httpx.Response)]
    counts = Counter(o.status_code for o in outcomes)
    assert set(counts) <= {200, 429} and sum(counts.values()) == CLIENTS, counts
    refused = [o for o in outcomes if o.status_code == 429]
    assert all(int(o.headers["Retry-After"]) >= 1 and o.json()["error"]["code"] == "queue_full" for o in refused)
    answered = []
    for o in outcomes:
        if o.status_code != 200:
            continue
        if o.headers["content-type"].startswith("text/event-stream"):
            chunks = [json.loads(line[5:]) for line in o.text.splitlines()
                      if line.startswith("data:") and line != "data: [DONE]"]
            final = [c for c in chunks if c.get("choices") and c["choices"][0]["finish_reason"] == "stop"]
            assert len(final) == 1, chunks[-3:]
            answered.append(final[0]["reagent"])
        else:
            answered.append(o.json()["reagent"])
    assert counts[200] >= 5  # one running and four waiting at the start, more as places free up
    assert all(a["answer"] for a in answered), [a["answer"] for a in answered]
    with EventLog(log_path, read_only=True) as log:
        runs = log.runs(1000)
        assert sorted(r["run_id"] for r in runs) == sorted(a["run_id"] for a in answered)  # each accepted run, once
        assert {r["run_id"]: r["question"] for r in runs} == {a["run_id"]: a["question"] for a in answered}
        assert all(r["status"] == "ok" for r in runs)
        for run in runs:
            times = [e.time for e in log.events(run["run_id"])]
            assert times == list(range(1, len(times) + 1))
    assert status["accepted"] == counts[200] and status["refused"] == counts[429] and status["done"] == counts[200]
    print(f"\n{CLIENTS} clients: {counts[200]} answered, {counts[429]} refused (429) in {elapsed:.1f} s")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_stops_the_running_run_at_its_next_step_marks_it_and_refuses_the_waiting(tmp_path, sig):
    log_path, url_file = tmp_path / "log.duckdb", tmp_path / "url"
    support = Path(__file__).with_name("serve_support.py")
    path = os.pathsep.join(filter(None, [str(support.parent), os.environ.get("PYTHONPATH")]))  # keep the caller's
    server = subprocess.Popen([sys.executable, str(support), str(log_path), str(url_file), "0.4"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": path})
    try:
        deadline = time.monotonic() + 60
        while not url_file.is_file() or not url_file.read_text():
            assert server.poll() is None, server.communicate()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        url = url_file.read_text()
        results: dict[str, httpx.Response] = {}

        def ask(name: str) -> None:
            results[name] = httpx.post(url + "/api/ask", json={"question": OLYMPICS}, timeout=60)

        first = threading.Thread(target=ask, args=("running",))
        first.start()
        run_id = None
        while run_id is None:
            status = httpx.get(url + "/api/status").json()["queue"]
            run_id = status["running"]
            time.sleep(0.05)
        second = threading.Thread(target=ask, args=("waiting",))
        second.start()
        while httpx.get(url + "/api/status").json()["queue"]["waiting"] != 1:
            time.sleep(0.05)
        server.send_signal(sig)
        out, err = server.communicate(timeout=60)
        first.join(10)
        second.join(10)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0, err
    assert "stopped" in out and "Traceback" not in err
    assert results["waiting"].status_code == 503 and results["waiting"].json()["error"]["code"] == "server_stopping"
    assert results["running"].status_code == 503 and results["running"].json()["error"]["code"] == "cancelled"
    with EventLog(log_path, read_only=True) as log:
        runs = log.runs(10)
        assert [r["run_id"] for r in runs] == [run_id]  # the waiting question never became a run
        assert runs[0]["status"] == "cancelled" and runs[0]["error"] == "the server was stopped (Ctrl-C)"
        assert runs[0]["events"] == len(log.events(run_id)) > 0

"""One machine, one model, with the real small model (SmolLM2-135M) and the real commands.

`reagent serve --background` on a home; `reagent ask` there is answered by the server (a client's
memory, the local run's answer and trace); the server killed mid-question gives the ask one error
and leaves the run interrupted; the next ask loads its own model; `--status` and `--stop` manage it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import pulled_model
from test_share import comparable_trace

pytestmark = pytest.mark.slow

QUESTION = "Who directed the film Blue Harbour?"
PASSAGES = [
    {"title": "Blue Harbour", "text": "Blue Harbour is a 1998 drama film directed by Mara Lind."},
    {"title": "Mara Lind", "text": "Mara Lind (born 12 March 1950 in Bergen) is a Norwegian film director."},
    {"title": "Bergen", "text": "Bergen is a city on the west coast of Norway."},
]
MODEL = ["--model", "smollm2-135m", "--index", "tiny"]


# a small launcher measures a command's peak memory: a child forked from this (large) test process would
# carry this process's peak in its own account (Linux keeps the peak across exec)
PEAK = ("import os, subprocess, sys\nchild = subprocess.Popen(sys.argv[2:])\n_, status, usage = os.wait4(child.pid, 0)\n"
        "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\nsys.exit(os.waitstatus_to_exitcode(status))")


def reagent(*args: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, int]:
    """Run a reagent command; also return its peak memory in KB."""
    with tempfile.NamedTemporaryFile("r") as peak:
        done = subprocess.run([sys.executable, "-c", PEAK, peak.name, sys.executable, "-m", "reagent_local", *args],
                              capture_output=True, text=True, env=env, timeout=600)
        return done, int(peak.read() or 0)


@pytest.fixture
def home(tmp_path):
    model = pulled_model("smollm2-135m")
    from reagent_local.config import load_config
    from reagent_local.retrieval import build_index

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES))
    build_index(corpus, "tiny", load_config({"paths.home": str(tmp_path)}, env={}), fmt="jsonl", kg=False,
                progress=False)
    env = {**os.environ, "REAGENT_HOME": str(tmp_path), "REAGENT_PATHS_MODELS_DIR": str(model.parent),
           "HF_HUB_OFFLINE": "1", "REAGENT_CORES_DIR": str(tmp_path / "cores")}
    env.pop("REAGENT_API_KEY", None)
    yield tmp_path, env
    subprocess.run([sys.executable, "-m", "reagent_local", "serve", "--stop"], env=env, capture_output=True,
                   timeout=300)


def test_ask_goes_to_the_server_of_its_home_and_survives_its_death(home, capsys):
    tmp_path, env = home
    local, local_peak = reagent("ask", QUESTION, *MODEL, "--json", env=env)  # no server yet: its own model
    assert local.returncode == 0, local.stderr
    assert "asking the server" not in local.stderr

    started, _ = reagent("serve", *MODEL, "--port", "0", "--background", env=env)
    assert started.returncode == 0, started.stderr
    assert "serving on http://127.0.0.1:" in started.stderr
    status, _ = reagent("serve", "--status", env=env)
    assert status.returncode == 0 and "smollm2-135m" in status.stdout and "idle" in status.stdout
    pid = int(status.stdout.split(" pid ")[1].split()[0])

    began = time.monotonic()
    served, served_peak = reagent("ask", QUESTION, *MODEL, "--json", env=env)
    wall = time.monotonic() - began
    assert served.returncode == 0, served.stderr
    assert f"asking the server at http://127.0.0.1:" in served.stderr and f"(pid {pid}," in served.stderr
    mine, theirs = json.loads(local.stdout), json.loads(served.stdout)
    drop = ("run_id", "seconds", "llm_seconds")
    assert {k: v for k, v in theirs.items() if k not in drop} == {k: v for k, v in mine.items() if k not in drop}
    log = tmp_path / "reagent-log.duckdb"
    assert comparable_trace(log, theirs["run_id"]) == comparable_trace(log, mine["run_id"])
    assert served_peak < local_peak / 2, (served_peak, local_peak)  # a client: no model, no index

    # the server killed mid-question: one clear error, the run interrupted, and the next ask loads its own
    asking = subprocess.Popen([sys.executable, "-m", "reagent_local", "ask", QUESTION, *MODEL], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run_id = _wait_for_a_running_run(tmp_path, exclude={mine["run_id"], theirs["run_id"]})
    os.kill(pid, signal.SIGKILL)
    out, err = asking.communicate(timeout=120)
    assert asking.returncode == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-2].startswith("error: the server at http://127.0.0.1:") and "ended while answering" in lines[-2]
    assert f"run {run_id} is interrupted in the log" in lines[-2] and "Traceback" not in err
    listed, _ = reagent("trace", "list", "--json", env=env)
    assert {r["run_id"]: r["status"] for r in json.loads(listed.stdout)}[run_id] == "interrupted"
    again, _ = reagent("ask", QUESTION, *MODEL, "--json", env=env)
    assert again.returncode == 0 and "asking the server" not in again.stderr
    assert json.loads(again.stdout)["answer"] == mine["answer"]

    # a new background server is found; --stop stops it
    restarted, _ = reagent("serve", *MODEL, "--port", "0", "--background", env=env)
    assert restarted.returncode == 0, restarted.stderr
    found, _ = reagent("ask", QUESTION, *MODEL, "--json", env=env)
    assert "asking the server" in found.stderr and json.loads(found.stdout)["answer"] == mine["answer"]
    stopped, _ = reagent("serve", "--stop", env=env)
    assert stopped.returncode == 0 and "stopped server" in stopped.stderr
    none, _ = reagent("serve", "--status", env=env)
    assert none.returncode == 1 and "no server runs" in none.stderr
    with capsys.disabled():
        overhead = wall - theirs["seconds"]
        print(f"\nserved ask: {wall:.1f} s wall for a {theirs['seconds']:.1f} s run (overhead {overhead:.2f} s); "
              f"peak memory {served_peak / 1024:.0f} MB served, {local_peak / 1024:.0f} MB local")


def _wait_for_a_running_run(home: Path, exclude: set[str], timeout: float = 120) -> str:
    """The id of a new run once the server runs it (asked over HTTP: a `trace list` child per poll is too slow
    under load, the tiny question could end before the kill)."""
    from reagent_local.share.client import ServerClient
    from reagent_local.share.presence import live_servers

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for server in live_servers(home):
            running = ServerClient(server, timeout=5).get("/api/status")["queue"].get("running")
            if running and running not in exclude:
                return running
        time.sleep(0.05)
    raise AssertionError("the served ask never started a run")

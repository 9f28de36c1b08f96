"""`reagent serve` as a user starts it, with the real small model (SmolLM2-135M) and a real index built here.

Also checks that `reagent trace` reads the same home while the server serves, and that Ctrl-C ends
the server cleanly. (Another process asking on the same log while the server answers is in test_serve_api.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import pulled_model

pytestmark = pytest.mark.slow
openai = pytest.importorskip("openai", reason="the openai client is a test extra (pip install -e '.[test]')")

QUESTION = "Who directed the film Blue Harbour?"
PASSAGES = [
    {"title": "Blue Harbour", "text": "Blue Harbour is a 1998 drama film directed by Mara Lind."},
    {"title": "Mara Lind", "text": "Mara Lind (born 12 March 1950 in Bergen) is a Norwegian film director."},
    {"title": "Bergen", "text": "Bergen is a city on the west coast of Norway."},
]


def _env(home: Path, models: Path) -> dict[str, str]:
    env = {**os.environ, "REAGENT_HOME": str(home), "REAGENT_PATHS_MODELS_DIR": str(models), "HF_HUB_OFFLINE": "1",
           "REAGENT_LLM_N_THREADS": "1"}
    env.pop("REAGENT_API_KEY", None)
    return env


def reagent(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reagent_local", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_reagent_serve_answers_with_the_real_model_while_the_cli_shares_its_home(tmp_path, capsys):
    model = pulled_model("smollm2-135m")
    from reagent_local.config import load_config
    from reagent_local.retrieval import build_index

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES))
    build_index(corpus, "tiny", load_config({"paths.home": str(tmp_path)}, env={}), fmt="jsonl", kg=False,
                progress=False)
    env = _env(tmp_path, model.parent)
    server = subprocess.Popen([sys.executable, "-m", "reagent_local", "serve", "--model", "smollm2-135m",
                               "--index", "tiny", "--port", "0"], stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    ready = threading.Event()

    def read_stderr() -> None:
        for line in server.stderr:
            lines.append(line)
            if line.startswith("serving on "):
                ready.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert ready.wait(120), "".join(lines)
        url = next(line for line in lines if line.startswith("serving on ")).split()[2]
        client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=120)
        assert [m.id for m in client.models.list().data] == ["smollm2-135m"]

        started = time.monotonic()
        reply = client.chat.completions.create(model="smollm2-135m", messages=[{"role": "user", "content": QUESTION}])
        plain_seconds = time.monotonic() - started
        assert isinstance(reply.choices[0].message.content, str) and reply.choices[0].message.content
        assert reply.usage.completion_tokens > 0 and reply.usage.prompt_tokens > 0
        run_id = reply.model_extra["reagent"]["run_id"]

        started = time.monotonic()
        chunks = list(client.chat.completions.create(model="smollm2-135m", stream=True,
                                                     messages=[{"role": "user", "content": QUESTION}]))
        stream_seconds = time.monotonic() - started
        content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        progress = "".join(c.choices[0].delta.model_extra.get("reasoning_content") or "" for c in chunks if c.choices)
        assert content and "[decomposer] plan:" in progress
        listed = reagent("trace", "list", "--json", env=env, timeout=60)
        assert listed.returncode == 0, listed.stderr
        assert run_id in {r["run_id"] for r in json.loads(listed.stdout)}  # read while the server holds the log
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(60)
        finally:
            if server.poll() is None:
                server.kill()
    reader.join(5)
    assert server.returncode == 0 and "stopped" in "".join(lines) and "Traceback" not in "".join(lines)
    shown = reagent("trace", "list", "--json", env=env, timeout=60)
    statuses = {r["run_id"]: r["status"] for r in json.loads(shown.stdout)}
    assert len(statuses) == 2 and set(statuses.values()) == {"ok"} and run_id in statuses
    with capsys.disabled():
        print(f"\nsmollm2-135m through reagent serve: {plain_seconds:.1f} s (plain), {stream_seconds:.1f} s "
              "(streamed) per question")

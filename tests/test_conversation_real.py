"""The 1.5B model for real: two indexes in one question, an MCP client's question, and a two-turn conversation
through `reagent chat`, the OpenAI client and the page's API (small real indexes built here, hash embedder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import pulled_model
from reagent_local.config import load_config
from reagent_local.retrieval import build_index

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
MODEL = "qwen2.5-coder-1.5b"
# hop 1 is only in "films", hop 2 only in "people" (made-up facts: the model cannot know them)
FILMS = [{"title": "Blue Harbour", "text": "Blue Harbour is a 1998 drama film directed by Mara Lind."},
         {"title": "Grey Dock", "text": "Grey Dock is a 2003 comedy film directed by Tom Hale."}]
PEOPLE = [{"title": "Mara Lind", "text": "Mara Lind is a Danish film director. She was born in Aarhus."},
          {"title": "Tom Hale", "text": "Tom Hale is an English actor and director. He was born in Leeds."}]
TWO_INDEXES = "Where was the director of the film Blue Harbour born?"
# the README's example question, asked in two turns
US = [{"title": "Birmingham, Alabama", "text": "Birmingham is a city in the U.S. state of Alabama. It is the most "
                                               "populous city in Alabama."},
      {"title": "Alabama", "text": "Alabama is a state in the Southeastern United States. Its capital is Montgomery."},
      {"title": "Birmingham", "text": "Birmingham is a city in the West Midlands of England."}]
FIRST = "Which U.S. state has Birmingham as its largest city?"
FOLLOW = "And what is its capital?"


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    model = pulled_model(MODEL)
    home = tmp_path_factory.mktemp("home")
    (home / "models").symlink_to(model.parent)
    config = load_config({"paths.home": str(home), "retrieval.embedder": "hash-64"}, env={})
    for name, corpus in (("films", FILMS), ("people", PEOPLE), ("us", US)):
        source = home / f"{name}.json"
        source.write_text(json.dumps(corpus), encoding="utf-8")
        build_index(source, name, config, progress=False, kg=False)
    return home


def env_for(home: Path) -> dict[str, str]:
    env = {**os.environ, "REAGENT_HOME": str(home), "REAGENT_RETRIEVAL_EMBEDDER": "hash-64", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(REPO)}
    env.pop("REAGENT_CONFIG", None)
    return env


def reagent(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reagent_local", *args], capture_output=True, text=True,
                          env=env_for(home), cwd=REPO, input=stdin, timeout=1800)


def test_ask_over_two_indexes_answers_with_citations_from_both(home: Path) -> None:
    result = reagent(home, "ask", TWO_INDEXES, "--index", "films,people", "--model", MODEL, "--local", "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert "aarhus" in answer["answer"].lower()
    assert {p.get("index") for p in answer["passages"]} == {"films", "people"}
    assert any(p["id"] == "people|Mara Lind#0" for p in answer["passages"])


def test_an_mcp_client_gets_an_answer_with_citations(home: Path) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, env=env_for(home), cwd=str(REPO),
                                   args=["-m", "reagent_local", "mcp", "--model", MODEL, "--local"])

    async def ask() -> tuple:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                result = await session.call_tool("ask", {"question": TWO_INDEXES, "index": "films,people"},
                                                 read_timeout_seconds=1500)
                return tools, result

    tools, result = anyio.run(ask)
    assert {t.name for t in tools.tools} == {"ask", "search", "index_list", "trace"}
    assert not result.is_error, result.content
    payload = result.structured_content or json.loads(result.content[0].text)
    assert "aarhus" in payload["answer"].lower() and payload["run_id"]
    assert {c["index"] for c in payload["citations"]} == {"films", "people"}


def test_chat_answers_the_follow_up_and_the_trace_shows_the_rewrite(home: Path) -> None:
    result = reagent(home, "chat", "--index", "us", "--model", MODEL, "--local", stdin=f"{FIRST}\n{FOLLOW}\n/exit\n")
    assert result.returncode == 0, result.stderr
    answers = [line for line in result.stdout.splitlines() if line.startswith("Answer: ")]
    assert len(answers) == 2 and "Alabama" in answers[0] and "Montgomery" in answers[1], result.stdout
    assert "Read as: " in result.stdout
    shown = reagent(home, "trace", "show", "last")
    assert shown.returncode == 0 and "rewrite (conversation c-" in shown.stdout and "turn 2" in shown.stdout


def test_the_openai_client_and_the_page_api_answer_the_follow_up(home: Path) -> None:
    openai = pytest.importorskip("openai")
    import httpx

    from reagent_local.serve.server import open_service
    from serve_support import RunningServer

    config = load_config({"paths.home": str(home), "retrieval.embedder": "hash-64", "retrieval.index": "us",
                          "llm.model": MODEL}, env={})
    with RunningServer(open_service(config, host="127.0.0.1", api_key=None, max_queue=2)) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=1500)
        reply = client.chat.completions.create(model=MODEL, messages=[
            {"role": "user", "content": FIRST}, {"role": "assistant", "content": "Alabama"},
            {"role": "user", "content": FOLLOW}])
        assert "Montgomery" in reply.choices[0].message.content
        assert reply.model_extra["reagent"]["extra"]["rewrite"]["changed"]
        page = httpx.post(server.url + "/api/ask", timeout=1500, json={
            "question": FOLLOW, "conversation": "c-page",
            "history": [{"question": FIRST, "answer": "Alabama", "titles": ["Birmingham, Alabama"]}]})
        assert page.status_code == 200 and "Montgomery" in page.json()["answer"]

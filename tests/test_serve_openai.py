"""`reagent serve` through the real `openai` client: answers, streamed progress, and errors in OpenAI's shape."""

from __future__ import annotations

import httpx
import pytest

from reagent_local.core.log import EventLog
from serve_support import MODEL, OLYMPICS, running, scripted_service

openai = pytest.importorskip("openai", reason="the openai client is a test extra (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log_path = tmp_path_factory.mktemp("serve") / "log.duckdb"
    with running(scripted_service(log_path)) as srv:
        yield srv


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    log_path = tmp_path_factory.mktemp("serve-key") / "log.duckdb"
    with running(scripted_service(log_path, api_key="s3cret")) as srv:
        yield srv


def client(srv, key: str = "unused") -> "openai.OpenAI":
    return openai.OpenAI(base_url=srv.url + "/v1", api_key=key, max_retries=0, timeout=60)


def ask(srv, question: str = OLYMPICS, **kw):
    return client(srv).chat.completions.create(model=MODEL, messages=[
        {"role": "system", "content": "Answer briefly."}, {"role": "user", "content": question}], **kw)


def test_models_lists_the_served_model(server):
    models = client(server).models.list().data
    assert [m.id for m in models] == [MODEL]
    assert models[0].owned_by == "reagent-local"


def test_a_question_gets_the_answer_usage_and_the_ask_json_object(server):
    reply = ask(server)
    assert reply.object == "chat.completion"
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content == "508,000"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    extra = reply.model_extra["reagent"]  # what `reagent ask --json` prints
    assert set(extra) >= {"answer", "run_id", "subquestions", "backtracks", "passages", "uncertain", "llm_calls"}
    assert extra["answer"] == "508,000" and len(extra["subquestions"]) == 4
    assert extra["prompt_tokens"] == reply.usage.prompt_tokens
    assert all(set(p) == {"id", "title"} for p in extra["passages"])
    with EventLog(server.service.log.path, read_only=True) as log:
        run = log.get_run(extra["run_id"])
    assert run["status"] == "ok" and run["answer"] == "508,000" and run["question"] == OLYMPICS


def test_content_given_as_parts_is_the_question(server):
    reply = client(server).chat.completions.create(model=MODEL, messages=[
        {"role": "user", "content": [{"type": "text", "text": OLYMPICS}]}])
    assert reply.choices[0].message.content == "508,000"


def test_a_stream_tells_the_plan_each_step_and_then_the_answer(server):
    stream = ask(server, stream=True, stream_options={"include_usage": True})
    progress, content, chunks = [], [], list(stream)
    events = []
    for chunk in chunks:
        assert chunk.object == "chat.completion.chunk" and chunk.model == MODEL
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if delta.model_extra.get("reasoning_content"):
            progress.append(delta.model_extra["reasoning_content"])
            assert not content, "progress comes before the answer"
        if delta.content:
            content.append(delta.content)
        if chunk.model_extra.get("reagent_event"):
            events.append(chunk.model_extra["reagent_event"]["type"])
    assert "".join(content) == "508,000"
    text = "".join(progress)
    assert "[decomposer] plan: 1. In which state were the 1984 Summer Olympics held?" in text
    assert "[verifier] decision step 1: accept \"California\"" in text
    assert events.index("plan") < events.index("decision")
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    assert len(finals) == 1 and finals[0].model_extra["reagent"]["answer"] == "508,000"
    usage = [c.usage for c in chunks if c.usage is not None]
    assert len(usage) == 1 and usage[0].total_tokens > 0
    assert len({c.id for c in chunks}) == 1


def test_the_first_run_streams_its_rollbacks(tmp_path):
    # a fresh server: the scenario's scripted mistakes fire on its first run only
    with running(scripted_service(tmp_path / "log.duckdb")) as srv:
        text = "".join(c.choices[0].delta.model_extra.get("reasoning_content") or ""
                       for c in ask(srv, stream=True) if c.choices)
    assert "LOCAL ROLLBACK to checkpoint" in text and "\"before step 1\"" in text
    assert "[supervisor] GLOBAL ROLLBACK" in text and "MINIMAL CONFLICT SET" in text


@pytest.mark.parametrize("body, status, code, needle", [
    (b"{not json", 400, "invalid_json", "not valid JSON"),
    (b"[1, 2]", 400, "invalid_json", "JSON object"),
    (b'{"model": "scripted-olympics", "messages": [{"role": "system", "content": "hi"}]}', 400, "no_user_message",
     "no user message"),
    (b'{"model": "scripted-olympics", "messages": []}', 400, "invalid_messages", "non-empty list"),
    (b'{"model": "scripted-olympics", "messages": [{"role": "user", "content": "   "}]}', 400, "invalid_question",
     "the question is empty"),
    (b'{"messages": [{"role": "user", "content": "Who?"}]}', 400, "missing_model", "'model' is required"),
    (b'{"model": "gpt-17", "messages": [{"role": "user", "content": "Who?"}]}', 404, "model_not_found",
     "'gpt-17' is not served here"),
    (b'{"model": "scripted-olympics", "messages": [{"role": "user", "content": "Who?"}], "stream": "yes"}', 400,
     "invalid_request", "'stream' must be true or false"),
])
def test_bad_requests_get_an_error_in_the_openai_shape(server, body, status, code, needle):
    response = httpx.post(server.url + "/v1/chat/completions", content=body,
                          headers={"Content-Type": "application/json"})
    assert response.status_code == status
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == code and needle in error["message"]


def test_a_question_too_long_is_refused_before_it_is_queued(server):
    with pytest.raises(openai.BadRequestError) as info:
        ask(server, "why " * 1000)
    assert "characters long; the limit is 2,000" in info.value.message
    assert info.value.code == "invalid_question"


def test_the_openai_client_raises_its_own_error_classes(server):
    with pytest.raises(openai.NotFoundError) as info:
        client(server).chat.completions.create(model="gpt-17", messages=[{"role": "user", "content": "Who?"}])
    assert info.value.code == "model_not_found"
    with pytest.raises(openai.NotFoundError) as info:
        client(server).get("/nothing", cast_to=object)
    assert info.value.code == "not_found" and "no such endpoint: GET /v1/nothing" in info.value.message


def test_an_api_key_is_required_and_checked(keyed):
    with pytest.raises(openai.AuthenticationError) as info:
        client(keyed, key="wrong").models.list()
    assert info.value.code == "invalid_api_key"
    response = httpx.get(keyed.url + "/v1/models")
    assert response.status_code == 401 and response.json()["error"]["code"] == "missing_api_key"
    assert response.headers["www-authenticate"] == "Bearer"
    reply = openai.OpenAI(base_url=keyed.url + "/v1", api_key="s3cret", max_retries=0).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": OLYMPICS}])
    assert reply.choices[0].message.content == "508,000"
    # the page and its assets carry no data: they load without the key (the page asks for it)
    assert httpx.get(keyed.url + "/").status_code == 200
    assert httpx.get(keyed.url + "/api/runs").status_code == 401
    assert httpx.get(keyed.url + "/api/runs", cookies={"reagent_api_key": "s3cret"}).status_code == 200

"""The OpenAI-compatible endpoints: ``POST /v1/chat/completions`` (plain or streamed) and ``GET /v1/models``.

The last user message is the question, read in the conversation the earlier messages make: each
earlier user message with the assistant message after it is a turn, and a follow-up ("and where
was she born?") is made standalone from them before the agents read it (reagent_local/reasoning/conversation.py;
the conversation's id in the log is ``openai-`` and a hash of its first user message). The answer
is ``choices[0].message.content``;
``usage`` counts the run's tokens; ``reagent`` is what ``reagent ask --json`` prints.
A stream tells the agents' progress as ``delta.reasoning_content`` (as llama.cpp's
server and others stream a model's reasoning), each such chunk with the log event
behind it in ``reagent_event``; then the answer as ``delta.content``; then a last chunk
with ``finish_reason`` and ``reagent``; with ``stream_options.include_usage``, a usage
chunk; then ``[DONE]``.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import Any, AsyncIterator

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..reasoning.conversation import Turn
from ..reasoning.answer import Answer
from . import sse
from .errors import ApiError, bad_request
from .live import Describer
from .service import TICK, Service, follow, read_json

CANCELLED = "cancelled"


def _service(request: Request) -> Service:
    return request.app.state.service


def models(request: Request) -> JSONResponse:
    """``GET /v1/models``: the one model this server answers with."""
    service = _service(request)
    return JSONResponse({"object": "list", "data": [{
        "id": service.settings.model, "object": "model", "created": int(service.started_at),
        "owned_by": "reagent-local", "reagent": {"index": service.settings.index}}]})


def _text(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") in ("text", "input_text")]
        return "\n".join(p for p in parts if isinstance(p, str))
    return None


def _question(body: dict[str, Any], served: str) -> str:
    """The last user message's text, after checking the model and the messages (``_history`` reads the rest)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("'model' is required: the id that GET /v1/models lists", param="model",
                          code="missing_model")
    if model != served:
        raise ApiError(404, f"the model {model!r} is not served here; this server answers with {served!r} "
                       "(GET /v1/models)", param="model", code="model_not_found")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad_request("'messages' must be a non-empty list of {role, content} objects", param="messages",
                          code="invalid_messages")
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        raise bad_request("there is no user message: the last message with role 'user' is the question",
                          param="messages", code="no_user_message")
    text = _text(users[-1].get("content"))
    if text is None:
        raise bad_request("the last user message has no text content", param="messages", code="no_user_message")
    return text


def _history(messages: list[Any]) -> list[Turn]:
    """The turns before the last user message: each user message's text with the assistant reply after it."""
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user")
    turns: list[Turn] = []
    for message in messages[:last_user]:
        if not isinstance(message, dict):
            continue
        text = _text(message.get("content"))
        if message.get("role") == "user" and text:
            turns.append(Turn(text, ""))
        elif message.get("role") == "assistant" and text and turns and not turns[-1].answer:
            turns[-1] = Turn(turns[-1].question, text)
    return turns


def _context(body: dict[str, Any]) -> dict[str, Any] | None:
    """The conversation of a request with earlier turns (None for one question alone)."""
    turns = _history(body["messages"])
    if not turns:
        return None
    first = hashlib.sha256(turns[0].question.encode("utf-8")).hexdigest()[:10]
    return {"history": turns, "conversation": f"openai-{first}"}


def _usage(answer: Answer) -> dict[str, int]:
    return {"prompt_tokens": answer.prompt_tokens, "completion_tokens": answer.completion_tokens,
            "total_tokens": answer.prompt_tokens + answer.completion_tokens}


def _cancelled(reason: str) -> ApiError:
    return ApiError(503, f"the run was cancelled: {reason}", type="server_error", code=CANCELLED)


async def chat_completions(request: Request) -> Response:
    """``POST /v1/chat/completions``."""
    service = _service(request)
    body = await read_json(request, service.settings.max_body_bytes)
    question = service.question(_question(body, service.settings.model))
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_request("'stream' must be true or false", param="stream")
    options = body.get("stream_options") or {}
    include_usage = bool(isinstance(options, dict) and options.get("include_usage"))
    job = service.submit(question, None, _context(body))
    completion_id, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
    if stream:
        return StreamingResponse(_stream(service, job, completion_id, created, include_usage),
                                 media_type=sse.MEDIA_TYPE, headers=sse.HEADERS)
    first_ahead = None
    try:
        async for item in follow(job, request):
            if item is None:
                continue
            kind, detail = item
            if kind == "queued" and first_ahead is None:
                first_ahead = detail
            elif kind == "done":
                return JSONResponse({
                    "id": completion_id, "object": "chat.completion", "created": created,
                    "model": service.settings.model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": detail.answer},
                                 "finish_reason": "stop", "logprobs": None}],
                    "usage": _usage(detail), "reagent": detail.to_dict()},
                    headers={"X-Reagent-Run-Id": detail.run_id, "X-Reagent-Queue-Position": str(first_ahead or 0)})
            elif kind == "failed":
                raise detail
            elif kind == CANCELLED:
                raise _cancelled(detail)
    finally:
        service.cancel(job)
    return Response(status_code=499)  # the client went away; nobody reads this


async def _stream(service: Service, job: Any, completion_id: str, created: int,
                  include_usage: bool) -> AsyncIterator[str]:
    model = service.settings.model

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        return sse.event({"id": completion_id, "object": "chat.completion.chunk", "created": created,
                          "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                          **extra})

    describe = Describer()
    try:
        yield chunk({"role": "assistant", "content": ""})
        async for item in sse.with_keepalives(follow(job, None), TICK):
            if item == sse.KEEPALIVE:
                yield item
                continue
            kind, detail = item
            if kind == "queued":
                yield chunk({"reasoning_content": sse.waiting_line(detail) + "\n"})
            elif kind == "run":
                yield chunk({"reasoning_content": f"[server] run {detail} started\n"}, reagent_run_id=detail)
            elif kind == "event":
                described = describe(detail)
                line = sse.progress_line(described)
                if line:
                    event = {k: described[k] for k in ("seq", "time", "agent", "type", "summary")}
                    yield chunk({"reasoning_content": line + "\n"}, reagent_event=event)
            elif kind == "done":
                yield chunk({"content": detail.answer})
                yield chunk({}, "stop", reagent=detail.to_dict())
                if include_usage:
                    yield sse.event({"id": completion_id, "object": "chat.completion.chunk", "created": created,
                                     "model": model, "choices": [], "usage": _usage(detail)})
            elif kind == "failed":
                yield sse.event(detail.body())
            elif kind == CANCELLED:
                yield sse.event(_cancelled(detail).body())
        yield sse.done()
    finally:
        service.cancel(job)

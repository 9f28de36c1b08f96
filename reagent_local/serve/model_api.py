"""``POST /api/llm``: one call on the served model, for a process of the same home that sends calls, not questions.

A benchmark keeps its own methods, index and log, and sends each model call here instead of
loading the model a second time (``reagent_local/share/remote.py``). The body is what
``LlamaModel.chat_raw`` takes (``messages``, ``json_schema``, ``max_tokens``, ``temperature``,
``seed``); the reply is the raw output with its tokens, seconds and token probabilities, which
the client validates itself, plus how long the call waited for the model while it answered
others (``waited``), the other processes' share of the cores during the call (``others_cpu``)
and the threads it ran with. Calls and the queue's questions take turns at the model.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from ..runtime.contention import CpuMeter
from .errors import ApiError, bad_request
from .service import Service, read_json


def _messages(value: Any) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in value):
        raise bad_request("'messages' must be a non-empty list of {role, content} strings", param="messages",
                          code="invalid_messages")
    return [{"role": m["role"], "content": m["content"]} for m in value]


def _number(body: dict[str, Any], name: str, kind: type) -> Any:
    value = body.get(name)
    if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)):
        raise bad_request(f"'{name}' must be a number or null", param=name)
    return None if value is None else kind(value)


def _call(model: Any, request: dict[str, Any]) -> dict[str, Any]:
    meter = CpuMeter()
    arrived = time.perf_counter()
    start = meter.mark()
    call = model.chat_raw(**request)
    total = time.perf_counter() - arrived
    return {"raw": call.raw, "prompt_tokens": call.prompt_tokens, "completion_tokens": call.completion_tokens,
            "seconds": call.seconds, "finish_reason": call.finish_reason,
            "token_logprobs": [list(pair) for pair in call.token_logprobs],
            "waited": round(max(0.0, total - call.seconds), 4), "others_cpu": meter.others_share(start, meter.mark()),
            "threads": getattr(model, "_threads", 0)}


async def generate(request: Request) -> JSONResponse:
    """``POST /api/llm``."""
    service: Service = request.app.state.service
    model = service.agent.pipeline.llm
    if not hasattr(model, "chat_raw"):
        raise ApiError(404, "this server's model takes no raw calls", code="not_found")
    if service.worker is not None and service.worker.status()["stopping"]:
        raise ApiError(503, "the server is stopping", type="server_error", code="server_stopping")
    body = await read_json(request, service.settings.max_body_bytes)
    schema = body.get("json_schema")
    if schema is not None and not isinstance(schema, dict):
        raise bad_request("'json_schema' must be a JSON schema object or null", param="json_schema")
    call = {"messages": _messages(body.get("messages")), "json_schema": schema,
            "max_tokens": _number(body, "max_tokens", int), "temperature": _number(body, "temperature", float),
            "seed": _number(body, "seed", int)}
    return JSONResponse(await run_in_threadpool(_call, model, call))

"""reagent's own endpoints: ask, the runs in the log, a run's trace page and its live events, and the page.

- ``POST /api/ask`` ``{"question": ..., "stream": false, "settings": {...}}``: the ``reagent ask --json`` object
  (``settings``: the asker's ``[pipeline]`` settings, as `reagent ask` sends them to a server of its home;
  ``history``: the conversation's earlier turns, ``[{"question", "answer", "titles"}]``, and ``conversation``, its
  id: a follow-up is made standalone first, and ``answer.extra.rewrite`` says how); with
  ``"stream": true``, Server-Sent Events ``queued``, ``run``, ``event`` (each log event of the run),
  then ``answer`` (that object, plus the cited passages' text) or ``error``;
- ``GET /api/runs?last=N``, ``GET /api/runs/{id}`` (``reagent trace export``), ``GET /runs/{id}``
  (``reagent trace html``), ``GET /events/{id}``: a run's log events as they are written, then ``end``;
- ``GET /``: the page (``assets/``), which builds everything from the passages with ``textContent``.
"""

from __future__ import annotations

import asyncio
import os
from importlib import resources
from typing import Any, AsyncIterator

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse

from ..reasoning.answer import Answer
from ..trace import load_trace, render_html
from ..trace.runs import export_run, list_runs, resolve_run_id
from . import sse
from .errors import ApiError, bad_request
from .live import END, Describer
from .service import TICK, Service, follow, read_json

POLL_SECONDS = 1.0  # how often a run written by another process is read again
PAGE_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
            "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
_ASSETS = {"page.js": "text/javascript; charset=utf-8", "page.css": "text/css; charset=utf-8",
           "icon.svg": "image/svg+xml"}
_NO_SNIFF = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def _service(request: Request) -> Service:
    return request.app.state.service


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def page(request: Request) -> HTMLResponse:
    """``GET /``: the question box, the agent lanes, the answer."""
    return HTMLResponse(_asset("index.html"), headers={"Content-Security-Policy": PAGE_CSP, **_NO_SNIFF})


def asset(request: Request) -> Response:
    """``GET /assets/{name}``: the page's script and style."""
    name = request.path_params.get("name", "icon.svg")  # /favicon.ico is the icon too
    if name not in _ASSETS:
        raise ApiError(404, f"no asset {name!r}", code="not_found")
    return Response(_asset(name), media_type=_ASSETS[name], headers=_NO_SNIFF)


def status(request: Request) -> JSONResponse:
    """``GET /api/status``: what is served and what the queue holds."""
    service = _service(request)
    worker = service.worker.status() if service.worker else {}
    return JSONResponse({"model": service.settings.model, "index": service.settings.index,
                         "log": str(service.log.path), "queue": worker, "pid": os.getpid(),
                         "started_at": service.started_at, "identity": service.settings.identity})


def _answer_data(answer: Answer) -> dict[str, Any]:
    return {"answer": answer.to_dict(),
            "passages": [{**p.to_dict(), "text": p.text} for p in answer.passages]}  # origin: folders of documents


async def ask(request: Request) -> Response:
    """``POST /api/ask``."""
    service = _service(request)
    body = await read_json(request, service.settings.max_body_bytes)
    question = service.question(body.get("question"), param="question")
    settings = service.question_settings(body.get("settings"))
    context = service.context(body.get("history"), body.get("conversation"))
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_request("'stream' must be true or false", param="stream")
    job = service.submit(question, settings, context)
    if stream:
        return StreamingResponse(_ask_stream(service, job), media_type=sse.MEDIA_TYPE, headers=sse.HEADERS)
    try:
        async for item in follow(job, request):
            if item is None:
                continue
            kind, detail = item
            if kind == "done":
                return JSONResponse(detail.to_dict())
            if kind == "failed":
                raise detail
            if kind == "cancelled":
                raise ApiError(503, f"the run was cancelled: {detail}", type="server_error", code="cancelled")
    finally:
        service.cancel(job)
    return Response(status_code=499)


async def _ask_stream(service: Service, job: Any) -> AsyncIterator[str]:
    describe = Describer()
    try:
        async for item in sse.with_keepalives(follow(job, None), TICK):
            if item == sse.KEEPALIVE:
                yield item
                continue
            kind, detail = item
            if kind == "queued":
                yield sse.event({"ahead": detail, "line": sse.waiting_line(detail)}, name="queued")
            elif kind == "run":
                yield sse.event({"run_id": detail}, name="run")
            elif kind == "event":
                described = describe(detail)
                yield sse.event(described, name="event", id=described["seq"])
            elif kind == "done":
                yield sse.event(_answer_data(detail), name="answer")
            elif kind == "failed":
                yield sse.event(detail.body(), name="error")
            elif kind == "cancelled":
                yield sse.event(ApiError(503, f"the run was cancelled: {detail}", type="server_error",
                                         code="cancelled").body(), name="error")
    finally:
        service.cancel(job)


async def runs(request: Request) -> JSONResponse:
    """``GET /api/runs?last=N``: recent runs, newest first (``reagent trace list --json``)."""
    try:
        last = int(request.query_params.get("last", "20"))
    except ValueError:
        raise bad_request("'last' must be a whole number", param="last") from None
    if not 1 <= last <= 10_000:
        raise bad_request("'last' must be between 1 and 10000", param="last")
    found = await run_in_threadpool(list_runs, _service(request).log, last)
    return JSONResponse([r.to_dict() for r in found])


async def _run_id(request: Request) -> str:
    return await run_in_threadpool(resolve_run_id, _service(request).log, request.path_params["run_id"])


async def run_export(request: Request) -> JSONResponse:
    """``GET /api/runs/{id}``: everything the log holds about a run (``reagent trace export``)."""
    log = _service(request).log
    run_id = await _run_id(request)
    return JSONResponse(await run_in_threadpool(export_run, log, run_id))


async def run_page(request: Request) -> HTMLResponse:
    """``GET /runs/{id}``: the run's trace page (``reagent trace html``)."""
    log = _service(request).log
    run_id = await _run_id(request)
    trace = await run_in_threadpool(load_trace, log, run_id)
    return HTMLResponse(render_html(trace), headers=_NO_SNIFF)


async def run_events(request: Request) -> StreamingResponse:
    """``GET /events/{id}``: a run's log events as Server-Sent Events, as they are written; then ``end``."""
    run_id = await _run_id(request)
    try:
        after = int(request.headers.get("last-event-id", "0"))
    except ValueError:
        after = 0
    return StreamingResponse(_events(_service(request), run_id, after), media_type=sse.MEDIA_TYPE,
                             headers=sse.HEADERS)


async def _events(service: Service, run_id: str, after: int) -> AsyncIterator[str]:
    describe = Describer()

    def send(event: Any) -> str | None:
        nonlocal after
        described = describe(event)  # every event, so checkpoint names are known to later rollbacks
        if event.seq <= after:
            return None
        after = event.seq
        return sse.event(described, name="event", id=event.seq)

    watched = service.live.watch(run_id) if service.live else None
    if watched is not None:  # executing here: the events so far, then each as it is logged
        backlog, queue = watched
        try:
            for event in backlog:
                if (chunk := send(event)) is not None:
                    yield chunk
            while True:
                try:
                    kind, detail = await asyncio.wait_for(queue.get(), sse.KEEPALIVE_SECONDS)
                except asyncio.TimeoutError:
                    yield sse.KEEPALIVE
                    continue
                if kind == END:
                    break
                if (chunk := send(detail)) is not None:
                    yield chunk
        finally:
            service.live.unwatch(run_id, queue)
    else:  # finished, or written by another process: read the log until the run ends
        quiet = 0.0
        while True:
            row = await run_in_threadpool(service.log.get_run, run_id)
            for event in await run_in_threadpool(service.log.events, run_id):
                if (chunk := send(event)) is not None:
                    quiet = 0.0
                    yield chunk
            if row["status"] != "running":
                break
            await asyncio.sleep(POLL_SECONDS)
            quiet += POLL_SECONDS
            if quiet >= sse.KEEPALIVE_SECONDS:
                quiet = 0.0
                yield sse.KEEPALIVE
    row = await run_in_threadpool(service.log.get_run, run_id)
    yield sse.event({"run_id": run_id, "status": row["status"], "answer": row["answer"], "error": row["error"]},
                    name="end")

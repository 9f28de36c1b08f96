"""What the server holds for its life: the pipeline (model, index, log opened once), the queue, the live runs."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator

from starlette.requests import Request

from ..api import ReAgent
from ..reasoning.conversation import Turn, ask_in_conversation
from ..errors import QuestionError, ReagentError
from ..reasoning.answer import Answer
from ..reasoning.pipeline import Pipeline, validate_question
from ..share.compat import with_question_settings
from .errors import ApiError, bad_request, from_reagent_error
from .live import LiveRuns, ObservedLog
from .worker import TERMINAL, Job, Worker

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
DISCONNECTED = "the client disconnected"
STOPPED = "the server was stopped (Ctrl-C)"


@dataclass(frozen=True)
class ServeSettings:
    """How the server answers: the names it serves under, its key, its queue and its limits."""

    model: str  # the id `GET /v1/models` lists and requests must name
    index: str
    api_key: str | None = None  # required as a Bearer token (or the page's cookie) when set
    max_queue: int = 8  # questions that may wait while one is answered; more get 429
    allowed_hosts: tuple[str, ...] | None = LOOPBACK_HOSTS  # Host header names accepted; None: any
    max_body_bytes: int = 1_000_000
    # what clients of the same home compare before sending questions here (reagent_local/share/compat.py)
    identity: dict[str, Any] | None = None


class Service:
    """The served ReAgent: requests submit questions to its worker and follow their runs."""

    def __init__(self, agent: ReAgent, settings: ServeSettings) -> None:
        if not isinstance(agent.pipeline.log, ObservedLog):
            raise TypeError("the served pipeline must log through reagent_local.serve.live.ObservedLog")
        self.agent = agent
        self.settings = settings
        self.log: ObservedLog = agent.pipeline.log
        self.worker: Worker | None = None
        self.live: LiveRuns | None = None
        self.started_at = time.time()

    def start(self) -> None:
        """Start the worker on the running event loop (the app's startup)."""
        loop = asyncio.get_running_loop()
        self.live = LiveRuns(loop)
        self.worker = Worker(self.answer, loop, max_queue=self.settings.max_queue)
        live = self.live
        # a run whose closing could not be logged (a broken log) still ends for its watchers
        self.worker.on_end = lambda job, kind: live.listen("finish", job.run_id, kind)
        self.log.listeners.extend([live.listen, self.worker.listen])
        self.worker.start()

    def stop(self, reason: str = STOPPED) -> None:
        """Refuse waiting questions; the running run stops at its next step and is marked (any thread)."""
        if self.worker is not None:
            self.worker.stop(reason)

    async def close(self, timeout: float = 120.0) -> None:
        """Stop, and wait for the running run to be closed in the log (the app's shutdown)."""
        self.stop()
        if self.worker is not None:
            await asyncio.to_thread(self.worker.join, timeout)
        self.log.listeners.clear()

    def question(self, text: Any, param: str = "messages") -> str:
        """The question as the pipeline will take it, or a 400 (naming ``param``) that says what is wrong."""
        if text is not None and not isinstance(text, str):
            raise bad_request("the question must be a string", param=param, code="invalid_question")
        try:
            return validate_question(text, self.agent.pipeline.config.pipeline.max_question_chars)
        except QuestionError as exc:
            error = from_reagent_error(exc)
            error.param = param
            raise error from None

    def question_settings(self, value: Any) -> dict[str, Any] | None:
        """A question's ``[pipeline]`` settings, checked now (a 400 that names the setting), or None."""
        if value is None or value == {}:
            return None
        if not isinstance(value, dict):
            raise bad_request("'settings' must be an object of [pipeline] settings", param="settings")
        try:
            with_question_settings(self.agent.pipeline.config, value)
        except ReagentError as exc:
            raise bad_request(exc.message + (f" ({exc.hint})" if exc.hint else ""), param="settings") from None
        return value

    def context(self, history: Any, conversation: Any = None) -> dict[str, Any] | None:
        """The conversation a question is asked in (earlier turns, an id), checked now (a 400), or None."""
        if history is None and conversation is None:
            return None
        if conversation is not None and not isinstance(conversation, str):
            raise bad_request("'conversation' must be a string (an id for the log)", param="conversation")
        if history is None:
            history = []
        if not isinstance(history, list):
            raise bad_request("'history' must be a list of {question, answer, titles} turns", param="history")
        try:
            turns = [Turn.from_dict(item) for item in history]
        except ValueError as exc:
            raise bad_request(str(exc), param="history") from None
        return {"history": turns, "conversation": conversation or ""}

    def answer(self, question: str, *, should_stop: Any = None, settings: dict[str, Any] | None = None,
               context: dict[str, Any] | None = None) -> Answer:
        """Answer with the served pipeline, or with a pipeline of the question's settings around the same model and index;
        in a conversation (``context``), a follow-up is made standalone first (reagent_local/reasoning/conversation.py)."""
        pipeline = self.agent.pipeline
        if settings:
            config = with_question_settings(pipeline.config, settings)
            pipeline = Pipeline(config, llm=pipeline.llm, retriever=pipeline.retriever, log=pipeline.log,
                                kg=pipeline.kg, role_llms=pipeline.role_llms)
        if context:
            return ask_in_conversation(pipeline, question, context.get("history") or (),
                                       conversation=context.get("conversation") or "", should_stop=should_stop)
        return pipeline.ask(question, should_stop=should_stop)

    def submit(self, question: str, settings: dict[str, Any] | None = None,
               context: dict[str, Any] | None = None) -> Job:
        """Queue a question (429 when the queue is full)."""
        assert self.worker is not None, "the service has not started"
        return self.worker.submit(question, settings, context)

    def cancel(self, job: Job, reason: str = DISCONNECTED) -> None:
        """Drop a waiting job, or stop a running one at its next step."""
        if self.worker is not None and job.state not in TERMINAL:
            self.worker.cancel(job, reason)


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The request body as a JSON object, or a 400 (413 when larger than ``limit`` bytes)."""
    size = 0
    chunks = []
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"the request body is larger than {limit:,} bytes", code="body_too_large")
        chunks.append(chunk)
    try:
        body = json.loads(b"".join(chunks).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad_request(f"the request body is not valid JSON ({exc})", code="invalid_json") from None
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object", code="invalid_json")
    return body


TICK = 0.25  # seconds between follow's quiet ticks


async def follow(job: Job, request: Request | None, *, tick: float = TICK) -> AsyncIterator[tuple[str, Any] | None]:
    """A job's updates until its last one; None every ``tick`` seconds without one (for keep-alives).

    With ``request`` given, a client that has gone away cancels the job. A streaming response
    passes None: Starlette cancels its body on a disconnect, and the caller cancels the job then.
    """
    getter: asyncio.Future | None = None
    try:
        while True:
            getter = getter or asyncio.ensure_future(job.next())
            finished, _ = await asyncio.wait({getter}, timeout=tick)
            if not finished:
                if request is not None and await request.is_disconnected():
                    return
                yield None
                continue
            item, getter = getter.result(), None
            yield item
            if item[0] in TERMINAL:
                return
    finally:
        if getter is not None:
            getter.cancel()

"""One model answers one question at a time: a bounded queue in front of one worker thread.

A request becomes a ``Job``; the worker thread runs its question through the pipeline
while the request's handler reads the job's updates on the event loop:
``("queued", n)`` (n questions ahead of it), ``("run", run_id)``, ``("event", Event)``
for each event of its run as it is logged, and one last ``("done", Answer)``,
``("failed", ApiError)`` or ``("cancelled", reason)``. Cancelling a waiting job drops it
(it never became a run); cancelling the running one stops its run at the next step
(``Pipeline.ask``'s ``should_stop`` hook), and the log marks it ``cancelled``.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from ..agents.controller import RunCancelled
from ..reasoning.answer import Answer
from ..errors import ReagentError
from .errors import ApiError, from_reagent_error, internal

AskFunction = Callable[..., Answer]  # ask(question, should_stop=..., [settings=...], [context=...]) -> Answer
TERMINAL = ("done", "failed", "cancelled")
_ids = itertools.count(1)


@dataclass(eq=False)
class Job:
    """One question waiting for, or being answered by, the worker."""

    question: str
    loop: asyncio.AbstractEventLoop
    id: int = field(default_factory=lambda: next(_ids))
    updates: asyncio.Queue = field(default_factory=asyncio.Queue)
    state: str = "queued"  # queued, running, done, failed, cancelled
    run_id: str | None = None
    stop_reason: str | None = None  # set to stop the running job at its next step
    ahead: int = 0  # questions ahead of it when it was last told
    settings: dict[str, Any] | None = None  # the asker's [pipeline] settings (reagent_local/share/compat.py)
    context: dict[str, Any] | None = None  # the conversation it is asked in: {"history": [Turn], "conversation": id}

    def push(self, kind: str, detail: Any) -> None:
        """Hand an update to the request's handler (from any thread)."""
        try:
            self.loop.call_soon_threadsafe(self.updates.put_nowait, (kind, detail))
        except RuntimeError:  # the event loop is closed: nobody is listening any more
            pass

    async def next(self) -> tuple[str, Any]:
        """The next update."""
        return await self.updates.get()


class Worker:
    """The queue and the thread that answers its questions, one at a time."""

    def __init__(self, ask: AskFunction, loop: asyncio.AbstractEventLoop, *, max_queue: int = 8,
                 seconds_per_run: float = 30.0) -> None:
        self._ask = ask
        self.loop = loop
        self.on_end: Callable[[Job, str], None] | None = None  # told when a job has ended, in the worker thread
        self.max_queue = max_queue
        self.seconds_per_run = seconds_per_run  # running mean of finished runs, for Retry-After
        self.current: Job | None = None
        self.counts = {"accepted": 0, "refused": 0, "done": 0, "failed": 0, "cancelled": 0}
        self._waiting: deque[Job] = deque()
        self._cond = threading.Condition()
        self._stopping: str | None = None
        self._thread = threading.Thread(target=self._loop, name="reagent-serve-worker", daemon=True)

    def start(self) -> None:
        """Start the worker thread."""
        self._thread.start()

    # -- requests ---------------------------------------------------------------------
    def submit(self, question: str, settings: dict[str, Any] | None = None,
               context: dict[str, Any] | None = None) -> Job:
        """Queue a question; a full queue is a 429 with Retry-After, a stopping server a 503."""
        with self._cond:
            if self._stopping is not None:
                raise ApiError(503, "the server is stopping; ask again when it is back", type="server_error",
                               code="server_stopping")
            if len(self._waiting) >= self.max_queue and (self.current is not None or self._waiting):
                self.counts["refused"] += 1
                wait = max(1, math.ceil(self.seconds_per_run))
                raise ApiError(429, f"the server is busy: {len(self._waiting)} questions are waiting (the limit is "
                               f"{self.max_queue}); retry in about {wait} s", type="rate_limit_error",
                               code="queue_full", headers={"Retry-After": str(wait)})
            job = Job(question, self.loop, settings=settings, context=context)
            self._waiting.append(job)
            self.counts["accepted"] += 1
            job.ahead = len(self._waiting) - 1 + (self.current is not None)
            job.push("queued", job.ahead)
            self._cond.notify_all()
            return job

    def cancel(self, job: Job, reason: str) -> None:
        """A waiting job leaves the queue; the running one stops at its next step."""
        with self._cond:
            if job in self._waiting:
                self._waiting.remove(job)
                job.state = "cancelled"
                self.counts["cancelled"] += 1
                job.push("cancelled", reason)
                self._tell_positions()
            elif job is self.current and job.stop_reason is None:
                job.stop_reason = reason

    def stop(self, reason: str) -> None:
        """Refuse new and waiting questions (503); the running one stops at its next step and is marked."""
        with self._cond:
            self._stopping = reason
            while self._waiting:
                job = self._waiting.popleft()
                job.state = "failed"
                job.push("failed", ApiError(503, "the server stopped before this question's turn; ask again when "
                                            "it is back", type="server_error", code="server_stopping"))
            if self.current is not None and self.current.stop_reason is None:
                self.current.stop_reason = reason
            self._cond.notify_all()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the worker thread to end (after ``stop``); True when it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def status(self) -> dict[str, Any]:
        """What the queue holds now, and counts since the server started."""
        with self._cond:
            return {"running": self.current.run_id if self.current else None, "waiting": len(self._waiting),
                    "max_queue": self.max_queue, "seconds_per_run": round(self.seconds_per_run, 1),
                    "stopping": self._stopping is not None, **self.counts}

    # -- the log's listener -------------------------------------------------------------
    def listen(self, what: str, run_id: str, detail: Any) -> None:
        """An ObservedLog listener: the running job learns its run id and gets its run's events."""
        job = self.current
        if job is None:
            return
        if what == "start" and job.run_id is None and threading.current_thread() is self._thread:
            job.run_id = run_id
            job.push("run", run_id)
        elif what == "event" and run_id == job.run_id:
            job.push("event", detail)

    # -- the worker thread ----------------------------------------------------------------
    def _tell_positions(self) -> None:
        for number, job in enumerate(self._waiting):
            ahead = number + (self.current is not None)
            if ahead != job.ahead:
                job.ahead = ahead
                job.push("queued", ahead)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._waiting and self._stopping is None:
                    self._cond.wait()
                if not self._waiting:
                    return
                job = self.current = self._waiting.popleft()
                job.state = "running"
                self._tell_positions()
            started = time.monotonic()
            kind, detail = self._answer(job)
            if self.on_end is not None and job.run_id is not None:
                self.on_end(job, kind)
            with self._cond:
                job.state = kind
                self.counts[kind] += 1
                if kind == "done":
                    self.seconds_per_run = 0.7 * self.seconds_per_run + 0.3 * (time.monotonic() - started)
                self.current = None
                self._tell_positions()
            job.push(kind, detail)

    def _answer(self, job: Job) -> tuple[str, Any]:
        try:
            extra: dict[str, Any] = {"settings": job.settings} if job.settings else {}
            if job.context:
                extra["context"] = job.context
            return "done", self._ask(job.question, should_stop=lambda: job.stop_reason, **extra)
        except RunCancelled as exc:
            return "cancelled", exc.reason
        except ReagentError as exc:
            return "failed", from_reagent_error(exc)
        except Exception as exc:  # noqa: BLE001 - the request gets a 500 that names it; the server goes on
            print(f"reagent serve: a run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            return "failed", internal(exc)

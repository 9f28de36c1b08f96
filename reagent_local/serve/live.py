"""Live events: the server's log hands every event it commits to listeners, and watchers follow a run.

``ObservedLog`` is the EventLog the server's pipeline writes through; after each write
has committed it calls its listeners (in the writing thread). ``LiveRuns`` keeps the
events of the runs this process is executing and feeds them to asyncio watchers, so
``GET /events/{id}`` and the page see an event as soon as it is in the log. A run that
is not executing here (finished, or written by another process) is read from the log.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..core import events as ev
from ..core.log import Checkpoint, Event, EventLog
from ..trace.describe import summarize

# (what happened, run id, detail): ("start", id, None), ("event", id, Event), ("finish", id, status)
Listener = Callable[[str, str, Any], None]
END = "end"  # the last item a watcher gets: ("end", status)


class ObservedLog(EventLog):
    """An EventLog that tells its listeners about each run start, event and finish once committed."""

    def __init__(self, path: Any, read_only: bool = False) -> None:
        super().__init__(path, read_only)
        self.listeners: list[Listener] = []

    def _tell(self, what: str, run_id: str, detail: Any) -> None:
        for listener in list(self.listeners):
            listener(what, run_id, detail)

    def start_run(self, question: str, config: Mapping[str, Any], run_id: str | None = None) -> str:
        run_id = super().start_run(question, config, run_id)
        self._tell("start", run_id, None)
        return run_id

    def append(self, run_id: str, type: str, **kw: Any) -> Event:
        event = super().append(run_id, type, **kw)
        self._tell("event", run_id, event)
        return event

    def add_checkpoint(self, run_id: str, **kw: Any) -> tuple[Event, Checkpoint]:
        event, checkpoint = super().add_checkpoint(run_id, **kw)
        self._tell("event", run_id, event)
        return event, checkpoint

    def finish_run(self, run_id: str, answer: str | None, status: str, stats: Mapping[str, Any], **kw: Any) -> None:
        super().finish_run(run_id, answer, status, stats, **kw)
        self._tell("finish", run_id, status)


@dataclass
class Describer:
    """One-line summaries of one run's events; remembers checkpoint labels so rollbacks can name them."""

    checkpoints: dict[int, Checkpoint] = field(default_factory=dict)

    def __call__(self, event: Event) -> dict[str, Any]:
        """The event as JSON for a watcher: the log's fields plus a plain-text ``summary``."""
        body = ev.decode(event)
        if isinstance(body, ev.Checkpoint):
            self.checkpoints[body.checkpoint_id] = Checkpoint(body.checkpoint_id, event.run_id, event.seq, event.time,
                                                              body.label, {})
        return {"seq": event.seq, "run_id": event.run_id, "time": event.time, "wall_time": event.wall_time,
                "agent": event.agent, "type": event.type, "kind": event.payload.get("kind"),
                "summary": summarize(body, self.checkpoints), "payload": event.payload,
                "parent_seq": event.parent_seq}


@dataclass
class _Feed:
    events: list[Event] = field(default_factory=list)
    watchers: set[asyncio.Queue] = field(default_factory=set)


class LiveRuns:
    """The runs executing in this process and who watches them (thread-safe; watchers live on ``loop``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._lock = threading.Lock()
        self._feeds: dict[str, _Feed] = {}

    def listen(self, what: str, run_id: str, detail: Any) -> None:
        """An ObservedLog listener."""
        with self._lock:
            if what == "start":
                self._feeds[run_id] = _Feed()
                return
            feed = self._feeds.get(run_id)
            if feed is None:
                return
            if what == "event":
                feed.events.append(detail)
                item: tuple[str, Any] = ("event", detail)
            else:
                del self._feeds[run_id]
                item = (END, detail)
            for queue in feed.watchers:
                self.loop.call_soon_threadsafe(queue.put_nowait, item)

    def watch(self, run_id: str) -> tuple[list[Event], asyncio.Queue] | None:
        """The events so far and a queue of those to come, or None when the run is not executing here."""
        with self._lock:
            feed = self._feeds.get(run_id)
            if feed is None:
                return None
            queue: asyncio.Queue = asyncio.Queue()
            feed.watchers.add(queue)
            return list(feed.events), queue

    def unwatch(self, run_id: str, queue: asyncio.Queue) -> None:
        """Stop feeding a watcher."""
        with self._lock:
            feed = self._feeds.get(run_id)
            if feed is not None:
                feed.watchers.discard(queue)

    def running(self) -> list[str]:
        """Ids of the runs executing here."""
        with self._lock:
            return list(self._feeds)

"""Server-Sent Events: the wire format, keep-alives, and which log events are progress worth telling."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

KEEPALIVE_SECONDS = 15.0
KEEPALIVE = ": keep-alive\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
MEDIA_TYPE = "text/event-stream"


async def with_keepalives(items: AsyncIterator[Any], tick: float) -> AsyncIterator[Any]:
    """The items of a followed job, its quiet ticks (None, every ``tick`` seconds) turned into one
    KEEPALIVE every KEEPALIVE_SECONDS."""
    quiet = 0.0
    async for item in items:
        if item is None:
            quiet += tick
            if quiet >= KEEPALIVE_SECONDS:
                quiet = 0.0
                yield KEEPALIVE
            continue
        quiet = 0.0
        yield item

# the events a chat client is told about while it waits (the page shows every event)
_PROGRESS = {"plan", "decision", "rollback_local", "rollback_global", "conflict_set", "override", "skipped",
             "fallback_answer", "budget_exhausted", "signal", "rewrite"}


def event(data: Any, *, name: str | None = None, id: int | str | None = None) -> str:
    """One event: optional ``event:`` and ``id:`` lines, the JSON on one ``data:`` line."""
    head = (f"event: {name}\n" if name else "") + (f"id: {id}\n" if id is not None else "")
    return head + "data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str) + "\n\n"


def done() -> str:
    """The end of an OpenAI stream."""
    return "data: [DONE]\n\n"


def progress_line(described: dict[str, Any]) -> str | None:
    """A line of progress for a chat client from a described event (see live.Describer), or None to skip it."""
    kind = described["type"]
    if kind == "message" and described.get("kind") == "inform" and described["agent"] == "retriever":
        return f"[retriever] {described['summary']}"
    if kind not in _PROGRESS or (kind == "signal" and not described["payload"].get("fired")):
        return None
    return f"[{described['agent']}] {described['summary']}"


def waiting_line(ahead: int) -> str:
    """What a queued client is told."""
    if ahead <= 0:
        return "[server] your question is next"
    return f"[server] waiting: {ahead} question{'s' if ahead != 1 else ''} ahead of yours"


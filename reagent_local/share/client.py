"""A thin client of a `reagent serve` on this machine: ask a question, or make one model call.

Questions go through the server's queue (``POST /api/ask``, streamed, so the client learns the
run id at once and a closed connection cancels the run); model calls go to ``POST /api/llm``.
A reader thread takes the stream's events, so the caller can stop waiting (Ctrl-C, ``should_stop``)
at any moment: closing the connection makes the server cancel the run.
"""

from __future__ import annotations

import http.client
import json
import queue
import socket
import threading
import time
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

from ..errors import QuestionError, ReagentError
from .presence import ServerInfo

CONNECT_SECONDS = 5.0
END = object()


QUEUE_FULL_RETRIES = 20


class ServerUnavailable(ReagentError):
    """The server could not take the question (gone, stopping, refusing): nothing was started there."""

    def __init__(self, message: str, *, retry_after: float | None = None, hint: str | None = None) -> None:
        self.retry_after = retry_after  # set for a full queue: the server's estimate of when a place frees
        super().__init__(message, hint=hint)


class ServerFailed(ReagentError):
    """The server took the question and then failed, stopped or went away while answering it."""

    def __init__(self, message: str, *, run_id: str | None = None, gone: bool = False, hint: str | None = None) -> None:
        self.run_id = run_id
        self.gone = gone
        super().__init__(message, hint=hint)


class ServerClient:
    """Requests to one server; every method opens its own connection (the server is on this machine)."""

    def __init__(self, server: ServerInfo, *, timeout: float | None = None) -> None:
        self.server = server
        parts = urlsplit(server.url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.timeout = timeout  # per read; None: a question may take as long as it takes

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Host": f"{self.host}:{self.port}"}
        if self.server.api_key:
            headers["Authorization"] = f"Bearer {self.server.api_key}"
        return headers

    def _open(self, method: str, path: str, body: Any = None) -> tuple[http.client.HTTPConnection, Any]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=CONNECT_SECONDS)
        try:
            connection.request(method, path, body=None if body is None else json.dumps(body), headers=self._headers())
            connection.sock.settimeout(self.timeout)
            return connection, connection.getresponse()
        except OSError as exc:
            connection.close()
            raise ServerUnavailable(f"{self.server.describe()} did not answer ({exc})") from None

    def get(self, path: str) -> Any:
        """GET a JSON endpoint."""
        connection, response = self._open("GET", path)
        try:
            return _json_or_raise(response)
        finally:
            connection.close()

    def generate(self, payload: dict[str, Any]) -> dict[str, Any]:
        """One model call on the server's model (``POST /api/llm``)."""
        connection, response = self._open("POST", "/api/llm", payload)
        try:
            return _json_or_raise(response)
        except (OSError, http.client.HTTPException) as exc:
            raise ServerFailed(f"{self.server.describe()} went away during a model call ({exc})", gone=True) from None
        finally:
            connection.close()

    def ask(self, question: str, settings: dict[str, Any], *, on_event: Callable[[str, Any], None] | None = None,
            should_stop: Callable[[], str | None] | None = None,
            context: dict[str, Any] | None = None) -> dict[str, Any]:
        """Answer a question in the server's queue: the ``answer`` event's data (``answer``, ``passages``).

        ``context``: the conversation (``history``, ``conversation``) a follow-up is read in.
        ``on_event(kind, data)`` sees ``queued``, ``run`` and ``event``; ``should_stop`` (a reason or None) is
        checked twice a second and closes the connection, which the server takes as a cancellation.
        """
        body = {"question": question, "stream": True, "settings": settings, **(context or {})}
        for attempt in range(QUEUE_FULL_RETRIES + 1):
            connection, response = self._open("POST", "/api/ask", body)
            if response.status == 200:
                break
            try:
                _json_or_raise(response)
            except ServerUnavailable as exc:  # a full queue: wait for a place, as the server says
                if exc.retry_after is None or attempt == QUEUE_FULL_RETRIES:
                    raise
                if on_event is not None:
                    on_event("queue_full", {"retry_after": exc.retry_after})
                time.sleep(min(exc.retry_after, 30.0))
            finally:
                connection.close()
        events: queue.Queue = queue.Queue()
        reader = threading.Thread(target=_read_events, args=(response, events), daemon=True)
        reader.start()
        run_id: str | None = None
        try:
            while True:
                try:
                    kind, data = events.get(timeout=0.5)
                except queue.Empty:
                    reason = should_stop() if should_stop is not None else None
                    if reason:
                        from ..agents.controller import RunCancelled

                        raise RunCancelled(reason) from None
                    continue
                if kind is END:
                    raise ServerFailed(f"the connection to {self.server.describe()} closed before the answer "
                                       f"({data})", run_id=run_id, gone=True)
                if kind == "run":
                    run_id = data.get("run_id")
                if kind == "answer":
                    return data
                if kind == "error":
                    raise _stream_error(data.get("error") or {}, run_id, self.server)
                if on_event is not None:
                    on_event(kind, data)
        finally:
            _close(connection, reader)


def _close(connection: http.client.HTTPConnection, reader: threading.Thread) -> None:
    """Close at once: the socket is shut (the reader thread sees the end), then the connection closed."""
    if connection.sock is not None:
        try:
            connection.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    reader.join(5)
    connection.close()


def _read_events(response: Any, events: queue.Queue) -> None:
    """Put each Server-Sent Event of ``response`` as (name, data) on ``events``; then (END, why it ended)."""
    why = "the server closed the stream"
    try:
        for name, data in _parse(response):
            events.put((name, data))
    except Exception as exc:  # noqa: BLE001 - whatever ended the stream, the caller hears of it once
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    events.put((END, why))


def _parse(response: Any) -> Iterator[tuple[str, Any]]:
    name, data = "message", []
    while True:
        line = response.readline()
        if not line:
            return
        text = line.decode("utf-8").rstrip("\r\n")
        if not text:
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif text.startswith("event:"):
            name = text[6:].strip()
        elif text.startswith("data:"):
            data.append(text[5:].strip())


def _json_or_raise(response: Any) -> Any:
    body = response.read()
    try:
        data = json.loads(body or b"null")
    except ValueError:
        data = None
    if response.status == 200:
        return data
    error = (data or {}).get("error", {}) if isinstance(data, dict) else {}
    message, code = error.get("message") or f"HTTP {response.status}", error.get("code")
    if code == "invalid_question":
        raise QuestionError(message)
    if response.status == 429:
        raise ServerUnavailable(f"the server's queue is full: {message}",
                                retry_after=float(response.getheader("Retry-After") or 5))
    if response.status in (401, 403, 404, 503) or code == "server_stopping":
        raise ServerUnavailable(f"the server refused ({code or response.status}): {message}")
    raise ReagentError(message)


def _stream_error(error: dict[str, Any], run_id: str | None, server: ServerInfo) -> ReagentError:
    """The error a streamed answer ended with, as this process would have raised it."""
    message, code = error.get("message") or "the server failed", error.get("code")
    if code == "invalid_question":
        return QuestionError(message)
    if code in ("cancelled", "server_stopping"):
        where = f"run {run_id} is cancelled in the log" if run_id else "no run was started"
        return ServerFailed(f"{server.describe()} stopped while answering: {where}", run_id=run_id,
                            hint="ask again: with no server running, `reagent ask` loads its own model")
    return ReagentError(message)

"""Helpers for the server tests: a scripted service (ScriptedLLM over the Olympics index) on a real uvicorn.

Run as a script (``python serve_support.py LOG PORTFILE``) it serves the scripted service the way
``reagent serve`` does (same ``serve`` function, same Ctrl-C handling), for the shutdown test.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenario_runs import QUESTION, olympics_index, olympics_llm, scenario_config  # noqa: E402

from reagent_local.api import ReAgent  # noqa: E402
from reagent_local.reasoning.pipeline import Pipeline  # noqa: E402
from reagent_local.serve import ServeSettings, Service  # noqa: E402
from reagent_local.serve.live import ObservedLog  # noqa: E402

MODEL = "scripted-olympics"
OLYMPICS = QUESTION


class SlowLLM:
    """A model that takes ``seconds`` per call (the load and cancel tests need runs that take time)."""

    def __init__(self, inner: Any, seconds: float) -> None:
        self.inner = inner
        self.seconds = seconds
        self.model_id = "slow-scripted"
        self.calls = 0

    def generate_json(self, messages: Sequence[Any], schema: type, **kw: Any) -> Any:
        self.calls += 1
        time.sleep(self.seconds)
        return self.inner.generate_json(messages, schema, **kw)


def scripted_service(log_path: Path, *, seconds_per_call: float = 0.0, api_key: str | None = None,
                     max_queue: int = 8, index: Any = None, max_question_chars: int | None = None,
                     allowed_hosts: tuple[str, ...] | None = ("127.0.0.1", "localhost"),
                     config: Any = None) -> Service:
    """The Olympics scenario (a local and a global rollback on its first run) behind a Service.

    With ``config`` (a home's), the service carries that configuration and its identity, as
    `reagent serve` does, so that clients of the home may send it their questions.
    """
    identity = None
    if config is not None:
        from reagent_local.share.compat import identity as identity_of

        identity = identity_of(config)
    config = config or scenario_config()
    if max_question_chars is not None:
        config = replace(config, pipeline=replace(config.pipeline, max_question_chars=max_question_chars))
    llm = olympics_llm()
    if seconds_per_call:
        llm = SlowLLM(llm, seconds_per_call)
    pipeline = Pipeline(config, llm=llm, retriever=index or olympics_index(), log=ObservedLog(log_path))
    return Service(ReAgent(pipeline), ServeSettings(model=MODEL, index="olympics", api_key=api_key,
                                                    max_queue=max_queue, allowed_hosts=allowed_hosts,
                                                    identity=identity))


class RunningServer:
    """A uvicorn server in a thread of the test process; ``url`` is its base address."""

    def __init__(self, service: Service) -> None:
        import uvicorn

        from reagent_local.serve import create_app

        self.service = service
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(service), log_level="warning", access_log=False,
                                timeout_graceful_shutdown=5)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])),
                                       daemon=True)

    def __enter__(self) -> "RunningServer":
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.service.agent.close()


@contextmanager
def running(service: Service) -> Iterator[RunningServer]:
    with RunningServer(service) as server:
        yield server


def home_config(home: Path) -> Any:
    """The scenario's configuration in a home of its own (what a home's server and its clients share)."""
    from reagent_local.config import PathsConfig

    return replace(scenario_config(), paths=PathsConfig(home=Path(home)))


def main(argv: list[str]) -> None:
    """Serve the scripted service like `reagent serve` (the shutdown test sends it SIGINT).

    A fourth argument, a home, makes it announce itself there as `reagent serve` does.
    """
    from reagent_local.serve.server import bind, serve
    from reagent_local.share.presence import Announcement

    log_path, port_file, seconds = Path(argv[0]), Path(argv[1]), float(argv[2])
    config = home_config(Path(argv[3])) if len(argv) > 3 else None
    service = scripted_service(log_path, seconds_per_call=seconds, config=config)
    announcement = Announcement(config.paths.home) if config is not None else None
    if announcement is not None:
        announcement.hold()

    def ready(url: str) -> None:
        if announcement is not None:
            announcement.publish(url, model=MODEL, index="olympics", identity=service.settings.identity or {})
        port_file.write_text(url)

    sock = bind("127.0.0.1", 0)
    try:
        serve(service, sock, on_ready=ready)
    finally:
        service.agent.close()
        if announcement is not None:
            announcement.withdraw()
    print("stopped", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

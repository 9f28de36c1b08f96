"""`reagent serve`: a local HTTP API (OpenAI-compatible) and a page to ask and watch the agents work."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..config import BACKTRACKING
from ..errors import ReagentError
from .common import info


@click.command(name="serve")
@click.option("--index", help="Index name or path, or several separated by commas (a,b: searched together; "
                               "default: config retrieval.index, enwiki-sample).")
@click.option("--model", help="Registry model name or path to a .gguf file.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; any but a loopback address needs --api-key.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="Port (0: any free one).")
@click.option("--api-key", envvar="REAGENT_API_KEY", default=None, metavar="KEY",
              help="Require 'Authorization: Bearer KEY' on every request (or set REAGENT_API_KEY).")
@click.option("--queue", "max_queue", type=click.IntRange(0, 1000), default=8, show_default=True,
              help="Questions that may wait while one is answered; more get 429 with Retry-After.")
@click.option("--backtracking", type=click.Choice(list(BACKTRACKING)), help="Ablation switch.")
@click.option("--rules", default=None, metavar="SPEC", help="Question-shape rules (`reagent rules`).")
@click.option("--background", is_flag=True, help="Start the server detached (output in <home>/.serve/PID.log) and return.")
@click.option("--stop", is_flag=True, help="Stop the servers of this home (the running question is marked cancelled).")
@click.option("--status", is_flag=True, help="Show the servers of this home: address, pid, model, index, queue.")
def serve(index: str | None, model: str | None, host: str, port: int, api_key: str | None, max_queue: int,
          backtracking: str | None, rules: str | None, background: bool, stop: bool, status: bool) -> None:
    """Serve questions over HTTP on this machine until Ctrl-C.

    POST /v1/chat/completions (OpenAI-compatible, streaming too), GET /v1/models,
    POST /api/ask, GET /api/runs, /api/runs/ID, /runs/ID (trace page), /events/ID
    (live events), and a page at / to ask and watch the agents. The model and index
    are loaded once; one question is answered at a time, the others wait in a queue.
    The server announces itself in the home: `reagent ask`, `reagent bench run` and
    ReAgent.load of the same home send it their questions instead of loading the model.
    """
    from .common import config_from

    if sum((background, stop, status)) > 1:
        raise click.UsageError("--background, --stop and --status go one at a time")
    config = config_from(retrieval__index=index, llm__model=model, pipeline__backtracking=backtracking,
                         pipeline__rules=rules)
    home = Path(config.paths.home)
    if stop:
        _stop(home)
    elif status:
        _status(home)
    elif background:
        _background(home, host=host, port=port, api_key=api_key, max_queue=max_queue, index=index, model=model,
                    backtracking=backtracking, rules=rules)
    else:
        _foreground(config, host=host, port=port, api_key=api_key, max_queue=max_queue)


def _foreground(config: Any, *, host: str, port: int, api_key: str | None, max_queue: int) -> None:
    from ..serve.server import bind, check_binding, open_service, serve as run
    from ..share.presence import Announcement

    check_binding(host, api_key)
    sock = bind(host, port)  # before loading: a busy port fails at once
    announcement = Announcement(Path(config.paths.home))
    try:
        announcement.hold()  # before loading: `reagent serve --status` shows it starting
    except OSError as exc:
        announcement = None
        info(f"cannot announce this server in {config.paths.home} ({exc.strerror}): `reagent ask` will not find it")
    info(f"loading {config.llm.model} and index {config.retrieval.index} ...")
    try:
        service = open_service(config, host=host, api_key=api_key, max_queue=max_queue)
        try:
            def ready(url: str) -> None:
                if announcement is not None:
                    announcement.publish(url, model=config.llm.model, index=config.retrieval.index,
                                         identity=service.settings.identity or {}, api_key=api_key)
                info(f"serving on {url}  (page: {url}/, OpenAI base URL: {url}/v1, model id: {config.llm.model})")
                info("Ctrl-C stops: the running question is stopped at its next step and marked in the log")

            run(service, sock, on_ready=ready, on_stop=announcement.withdraw_address if announcement else None)
        finally:
            service.agent.close()
    finally:
        if announcement is not None:
            announcement.withdraw()
    info("stopped")


def _background(home: Path, *, host: str, port: int, api_key: str | None, max_queue: int, **given: str | None) -> None:
    import os

    from ..serve.server import check_binding
    from ..share.background import start_background

    check_binding(host, api_key)
    args = ["--host", host, "--port", str(port), "--queue", str(max_queue)]
    for name, value in given.items():
        if value is not None:
            args += [f"--{name}", value]
    env = {**os.environ, **({"REAGENT_API_KEY": api_key} if api_key else {})}  # never on a command line
    info("starting the server in the background ...")
    server, output = start_background(args, home, env=env)
    info(f"serving on {server.url}  (pid {server.pid}, model {server.model}, index {server.index}; output in {output})")
    info("`reagent serve --status` shows it, `reagent serve --stop` stops it")


def _stop(home: Path) -> None:
    from ..share.background import stop_servers

    stopped = stop_servers(home, on_wait=info)
    if not stopped:
        info(f"no server runs on {home}")
        return
    for pid in stopped:
        info(f"stopped server {pid}")


def _status(home: Path) -> None:
    import time

    from ..share.background import output_file
    from ..share.client import ServerClient
    from ..share.presence import live_servers, starting_servers

    servers, starting = list(live_servers(home)), starting_servers(home)
    for server in servers:
        try:
            queue = ServerClient(server, timeout=5).get("/api/status").get("queue", {})
            state = (f"running {queue.get('running')}" if queue.get("running") else "idle") + \
                f", {queue.get('waiting', 0)} waiting, {queue.get('done', 0)} answered"
        except ReagentError as exc:
            state = f"not answering ({exc.message})"
        output = output_file(home, server.pid)
        click.echo(f"{server.url}  pid {server.pid}  model {server.model}  index {server.index}  "
                   f"up {_ago(time.time() - server.started_at)}  {state}"
                   + (f"  output {output}" if output.exists() else ""))
    for pid in starting:
        click.echo(f"pid {pid}: starting (loading the model and index)")
    if not servers and not starting:
        info(f"no server runs on {home}")
        sys.exit(1)  # as `systemctl status` does: scripts can test it


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"

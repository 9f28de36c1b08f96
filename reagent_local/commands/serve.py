"""`reagent serve`: a local HTTP API (OpenAI-compatible) and a page to ask and watch the agents work."""

from __future__ import annotations

import click

from ..config import BACKTRACKING
from .common import info


@click.command(name="serve")
@click.option("--index", help="Index name or path (default: config retrieval.index, enwiki-sample).")
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
def serve(index: str | None, model: str | None, host: str, port: int, api_key: str | None, max_queue: int,
          backtracking: str | None, rules: str | None) -> None:
    """Serve questions over HTTP on this machine until Ctrl-C.

    POST /v1/chat/completions (OpenAI-compatible, streaming too), GET /v1/models,
    POST /api/ask, GET /api/runs, /api/runs/ID, /runs/ID (trace page), /events/ID
    (live events), and a page at / to ask and watch the agents. The model and index
    are loaded once; one question is answered at a time, the others wait in a queue.
    """
    from ..serve.server import bind, check_binding, open_service, serve as run
    from .common import config_from

    check_binding(host, api_key)
    config = config_from(retrieval__index=index, llm__model=model, pipeline__backtracking=backtracking,
                         pipeline__rules=rules)
    sock = bind(host, port)  # before loading: a busy port fails at once
    info(f"loading {config.llm.model} and index {config.retrieval.index} ...")
    service = open_service(config, host=host, api_key=api_key, max_queue=max_queue)
    try:
        def ready(url: str) -> None:
            info(f"serving on {url}  (page: {url}/, OpenAI base URL: {url}/v1, model id: {config.llm.model})")
            info("Ctrl-C stops: the running question is stopped at its next step and marked in the log")

        run(service, sock, on_ready=ready)
    finally:
        service.agent.close()
    info("stopped")

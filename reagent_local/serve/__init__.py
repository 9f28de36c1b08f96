"""`reagent serve`: a local HTTP API (OpenAI-compatible) and a page to ask and watch the agents work.

    service = open_service(config, host="127.0.0.1")   # model, index and log, opened once
    serve(service, bind("127.0.0.1", 8080))             # until Ctrl-C

Modules: ``app`` (routes, guard, errors), ``openai_api`` (/v1), ``web`` (/api, /runs, /events,
the page), ``service`` (what the server holds), ``worker`` (the queue and its thread),
``live`` (events as they are logged), ``sse``, ``guard``, ``errors``, ``server`` (uvicorn).
"""

from .app import create_app
from .server import bind, check_binding, open_service, serve
from .service import ServeSettings, Service

__all__ = ["ServeSettings", "Service", "bind", "check_binding", "create_app", "open_service", "serve"]

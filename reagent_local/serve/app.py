"""The ASGI application: routes, the guard, errors in the OpenAI shape, and the service's life."""

from __future__ import annotations

import contextlib
import sys
from typing import AsyncIterator

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..errors import ReagentError
from . import model_api, openai_api, web
from .errors import ApiError, from_reagent_error, internal
from .guard import Guard
from .service import Service


def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return exc.response()


def _reagent_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ReagentError)
    return from_reagent_error(exc).response()


def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    message = f"no such endpoint: {request.method} {request.url.path}" if exc.status_code in (404, 405) else \
        str(exc.detail)
    return ApiError(exc.status_code, message, code=code, headers=dict(exc.headers or {})).response()


def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    print(f"reagent serve: {request.method} {request.url.path} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return internal(exc).response()


def create_app(service: Service) -> Starlette:
    """The app serving ``service``; its worker starts with the app and stops (marking its run) with it."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        service.start()
        try:
            yield
        finally:
            await service.close()

    routes = [
        Route("/v1/chat/completions", openai_api.chat_completions, methods=["POST"]),
        Route("/v1/models", openai_api.models, methods=["GET"]),
        Route("/api/ask", web.ask, methods=["POST"]),
        Route("/api/status", web.status, methods=["GET"]),
        Route("/api/llm", model_api.generate, methods=["POST"]),
        Route("/api/runs", web.runs, methods=["GET"]),
        Route("/api/runs/{run_id}", web.run_export, methods=["GET"]),
        Route("/runs/{run_id}", web.run_page, methods=["GET"]),
        Route("/events/{run_id}", web.run_events, methods=["GET"]),
        Route("/", web.page, methods=["GET"]),
        Route("/assets/{name}", web.asset, methods=["GET"]),
        Route("/favicon.ico", web.asset, methods=["GET"]),
    ]
    settings = service.settings
    app = Starlette(routes=routes, lifespan=lifespan,
                    middleware=[Middleware(Guard, api_key=settings.api_key, allowed_hosts=settings.allowed_hosts)],
                    exception_handlers={ApiError: _api_error, ReagentError: _reagent_error,
                                        HTTPException: _http_error, Exception: _unexpected})
    app.state.service = service
    return app

"""Who may call the server: the Host it is asked under, the page's origin, and the API key.

- With a loopback binding, only loopback Host names are answered: a web page elsewhere that
  re-points its own name at 127.0.0.1 (DNS rebinding) gets 403.
- A request a browser sends from another site (an ``Origin`` that is not this server) gets 403,
  so no web page can make the local model work for it.
- With an API key, every endpoint but the page's own files needs ``Authorization: Bearer KEY``
  (or the page's ``reagent_api_key`` cookie, which the page sets when the user types the key).
"""

from __future__ import annotations

import hmac
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import unquote

from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import ApiError

COOKIE = "reagent_api_key"
OPEN_PATHS = ("/", "/favicon.ico")  # the page and its assets carry no data
OPEN_PREFIXES = ("/assets/",)


def _host_name(host: str) -> str:
    """'localhost:8080' -> 'localhost', '[::1]:8080' -> '[::1]'."""
    if host.startswith("["):
        return host.split("]")[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Guard:
    """ASGI middleware: Host, Origin and API-key checks; errors in the OpenAI shape."""

    def __init__(self, app: ASGIApp, *, api_key: str | None, allowed_hosts: tuple[str, ...] | None) -> None:
        self.app = app
        self.api_key = api_key
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self.check(scope)
        if problem is not None:
            await problem.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def check(self, scope: Scope) -> ApiError | None:
        """The reason to refuse this request, or None."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if self.allowed_hosts is not None and _host_name(host).lower() not in self.allowed_hosts:
            return ApiError(403, f"this server answers only as {', '.join(self.allowed_hosts)}, not {host!r}",
                            type="permission_error", code="host_not_allowed")
        origin = headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1].rstrip("/").lower() != host.lower():
            return ApiError(403, f"requests from web pages of other origins ({origin}) are refused",
                            type="permission_error", code="cross_origin")
        path = scope.get("path", "")
        if self.api_key is None or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            return None
        given = _bearer(headers.get("authorization")) or _cookie(headers.get("cookie"))
        if given is None:
            return ApiError(401, "an API key is required: send the header 'Authorization: Bearer KEY' "
                            "(the key given to `reagent serve --api-key`)", type="authentication_error",
                            code="missing_api_key", headers={"WWW-Authenticate": "Bearer"})
        if not hmac.compare_digest(given.encode("utf-8"), self.api_key.encode("utf-8")):
            return ApiError(401, "the API key is wrong", type="authentication_error", code="invalid_api_key",
                            headers={"WWW-Authenticate": "Bearer"})
        return None


def _bearer(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _cookie(value: str | None) -> str | None:
    if not value:
        return None
    jar: Any = SimpleCookie()
    try:
        jar.load(value)
    except Exception:  # noqa: BLE001 - a malformed cookie header is the same as none
        return None
    morsel = jar.get(COOKIE)
    return unquote(morsel.value) if morsel is not None and morsel.value else None

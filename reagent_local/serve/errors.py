"""Errors as the OpenAI API shapes them: ``{"error": {"message", "type", "param", "code"}}`` with a status."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from ..errors import QuestionError, ReagentError, RunNotFoundError


class ApiError(Exception):
    """An error answer: HTTP status, a message that says what to do, OpenAI's type and code."""

    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error", code: str | None = None,
                 param: str | None = None, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param
        self.headers = dict(headers or {})
        super().__init__(message)

    def body(self) -> dict[str, Any]:
        """The JSON body (also sent as one Server-Sent Event when a stream fails)."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        """The JSON response."""
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def bad_request(message: str, *, param: str | None = None, code: str = "invalid_request") -> ApiError:
    """400: the request cannot be read or says nothing usable."""
    return ApiError(400, message, param=param, code=code)


def from_reagent_error(exc: ReagentError) -> ApiError:
    """A library error as an API error: the user's question is a 400, a missing run a 404, anything else a 500."""
    message = exc.message + (f" ({exc.hint})" if exc.hint else "")
    if isinstance(exc, QuestionError):
        return ApiError(400, message, param="messages", code="invalid_question")
    if isinstance(exc, RunNotFoundError):
        return ApiError(404, message, code="run_not_found")
    return ApiError(500, message, type="server_error", code=type(exc).__name__)


def internal(exc: BaseException) -> ApiError:
    """500 for an unexpected failure: its class and first line, never a stack trace."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    return ApiError(500, f"{type(exc).__name__}: {first}".rstrip(": "), type="server_error", code="internal_error")

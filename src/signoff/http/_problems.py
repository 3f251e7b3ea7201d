"""Every error the API answers, as RFC 9457 ``application/problem+json``, mapped here only.

Protocol refusals carry their own ``status`` and ``code`` (``signoff.exceptions``);
framework errors (bad JSON, wrong types, unknown routes, huge bodies) become
4xx problems; anything unexpected is logged and answered as a 503 problem that
says the outcome is unknown, never a 500 and never a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff.exceptions import (
    NotAuthenticated,
    OutcomeUnknown,
    SignoffError,
    StepUpRequired,
    StoreUnavailable,
    UpstreamUnavailable,
)
from signoff.http._methods import allowed_methods
from signoff.http._metrics import PROBLEM_CODE_SCOPE_KEY
from signoff.http._resource import challenge, presented_bearer
from signoff.http._state import AppState

log = logging.getLogger("signoff.http")

PROBLEM_MEDIA_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:signoff:problem:"
UNAVAILABLE = "unavailable"
UNKNOWN_OUTCOME = (
    "the server could not complete this request and its outcome is not known; "
    "read the proposal or execution status before retrying"
)
_RESERVED = frozenset({"type", "title", "status", "detail", "instance", "code", "errors"})
_HTTP_CODES = {
    400: "malformed_request",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    408: "request_timeout",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


class ProblemFieldError(BaseModel):
    """One field that is wrong: where, what is wrong, and the error's machine type."""

    loc: list[str] = Field(
        description="Path to the field: its part of the request (body, query, header, path) "
        "or, for invalid_arguments, the argument; then names and list indices, as strings"
    )
    msg: str
    type: str = Field(description="Machine error type, e.g. missing, extra_forbidden, int_type")


class Problem(BaseModel):
    """RFC 9457 problem details with signoff's stable machine ``code``."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="urn:signoff:problem:<code>")
    title: str
    status: int
    detail: str
    code: str = Field(description="Stable machine code, e.g. already_consumed, expired")
    instance: str | None = None
    errors: list[ProblemFieldError] | None = Field(
        default=None, description="Per-field errors of a malformed request"
    )


class ProblemResponse(JSONResponse):
    media_type = PROBLEM_MEDIA_TYPE
    code: str = ""


def problem(
    status: int,
    code: str,
    detail: str,
    *,
    instance: str | None = None,
    headers: Mapping[str, str] | None = None,
    extensions: Mapping[str, Any] | None = None,
    errors: list[dict[str, Any]] | None = None,
) -> ProblemResponse:
    """One problem response; extension members never override the standard ones."""
    body: dict[str, Any] = {
        "type": TYPE_PREFIX + code,
        "title": code.replace("_", " ").capitalize(),
        "status": status,
        "detail": detail,
        "code": code,
    }
    if instance is not None:
        body["instance"] = instance
    for key, value in (extensions or {}).items():
        if key not in _RESERVED and _is_json(value):
            body[key] = value
    if errors is not None:
        body["errors"] = errors
    response = ProblemResponse(body, status_code=status, headers=dict(headers or {}))
    response.code = code
    return response


# RFC 3986 pchar plus "/": what a path may hold unescaped.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"


def instance_of(scope: Scope) -> str:
    """The request's path as a URI reference (RFC 9457 ``instance``): percent-encoded,
    so ``/v1/proposals/a bé"<`` is ``/v1/proposals/a%20b%C3%A9%22%3C``, never raw text."""
    return quote(str(scope.get("path", "")), safe=_PATH_SAFE)


def error_problem(exc: SignoffError, *, instance: str | None = None) -> ProblemResponse:
    """The problem for a signoff error, by its own ``status`` and ``code``."""
    status = exc.status if 400 <= exc.status < 500 else 503
    headers: dict[str, str] = {}
    if isinstance(exc, StepUpRequired):
        headers["WWW-Authenticate"] = step_up_challenge(exc)
    elif isinstance(exc, NotAuthenticated):  # the handler below names the error when it can
        headers["WWW-Authenticate"] = "Bearer"
    if status == 503:
        headers["Retry-After"] = "1"
    if isinstance(exc.details.get("retry_after_seconds"), int):
        headers["Retry-After"] = str(exc.details["retry_after_seconds"])
    if exc.status < 500 or isinstance(exc, StoreUnavailable | OutcomeUnknown | UpstreamUnavailable):
        return problem(
            status,
            exc.code,
            exc.message,
            instance=instance,
            headers=headers,
            extensions=exc.details,
            errors=_detail_errors(exc.details.get("errors")),
        )
    return problem(status, UNAVAILABLE, UNKNOWN_OUTCOME, instance=instance, headers=headers)


def step_up_challenge(exc: StepUpRequired) -> str:
    """RFC 9470's challenge: get a token from an authentication this fresh, of this class."""
    parts = [
        'error="insufficient_user_authentication"',
        # RFC 6750: ASCII without quotes or backslashes; the problem body has the details.
        'error_description="a more recent or stronger authentication is required"',
    ]
    if exc.details.get("acr_values"):
        parts.append(f'acr_values="{" ".join(exc.details["acr_values"])}"')
    if exc.details.get("max_age") is not None:
        parts.append(f'max_age="{int(exc.details["max_age"])}"')
    return "Bearer " + ", ".join(parts)


def install_problem_handlers(app: FastAPI) -> None:
    """Register the one mapping from exceptions to problems, and the safety net."""
    app.add_exception_handler(SignoffError, _on_signoff_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _on_validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _on_http_exception)  # type: ignore[arg-type]
    app.add_middleware(ProblemSafetyNet)


def _counted(scope: Scope, response: ProblemResponse) -> ProblemResponse:
    """Tell the metrics middleware which problem code this request ended with."""
    scope[PROBLEM_CODE_SCOPE_KEY] = response.code
    return response


async def _on_signoff_error(request: Request, exc: SignoffError) -> ProblemResponse:
    if exc.status >= 500 and not isinstance(
        exc, StoreUnavailable | OutcomeUnknown | UpstreamUnavailable
    ):
        log.error("internal signoff error on %s %s: %r", request.method, request.url.path, exc)
    response = error_problem(exc, instance=instance_of(request.scope))
    state = getattr(request.app.state, "signoff", None)
    if (
        isinstance(exc, NotAuthenticated)
        and not isinstance(exc, StepUpRequired)
        and isinstance(state, AppState)
    ):
        presented = presented_bearer(request.headers.get("authorization"))
        response.headers["WWW-Authenticate"] = challenge(state, error=presented)
    return _counted(request.scope, response)


async def _on_validation_error(request: Request, exc: RequestValidationError) -> ProblemResponse:
    errors = [_field_error(e) for e in exc.errors()]
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    where = ".".join(str(part) for part in first["loc"])
    if first["loc"] == ["header", "Idempotency-Key"] and first.get("type") == "missing":
        detail = "the Idempotency-Key header is required"
    else:
        detail = f"{where}: {first['msg']}" if where else str(first["msg"])
    return problem(
        400, "invalid_request", detail, instance=instance_of(request.scope), errors=errors
    )


async def _on_http_exception(request: Request, exc: HTTPException) -> ProblemResponse:
    status = exc.status_code if 400 <= exc.status_code < 500 else 503
    code = _HTTP_CODES.get(status, f"http_{status}")
    detail = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
    headers = dict(exc.headers or {})
    allowed = allowed_methods(request.app.router.routes, request.scope) if status == 405 else None
    if allowed is not None:  # RFC 9110 §15.5.6: every method of the path, not of one route
        headers["Allow"] = ", ".join(allowed)
    response = problem(status, code, detail, instance=instance_of(request.scope), headers=headers)
    return _counted(request.scope, response)


def _field_error(error: Mapping[str, Any]) -> dict[str, Any]:
    loc: Sequence[Any] = error.get("loc", ())
    return {
        "loc": [str(part) for part in loc],
        "msg": str(error.get("msg", "invalid")),
        "type": str(error.get("type", "invalid")),
    }


def _detail_errors(errors: Any) -> list[dict[str, Any]] | None:
    """A refusal's field errors (``InvalidArguments.details["errors"]``) as the problem's
    top-level ``errors``, the same member a malformed request's problem carries."""
    if not isinstance(errors, list | tuple) or not all(isinstance(e, Mapping) for e in errors):
        return None
    return [_field_error(e) for e in errors]


def _is_json(value: Any) -> bool:
    if value is None or isinstance(value, str | int | bool):
        return True
    if isinstance(value, list | tuple):
        return all(_is_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    return False


class ProblemSafetyNet:
    """Last resort: log an unexpected exception and answer a 503 problem, not a 500.

    The outcome of the request is unknown to the client (a write may have
    happened), so the answer says so and points to the status endpoints.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, send_tracking)
        except Exception:
            log.exception("unexpected error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            response = problem(
                503,
                UNAVAILABLE,
                UNKNOWN_OUTCOME,
                instance=instance_of(scope),
                headers={"Retry-After": "1"},
            )
            await _counted(scope, response)(scope, receive, send)

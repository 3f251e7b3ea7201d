"""Refuse, before any route runs, request text no store can keep and JSON that means two things.

- A NUL (U+0000) or a lone surrogate in the path, the query or any string of a JSON body
  is ``400 invalid_request`` on every store alike: PostgreSQL cannot hold it (it used to
  answer 503 "outcome unknown" although nothing was stored), SQLite would.
- A JSON object with the same key twice is ``400 invalid_request``: "last wins" would let
  two readers of one body see different requests (RFC 8259 §4 leaves it undefined).

The body is read once here (within the body limit) and handed on unchanged.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff._text import unstorable
from signoff.http._limits import BodyTooLarge, BodyTooSlow
from signoff.http._problems import problem


class DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKey(key)
        result[key] = value
    return result


def refusal_of_body(body: bytes) -> str | None:
    """Why this JSON body is refused, or None (also for a body that is not JSON at all:
    the route answers that one with its own validation error)."""
    try:
        parsed = json.loads(body, object_pairs_hook=_no_duplicates)
    except DuplicateKey as exc:
        return f"the JSON body names the key {str(exc)[:64]!r} twice"
    except (ValueError, RecursionError):
        return None  # not JSON, or nested too deep: the route refuses it with its own 4xx
    try:
        found = unstorable(parsed)
    except RecursionError:
        return "the JSON body is nested too deeply"
    return None if found is None else f"the JSON body: {found}"


def refusal_of_target(scope: Scope) -> str | None:
    """Why the path or the query string is refused, or None."""
    found = unstorable(scope.get("path", ""))
    if found:
        return f"the path: {found}"
    query = scope.get("query_string", b"")
    if b"\x00" in unquote_to_bytes(query.replace(b"+", b" ")):
        return "the query: text may not contain NUL (U+0000)"
    return None


def _is_json(scope: Scope) -> bool:
    kind = Headers(scope=scope).get("content-type", "").split(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


class RequestText:
    """Pure ASGI middleware: the checks above, as a problem, before the app sees the request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = refusal_of_target(scope)
        if refused is None and _is_json(scope):
            try:
                body, receive = await _buffered(receive)
            except BodyTooLarge as exc:
                await problem(413, "payload_too_large", str(exc.detail))(scope, receive, send)
                return
            except BodyTooSlow as exc:
                await problem(408, "request_timeout", str(exc.detail))(scope, receive, send)
                return
            refused = refusal_of_body(body)
        if refused is not None:
            await problem(400, "invalid_request", refused)(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def _buffered(receive: Receive) -> tuple[bytes, Receive]:
    """The whole body, and a ``receive`` that hands it on as one message."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            # The client went away: hand the disconnect on as it came.
            first: Message | None = message
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            first = None
            break
    body = b"".join(chunks)
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            if first is not None:
                return first
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay

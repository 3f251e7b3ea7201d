"""Request ids and the access log: one structured line per request.

``X-Request-ID`` from the client is kept when it is short and plain, otherwise
a fresh id is made; it is echoed in the response, bound to every log line of
the request and written into the audit events the request appends. The access
line names the route template and status, never the query string or headers
(where tokens travel).
"""

from __future__ import annotations

import time
import uuid

import structlog
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff._request_context import VALID_REQUEST_ID, reset_request_id, set_request_id

HEADER = "X-Request-ID"


class RequestContext:
    """Pure ASGI middleware: request id in, request id out, one access log line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.log = structlog.get_logger("signoff.access")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        offered = Headers(scope=scope).get(HEADER)
        request_id = offered if offered and VALID_REQUEST_ID.match(offered) else uuid.uuid4().hex
        token = set_request_id(request_id)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                MutableHeaders(scope=message)[HEADER] = request_id
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            self.log.info(
                "http.request",
                method=scope.get("method"),
                route=route,
                status=status,
                duration_ms=round((time.perf_counter() - started) * 1000, 2),
            )
            reset_request_id(token)

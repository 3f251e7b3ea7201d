"""Request ids and the access log: one structured line per request.

``X-Request-ID`` from the client is kept when it is short and plain, otherwise
a fresh id is made; it is echoed in the response, bound to every log line of
the request and written into the audit events the request appends. The access
line names the route template and status, never the query string or headers
(where tokens travel). While tracing is on, each request is a server span that continues
the caller's W3C ``traceparent`` (the OpenTelemetry propagator reads it), named by the
method and route template, never the URL.
"""

from __future__ import annotations

import time
import uuid

import structlog
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff._request_context import VALID_REQUEST_ID, reset_request_id, set_request_id
from signoff._telemetry import context_from_headers, span

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
        headers = Headers(scope=scope)
        offered = headers.get(HEADER)
        request_id = offered if offered and VALID_REQUEST_ID.match(offered) else uuid.uuid4().hex
        token = set_request_id(request_id)
        started = time.perf_counter()
        status = 500
        method = scope.get("method")

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                MutableHeaders(scope=message)[HEADER] = request_id
            await send(message)

        traced = span(
            f"{method}",
            server=True,
            parent=context_from_headers(headers),
            **{"http.request.method": method},
        )
        try:
            with traced as request_span:
                try:
                    await self.app(scope, receive, send_with_id)
                finally:
                    route = getattr(scope.get("route"), "path", None) or "unmatched"
                    request_span.rename(f"{method} {route}")
                    request_span.set(**{"http.route": route, "http.response.status_code": status})
                    self.log.info(
                        "http.request",
                        method=method,
                        route=route,
                        status=status,
                        duration_ms=round((time.perf_counter() - started) * 1000, 2),
                    )
        finally:
            reset_request_id(token)

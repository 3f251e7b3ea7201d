"""Security headers on every response under ``/ui``: no framing, no inline code, no caching.

The Content-Security-Policy allows scripts, styles and connections (the live
inbox's event stream) to this origin only (no inline script, no inline
style, no ``eval``), forms that post back here only, and no framing
(``frame-ancestors 'none'`` plus ``X-Frame-Options: DENY`` for old browsers),
so the approve button cannot be clickjacked.
Pages are ``no-store``: a decision page must never come back from a cache.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",  # the live inbox's EventSource and its same-origin refresh
        "worker-src 'self'",  # the service worker that shows pushes (the page as an app)
        "manifest-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    )
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
}


def is_page_request(scope: Scope, prefix: str) -> bool:
    """An HTTP request for ``prefix`` itself or a path below it (not ``prefix`` + "x")."""
    path: str = scope.get("path", "")
    return scope["type"] == "http" and (path == prefix or path.startswith(prefix + "/"))


class SecurityHeaders:
    """Pure ASGI middleware: adds the headers to responses whose path is under ``prefix``."""

    def __init__(self, app: ASGIApp, *, prefix: str = "/ui") -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if not is_page_request(scope, self.prefix):
            await self.app(scope, receive, send)
            return
        is_static = path.startswith(self.prefix + "/static/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
                if not is_static:
                    headers["Cache-Control"] = "no-store"
            await send(message)

        await self.app(scope, receive, send_with_headers)

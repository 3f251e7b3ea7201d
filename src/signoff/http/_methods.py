"""RFC 9110 method semantics the router does not give by itself: HEAD, and a complete Allow.

FastAPI registers one route per (path, method), so a 405 names the methods of the one
route that matched the path first (``DELETE /v1/proposals`` answered ``Allow: POST``
although ``GET`` exists), and no route answers ``HEAD``. Here HEAD is served as the GET of
the same path with the body left out (§9.3.2: the same header fields), and a 405's
``Allow`` lists every method of every route on that path (§15.5.6).
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.routing import BaseRoute, Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEAD_SCOPE_KEY = "signoff.head"


PROBED = ("DELETE", "GET", "PATCH", "POST", "PUT")


def allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> list[str] | None:
    """Every method some route answers at this path (HEAD wherever GET is), sorted; None
    when the path leads into a mounted app that decides for itself (static files)."""
    # As the app's own router saw the request (a mount below rewrites root_path).
    root = scope.get("app_root_path", scope.get("root_path", ""))
    probe = {"type": "http", "path": scope["path"], "root_path": root, "headers": []}
    methods: list[str] = []
    for method in PROBED:
        answered = _answers(routes, {**probe, "method": method})
        if answered is None:
            return None
        if answered:
            methods.append(method)
    if "GET" in methods:
        methods.append("HEAD")
    return sorted(methods)


def _answers(routes: Sequence[BaseRoute], scope: Scope) -> bool | None:
    """Whether a route fully matches this path and method (the router's own test)."""
    for route in routes:
        match, child = route.matches(scope)
        if match is not Match.FULL:
            continue
        if isinstance(route, Mount):
            inner = getattr(route, "routes", None)
            return _answers(inner, {**scope, **child}) if inner else None
        return True
    return False


class HeadAsGet:
    """Answer HEAD as GET without the body; a stream (SSE) is told the client left."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        done = False

        async def receive_until_done() -> Message:
            if done:
                return {"type": "http.disconnect"}
            return await receive()

        async def send_headers_only(message: Message) -> None:
            nonlocal done
            if done:
                return
            if message["type"] == "http.response.start":
                await send(message)
            elif message["type"] == "http.response.body":
                done = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        # In place, so what inner layers note in the scope (the problem code) still reaches
        # the outer ones; the request log and the metrics see HEAD again afterwards.
        scope["method"], scope[HEAD_SCOPE_KEY] = "GET", True
        try:
            await self.app(scope, receive_until_done, send_headers_only)
        finally:
            scope["method"] = "HEAD"

"""Under ``/ui`` every error is a page: a problem answer becomes the error page, same status.

The API answers ``application/problem+json`` for an unknown route, a wrong
method or a crash (the safety net's 503). A person on the confirmation page
gets the same status as an HTML page in words, with the security headers,
instead of JSON.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff.web._headers import is_page_request
from signoff.web._session import WebSession
from signoff.web._ui import Ui

PROBLEM_TYPE = "application/problem+json"
KEPT_HEADERS = ("Allow", "Retry-After")
_TITLES = {404: "Page not found", 405: "Not allowed here", 503: "Something went wrong"}


class ErrorPages:
    """Pure ASGI middleware: a problem+json response under ``prefix`` is rendered as a page."""

    def __init__(self, app: ASGIApp, *, ui: Ui, prefix: str) -> None:
        self.app = app
        self.ui = ui
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not is_page_request(scope, self.prefix):
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        body = b""

        async def as_page(message: Message) -> None:
            nonlocal held, body
            if message["type"] == "http.response.start":
                if Headers(raw=message["headers"]).get("content-type", "").startswith(PROBLEM_TYPE):
                    held = message
                    return
            elif held is not None and message["type"] == "http.response.body":
                body += message.get("body", b"")
                if not message.get("more_body", False):
                    page = self.page(scope, int(held["status"]), body)
                    for name in KEPT_HEADERS:  # the page says it in words; clients read these
                        value = Headers(raw=held["headers"]).get(name)
                        if value is not None:
                            page.headers[name] = value
                    await page(scope, receive, send)
                return
            await send(message)

        await self.app(scope, receive, as_page)

    def page(self, scope: Scope, status: int, body: bytes) -> Any:
        try:
            problem = json.loads(body)
        except ValueError:
            problem = {}
        session = self.ui.session(Request(scope)) or WebSession.anonymous(self.ui.now())
        if status >= 500:
            message = (
                "The server could not complete this page. If you were deciding, nothing may "
                "have been recorded: open the proposal again to see its status before retrying."
            )
        else:
            message = str(problem.get("detail") or problem.get("title") or "Refused.")
        context = {
            "title": _TITLES.get(status, "Refused"),
            "message": message,
            "code": problem.get("code"),
        }
        return self.ui.render("error.html", session, context, status=status)

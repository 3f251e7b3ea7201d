"""A request body limit answered as a 413 problem, declared or streamed."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff.http._problems import instance_of, problem


class BodyTooLarge(HTTPException):
    """Raised from ``receive``; an HTTPException, so the framework passes it to the handler."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body exceeds {limit} bytes")


class BodyLimit:
    """Refuse a body over ``max_bytes`` before reading it (Content-Length) or while reading."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            response = problem(
                413,
                "payload_too_large",
                f"the request body exceeds {self.max_bytes} bytes",
                instance=instance_of(scope),
            )
            await response(scope, receive, send)
            return
        received = 0

        async def receive_limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, receive_limited, send)

"""A request body limit answered as a 413 problem, declared or streamed; and a deadline.

The body must arrive within ``read_seconds`` of the first read: a client that trickles
it holds a worker's connection for nothing (``408``). The request head has the same
deadline in the server (``_server_protocol``). Once the body is in, reads wait freely:
a streaming response listens for the client's disconnect for as long as it runs.
"""

from __future__ import annotations

import anyio
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff.http._problems import instance_of, problem


class BodyTooLarge(HTTPException):
    """Raised from ``receive``; an HTTPException, so the framework passes it to the handler."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body exceeds {limit} bytes")


class BodyTooSlow(HTTPException):
    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"the request body did not arrive within {seconds:g} s")


class BodyLimit:
    """Refuse a body over ``max_bytes`` before reading it (Content-Length) or while reading,
    and one that does not arrive within ``read_seconds``."""

    def __init__(self, app: ASGIApp, max_bytes: int, read_seconds: float = 10.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.read_seconds = read_seconds

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
        deadline: float | None = None
        complete = False

        async def receive_limited() -> Message:
            nonlocal received, deadline, complete
            if complete:
                return await receive()
            if deadline is None:
                deadline = anyio.current_time() + self.read_seconds
            try:
                with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                    message = await receive()
            except TimeoutError:
                raise BodyTooSlow(self.read_seconds) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                complete = True
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, receive_limited, send)

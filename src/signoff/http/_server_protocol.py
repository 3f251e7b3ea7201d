"""uvicorn's h11 protocol with a deadline for a request's head (slow-header connections).

uvicorn (0.54) times out only an *idle* keep-alive connection, and any byte received
cancels that timer: a client trickling a header a byte at a time holds a connection, and
a worker's share of them, forever. This subclass gives every request head
``read_seconds`` from the moment the server waits for it (a new connection, or the end of
the previous response) until its last header line; past that the connection is answered
``408`` and closed. The body has the same deadline in the ASGI app (``_limits.BodyLimit``).
A kept-alive connection on which no byte of a next request has arrived is closed without an
answer (as nginx does): a client reusing it at that moment would otherwise read the
unsolicited 408 as the answer to its request. The first byte of a next request starts that
request's own deadline.

Written here because uvicorn offers no header timeout; the rest is uvicorn's own code.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

DEFAULT_READ_SECONDS = 10.0


class DeadlineH11Protocol(H11Protocol):
    read_seconds: float = DEFAULT_READ_SECONDS
    """Set by the worker's app factory from ``SIGNOFF_REQUEST_READ_SECONDS``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._started = False
        """Whether a byte of the request now awaited has arrived."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        first = not self._started
        self._started = True
        super().data_received(data)
        if self._head_complete():
            self._disarm()
        elif first:
            self._arm()  # a next request began: its head gets the whole deadline

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._started = False
        if not self.transport.is_closing() and not self._head_complete():
            self._arm()  # waiting for the next request's head

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _head_complete(self) -> bool:
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._head_deadline = self.loop.call_later(self.read_seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _too_slow(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing() or self._head_complete():
            return
        if (
            self._started
            and self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE)
            and self.conn.their_state
            in (
                h11.IDLE,
                h11.SEND_BODY,
            )
        ):
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
        self.transport.close()

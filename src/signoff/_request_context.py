"""The id of the request being served, for logs and audit events.

The HTTP edge sets it (``X-Request-ID`` or a fresh one) for the duration of a
request; anything the gate appends to the audit chain in that context carries
it in its ``data`` as ``request_id``. Outside a request it is ``None``. While
tracing is on (``signoff._telemetry``), the event's ``data`` also carries the
current span's ``trace_id`` and ``span_id``; with tracing off nothing is added,
so the events (and their hashes) are what they were.
"""

from __future__ import annotations

import re
from contextvars import ContextVar, Token
from typing import Any

from signoff._telemetry import current_ids

REQUEST_ID: ContextVar[str | None] = ContextVar("signoff_request_id", default=None)
# What a client may send as X-Request-ID: short, printable, no separators to forge log lines.
VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def set_request_id(request_id: str | None) -> Token[str | None]:
    return REQUEST_ID.set(request_id)


def reset_request_id(token: Token[str | None]) -> None:
    REQUEST_ID.reset(token)


def current_request_id() -> str | None:
    return REQUEST_ID.get()


def with_request_id(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` plus the current request id and trace, when there are (audit events)."""
    request_id = REQUEST_ID.get()
    if request_id is not None and "request_id" not in data:
        data = {**data, "request_id": request_id}
    ids = current_ids()
    if ids is not None and "trace_id" not in data:
        data = {**data, "trace_id": ids[0], "span_id": ids[1]}
    return data

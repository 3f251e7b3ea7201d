"""The id of the request being served, for logs and audit events.

The HTTP edge sets it (``X-Request-ID`` or a fresh one) for the duration of a
request; anything the gate appends to the audit chain in that context carries
it in its ``data`` as ``request_id``. Outside a request it is ``None``.
"""

from __future__ import annotations

import re
from contextvars import ContextVar, Token
from typing import Any

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
    """``data`` plus the current request id, when there is one (audit events)."""
    request_id = REQUEST_ID.get()
    if request_id is None or "request_id" in data:
        return data
    return {**data, "request_id": request_id}

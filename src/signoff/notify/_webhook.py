"""Webhooks signed per the Standard Webhooks specification, with its maintained library.

Each request carries ``webhook-id`` (the event id, the same on every retry, so
a receiver deduplicates), ``webhook-timestamp`` (this attempt, server clock)
and ``webhook-signature`` (``v1,`` HMAC-SHA256 over ``id.timestamp.body``).
Redirects are not followed; any answer but 2xx is a failed attempt.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from math import floor

import httpx
from standardwebhooks import Webhook

from signoff.notify._channel import DeliveryFailed, EventFilter
from signoff.notify._events import Notification

DEFAULT_MAX_ATTEMPTS = 8


class WebhookEndpoint:
    """POST each accepted event to ``url``, signed with ``secret`` (``whsec_`` + base64)."""

    def __init__(
        self,
        name: str,
        url: str,
        secret: str,
        *,
        events: Iterable[str] | None = None,
        tenants: Iterable[str] | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        timeout_seconds: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not name or max_attempts < 1:
            raise ValueError("a webhook needs a name and max_attempts ≥ 1")
        if not url.startswith(("https://", "http://")):
            raise ValueError(f"webhook {name}: the url must be http(s), not {url!r}")
        self.name = name
        self.url = url
        self.max_attempts = max_attempts
        self._signer = Webhook(secret)
        self._filter = EventFilter(events, tenants)
        self._client = httpx.Client(
            timeout=timeout_seconds, follow_redirects=False, transport=transport
        )

    @property
    def destination(self) -> str:
        return f"webhook:{self.name}"

    def accepts(self, event_type: str, tenant: str) -> bool:
        return self._filter.accepts(event_type, tenant)

    def send(self, notification: Notification, now: datetime) -> None:
        body = json.dumps(notification.body(), separators=(",", ":"), ensure_ascii=False)
        headers = {
            "content-type": "application/json",
            "webhook-id": notification.event_id,
            "webhook-timestamp": str(floor(now.timestamp())),
            "webhook-signature": self._signer.sign(notification.event_id, now, body),
        }
        try:
            response = self._client.post(self.url, content=body.encode(), headers=headers)
        except httpx.HTTPError as exc:
            raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from exc
        if not response.is_success:
            raise DeliveryFailed(f"HTTP {response.status_code}")

    def close(self) -> None:
        self._client.close()

"""What a notification destination is: a name, a filter, an attempt budget, and ``send``."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from signoff.notify._events import EVENT_TYPES, Notification


class DeliveryFailed(Exception):
    """One attempt did not deliver; the notifier retries with backoff until the budget is spent."""


class Channel(Protocol):
    @property
    def destination(self) -> str:
        """Unique and stable (``webhook:NAME``, ``email:NAME``): the delivery rows' key."""
        ...

    @property
    def max_attempts(self) -> int: ...

    def accepts(self, event_type: str, tenant: str) -> bool: ...

    def send(self, notification: Notification, now: datetime) -> None:
        """Deliver once or raise :class:`DeliveryFailed`."""
        ...

    def close(self) -> None: ...


class EventFilter:
    """Which event types and tenants a destination wants; ``None`` means all."""

    def __init__(
        self, events: Iterable[str] | None = None, tenants: Iterable[str] | None = None
    ) -> None:
        self.events = None if events is None else frozenset(events)
        self.tenants = None if tenants is None else frozenset(tenants)
        unknown = sorted((self.events or frozenset()) - EVENT_TYPES)
        if unknown:
            raise ValueError(f"unknown event types {unknown}; known: {sorted(EVENT_TYPES)}")

    def accepts(self, event_type: str, tenant: str) -> bool:
        return (self.events is None or event_type in self.events) and (
            self.tenants is None or tenant in self.tenants
        )

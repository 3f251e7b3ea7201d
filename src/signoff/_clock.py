"""Injected time and randomness, so expiry boundaries and races are testable."""

from __future__ import annotations

import secrets
import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Current time, timezone-aware UTC."""
        ...


class SystemClock:
    """The server clock. Client-supplied times are never used."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told to (for tests and simulations)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta) -> None:
        with self._lock:
            self._now += delta

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = moment


class RandomSource(Protocol):
    def token_bytes(self, n: int) -> bytes: ...


class SystemRandom:
    """Cryptographically secure randomness from the operating system."""

    def token_bytes(self, n: int) -> bytes:
        return secrets.token_bytes(n)


def to_micros(moment: datetime) -> int:
    """UTC microseconds since the epoch; how times are stored."""
    if moment.tzinfo is None:
        raise ValueError("naive datetimes are not accepted")
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)

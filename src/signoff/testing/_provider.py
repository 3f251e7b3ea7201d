"""A stand-in downstream service for trying and testing a tool: one effect per key."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Any

from signoff.testing._effects import Effect

_TABLE = """CREATE TABLE IF NOT EXISTS provider_records (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    request_key TEXT NOT NULL UNIQUE,
    reference TEXT NOT NULL,
    payload TEXT NOT NULL
)"""
BUSY_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class ProviderRecord:
    """What the fake provider did for one request key."""

    request_key: str
    reference: str
    payload: dict[str, Any]


class FakeProvider:
    """A service that honours idempotency keys, kept in a SQLite file of its own.

    ``send(request_key, **payload)`` acts once per key and answers the same
    reference for every repeat, as a payment or mail API does with its
    idempotency key; ``find(request_key)`` answers by key, as a tool's
    ``lookup`` needs. A server process and a test process opening the same
    file see the same records, so a test can check the side effect itself.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        with self._connection() as conn:
            conn.execute(_TABLE)

    def send(self, request_key: str, **payload: Any) -> str:
        """Act once for ``request_key``; a repeat answers the first reference."""
        reference = "ref_" + hashlib.sha256(request_key.encode()).hexdigest()[:20]
        body = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        with self._connection() as conn:
            conn.execute(
                "INSERT INTO provider_records (request_key, reference, payload) VALUES (?,?,?) "
                "ON CONFLICT (request_key) DO NOTHING",
                (request_key, reference, body),
            )
        return reference

    def find(self, request_key: str) -> str | None:
        """The reference of what was done for ``request_key``, or None if it never arrived."""
        with self._connection() as conn:
            row = conn.execute(
                "SELECT reference FROM provider_records WHERE request_key = ?", (request_key,)
            ).fetchone()
        return None if row is None else str(row[0])

    def records(self) -> list[ProviderRecord]:
        """Everything done, oldest first."""
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT request_key, reference, payload FROM provider_records ORDER BY seq"
            ).fetchall()
        return [ProviderRecord(key, ref, json.loads(payload)) for key, ref, payload in rows]

    def effects(self) -> list[Effect]:
        """The records as :class:`Effect` s, for :class:`FaultHarness` and the checks."""
        return [Effect(r.request_key, r.reference) for r in self.records()]

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        # A connection per call: any thread or process may call, and none is left open.
        with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)) as conn, conn:
            yield conn

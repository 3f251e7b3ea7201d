"""Notification delivery: per-destination cursors over the audit chain and delivery rows.

The audit chain is the outbox (every state change appends to it in its own
transaction), so nothing here is written by the gate: a notifier reads events
after its cursor, records one delivery row per event it will send, and moves
each row by conditional updates (a claim is a lease on ``next_attempt_at``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from signoff.audit._chain import AuditEvent
from signoff.store._sqlbase import SqlBase

INITIALIZED = ""
"""The cursor row (tenant ``''``) that says a destination started; tenants are never empty."""
_DELIVERY_COLUMNS = (
    "destination, tenant, seq, event_type, status, attempts, next_attempt_at, last_error, "
    "created_at, updated_at, delivered_at"
)


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    destination: str
    tenant: str
    seq: int
    event_type: str
    status: str
    """``pending``, ``delivered`` or ``dead``."""
    attempts: int
    next_attempt_at: int
    last_error: str | None
    created_at: int
    updated_at: int
    delivered_at: int | None


class DeliveryQueries(SqlBase):
    def audit_events_after(self, tenant: str, seq: int, limit: int) -> list[AuditEvent]:
        rows = self.run(
            "SELECT tenant, seq, at, kind, proposal_id, execution_id, actor, data, prev_hash, "
            "hash, mac FROM audit_events WHERE tenant = ? AND seq > ? ORDER BY seq LIMIT ?",
            (tenant, seq, limit),
        ).fetchall()
        return [AuditEvent(*row) for row in rows]

    def audit_event(self, tenant: str, seq: int) -> AuditEvent | None:
        events = self.audit_events_after(tenant, seq - 1, 1)
        return events[0] if events and events[0].seq == seq else None

    def notify_cursors(self, destination: str) -> dict[str, int]:
        rows = self.run(
            "SELECT tenant, seq FROM notify_cursors WHERE destination = ?", (destination,)
        ).fetchall()
        return {row[0]: row[1] for row in rows}

    def set_notify_cursor(self, destination: str, tenant: str, seq: int) -> None:
        self.run(
            "INSERT INTO notify_cursors (destination, tenant, seq) VALUES (?, ?, ?) "
            # Never backwards: a slower concurrent pass may finish after a faster one.
            "ON CONFLICT (destination, tenant) DO UPDATE SET seq = excluded.seq "
            "WHERE notify_cursors.seq < excluded.seq",
            (destination, tenant, seq),
        )

    def insert_delivery(
        self, destination: str, tenant: str, seq: int, event_type: str, now: int
    ) -> None:
        self.run(
            f"INSERT INTO deliveries ({_DELIVERY_COLUMNS}) "
            "VALUES (?, ?, ?, ?, 'pending', 0, ?, NULL, ?, ?, NULL) "
            "ON CONFLICT (destination, tenant, seq) DO NOTHING",
            (destination, tenant, seq, event_type, now, now, now),
        )

    def claim_deliveries(
        self, destinations: Sequence[str], now: int, lease_until: int, limit: int
    ) -> list[DeliveryRecord]:
        """Pending rows due now, each leased to this caller by a conditional update."""
        if not destinations:
            return []
        marks = ", ".join("?" for _ in destinations)
        rows = self.run(
            f"SELECT {_DELIVERY_COLUMNS} FROM deliveries WHERE status = 'pending' "
            f"AND next_attempt_at <= ? AND destination IN ({marks}) "
            "ORDER BY next_attempt_at, tenant, seq LIMIT ?",
            (now, *destinations, limit),
        ).fetchall()
        claimed = []
        for row in rows:
            record = DeliveryRecord(*row)
            won = self.run(
                "UPDATE deliveries SET next_attempt_at = ?, updated_at = ? WHERE destination = ? "
                "AND tenant = ? AND seq = ? AND status = 'pending' AND next_attempt_at = ?",
                (lease_until, now, *_key(record), record.next_attempt_at),
            ).rowcount
            if won == 1:
                claimed.append(record)
        return claimed

    def finish_delivery(
        self,
        record: DeliveryRecord,
        *,
        lease_until: int,
        status: str,
        attempts: int,
        next_attempt_at: int,
        last_error: str | None,
        now: int,
    ) -> bool:
        """Record an attempt's outcome, only while this caller's lease is the row's."""
        return (
            self.run(
                "UPDATE deliveries SET status = ?, attempts = ?, next_attempt_at = ?, "
                "last_error = ?, updated_at = ?, delivered_at = ? WHERE destination = ? "
                "AND tenant = ? AND seq = ? AND status = 'pending' AND next_attempt_at = ?",
                (
                    status,
                    attempts,
                    next_attempt_at,
                    last_error,
                    now,
                    now if status == "delivered" else None,
                    *_key(record),
                    lease_until,
                ),
            ).rowcount
            == 1
        )

    def deliveries(
        self, tenant: str, *, status: str | None = None, limit: int = 100
    ) -> list[DeliveryRecord]:
        where, params = "tenant = ?", [tenant]
        if status is not None:
            where += " AND status = ?"
            params.append(status)
        rows = self.run(
            f"SELECT {_DELIVERY_COLUMNS} FROM deliveries WHERE {where} "
            "ORDER BY created_at DESC, seq DESC LIMIT ?",
            (*params, limit),
        ).fetchall()
        return [DeliveryRecord(*row) for row in rows]

    def delivery(self, destination: str, tenant: str, seq: int) -> DeliveryRecord | None:
        row = self.run(
            f"SELECT {_DELIVERY_COLUMNS} FROM deliveries "
            "WHERE destination = ? AND tenant = ? AND seq = ?",
            (destination, tenant, seq),
        ).fetchone()
        return None if row is None else DeliveryRecord(*row)

    def replay_delivery(self, destination: str, tenant: str, seq: int, now: int) -> bool:
        """A dead delivery goes back to pending with a fresh attempt budget."""
        return (
            self.run(
                "UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?, "
                "last_error = NULL, updated_at = ? WHERE destination = ? AND tenant = ? "
                "AND seq = ? AND status = 'dead'",
                (now, now, destination, tenant, seq),
            ).rowcount
            == 1
        )


def _key(record: DeliveryRecord) -> tuple[str, str, int]:
    return (record.destination, record.tenant, record.seq)

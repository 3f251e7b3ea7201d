"""A refund provider simulator: honours idempotency keys and keeps its own ledger.

It stands for a payment API. Its ledger and the order rows live in the shop's
database, written in one transaction of the shop's own, never inside one of
signoff's. Faults are queued in that database so that tests in other
processes can arrange them too.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass

from signoff import (
    NotFoundAtProvider,
    ProviderOutcome,
    ProviderTimeout,
    RetryableFailure,
    Succeeded,
    TerminalFailure,
)
from signoff.demo._db import ShopConnection, ShopDatabase
from signoff.demo._shop import DemoShop

# The business write: checks the version the person saw, and never over-refunds.
# ``signoff bench`` times this same statement alone, one per commit, as the bare write.
REFUND_UPDATE = (
    "UPDATE orders SET refunded = refunded + ?, version = version + 1 "
    "WHERE tenant = ? AND order_id = ? AND version = ? AND currency = ? "
    "AND refunded + ? <= payable"
)


class FaultMode(enum.StrEnum):
    TIMEOUT_BEFORE = "timeout_before"
    """The request never reaches the provider, and the caller times out."""
    TIMEOUT_AFTER_SUCCESS = "timeout_after_success"
    """The refund happens, but the answer is lost."""
    RETRYABLE = "retryable"
    TERMINAL = "terminal"


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    request_key: str
    reference: str
    tenant: str
    order_id: str
    amount_minor: int
    currency: str


class RefundProvider:
    def __init__(self, shop: DemoShop) -> None:
        self.shop = shop

    def fail_next(self, mode: FaultMode, *, times: int = 1) -> None:
        with self.shop.db.write() as conn:
            conn.executemany(
                "INSERT INTO provider_faults (mode) VALUES (?)", [(mode.value,)] * times
            )

    def refund(
        self,
        *,
        tenant: str,
        order_id: str,
        amount_minor: int,
        currency: str,
        request_key: str,
        expected_version: int,
    ) -> ProviderOutcome:
        """Refund once per ``request_key``; a replay returns the first reference."""
        call = (tenant, order_id, amount_minor, currency, request_key, expected_version)
        if self.shop.db.dialect == "postgresql":
            fault, outcome = _refund_in_one_statement(self.shop.db, *call)
        else:
            with self.shop.db.write() as conn:
                fault = _pop_fault(conn)
                outcome = None if fault in _NO_REFUND else _refund(conn, *call)
        if fault is FaultMode.RETRYABLE:
            return RetryableFailure("the provider is temporarily unavailable")
        if fault is FaultMode.TERMINAL:
            return TerminalFailure("the payment method refuses refunds", code="provider_refused")
        if fault in (FaultMode.TIMEOUT_BEFORE, FaultMode.TIMEOUT_AFTER_SUCCESS):
            raise ProviderTimeout("no answer from the refund provider")
        assert outcome is not None
        return outcome

    def lookup(self, request_key: str) -> Succeeded | NotFoundAtProvider:
        with self.shop.db.read() as conn:
            row = conn.execute(
                "SELECT reference FROM refunds WHERE request_key = ?", (request_key,)
            ).fetchone()
        return NotFoundAtProvider() if row is None else Succeeded(row[0])

    def ledger(self, tenant: str | None = None) -> list[LedgerEntry]:
        sql = "SELECT request_key, reference, tenant, order_id, amount_minor, currency FROM refunds"
        params: tuple[str, ...] = ()
        if tenant is not None:
            sql += " WHERE tenant = ?"
            params = (tenant,)
        with self.shop.db.read() as conn:
            rows = conn.execute(sql + " ORDER BY created_at, request_key", params).fetchall()
        return [LedgerEntry(*row) for row in rows]


_NO_REFUND = (FaultMode.TIMEOUT_BEFORE, FaultMode.RETRYABLE, FaultMode.TERMINAL)

# PostgreSQL: the fault, the replay check, the conditional UPDATE and the ledger row in one
# statement (one round trip, atomic by itself), as a payment API would do it in one call.
_REFUND_ONCE = (
    "WITH fault AS (DELETE FROM provider_faults WHERE seq = (SELECT seq FROM provider_faults "
    "ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING mode), "
    "seen AS (SELECT reference FROM refunds WHERE request_key = ?), "
    "moved AS (UPDATE orders SET refunded = refunded + ?, version = version + 1 "
    "WHERE tenant = ? AND order_id = ? AND version = ? AND currency = ? "
    "AND refunded + ? <= payable AND NOT EXISTS (SELECT 1 FROM seen) "
    "AND NOT EXISTS (SELECT 1 FROM fault WHERE mode IN ('timeout_before', 'retryable', "
    "'terminal')) RETURNING order_id), "
    "added AS (INSERT INTO refunds (request_key, reference, tenant, order_id, amount_minor, "
    "currency) SELECT ?, ?, ?, order_id, ?, ? FROM moved RETURNING reference) "
    "SELECT (SELECT mode FROM fault), (SELECT reference FROM seen), "
    "(SELECT reference FROM added)"
)


def _refund_in_one_statement(
    db: ShopDatabase,
    tenant: str,
    order_id: str,
    amount_minor: int,
    currency: str,
    request_key: str,
    expected_version: int,
) -> tuple[FaultMode | None, ProviderOutcome | None]:
    reference = "re_" + uuid.uuid4().hex[:24]
    params = (
        *(request_key, amount_minor, tenant, order_id, expected_version, currency),
        *(amount_minor, request_key, reference, tenant, amount_minor, currency),
    )
    with db.autocommit() as conn:
        mode, seen, added = conn.execute(_REFUND_ONCE, params).fetchone()
        fault = None if mode is None else FaultMode(mode)
        if fault in _NO_REFUND:
            return fault, None
        if seen is not None or added is not None:
            return fault, Succeeded(seen or added)
        # The version moved, or a concurrent call with the same key won the row just now.
        existing = conn.execute(
            "SELECT reference FROM refunds WHERE request_key = ?", (request_key,)
        ).fetchone()
    if existing is not None:
        return fault, Succeeded(existing[0])
    return fault, TerminalFailure("the order changed since it was previewed", code="state_changed")


def _pop_fault(conn: ShopConnection) -> FaultMode | None:
    while True:
        row = conn.execute("SELECT seq, mode FROM provider_faults ORDER BY seq LIMIT 1").fetchone()
        if row is None:
            return None
        # On PostgreSQL a concurrent refund may have taken this fault first: then try the next.
        if conn.execute("DELETE FROM provider_faults WHERE seq = ?", (row[0],)).rowcount == 1:
            return FaultMode(row[1])


def _refund(
    conn: ShopConnection,
    tenant: str,
    order_id: str,
    amount_minor: int,
    currency: str,
    request_key: str,
    expected_version: int,
) -> ProviderOutcome:
    existing = conn.execute(
        "SELECT reference FROM refunds WHERE request_key = ?", (request_key,)
    ).fetchone()
    if existing is not None:
        return Succeeded(existing[0])
    changed = conn.execute(
        REFUND_UPDATE, (amount_minor, tenant, order_id, expected_version, currency, amount_minor)
    ).rowcount
    if changed != 1:
        # On PostgreSQL a concurrent call with the same key may have just won the row.
        existing = conn.execute(
            "SELECT reference FROM refunds WHERE request_key = ?", (request_key,)
        ).fetchone()
        if existing is not None:
            return Succeeded(existing[0])
        return TerminalFailure("the order changed since it was previewed", code="state_changed")
    reference = "re_" + uuid.uuid4().hex[:24]
    conn.execute(
        "INSERT INTO refunds (request_key, reference, tenant, order_id, amount_minor, currency) "
        "VALUES (?,?,?,?,?,?)",
        (request_key, reference, tenant, order_id, amount_minor, currency),
    )
    return Succeeded(reference)

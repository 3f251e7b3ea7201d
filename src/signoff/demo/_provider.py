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
from signoff.demo._db import ShopConnection
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
        with self.shop.db.write() as conn:
            fault = _pop_fault(conn)
            if fault is FaultMode.TIMEOUT_BEFORE:
                raise_after = True
                outcome: ProviderOutcome | None = None
            elif fault is FaultMode.RETRYABLE:
                return RetryableFailure("the provider is temporarily unavailable")
            elif fault is FaultMode.TERMINAL:
                return TerminalFailure(
                    "the payment method refuses refunds", code="provider_refused"
                )
            else:
                raise_after = fault is FaultMode.TIMEOUT_AFTER_SUCCESS
                outcome = _refund(
                    conn, tenant, order_id, amount_minor, currency, request_key, expected_version
                )
        if raise_after:
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

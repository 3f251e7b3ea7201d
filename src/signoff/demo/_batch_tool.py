"""`refund_customer_orders`: a batch write that binds the exact set it was confirmed for.

The filter (a customer's orders that can still take the amount) is resolved when
the proposal is made. The proposal binds the sorted set of order ids by its
``resource_set_digest`` (PROTOCOL.md rule 3), the count, the frozen filter and
every order's version. If the set widens or narrows before execution, the
resource differs and nothing runs. The provider refunds the whole batch in one
transaction of its own, each order under a key derived from the request key.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta
from typing import Annotated

from pydantic import Field

from signoff import (
    LookupOutcome,
    NotFoundAtProvider,
    Preview,
    PreviewField,
    Principal,
    ProviderOutcome,
    ProviderTimeout,
    ResourceState,
    RetryableFailure,
    Risk,
    RiskLevel,
    SideEffect,
    StrictArgs,
    Succeeded,
    TerminalFailure,
    WriteTool,
    resource_set_digest,
)
from signoff.demo._db import ShopConnection
from signoff.demo._provider import FaultMode, _pop_fault, _refund
from signoff.demo._shop import DemoShop
from signoff.demo._tool import (
    APPROVER_ROLE,
    CURRENCIES,
    SUPPORT_ROLE,
    RefundOrder,
    format_money,
    minor_unit,
)
from signoff.exceptions import Forbidden, InvalidArguments

_BATCHES_TABLE = """CREATE TABLE IF NOT EXISTS refund_batches (
    request_key TEXT PRIMARY KEY,
    reference TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    order_count BIGINT NOT NULL
)"""
_POSTGRES_DDL_LOCK = 0x5159_0A08


class BatchRefundArgs(StrictArgs):
    """Refund the same amount on every order of one customer that can still take it."""

    customer: Annotated[str, Field(pattern=r"^u_[0-9]{1,12}$", description="The customer")]
    amount_minor: Annotated[
        int, Field(gt=0, le=10**9, description="Amount per order, in minor units")
    ]
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$", description="ISO 4217 code")]
    max_orders: Annotated[
        int, Field(ge=1, le=100, description="Refuse if the filter matches more orders")
    ]
    reason: Annotated[str | None, Field(max_length=500, description="Why")]


class _Rollback(Exception):
    def __init__(self, outcome: TerminalFailure) -> None:
        self.outcome = outcome


class RefundCustomerOrders(WriteTool[BatchRefundArgs]):
    name = "refund_customer_orders"
    version = "1"
    description = "Refund the same amount on each order of one customer, as one batch."
    side_effect = SideEffect.EXTERNAL
    ttl = timedelta(minutes=10)
    approver_role = APPROVER_ROLE
    reject_reasons = RefundOrder.reject_reasons

    def __init__(self, shop: DemoShop) -> None:
        self.shop = shop
        shop.ensure_table(_BATCHES_TABLE, lock_id=_POSTGRES_DDL_LOCK)

    def read_state(self, args: BatchRefundArgs, principal: Principal) -> ResourceState:
        if principal.subject != args.customer and SUPPORT_ROLE not in principal.roles:
            raise Forbidden("only the customer or support staff may request these refunds")
        if args.currency not in CURRENCIES:
            raise InvalidArguments(f"currency {args.currency} is not accepted", field="currency")
        orders = self._matching(principal.tenant, args)
        if not orders:
            raise InvalidArguments("no order of this customer can take this refund")
        if len(orders) > args.max_orders:
            raise InvalidArguments(
                f"the filter matches {len(orders)} orders, more than max_orders",
                field="max_orders",
            )
        ids = [order_id for order_id, _ in orders]
        versions = {order_id: version for order_id, version in orders}
        set_digest = resource_set_digest(ids)
        state_version = hashlib.sha256(
            ";".join(f"{i}@{v}" for i, v in orders).encode()
        ).hexdigest()[:32]
        return ResourceState(
            resource_id=f"orders:{set_digest}",
            version=state_version,
            summary={
                "tenant": principal.tenant,
                "order_ids": ids,
                "versions": versions,
                "count": len(ids),
                "resource_set_digest": set_digest,
                "filter": {"customer": args.customer, "currency": args.currency},
            },
            beneficiary=args.customer,
        )

    def _matching(self, tenant: str, args: BatchRefundArgs) -> list[tuple[str, int]]:
        with self.shop.db.read() as conn:
            rows = conn.execute(
                "SELECT order_id, version FROM orders WHERE tenant = ? AND owner = ? "
                "AND currency = ? AND refunded + ? <= payable ORDER BY order_id",
                (tenant, args.customer, args.currency, args.amount_minor),
            ).fetchall()
        return [(str(row[0]), int(row[1])) for row in rows]

    def preview(self, args: BatchRefundArgs, state: ResourceState) -> Preview:
        count = state.summary["count"]
        each = format_money(args.amount_minor, args.currency)
        total = format_money(args.amount_minor * count, args.currency)
        return Preview(
            title=f"Refund {each} on each of {count} orders of {args.customer} ({total})",
            description=self.description,
            fields=(
                PreviewField("customer", "Customer", args.customer),
                PreviewField(
                    "amount_minor",
                    "Amount per order",
                    args.amount_minor,
                    each,
                    unit=minor_unit(args.currency),
                ),
                PreviewField("currency", "Currency", args.currency),
                PreviewField("max_orders", "At most", args.max_orders),
                PreviewField("reason", "Reason", args.reason),
            ),
            impact=f"{count} refunds, {total} in all, to the customer's payment method.",
            reversibility="Irreversible: the money leaves the merchant account.",
            external_reach="Calls the payment provider once for the whole batch.",
            facts=(
                f"Orders: {', '.join(state.summary['order_ids'])}.",
                f"Set digest {state.summary['resource_set_digest']} binds exactly these orders.",
            ),
        )

    def risk(self, args: BatchRefundArgs, state: ResourceState) -> Risk:
        return Risk(RiskLevel.HIGH, ("several refunds at once",))

    def execute(
        self, args: BatchRefundArgs, request_key: str, expected: ResourceState
    ) -> ProviderOutcome:
        """All orders or none, in one provider transaction; a replay answers the first batch."""
        try:
            with self.shop.db.write() as conn:
                fault = _pop_fault(conn)
                if fault is FaultMode.RETRYABLE:
                    return RetryableFailure("the provider is temporarily unavailable")
                if fault is FaultMode.TERMINAL:
                    return TerminalFailure("the payment method refuses refunds", code="refused")
                if fault is not FaultMode.TIMEOUT_BEFORE:
                    outcome = _refund_batch(conn, args, request_key, expected)
        except _Rollback as rollback:
            return rollback.outcome
        # Raised after the transaction, so the consumed fault stays consumed.
        if fault is FaultMode.TIMEOUT_BEFORE:
            raise ProviderTimeout("the batch never reached the provider")
        if fault is FaultMode.TIMEOUT_AFTER_SUCCESS:
            raise ProviderTimeout("the provider's answer was lost")
        return outcome

    def lookup(self, request_key: str) -> LookupOutcome:
        with self.shop.db.read() as conn:
            row = conn.execute(
                "SELECT reference FROM refund_batches WHERE request_key = ?", (request_key,)
            ).fetchone()
        return NotFoundAtProvider() if row is None else Succeeded(str(row[0]))


def _refund_batch(
    conn: ShopConnection, args: BatchRefundArgs, request_key: str, expected: ResourceState
) -> Succeeded:
    tenant = expected.summary["tenant"]
    done = conn.execute(
        "SELECT reference FROM refund_batches WHERE request_key = ?", (request_key,)
    ).fetchone()
    if done is not None:
        return Succeeded(str(done[0]))
    for order_id, version in expected.summary["versions"].items():
        key = f"{request_key}#{order_id}"
        outcome = _refund(
            conn, tenant, order_id, args.amount_minor, args.currency, key, int(version)
        )
        if isinstance(outcome, TerminalFailure):
            raise _Rollback(outcome)
    reference = "rb_" + uuid.uuid4().hex[:24]
    conn.execute(
        "INSERT INTO refund_batches (request_key, reference, tenant, order_count) VALUES (?,?,?,?)",
        (request_key, reference, tenant, len(expected.summary["versions"])),
    )
    return Succeeded(reference)

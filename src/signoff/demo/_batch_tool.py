"""`refund_customer_orders`: a batch write that binds the exact set it was confirmed for.

The filter (a customer's orders that can still take the amount) is resolved when
the proposal is made. The proposal binds the sorted set of order ids by its
``resource_set_digest`` (PROTOCOL.md rule 3), the count, the frozen filter and
every order's version. If the set widens or narrows before execution, the
resource differs and nothing runs.

Each order is refunded on its own (seed 000: 失败项独立回执), under a key derived from
the request key (``<request key>#<order id>``), in a transaction of the provider's own,
and reported as an :class:`~signoff.ItemOutcome`: succeeded with its refund's
reference, failed for good (the order changed, its payment method refuses), or failed for
now. The batch is ``succeeded`` only when every item is; a failed item never widens the
set and never stops the others. A retry (same request key) replays the items that
succeeded and attempts only those that failed for now; an item that failed for good
stays failed. The provider keeps the batch's items (``refund_batch_items``), so a lookup
by request key answers item by item too.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta
from typing import Annotated

from pydantic import Field

from signoff import (
    ItemOutcome,
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
_ITEMS_TABLE = """CREATE TABLE IF NOT EXISTS refund_batch_items (
    item_key TEXT PRIMARY KEY,
    batch_key TEXT NOT NULL,
    tenant TEXT NOT NULL,
    order_id TEXT NOT NULL,
    status TEXT NOT NULL,
    reference TEXT,
    error_code TEXT
)"""
_ITEM_FAULTS_TABLE = """CREATE TABLE IF NOT EXISTS refund_item_faults (
    tenant TEXT NOT NULL,
    order_id TEXT NOT NULL,
    mode TEXT NOT NULL,
    PRIMARY KEY (tenant, order_id)
)"""
_POSTGRES_DDL_LOCK = 0x5159_0A08
PENDING = "pending"
PARTIAL_FAILURE = "partial_failure"


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
        for table in (_BATCHES_TABLE, _ITEMS_TABLE, _ITEM_FAULTS_TABLE):
            shop.ensure_table(table, lock_id=_POSTGRES_DDL_LOCK)

    def fail_item(self, tenant: str, order_id: str, mode: FaultMode) -> None:
        """The next refund of this order in a batch fails: ``RETRYABLE`` or ``TERMINAL``."""
        if mode not in (FaultMode.RETRYABLE, FaultMode.TERMINAL):
            raise ValueError("an item fails retryably or terminally")
        with self.shop.db.write() as conn:
            conn.execute(
                "INSERT INTO refund_item_faults (tenant, order_id, mode) VALUES (?,?,?)",
                (tenant, order_id, mode.value),
            )

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
        """Each order on its own, under its derived key; the outcome names every item."""
        with self.shop.db.write() as conn:
            fault = _pop_fault(conn)
            if fault is FaultMode.RETRYABLE:
                return RetryableFailure("the provider is temporarily unavailable")
            if fault is FaultMode.TERMINAL:
                return TerminalFailure("the payment method refuses refunds", code="refused")
        if fault is FaultMode.TIMEOUT_BEFORE:
            raise ProviderTimeout("the batch never reached the provider")
        tenant = expected.summary["tenant"]
        versions: dict[str, int] = expected.summary["versions"]
        reference = self._open_batch(tenant, request_key, sorted(versions))
        items = [
            self._refund_item(args, tenant, request_key, order_id, int(version))
            for order_id, version in sorted(versions.items())
        ]
        if fault is FaultMode.TIMEOUT_AFTER_SUCCESS:
            raise ProviderTimeout("the provider's answer was lost")
        return batch_outcome(reference, items)

    def lookup(self, request_key: str) -> LookupOutcome:
        """The batch item by item, as the provider recorded it; unfinished: never seen."""
        with self.shop.db.read() as conn:
            batch = conn.execute(
                "SELECT reference, tenant FROM refund_batches WHERE request_key = ?",
                (request_key,),
            ).fetchone()
            rows = conn.execute(
                "SELECT order_id, item_key, status, reference, error_code "
                "FROM refund_batch_items WHERE batch_key = ? ORDER BY order_id",
                (request_key,),
            ).fetchall()
        if batch is None:
            return NotFoundAtProvider()
        if not rows:
            return Succeeded(str(batch[0]))  # a batch refunded whole by an earlier version
        if any(row[2] not in ("succeeded", "failed_terminal") for row in rows):
            return NotFoundAtProvider()  # unfinished: an attempt with the same key finishes it
        items = [_item(str(r[0]), str(r[1]), str(r[2]), r[3], r[4]) for r in rows]
        outcome = batch_outcome(str(batch[0]), items)
        assert not isinstance(outcome, RetryableFailure)
        return outcome

    def _open_batch(self, tenant: str, request_key: str, order_ids: list[str]) -> str:
        """Record the batch and its items (once per request key); its reference."""
        with self.shop.db.write() as conn:
            conn.execute(
                "INSERT INTO refund_batches (request_key, reference, tenant, order_count) "
                "VALUES (?,?,?,?) ON CONFLICT DO NOTHING",
                (request_key, "rb_" + uuid.uuid4().hex[:24], tenant, len(order_ids)),
            )
            conn.executemany(
                "INSERT INTO refund_batch_items (item_key, batch_key, tenant, order_id, status) "
                "VALUES (?,?,?,?,?) ON CONFLICT DO NOTHING",
                [(item_key(request_key, o), request_key, tenant, o, PENDING) for o in order_ids],
            )
            row = conn.execute(
                "SELECT reference FROM refund_batches WHERE request_key = ?", (request_key,)
            ).fetchone()
        return str(row[0])

    def _refund_item(
        self, args: BatchRefundArgs, tenant: str, request_key: str, order_id: str, version: int
    ) -> ItemOutcome:
        """One order, in a provider transaction of its own; a final answer is kept."""
        key = item_key(request_key, order_id)
        with self.shop.db.write() as conn:
            row = conn.execute(
                "SELECT status, reference, error_code FROM refund_batch_items WHERE item_key = ?",
                (key,),
            ).fetchone()
            if row is not None and row[0] == "failed_terminal":
                return _item(order_id, key, "failed_terminal", None, row[2])
            fault = conn.execute(
                "DELETE FROM refund_item_faults WHERE tenant = ? AND order_id = ? RETURNING mode",
                (tenant, order_id),
            ).fetchone()
            if fault is not None and fault[0] == FaultMode.RETRYABLE.value:
                outcome: ProviderOutcome = RetryableFailure("the provider is busy for this order")
            elif fault is not None:
                outcome = TerminalFailure("the payment method refuses refunds", code="refused")
            else:
                outcome = _refund(
                    conn, tenant, order_id, args.amount_minor, args.currency, key, version
                )
            item = _outcome_item(order_id, key, outcome)
            conn.execute(
                "UPDATE refund_batch_items SET status = ?, reference = ?, error_code = ? "
                "WHERE item_key = ?",
                (item.status, item.provider_reference, item.error_code, key),
            )
        return item


def item_key(request_key: str, order_id: str) -> str:
    """The provider's idempotency key of one order in a batch."""
    return f"{request_key}#{order_id}"


def batch_outcome(reference: str, items: list[ItemOutcome]) -> ProviderOutcome:
    """Succeeded only when every item did; items failed for now make it retryable; else
    the failed items are reported on their own (``partial_failure`` when others succeeded)."""
    failed = [i for i in items if i.status != "succeeded"]
    done = len(items) - len(failed)
    if not failed:
        return Succeeded(reference, items=tuple(items))
    counts = f"{len(failed)} of {len(items)} refunds failed, {done} succeeded"
    if any(i.status == "failed_retryable" for i in failed):
        return RetryableFailure(f"{counts}; a retry attempts the failed ones", items=tuple(items))
    codes = {i.error_code or "refused" for i in failed}
    code = PARTIAL_FAILURE if done else (codes.pop() if len(codes) == 1 else "refused")
    return TerminalFailure(f"{counts}; the failed ones stay failed", code=code, items=tuple(items))


def _outcome_item(order_id: str, key: str, outcome: ProviderOutcome) -> ItemOutcome:
    if isinstance(outcome, Succeeded):
        return _item(order_id, key, "succeeded", outcome.reference, None)
    if isinstance(outcome, RetryableFailure):
        return _item(order_id, key, "failed_retryable", None, "provider_retryable")
    return _item(order_id, key, "failed_terminal", None, outcome.code)


def _item(
    order_id: str, key: str, status: str, reference: str | None, code: str | None
) -> ItemOutcome:
    return ItemOutcome(
        resource=f"order:{order_id}",
        request_key=key,
        status=status,  # type: ignore[arg-type]
        provider_reference=reference,
        error_code=code,
    )

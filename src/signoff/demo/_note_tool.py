"""`add_order_note`: a low-risk, reversible demo tool that may be confirmed inside an agent client.

It shows in-band confirmation (an MCP form): the customer the agent acts for
confirms their own note. Notes live in the demo shop's database, in a table of
their own, written once per request key.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import Field

from signoff import (
    LookupOutcome,
    NotFoundAtProvider,
    Preview,
    PreviewField,
    Principal,
    ProviderOutcome,
    ResourceState,
    Risk,
    RiskLevel,
    SideEffect,
    StrictArgs,
    Succeeded,
    TerminalFailure,
    WriteTool,
)
from signoff.demo._shop import DemoShop
from signoff.exceptions import Forbidden, NotFound

MAX_NOTE_CHARS = 500
SUPPORT_ROLE = "support"
_NOTES_TABLE = """CREATE TABLE IF NOT EXISTS order_notes (
    request_key TEXT PRIMARY KEY,
    note_id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    order_id TEXT NOT NULL,
    note TEXT NOT NULL,
    created_at TEXT NOT NULL
)"""
# Shop processes starting at once create the notes table one at a time (PostgreSQL).
_POSTGRES_DDL_LOCK = 0x5159_0A07


class NoteArgs(StrictArgs):
    """Add a note to an order, for the support staff who handle it."""

    order_id: Annotated[
        str, Field(pattern=r"^ord_[0-9]{1,12}$", description="The order to annotate")
    ]
    note: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_NOTE_CHARS,
            description="The note, in the customer's words",
        ),
    ]


class AddOrderNote(WriteTool[NoteArgs]):
    name = "add_order_note"
    version = "1"
    description = "Add a note to an order; support staff read it. Nothing else changes."
    side_effect = SideEffect.REVERSIBLE
    ttl = timedelta(minutes=10)
    # The customer the agent acts for confirms their own note, in the agent client if it can.
    requester_confirms = True
    in_band = True
    reject_reasons = ("wrong_target", "wrong_words")

    def __init__(self, shop: DemoShop) -> None:
        self.shop = shop
        shop.ensure_table(_NOTES_TABLE, lock_id=_POSTGRES_DDL_LOCK)

    def read_state(self, args: NoteArgs, principal: Principal) -> ResourceState:
        order = self.shop.order(principal.tenant, args.order_id)
        if order is None:
            raise NotFound("no such order", order_id=args.order_id)
        if principal.subject != order.owner and SUPPORT_ROLE not in principal.roles:
            raise Forbidden("only the customer or support staff may note this order")
        return ResourceState(
            resource_id=f"order:{order.order_id}",
            version=str(order.version),
            summary={"tenant": order.tenant, "order_id": order.order_id, "owner": order.owner},
            beneficiary=order.owner,
        )

    def preview(self, args: NoteArgs, state: ResourceState) -> Preview:
        return Preview(
            title=f"Add a note to order {args.order_id}",
            description=self.description,
            fields=(
                PreviewField("order_id", "Order", args.order_id),
                PreviewField("note", "Note", args.note),
            ),
            impact="Support staff will see this note on the order.",
            reversibility="Reversible: staff can remove the note.",
            facts=(f"Order {args.order_id} belongs to customer {state.beneficiary}.",),
        )

    def risk(self, args: NoteArgs, state: ResourceState) -> Risk:
        return Risk(RiskLevel.LOW, ("an internal note; no money or data leaves",))

    def execute(self, args: NoteArgs, request_key: str, expected: ResourceState) -> ProviderOutcome:
        tenant = expected.summary["tenant"]
        with self.shop.db.write() as conn:
            existing = _note_id(conn, request_key)
            if existing is not None:
                return Succeeded(existing)
            note_id = "note_" + uuid.uuid4().hex[:24]
            # Written only while the order is still at the version the person saw.
            written = conn.execute(
                "INSERT INTO order_notes "
                "(request_key, note_id, tenant, order_id, note, created_at) "
                "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM orders "
                "WHERE tenant = ? AND order_id = ? AND version = ?)",
                (
                    request_key,
                    note_id,
                    tenant,
                    args.order_id,
                    args.note,
                    datetime.now(UTC).isoformat(),
                    tenant,
                    args.order_id,
                    int(expected.version),
                ),
            ).rowcount
        if written != 1:
            return TerminalFailure("the order changed since it was previewed", code="state_changed")
        return Succeeded(note_id)

    def lookup(self, request_key: str) -> LookupOutcome:
        with self.shop.db.read() as conn:
            existing = _note_id(conn, request_key)
        return NotFoundAtProvider() if existing is None else Succeeded(existing)


def order_notes(shop: DemoShop, tenant: str, order_id: str) -> list[str]:
    """The notes on an order, oldest first (to check the side effect)."""
    with shop.db.read() as conn:
        rows = conn.execute(
            "SELECT note FROM order_notes WHERE tenant = ? AND order_id = ? "
            "ORDER BY created_at, note_id",
            (tenant, order_id),
        ).fetchall()
    return [row[0] for row in rows]


def _note_id(conn: Any, request_key: str) -> str | None:
    row = conn.execute(
        "SELECT note_id FROM order_notes WHERE request_key = ?", (request_key,)
    ).fetchone()
    return None if row is None else str(row[0])

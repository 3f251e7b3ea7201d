"""A gate on either store (SQLite file or a PostgreSQL schema) wired to a fault harness."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from signoff import (
    Catalog,
    Decision,
    DecisionKind,
    Execution,
    Gate,
    ManualClock,
    Proposal,
    SQLiteStore,
    StaticRoleDirectory,
    Store,
)
from signoff.demo import DemoShop, RefundProvider, demo_catalog, seed_demo_orders
from signoff.testing import Effect, FaultHarness, Verdict, check_exactly_once
from tests.conftest import AGENT, APPROVER, REFUND, TOKEN_KEY
from tests.pg import fresh_schema

LEASE = timedelta(seconds=30)
STORES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@contextmanager
def store_for(kind: str, path: Path) -> Iterator[tuple[Store, str]]:
    """A migrated, empty store of ``kind`` and its URL, removed afterwards."""
    if kind == "sqlite":
        sqlite = SQLiteStore(path / "signoff.db")
        sqlite.migrate()
        try:
            yield sqlite, sqlite.url
        finally:
            sqlite.close()
        return
    from signoff.store._postgres import PostgresStore

    with fresh_schema("faults") as url:
        pg = PostgresStore(url, max_size=4)
        try:
            pg.migrate()
            yield pg, url
        finally:
            pg.close()


def catalog_from_env() -> Catalog:
    """For ``--catalog tests.faultworld:catalog_from_env``: the demo tool on $SIGNOFF_TEST_SHOP."""
    return demo_catalog(DemoShop(os.environ["SIGNOFF_TEST_SHOP"]))


@dataclass
class FaultWorld:
    """A gate whose hooks are a :class:`FaultHarness`, the demo shop, and its ledger."""

    gate: Gate
    store: Store
    shop: DemoShop
    provider: RefundProvider
    clock: ManualClock
    directory: StaticRoleDirectory
    harness: FaultHarness
    url: str
    """The store's URL, for a second process (``signoff reconcile --db``)."""

    def propose(self, **changes: object) -> Proposal:
        return self.gate.propose(AGENT, "refund_order", {**REFUND, **changes})

    def approve(self, proposal: Proposal, *, key: str | None = None) -> str:
        result = self.gate.decide(
            APPROVER,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key=key or f"approve-{proposal.proposal_id}",
        )
        assert result.confirmation_token is not None
        return result.confirmation_token

    def confirmed(self, order_id: str = "ord_1001", **changes: object) -> tuple[Proposal, str]:
        proposal = self.propose(order_id=order_id, **changes)
        return proposal, self.approve(proposal)

    def effects(self) -> list[Effect]:
        return [Effect(e.request_key, e.reference) for e in self.provider.ledger()]

    def refunded(self, order_id: str = "ord_1001") -> int:
        order = self.shop.order("acme", order_id)
        assert order is not None
        return order.refunded

    def execution_of(self, proposal: Proposal) -> Execution:
        execution = self.gate.execution_for(AGENT, proposal.proposal_id)
        assert execution is not None
        return execution

    def verdict(self, *proposals: Proposal) -> Verdict:
        return check_exactly_once([self.execution_of(p) for p in proposals], self.effects())

    def lapse(self) -> None:
        """Let every lease run out, as after a crash."""
        self.clock.advance(LEASE + timedelta(seconds=1))

    def second_gate(self) -> Gate:
        """Another worker: a gate of its own on the same store, shop and directory."""
        return Gate(
            demo_catalog(self.shop, self.provider),
            self.store,
            token_key=TOKEN_KEY,
            clock=self.clock,
            directory=self.directory,
            lease=LEASE,
        )


@contextmanager
def fault_world(kind: str, path: Path) -> Iterator[FaultWorld]:
    with store_for(kind, path) as (store, url):
        shop = DemoShop(str(path / "shop.db"))
        seed_demo_orders(shop)
        provider = RefundProvider(shop)
        # A few leases in the past: a second process on the system clock sees every lease
        # lapsed, while a confirmation (15 minutes) is still valid there.
        clock = ManualClock(datetime.now(UTC) - 4 * LEASE)
        directory = StaticRoleDirectory([("acme", "alice", "refund_approver")])
        harness = FaultHarness(
            effects=lambda: [Effect(e.request_key, e.reference) for e in provider.ledger()]
        )
        gate = Gate(
            demo_catalog(shop, provider),
            store,
            token_key=TOKEN_KEY,
            clock=clock,
            directory=directory,
            lease=LEASE,
            hooks=harness,
        )
        try:
            yield FaultWorld(gate, store, shop, provider, clock, directory, harness, url)
        finally:
            shop.close()

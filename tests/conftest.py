"""Shared fixtures: a gate over a SQLite file and the demo shop, with an injected clock."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from signoff import (
    Decision,
    DecisionKind,
    Gate,
    ManualClock,
    Principal,
    Proposal,
    ReasonCode,
    SQLiteStore,
    StaticRoleDirectory,
)
from signoff.demo import DemoShop, RefundProvider, demo_catalog, seed_demo_orders
from signoff.gate._proof import GateProof
from signoff.identity import DirectoryMode, StoreRoleDirectory
from signoff.proof import KeySet

TOKEN_KEY = b"k" * 32
ISSUER = "https://signoff.test"
TOKEN_FORMS = ("opaque", "signed")
AGENT = Principal("u_42", "acme", actor="agent:support-bot")
APPROVER = Principal("alice", "acme", roles=frozenset({"refund_approver"}))
APPROVER_2 = Principal("bob", "acme", roles=frozenset({"refund_approver"}))
NO_ROLE = Principal("carol", "acme")
OTHER_TENANT = Principal("gina", "globex", roles=frozenset({"refund_approver"}))
REFUND = {"order_id": "ord_1001", "amount_minor": 19900, "currency": "CNY", "reason": "damaged"}


@dataclass
class World:
    """Everything a test needs to drive the protocol and check the side effects."""

    gate: Gate
    store: SQLiteStore
    shop: DemoShop
    provider: RefundProvider
    clock: ManualClock
    directory: StaticRoleDirectory
    path: Path

    def propose(self, **changes: object) -> Proposal:
        return self.gate.propose(AGENT, "refund_order", {**REFUND, **changes})

    def approve(self, proposal: Proposal, *, by: Principal = APPROVER, key: str = "k1") -> str:
        result = self.gate.decide(
            by,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key=key,
        )
        assert result.confirmation_token is not None
        return result.confirmation_token

    def reject(self, proposal: Proposal, *, by: Principal = APPROVER, key: str = "r1") -> Proposal:
        return self.gate.decide(
            by,
            proposal.proposal_id,
            Decision(DecisionKind.REJECT, proposal.version, ReasonCode.WRONG_AMOUNT, "too much"),
            idempotency_key=key,
        ).proposal

    def ledger_amounts(self, tenant: str = "acme") -> list[tuple[str, int]]:
        return [(e.order_id, e.amount_minor) for e in self.provider.ledger(tenant)]

    def refunded(self, order_id: str = "ord_1001", tenant: str = "acme") -> int:
        order = self.shop.order(tenant, order_id)
        assert order is not None
        return order.refunded


def make_world(path: Path, *, seed: bool = True, token_form: str = "opaque") -> World:
    store = SQLiteStore(path / "signoff.db")
    store.migrate()
    shop = DemoShop(str(path / "shop.db"))
    if seed:
        seed_demo_orders(shop)
    provider = RefundProvider(shop)
    clock = ManualClock()
    directory = StaticRoleDirectory(
        [
            ("acme", "alice", "refund_approver"),
            ("acme", "bob", "refund_approver"),
            ("acme", "bob", "support"),
            ("globex", "gina", "refund_approver"),
            ("acme", "audrey", "auditor"),
            ("acme", "dave", "auditor"),
            ("globex", "gus", "auditor"),
            ("acme", "olga", "signoff_admin"),
        ]
    )
    gate = Gate(
        demo_catalog(shop, provider),
        store,
        token_key=TOKEN_KEY,
        clock=clock,
        directory=directory,
        proof=signing(token_form),
    )
    return World(gate, store, shop, provider, clock, directory, path)


def store_directory_gate(
    world: World, mode: DirectoryMode = "revocations"
) -> tuple[Gate, StoreRoleDirectory]:
    """A gate over the world's store, tools and clock whose role directory lives in that
    store (as `signoff serve` runs it), and the directory to grant and revoke with."""
    directory = StoreRoleDirectory(world.store, mode=mode)
    gate = Gate(
        world.gate.catalog, world.store, token_key=TOKEN_KEY, clock=world.clock, directory=directory
    )
    return gate, directory


def signing(token_form: str) -> GateProof | None:
    """The gate's signing setup for a token form: none for opaque, a fresh key for signed."""
    if token_form == "opaque":
        return None
    return GateProof(KeySet.generate(), issuer=ISSUER, token_form="signed")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path)
    yield w
    w.store.close()
    w.shop.close()


@pytest.fixture(autouse=True)
def _own_data_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Commands that fall back to the data directory write into a temporary one, never ~."""
    previous = os.environ.get("SIGNOFF_DATA_DIR")
    os.environ["SIGNOFF_DATA_DIR"] = str(tmp_path_factory.mktemp("data"))
    yield
    if previous is None:
        os.environ.pop("SIGNOFF_DATA_DIR", None)
    else:
        os.environ["SIGNOFF_DATA_DIR"] = previous


PREREQUISITES = (
    ("PostgreSQL", "PostgreSQL unreachable", "a server at SIGNOFF_TEST_POSTGRES_URL"),
    (
        "Node.js and npm ci",
        "npm ci",
        "node, npm ci --prefix tests/identity/idp / tests/conformance",
    ),
    ("chromium", "chromium", "Debian's chromium at /usr/bin/chromium"),
)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how many tests did not run for a missing prerequisite, so a green run with skips
    is never mistaken for the whole suite (README, "Running the tests")."""
    skipped = terminalreporter.stats.get("skipped", [])
    counts: dict[str, int] = {}
    for report in skipped:
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else ""
        name = next((n for n, needle, _ in PREREQUISITES if needle in reason), "other reasons")
        counts[name] = counts.get(name, 0) + 1
    if not counts:
        return
    total = sum(counts.values())
    terminalreporter.section(f"not run: {total} tests skipped", sep="=", yellow=True)
    for name, _, how in PREREQUISITES:
        if name in counts:
            terminalreporter.line(f"  {counts[name]:4d} need {name} ({how})")
    if "other reasons" in counts:
        terminalreporter.line(f"  {counts['other reasons']:4d} for other reasons (see above)")
    terminalreporter.line(
        "  README's 'Running the tests' lists what they need; CI=true fails them."
    )

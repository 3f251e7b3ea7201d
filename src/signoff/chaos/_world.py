"""What the chaos driver, its workers and its reconcilers share: principals, orders, the gate."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from signoff._directory import StaticRoleDirectory
from signoff._model import Decision, DecisionKind, Principal, Proposal
from signoff.demo import DemoShop, RefundProvider, demo_catalog
from signoff.gate._gate import Gate
from signoff.gate._hooks import ExecutionHooks
from signoff.store import Store, open_store

TOKEN_KEY = b"signoff-chaos-run-token-key-0123"
TENANT = "acme"
AGENT = Principal("u_42", TENANT, actor="agent:chaos")
APPROVER = Principal("alice", TENANT, roles=frozenset({"refund_approver"}))
AMOUNT_MINOR = 100
PAYABLE_MINOR = 19_900
FIRST_ORDER = 500_000


def chaos_directory() -> StaticRoleDirectory:
    """The approver keeps the role throughout (``signoff reconcile --directory`` loads this)."""
    return StaticRoleDirectory([(TENANT, APPROVER.subject, "refund_approver")])


@dataclass
class ChaosWorld:
    gate: Gate
    store: Store
    shop: DemoShop
    provider: RefundProvider

    def close(self) -> None:
        self.shop.close()
        self.store.close()

    def confirmed_refund(self, order_number: int) -> tuple[Proposal, str]:
        """A fresh order, a refund of ¥1.00 on it, approved: (proposal, token).

        ¥1.00 of ¥199.00 leaves room for a second refund, so a duplicate would show.
        """
        order_id = f"ord_{order_number}"
        self.shop.add_order(TENANT, order_id, owner=AGENT.subject, payable=PAYABLE_MINOR)
        proposal = self.gate.propose(
            AGENT,
            "refund_order",
            {"order_id": order_id, "amount_minor": AMOUNT_MINOR, "currency": "CNY", "reason": None},
        )
        decided = self.gate.decide(
            APPROVER,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key=f"chaos-{proposal.proposal_id}",
        )
        assert decided.confirmation_token is not None
        return proposal, decided.confirmation_token


def open_world(
    db: str,
    shop: str,
    *,
    lease: timedelta,
    hooks: ExecutionHooks | None = None,
    migrate: bool = True,
) -> ChaosWorld:
    store = open_store(db, migrate=migrate)
    demo_shop = DemoShop(shop)
    provider = RefundProvider(demo_shop)
    gate = Gate(
        demo_catalog(demo_shop, provider),
        store,
        token_key=TOKEN_KEY,
        directory=chaos_directory(),
        lease=lease,
        hooks=hooks,
    )
    return ChaosWorld(gate, store, demo_shop, provider)

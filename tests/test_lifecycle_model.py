"""A model-based test: random propose/decide/execute/expire/revoke/state-change sequences."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
)

from signoff import Decision, DecisionKind, ProposalStatus, ReasonCode
from signoff.exceptions import SignoffError
from tests.conftest import AGENT, APPROVER, make_world

ORDERS = ("ord_1001", "ord_1002")


@dataclass
class Expected:
    """The reference model's view of one proposal."""

    proposal_id: str
    order_id: str
    amount: int
    state_version: str
    status: str = "awaiting_confirmation"
    version: int = 1
    token: str | None = None


class Lifecycle(RuleBasedStateMachine):
    proposals = Bundle("proposals")

    def __init__(self) -> None:
        super().__init__()
        self._dir = tempfile.TemporaryDirectory()
        self.world = make_world(Path(self._dir.name))
        self.expected: dict[str, Expected] = {}
        self.terminal_seen: dict[str, str] = {}
        self.keys = 0

    def teardown(self) -> None:
        self.world.store.close()
        self.world.shop.close()
        self._dir.cleanup()

    def _key(self) -> str:
        self.keys += 1
        return f"key-{self.keys}"

    def _fresh(self, model: Expected) -> bool:
        order = self.world.shop.order("acme", model.order_id)
        assert order is not None
        return (
            str(order.version) == model.state_version
            and order.refunded + model.amount <= order.payable
        )

    def _expired(self, pid: str) -> bool:
        proposal = self.world.gate.proposal(AGENT, pid)
        return self.world.clock.now() >= proposal.expires_at

    @rule(target=proposals, order=st.sampled_from(ORDERS), amount=st.sampled_from([100, 9000]))
    def propose(self, order: str, amount: int) -> str:
        order_row = self.world.shop.order("acme", order)
        assert order_row is not None
        try:
            proposal = self.world.propose(order_id=order, amount_minor=amount)
        except SignoffError as exc:
            assert order_row.refunded + amount > order_row.payable, exc.code
            return "none"
        self.expected[proposal.proposal_id] = Expected(
            proposal.proposal_id, order, amount, proposal.state_version
        )
        return proposal.proposal_id

    @rule(pid=proposals, approve=st.sampled_from([True, True, True, False]))
    def decide(self, pid: str, approve: bool) -> None:
        model = self.expected.get(pid)
        if model is None:
            return
        kind = DecisionKind.APPROVE if approve else DecisionKind.REJECT
        can = model.status == "awaiting_confirmation" and not self._expired(pid)
        if approve:  # approving re-reads the business state first (rule 11)
            can = can and self._fresh(model)
        try:
            result = self.world.gate.decide(
                APPROVER,
                pid,
                Decision(kind, model.version, None if approve else ReasonCode.OTHER),
                idempotency_key=self._key(),
            )
        except SignoffError as exc:
            assert not can, exc.code
            if exc.code == "preview_expired":
                model.status = "expired"
            return
        assert can
        model.status = result.proposal.status.value
        model.version = result.proposal.version
        model.token = result.confirmation_token
        assert (model.token is not None) == approve

    @rule(pid=proposals)
    def execute(self, pid: str) -> None:
        model = self.expected.get(pid)
        if model is None:
            return
        can = (
            model.status == "confirmed"
            and model.token is not None
            and not self._expired(pid)
            and self._fresh(model)
        )
        try:
            self.world.gate.execute(AGENT, pid, model.token or "sot_bogus")
        except SignoffError as exc:
            assert not can, exc.code
            return
        assert can
        model.status = "succeeded"

    @rule(pid=proposals)
    def approve_then_execute(self, pid: str) -> None:
        self.decide(pid, True)
        self.execute(pid)

    @rule(pid=proposals)
    def revoke(self, pid: str) -> None:
        model = self.expected.get(pid)
        if model is None:
            return
        can = model.status == "confirmed"
        try:
            self.world.gate.revoke(APPROVER, pid, reason="changed my mind")
        except SignoffError as exc:
            assert not can, exc.code
            return
        assert can
        model.status = "revoked"

    @rule(seconds=st.sampled_from([1, 30, 601]))
    def time_passes(self, seconds: int) -> None:
        self.world.clock.advance(timedelta(seconds=seconds))

    @rule(order=st.sampled_from(ORDERS))
    def order_changes_elsewhere(self, order: str) -> None:
        self.world.shop.touch_order("acme", order)

    @rule(pid=consumes(proposals))
    def sweep(self, pid: str) -> None:
        self.world.gate.expire_due()
        for model in self.expected.values():
            if model.status in ("awaiting_confirmation", "confirmed") and self._expired(
                model.proposal_id
            ):
                model.status = "expired"

    @invariant()
    def effects_only_after_approval_and_at_most_once(self) -> None:
        ledger = self.world.provider.ledger()
        keys = [entry.request_key for entry in ledger]
        assert len(keys) == len(set(keys)), "one effect per request key"
        with self.world.store.read() as tx:
            approved_keys = {
                row[0]
                for row in tx.run(
                    "SELECT p.request_key FROM proposals p JOIN decisions d "
                    "ON d.proposal_id = p.proposal_id WHERE d.kind = 'approve'"
                ).fetchall()
            }
        assert set(keys) <= approved_keys, "no effect without approval"
        for order_id in ORDERS:
            order = self.world.shop.order("acme", order_id)
            assert order is not None
            spent = sum(e.amount_minor for e in ledger if e.order_id == order_id)
            assert order.refunded == spent <= order.payable

    @invariant()
    def terminal_states_never_change(self) -> None:
        with self.world.store.read() as tx:
            rows = tx.run("SELECT proposal_id, status FROM proposals").fetchall()
        for pid, status in rows:
            before = self.terminal_seen.get(pid)
            assert before is None or before == status, f"{pid}: {before} -> {status}"
            if ProposalStatus(status).is_terminal:
                self.terminal_seen[pid] = status


Lifecycle.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLifecycle = Lifecycle.TestCase

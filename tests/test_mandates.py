"""Standing approvals (mandates), on both stores: covered writes run once, every refusal names
its constraint and changes nothing, revocation and a lost role end it, and the budget follows
what may have happened (failed_terminal gives back, unknown holds, succeeded spends)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from signoff import Decision, DecisionKind, Gate, Principal, ProposalStatus
from signoff.demo import FaultMode
from signoff.exceptions import (
    IdempotencyKeyReused,
    InvalidRequest,
    MandateExceeded,
    MandateExhausted,
    MandateExpired,
    MandateNotApplicable,
    MandateRevoked,
    NotFound,
    Refusal,
    Revoked,
    SeparationOfDuties,
    VersionConflict,
)
from signoff.gate._mandate import MandateState
from signoff.policy import parse_policy
from tests.conftest import AGENT, APPROVER, APPROVER_2, OTHER_TENANT, TOKEN_KEY
from tests.test_store_contract import STORES, Backend, backend_for

DEMO = {"currency": "CNY", "max_amount_minor": 20000, "total_amount_minor": 30000, "max_count": 3}
OTHER_AGENT = Principal("u_42", "acme", actor="agent:other-bot")
STRANGER = Principal("sam", "acme", roles=frozenset({"support"}), actor="agent:support-bot")


@dataclass
class Mandates:
    backend: Backend
    gate: Gate

    def create(self, constraints: dict[str, Any] | None = None, *, approve: bool = True) -> str:
        state = self.gate.propose_mandate(
            AGENT, "refund_order", constraints or DEMO, expires_in_seconds=3600
        )
        if approve:
            state = self.approve(state)
            assert state.status == "active"
        return state.record.mandate_id

    def approve(self, state: MandateState, *, by: Principal = APPROVER) -> MandateState:
        return self.gate.decide_mandate(
            by,
            state.record.mandate_id,
            Decision(DecisionKind.APPROVE, state.record.version),
            idempotency_key=f"{state.record.mandate_id}-{by.subject}-{state.record.version}",
        )

    def write(
        self,
        mandate_id: str,
        order: str = "ord_1001",
        amount: int = 10000,
        *,
        by: Principal = AGENT,
    ) -> Any:
        arguments = {"order_id": order, "amount_minor": amount, "currency": "CNY", "reason": None}
        return self.gate.propose(by, "refund_order", arguments, mandate_id=mandate_id)

    def run(self, proposal: Any, *, by: Principal = AGENT) -> Any:
        token = self.gate.confirmation_token(by, proposal.proposal_id)
        return self.gate.execute(by, proposal.proposal_id, token)

    def state(self, mandate_id: str) -> MandateState:
        return self.gate.mandate(AGENT, mandate_id)

    def ledger(self) -> list[tuple[str, int]]:
        return [(e.order_id, e.amount_minor) for e in self.backend.provider.ledger("acme")]

    def proposals(self) -> int:
        return len(self.gate.proposals(AGENT, limit=500))


def mandates_on(backend: Backend, policy: str | None = None) -> Mandates:
    gate = Gate(
        backend.gate().catalog,
        backend.store,
        token_key=TOKEN_KEY,
        clock=backend.clock,
        directory=backend.directory,
        policy=None if policy is None else parse_policy(policy),
    )
    return Mandates(backend, gate)


@pytest.fixture(params=STORES)
def m(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Mandates]:
    with backend_for(request.param, tmp_path) as backend:
        yield mandates_on(backend)


def test_a_covered_write_is_confirmed_at_once_and_runs_once(m: Mandates) -> None:
    """confirmed without a person; the agent picks up the token; one ledger entry; a receipt
    naming the mandate, its approvers and the budget left."""
    mid = m.create()
    proposal = m.write(mid, amount=15000)
    assert proposal.status is ProposalStatus.CONFIRMED
    assert [a.approver for a in proposal.approvals] == ["alice"]
    result = m.run(proposal)
    assert m.ledger() == [("ord_1001", 15000)]
    assert result.receipt is not None and result.receipt.mandate is not None
    cover = result.receipt.mandate
    assert (cover["mandate_id"], cover["approvers"]) == (mid, ["alice"])
    assert (cover["remaining_amount_minor"], cover["remaining_count"]) == (15000, 2)
    state = m.state(mid)
    assert (state.remaining_amount_minor, state.remaining_count) == (15000, 2)
    [write] = state.writes
    assert (write.proposal_id, write.status, write.proposal_status) == (
        proposal.proposal_id,
        "held",
        "succeeded",
    )


def _refused(
    m: Mandates, mid: str, refusal: type[Refusal], constraint: str | None, **write: Any
) -> None:
    before = (m.state(mid).record.spent_minor, m.state(mid).record.used, m.proposals())
    with pytest.raises(refusal) as caught:
        m.write(mid, **write)
    if constraint is not None:
        assert caught.value.details["constraint"] == constraint
    after = (m.state(mid).record.spent_minor, m.state(mid).record.used, m.proposals())
    assert after == before, "a refusal changes nothing"


def test_above_the_per_write_maximum_is_mandate_exceeded(m: Mandates) -> None:
    mid = m.create({**DEMO, "max_amount_minor": 5000})
    _refused(m, mid, MandateExceeded, "max_amount_minor", amount=5001)
    assert m.ledger() == []


def test_above_what_is_left_is_mandate_exceeded(m: Mandates) -> None:
    mid = m.create()
    m.run(m.write(mid, "ord_1001", 15000))
    _refused(m, mid, MandateExceeded, "total_amount_minor", order="ord_1002", amount=16000)
    assert m.ledger() == [("ord_1001", 15000)]


def test_a_used_up_count_and_budget_are_mandate_exhausted(m: Mandates) -> None:
    mid = m.create()
    for order in ("ord_1001", "ord_1002", "ord_1003"):
        m.run(m.write(mid, order, 5000))
    _refused(m, mid, MandateExhausted, "max_count", order="ord_1004", amount=1)
    spent = m.create({**DEMO, "max_count": 10})
    m.run(m.write(spent, "ord_1005", 15000))
    m.run(m.write(spent, "ord_1006", 15000))
    _refused(m, spent, MandateExhausted, "total_amount_minor", order="ord_1007", amount=1)
    assert sum(amount for _, amount in m.ledger()) == 15000 + 30000


def test_after_its_window_is_mandate_expired(m: Mandates) -> None:
    mid = m.create()
    m.backend.clock.advance(timedelta(seconds=3600))
    _refused(m, mid, MandateExpired, None)


def test_a_revoked_mandate_is_mandate_revoked(m: Mandates) -> None:
    mid = m.create()
    m.gate.revoke_mandate(AGENT, mid, reason="the incident is over")
    _refused(m, mid, MandateRevoked, None)


def test_what_the_mandate_does_not_cover_is_mandate_not_applicable(m: Mandates) -> None:
    """another agent, another resource, another currency, not yet approved."""
    only = m.create({**DEMO, "agents": ["agent:support-bot"], "resources": ["order:ord_1001"]})
    _refused(m, only, MandateNotApplicable, "agents", by=OTHER_AGENT)
    _refused(m, only, MandateNotApplicable, "resources", order="ord_1002")
    usd = m.create({**DEMO, "currency": "USD"})
    _refused(m, usd, MandateNotApplicable, "currency")
    pending = m.create(approve=False)
    _refused(m, pending, MandateNotApplicable, "status")
    assert m.ledger() == []


def test_a_high_risk_write_is_never_covered_unless_the_policy_says_so(m: Mandates) -> None:
    big = {"currency": "CNY", "max_amount_minor": 200000, "total_amount_minor": 300000}
    mid = m.create(big)
    _refused(m, mid, MandateNotApplicable, "risk", order="ord_9200", amount=150000)
    covering = mandates_on(
        m.backend, '[tools.refund_order.mandate]\ncovers_risk = ["low", "medium", "high"]\n'
    )
    proposal = covering.write(mid, "ord_9200", 150000)
    assert proposal.status is ProposalStatus.CONFIRMED and proposal.risk.level == "high"


def test_another_persons_mandate_cannot_be_spent(m: Mandates) -> None:
    """404 for a mandate of another person (even with the same agent) or another tenant."""
    mid = m.create()
    m.backend.directory.grant("acme", "sam", "support")  # sam may ask; not under u_42's mandate
    with pytest.raises(NotFound):
        m.write(mid, by=STRANGER)
    with pytest.raises(NotFound):
        m.gate.mandate(OTHER_TENANT, mid)


def test_no_constraint_no_mandate(m: Mandates) -> None:
    for constraints in ({}, {"currency": "CNY"}, {"max_count": 3}, {"currency": "CNY", "bogus": 1}):
        with pytest.raises(InvalidRequest):
            m.gate.propose_mandate(AGENT, "refund_order", constraints, expires_in_seconds=60)
    with pytest.raises(InvalidRequest):
        m.gate.propose_mandate(AGENT, "refund_order", DEMO, expires_in_seconds=10**7)
    with pytest.raises(MandateNotApplicable):  # the note tool does not allow mandates
        m.gate.propose_mandate(AGENT, "add_order_note", {"max_count": 3}, expires_in_seconds=60)


def test_a_mandate_is_decided_like_a_proposal(m: Mandates) -> None:
    """an agent never approves, nor the requester; a stale version conflicts; a repeated key
    answers again; a key reused for another decision is refused."""
    state = m.gate.propose_mandate(AGENT, "refund_order", DEMO, expires_in_seconds=60)
    mid, version = state.record.mandate_id, state.record.version
    approve = Decision(DecisionKind.APPROVE, version)
    for who in (AGENT, Principal("u_42", "acme", roles=frozenset({"refund_approver"}))):
        with pytest.raises(SeparationOfDuties):
            m.gate.decide_mandate(who, mid, approve, idempotency_key="x")
    with pytest.raises(VersionConflict):
        m.gate.decide_mandate(APPROVER, mid, Decision(DecisionKind.APPROVE, 9), idempotency_key="x")
    first = m.gate.decide_mandate(APPROVER, mid, approve, idempotency_key="k")
    again = m.gate.decide_mandate(APPROVER, mid, approve, idempotency_key="k")
    assert (first.status, again.status, again.duplicate) == ("active", "active", True)
    reject = Decision(DecisionKind.REJECT, version, "policy")
    with pytest.raises(IdempotencyKeyReused):
        m.gate.decide_mandate(APPROVER, mid, reject, idempotency_key="k")


def test_the_policy_may_ask_more_approvers_for_a_mandate(m: Mandates) -> None:
    two = mandates_on(m.backend, "[tools.refund_order.mandate]\napprovals = 2\n")
    state = two.gate.propose_mandate(AGENT, "refund_order", DEMO, expires_in_seconds=60)
    state = two.approve(state)
    assert state.status == "awaiting_confirmation"
    _refused(two, state.record.mandate_id, MandateNotApplicable, "status")
    state = two.approve(state, by=APPROVER_2)
    assert state.status == "active"
    proposal = two.write(state.record.mandate_id)
    assert sorted(a.approver for a in proposal.approvals) == ["alice", "bob"]


def test_revocation_between_two_proposals_stops_the_next_and_the_unstarted(m: Mandates) -> None:
    """The first write ran; the second was confirmed but not started; then revocation: the
    second's token is revoked (its amount comes back) and a third is refused."""
    mid = m.create()
    m.run(m.write(mid, "ord_1001", 10000))
    second = m.write(mid, "ord_1002", 10000)
    token = m.gate.confirmation_token(AGENT, second.proposal_id)
    state = m.gate.revoke_mandate(APPROVER, mid, reason="stop now")
    assert state.status == "revoked"
    assert (state.remaining_amount_minor, state.remaining_count) == (20000, 2)
    with pytest.raises(Revoked):
        m.gate.execute(AGENT, second.proposal_id, token)
    _refused(m, mid, MandateRevoked, None, order="ord_1003")
    assert m.ledger() == [("ord_1001", 10000)]


def test_an_approver_losing_the_role_ends_the_mandate(m: Mandates) -> None:
    """PROTOCOL rule 11: the next proposal is refused and the mandate ends; a write confirmed
    before and not yet started cannot run either."""
    mid = m.create()
    m.run(m.write(mid, "ord_1001", 10000))
    waiting = m.write(mid, "ord_1002", 10000)
    token = m.gate.confirmation_token(AGENT, waiting.proposal_id)
    m.backend.directory.revoke("acme", "alice", "refund_approver")
    with pytest.raises(MandateRevoked):
        m.write(mid, "ord_1003", 10000)
    state = m.state(mid)
    assert (state.status, state.record.ended_reason) == ("revoked", "approver_revoked")
    with pytest.raises(Refusal):
        m.gate.execute(AGENT, waiting.proposal_id, token)
    assert m.ledger() == [("ord_1001", 10000)]
    assert m.state(mid).remaining_amount_minor == 20000
    with m.backend.store.read() as tx:
        assert "mandate.ended" in [e.kind for e in tx.audit_events()]


@pytest.mark.parametrize(
    ("fault", "remaining", "status"),
    [
        (None, (20000, 2), "succeeded"),
        (FaultMode.TERMINAL, (30000, 3), "failed_terminal"),
        (FaultMode.TIMEOUT_BEFORE, (20000, 2), "unknown"),
        (FaultMode.TIMEOUT_AFTER_SUCCESS, (20000, 2), "unknown"),
    ],
)
def test_the_budget_follows_what_may_have_happened(
    m: Mandates, fault: FaultMode | None, remaining: tuple[int, int], status: str
) -> None:
    """succeeded spends; failed_terminal (the provider refused) gives back; unknown holds, even
    when the provider never saw it, until a lookup or a person knows."""
    mid = m.create()
    if fault is not None:
        m.backend.provider.fail_next(fault)
    result = m.run(m.write(mid, "ord_1001", 10000))
    assert result.execution.status.value == status
    state = m.state(mid)
    assert (state.remaining_amount_minor, state.remaining_count) == remaining
    [write] = state.writes
    assert write.status == ("returned" if status == "failed_terminal" else "held")


def test_a_failed_write_gives_back_only_once(m: Mandates) -> None:
    """Given back, the budget can be spent again, and never twice over."""
    mid = m.create()
    m.backend.provider.fail_next(FaultMode.TERMINAL)
    m.run(m.write(mid, "ord_1001", 15000))
    m.run(m.write(mid, "ord_1002", 15000))
    m.run(m.write(mid, "ord_1003", 15000))
    _refused(m, mid, MandateExhausted, "total_amount_minor", order="ord_1004", amount=1)
    assert sorted(m.ledger()) == [("ord_1002", 15000), ("ord_1003", 15000)]


def test_the_policy_may_send_an_uncovered_write_to_a_person(m: Mandates) -> None:
    fallback = mandates_on(m.backend, "[tools.refund_order]\nmandate_fallback = true\n")
    mid = fallback.create({**DEMO, "max_amount_minor": 5000})
    proposal = fallback.write(mid, amount=6000)
    assert proposal.status is ProposalStatus.AWAITING_CONFIRMATION
    assert proposal.state["mandate_refusal"]["code"] == "mandate_exceeded"
    assert fallback.state(mid).remaining_amount_minor == 30000
    decided = fallback.gate.decide(
        APPROVER, proposal.proposal_id, Decision(DecisionKind.APPROVE, 1), idempotency_key="p"
    )
    assert decided.proposal.status is ProposalStatus.CONFIRMED


def test_a_refused_write_is_evidence_in_the_chain(m: Mandates) -> None:
    """Rule 15: the code, the constraint, who asked and what (by digest), never the arguments."""
    mid = m.create({**DEMO, "max_amount_minor": 5000})
    for _ in range(12):
        with pytest.raises(MandateExceeded):
            m.write(mid, amount=6000)
    with m.backend.store.read() as tx:
        refused = [e for e in tx.audit_events(tenant="acme") if e.kind == "mandate.refused"]
    assert len(refused) == 10  # then counted only
    first = refused[0].payload()
    assert (first["mandate_id"], first["code"], first["constraint"]) == (
        mid,
        "mandate_exceeded",
        "max_amount_minor",
    )
    assert refused[0].actor == AGENT.label() and "amount_minor" not in first
    assert refused[-1].payload()["further_refusals_counted_only"] is True

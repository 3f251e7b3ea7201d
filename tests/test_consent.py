"""Consent holds only while it holds (PROTOCOL rule 11): every attempt asks; lookups never do.

Each test checks the provider's ledger: a refused attempt never reaches it.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from signoff import (
    Decision,
    DecisionKind,
    ExecutionStatus,
    Principal,
    ProposalStatus,
    StaticRoleDirectory,
)
from signoff._clock import from_micros, to_micros
from signoff.demo import FaultMode
from signoff.exceptions import (
    ApproverRevoked,
    AttemptsExhausted,
    Forbidden,
    InvalidState,
    NotFound,
    PreviewExpired,
    RequesterRevoked,
    SeparationOfDuties,
    StateChanged,
    TokenExpired,
)
from signoff.gate._reconcile import ReconcileAction
from tests.conftest import AGENT, APPROVER, NO_ROLE, REFUND, World

TTL = timedelta(minutes=15)


def _failed_retryable(world: World, order_id: str = "ord_1001") -> tuple[str, str]:
    proposal = world.propose(order_id=order_id)
    token = world.approve(proposal, key=f"k-{order_id}")
    world.provider.fail_next(FaultMode.RETRYABLE)
    result = world.gate.execute(AGENT, proposal.proposal_id, token)
    assert result.execution.status is ExecutionStatus.FAILED_RETRYABLE
    return proposal.proposal_id, result.execution.execution_id


def test_a_retry_after_the_confirmation_expired_starts_no_attempt(world: World) -> None:
    """Days later the retryable failure is not retried: token_expired, failed_terminal."""
    proposal_id, execution_id = _failed_retryable(world)
    world.clock.advance(timedelta(days=3))
    with pytest.raises(TokenExpired):
        world.gate.retry(AGENT, execution_id)
    execution = world.gate.execution(AGENT, execution_id)
    assert (execution.status, execution.error_code) == (
        ExecutionStatus.FAILED_TERMINAL,
        "token_expired",
    )
    assert execution.attempts == 1
    assert world.gate.proposal(AGENT, proposal_id).status is ProposalStatus.FAILED_TERMINAL
    assert world.ledger_amounts() == []
    assert world.gate.retry(AGENT, execution_id).duplicate  # terminal: the same answer, no call
    assert world.ledger_amounts() == []


def test_the_confirmation_ends_at_its_expiry_instant(world: World) -> None:
    """One microsecond before expiry a retry runs; at the instant itself, none would."""
    proposal_id, execution_id = _failed_retryable(world)
    with world.store.read() as tx:
        [(expires_at,)] = tx.run(
            "SELECT expires_at FROM tokens WHERE proposal_id = ?", (proposal_id,)
        ).fetchall()
    world.clock.set(from_micros(int(expires_at)))
    with pytest.raises(TokenExpired):
        world.gate.retry(AGENT, execution_id)
    assert world.ledger_amounts() == []

    other_id, other_execution = _failed_retryable(world, order_id="ord_1002")
    with world.store.read() as tx:
        [(other_expiry,)] = tx.run(
            "SELECT expires_at FROM tokens WHERE proposal_id = ?", (other_id,)
        ).fetchall()
    world.clock.set(from_micros(int(other_expiry) - 1))
    assert world.gate.retry(AGENT, other_execution).execution.status is ExecutionStatus.SUCCEEDED
    assert world.ledger_amounts() == [("ord_1002", 19900)]


def test_a_retry_after_an_approver_lost_the_role_starts_no_attempt(world: World) -> None:
    """The directory withdrew alice's role: the pending retry stops at once."""
    _, execution_id = _failed_retryable(world)
    world.directory.revoke("acme", "alice", "refund_approver")
    with pytest.raises(ApproverRevoked) as caught:
        world.gate.retry(AGENT, execution_id)
    assert caught.value.details["approvers"] == ["alice"]
    assert world.gate.execution(AGENT, execution_id).error_code == "approver_revoked"
    assert world.ledger_amounts() == []


def test_a_retry_after_the_requester_lost_the_role_starts_no_attempt(world: World) -> None:
    """Issue 23: sam asked for a customer's refund as support staff; the directory then
    withdrew his role: no attempt asked with it starts (the requester side of consent)."""
    sam = Principal("sam", "acme", frozenset({"support"}), actor="agent:support-bot")
    world.directory.grant("acme", "sam", "support")
    proposal = world.gate.propose(sam, "refund_order", {**REFUND, "order_id": "ord_1003"})
    assert proposal.state["requester_roles"] == ["support"]
    token = world.approve(proposal, key="k-sam")
    world.provider.fail_next(FaultMode.RETRYABLE)
    execution_id = world.gate.execute(sam, proposal.proposal_id, token).execution.execution_id
    world.directory.revoke("acme", "sam", "support")
    with pytest.raises(RequesterRevoked) as caught:
        world.gate.retry(sam, execution_id)
    assert caught.value.details["roles"] == ["support"]
    execution = world.gate.execution(sam, execution_id)
    assert (execution.status, execution.error_code, execution.attempts) == (
        ExecutionStatus.FAILED_TERMINAL,
        "requester_revoked",
        1,
    )
    assert world.ledger_amounts() == []


def test_max_attempts_bounds_the_retries(world: World) -> None:
    """After the tool's max_attempts (5 for refunds) no further attempt starts."""
    _, execution_id = _failed_retryable(world)
    for _ in range(4):
        world.provider.fail_next(FaultMode.RETRYABLE)
        again = world.gate.retry(AGENT, execution_id)
        assert again.execution.status is ExecutionStatus.FAILED_RETRYABLE
    assert world.gate.execution(AGENT, execution_id).attempts == 5
    with pytest.raises(AttemptsExhausted):
        world.gate.retry(AGENT, execution_id)
    execution = world.gate.execution(AGENT, execution_id)
    assert (execution.status, execution.attempts) == (ExecutionStatus.FAILED_TERMINAL, 5)
    assert world.ledger_amounts() == []


def test_a_person_stops_a_failed_retryable_execution(world: World) -> None:
    """An approver ends it for good (failed_terminal, reason, audited); retry calls nothing."""
    proposal_id, execution_id = _failed_retryable(world)
    with pytest.raises(Forbidden):
        world.gate.stop(AGENT, execution_id, reason="agents cannot")
    with pytest.raises(NotFound):
        world.gate.stop(NO_ROLE, execution_id, reason="outside the circle")
    stopped = world.gate.stop(APPROVER, execution_id, reason="customer was paid by hand")
    assert (stopped.execution.status, stopped.execution.error_code) == (
        ExecutionStatus.FAILED_TERMINAL,
        "stopped_by_person",
    )
    assert world.gate.retry(AGENT, execution_id).duplicate
    assert world.ledger_amounts() == []
    [event] = [
        e
        for e in world.gate.audit_events(APPROVER, proposal_id=proposal_id)
        if e.kind == "execution.stopped"
    ]
    assert (event.actor, event.payload()["reason"]) == ("alice", "customer was paid by hand")
    with pytest.raises(InvalidState):
        world.gate.stop(APPROVER, execution_id, reason="again")


def test_a_succeeded_execution_cannot_be_stopped(world: World) -> None:
    proposal = world.propose()
    done = world.gate.execute(AGENT, proposal.proposal_id, world.approve(proposal))
    with pytest.raises(InvalidState):
        world.gate.stop(APPROVER, done.execution.execution_id, reason="too late")
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_a_reconciler_attempt_after_expiry_is_refused(world: World) -> None:
    """prepared (the worker died before the call), found after the token expired: no call."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    first = world.gate.execute(AGENT, proposal.proposal_id, token)
    assert first.execution.status is ExecutionStatus.UNKNOWN
    world.clock.advance(TTL)
    [done] = world.gate.reconcile()
    assert (done.action, done.status) == (ReconcileAction.REFUSED, ExecutionStatus.FAILED_TERMINAL)
    assert world.gate.execution(AGENT, done.execution_id).error_code == "token_expired"
    assert world.ledger_amounts() == []


def test_looking_up_an_earlier_attempt_needs_no_consent(world: World) -> None:
    """The refund happened but its answer was lost; after expiry the lookup still settles it."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    world.gate.execute(AGENT, proposal.proposal_id, token)
    world.clock.advance(TTL)
    world.directory.revoke("acme", "alice", "refund_approver")
    [done] = world.gate.reconcile()
    assert (done.action, done.status) == (ReconcileAction.SETTLED, ExecutionStatus.SUCCEEDED)
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_approving_rereads_the_state_and_issues_no_token_on_a_moved_one(world: World) -> None:
    """Fresh(p, s): the order moved after the preview, so approving is refused."""
    proposal = world.propose()
    world.shop.touch_order("acme", "ord_1001")
    with pytest.raises(StateChanged):
        world.gate.decide(
            APPROVER,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key="a1",
        )
    after = world.gate.proposal(AGENT, proposal.proposal_id)
    assert (after.status, after.approvals) == (ProposalStatus.AWAITING_CONFIRMATION, ())
    with world.store.read() as tx:
        assert tx.token_id_for(proposal.proposal_id) is None
    rejected = world.reject(proposal)  # rejecting needs no fresh state
    assert rejected.status is ProposalStatus.DECLINED


def test_execute_after_the_tool_refuses_the_state_is_state_changed(world: World) -> None:
    """A second full refund of an order refunded meanwhile: state_changed, never a 400."""
    first, second = world.propose(), world.propose()
    first_token, second_token = world.approve(first), world.approve(second, key="k2")
    world.gate.execute(AGENT, first.proposal_id, first_token)
    with pytest.raises(StateChanged) as caught:
        world.gate.execute(AGENT, second.proposal_id, second_token)
    assert caught.value.status == 409
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_preview_and_token_expiry_have_their_own_codes(world: World) -> None:
    """preview_expired before a decision, token_expired after one; both are Expired."""
    late = world.propose()
    confirmed = world.propose(order_id="ord_1002")
    token = world.approve(confirmed)
    world.clock.advance(TTL)
    with pytest.raises(PreviewExpired):
        world.approve(late, key="late")
    with pytest.raises(TokenExpired):
        world.gate.execute(AGENT, confirmed.proposal_id, token)
    assert world.ledger_amounts() == []
    assert world.gate.proposal(AGENT, late.proposal_id).status is ProposalStatus.EXPIRED
    expired = [
        e
        for e in world.gate.audit_events(AGENT, proposal_id=late.proposal_id)
        if e.kind == "proposal.expired"
    ]
    assert [(e.proposal_id, e.payload()["expires_at"]) for e in expired] == [
        (late.proposal_id, to_micros(late.expires_at))
    ]


def test_revoked_role_refuses_execute_before_the_token_is_used(world: World) -> None:
    """approver_revoked at execute; the token stays unconsumed; a re-grant lets it run once."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.directory.revoke("acme", "alice", "refund_approver")
    with pytest.raises(ApproverRevoked):
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert world.gate.proposal(AGENT, proposal.proposal_id).status is ProposalStatus.CONFIRMED
    world.directory.grant("acme", "alice", "refund_approver")
    assert world.gate.execute(AGENT, proposal.proposal_id, token).receipt is not None
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_the_requester_never_approves_their_own_request(world: World) -> None:
    """bob (support staff with the role, not the beneficiary) asked: he may not approve it."""
    bob = Principal("bob", "acme", frozenset({"refund_approver", "support"}))
    proposal = world.gate.propose(
        bob,
        "refund_order",
        {"order_id": "ord_1001", "amount_minor": 100, "currency": "CNY", "reason": None},
    )
    assert proposal.state["beneficiary"] != "bob"
    with pytest.raises(SeparationOfDuties):
        world.approve(proposal, by=bob)
    assert world.gate.proposal(bob, proposal.proposal_id).approvals == ()


class _RevokedBetweenReadAndWrite(StaticRoleDirectory):
    """alice holds the role when execute's read asks, and no longer when its write asks."""

    def __init__(self, inner: StaticRoleDirectory) -> None:
        super().__init__()
        self.inner, self.armed, self.asked = inner, False, 0

    def holds_role(self, tenant: str, subject: str, role: str) -> bool:
        if self.armed and subject == "alice":
            self.asked += 1
            return self.asked == 1
        return self.inner.holds_role(tenant, subject, role)


def test_a_role_revoked_between_executes_read_and_its_write_stops_it(world: World) -> None:
    """A directory outside the store is asked again as the consume-and-start write begins."""
    directory = _RevokedBetweenReadAndWrite(world.directory)
    world.gate._ctx = dataclasses.replace(world.gate._ctx, directory=directory)
    proposal = world.propose()
    token = world.approve(proposal)
    directory.armed = True
    with pytest.raises(ApproverRevoked):
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert directory.asked >= 2
    assert world.ledger_amounts() == []
    assert world.gate.proposal(AGENT, proposal.proposal_id).status is ProposalStatus.CONFIRMED

"""decide: structured, entitled, version-checked, idempotent."""

from __future__ import annotations

from datetime import timedelta

import pytest

from signoff import Decision, DecisionKind, Principal, ProposalStatus, ReasonCode
from signoff.exceptions import (
    ApproverRevoked,
    Expired,
    IdempotencyKeyReused,
    InvalidRequest,
    InvalidState,
    NotEntitled,
    NotFound,
    RetypeMismatch,
    SeparationOfDuties,
    VersionConflict,
)
from tests.conftest import AGENT, APPROVER, APPROVER_2, NO_ROLE, OTHER_TENANT, REFUND, World

APPROVE = DecisionKind.APPROVE


def _decide(world: World, who: Principal, pid: str, version: int, key: str = "k") -> object:
    return world.gate.decide(who, pid, Decision(APPROVE, version), idempotency_key=key)


def test_approval_issues_a_token_and_confirms(world: World) -> None:
    """All approvals in → confirmed, a fresh version, and an opaque 256-bit token."""
    proposal = world.propose()
    result = world.gate.decide(
        APPROVER, proposal.proposal_id, Decision(APPROVE, 1), idempotency_key="k1"
    )
    assert result.proposal.status is ProposalStatus.CONFIRMED
    assert result.proposal.version == 2
    assert result.duplicate is False
    token = result.confirmation_token
    assert token is not None and token.startswith("sot_") and len(token) >= 4 + 43
    with world.store.read() as tx:
        stored = tx.run("SELECT token_hash FROM tokens").fetchall()
        assert token not in str(stored)


def test_same_key_same_request_is_a_duplicate(world: World) -> None:
    """A double click returns the first answer, marked duplicate, with the same token."""
    proposal = world.propose()
    first = world.gate.decide(
        APPROVER, proposal.proposal_id, Decision(APPROVE, 1), idempotency_key="k"
    )
    again = world.gate.decide(
        APPROVER, proposal.proposal_id, Decision(APPROVE, 1), idempotency_key="k"
    )
    assert again.duplicate is True
    assert again.confirmation_token == first.confirmation_token
    assert again.proposal.action_id == first.proposal.action_id
    assert len(world.gate.proposal(APPROVER, proposal.proposal_id).approvals) == 1


def test_same_key_other_payload_is_refused(world: World) -> None:
    """An Idempotency-Key reused with another payload is an error, not a replay."""
    proposal = world.propose()
    world.gate.decide(APPROVER, proposal.proposal_id, Decision(APPROVE, 1), idempotency_key="k")
    with pytest.raises(IdempotencyKeyReused):
        world.gate.decide(
            APPROVER,
            proposal.proposal_id,
            Decision(DecisionKind.REJECT, 1, ReasonCode.OTHER),
            idempotency_key="k",
        )


def test_keys_are_scoped_to_tenant_and_actor(world: World) -> None:
    """Two approvers using the same key string do not collide."""
    one, two = world.propose(), world.propose(order_id="ord_1002")
    world.gate.decide(APPROVER, one.proposal_id, Decision(APPROVE, 1), idempotency_key="same")
    result = world.gate.decide(
        APPROVER_2, two.proposal_id, Decision(APPROVE, 1), idempotency_key="same"
    )
    assert result.duplicate is False and result.proposal.proposal_id == two.proposal_id


def test_second_decision_with_another_key_is_refused(world: World) -> None:
    """Two tabs: the stale one gets a conflict naming who decided, never a second decision."""
    proposal = world.propose()
    world.gate.decide(APPROVER, proposal.proposal_id, Decision(APPROVE, 1), idempotency_key="tab1")
    with pytest.raises(InvalidState) as caught:
        world.gate.decide(
            APPROVER_2, proposal.proposal_id, Decision(APPROVE, 1), idempotency_key="tab2"
        )
    assert caught.value.details["decided_by"] == "alice"
    assert caught.value.details["status"] == "confirmed"


def test_stale_expected_version_conflicts(world: World) -> None:
    """expected_version must equal the current version."""
    proposal = world.propose()
    with pytest.raises(VersionConflict) as caught:
        _decide(world, APPROVER, proposal.proposal_id, 7)
    assert caught.value.details["current_version"] == 1


def test_agent_never_decides(world: World) -> None:
    """A principal acting through an agent can propose but never approve."""
    proposal = world.propose()
    agent_with_role = Principal("u_42", "acme", frozenset({"refund_approver"}), actor="agent:x")
    with pytest.raises(SeparationOfDuties):
        _decide(world, agent_with_role, proposal.proposal_id, 1)
    agent_itself = Principal("agent:support-bot", "acme", frozenset({"refund_approver"}))
    with pytest.raises(SeparationOfDuties):
        _decide(world, agent_itself, proposal.proposal_id, 1)


def test_requester_and_beneficiary_cannot_approve(world: World) -> None:
    """The person the refund is for cannot approve it as a role holder."""
    proposal = world.propose()
    owner_with_role = Principal("u_42", "acme", frozenset({"refund_approver"}))
    with pytest.raises(SeparationOfDuties):
        _decide(world, owner_with_role, proposal.proposal_id, 1)


def test_missing_role_is_outside_the_circle(world: World) -> None:
    """Without the tool's role a person of the tenant is told 404; no decision is recorded."""
    proposal = world.propose()
    with pytest.raises(NotFound):
        _decide(world, NO_ROLE, proposal.proposal_id, 1)
    assert world.gate.proposal(APPROVER, proposal.proposal_id).approvals == ()


def test_role_claim_without_directory_grant_is_approver_revoked(world: World) -> None:
    """A role claimed in a token but withdrawn in the directory does not entitle."""
    proposal = world.propose()
    world.directory.revoke("acme", "alice", "refund_approver")
    with pytest.raises(ApproverRevoked):
        _decide(world, APPROVER, proposal.proposal_id, 1)
    assert world.gate.proposal(AGENT, proposal.proposal_id).approvals == ()


def test_role_held_but_not_the_required_one_is_not_entitled(world: World) -> None:
    """A person in the circle (an auditor) who lacks the tool's role is refused 403."""
    proposal = world.propose()
    auditor = Principal("dave", "acme", frozenset({"auditor"}))
    with pytest.raises(NotEntitled):
        _decide(world, auditor, proposal.proposal_id, 1)
    assert world.gate.proposal(AGENT, proposal.proposal_id).approvals == ()


def test_other_tenant_gets_not_found(world: World) -> None:
    """Guessing another tenant's proposal id reveals nothing."""
    proposal = world.propose()
    with pytest.raises(NotFound):
        _decide(world, OTHER_TENANT, proposal.proposal_id, 1)
    with pytest.raises(NotFound):
        world.gate.proposal(OTHER_TENANT, proposal.proposal_id)


def test_expiry_boundary_is_expired(world: World) -> None:
    """now == expires_at is already expired (server clock), and the proposal is marked so."""
    proposal = world.propose()
    world.clock.set(proposal.expires_at - timedelta(microseconds=1))
    world.gate.proposal(APPROVER, proposal.proposal_id)
    world.clock.set(proposal.expires_at)
    with pytest.raises(Expired):
        _decide(world, APPROVER, proposal.proposal_id, 1)
    assert world.gate.proposal(APPROVER, proposal.proposal_id).status is ProposalStatus.EXPIRED


def test_just_before_expiry_is_accepted(world: World) -> None:
    """One microsecond before expiry a decision is still accepted."""
    proposal = world.propose()
    world.clock.set(proposal.expires_at - timedelta(microseconds=1))
    assert world.approve(proposal)


def test_reject_needs_a_reason_code_and_never_touches_the_tool(world: World) -> None:
    """A rejection records its reason; the ledger stays empty."""
    proposal = world.propose()
    with pytest.raises(InvalidRequest):
        world.gate.decide(
            APPROVER, proposal.proposal_id, Decision(DecisionKind.REJECT, 1), idempotency_key="r"
        )
    declined = world.reject(proposal)
    assert declined.status is ProposalStatus.DECLINED
    assert declined.approvals[0].reason_code == "wrong_amount"
    assert world.ledger_amounts() == [] and world.refunded() == 0


def test_high_amount_requires_retyping_the_amount(world: World) -> None:
    """High risk: the approver re-types the amount; a mismatch decides nothing."""
    world.shop.add_order("acme", "ord_9000", owner="u_42", payable=500_000)
    proposal = world.gate.propose(
        AGENT,
        "refund_order",
        {"order_id": "ord_9000", "amount_minor": 250_000, "currency": "CNY", "reason": None},
    )
    assert proposal.policy["retype"] == ["amount_minor"]
    with pytest.raises(RetypeMismatch):
        world.gate.decide(
            APPROVER,
            proposal.proposal_id,
            Decision(APPROVE, 1, retyped={"amount_minor": "25000"}),
            idempotency_key="a",
        )
    assert world.gate.proposal(APPROVER, proposal.proposal_id).version == 1
    result = world.gate.decide(
        APPROVER,
        proposal.proposal_id,
        Decision(APPROVE, 1, retyped={"amount_minor": "¥2,500.00"}),
        idempotency_key="b",
    )
    assert result.proposal.status is ProposalStatus.CONFIRMED


def test_bool_expected_version_is_refused(world: World) -> None:
    """expected_version=True is not the integer 1."""
    proposal = world.propose()
    with pytest.raises(InvalidRequest):
        world.gate.decide(
            APPROVER, proposal.proposal_id, Decision(APPROVE, True), idempotency_key="k"
        )


def test_the_beneficiary_cannot_approve_a_refund_someone_else_requested(world: World) -> None:
    """Support staff asked for u_42's refund; u_42 holds the approver role, but it is
    their own money: refused. The decision is left to someone else."""
    staff_agent = Principal("bob", "acme", frozenset({"support"}), actor="agent:support-bot")
    proposal = world.gate.propose(staff_agent, "refund_order", REFUND)
    assert proposal.state["beneficiary"] == "u_42"
    world.directory.grant("acme", "u_42", "refund_approver")
    owner_with_role = Principal("u_42", "acme", frozenset({"refund_approver"}))
    with pytest.raises(SeparationOfDuties, match="benef"):
        _decide(world, owner_with_role, proposal.proposal_id, 1)
    assert world.gate.proposal(APPROVER, proposal.proposal_id).approvals == ()
    _decide(world, APPROVER, proposal.proposal_id, 1)
    assert world.gate.proposal(APPROVER, proposal.proposal_id).status is ProposalStatus.CONFIRMED

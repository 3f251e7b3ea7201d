"""Approval policies: N distinct approvers, and the requester first, then a role holder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from signoff import (
    ApprovalPolicy,
    Catalog,
    Decision,
    DecisionKind,
    Gate,
    Principal,
    ProposalStatus,
    ResourceState,
    Risk,
)
from signoff.demo import RefundArgs, RefundOrder
from signoff.exceptions import NotEntitled, SeparationOfDuties
from tests.conftest import AGENT, APPROVER, APPROVER_2, REFUND, TOKEN_KEY, World, make_world

CUSTOMER = Principal("u_42", "acme")


class TwoApprovers(RefundOrder):
    def policy(self, args: RefundArgs, state: ResourceState, risk: Risk) -> ApprovalPolicy:
        return ApprovalPolicy(role="refund_approver", approvals=2)


class CustomerThenApprover(RefundOrder):
    def policy(self, args: RefundArgs, state: ResourceState, risk: Risk) -> ApprovalPolicy:
        return ApprovalPolicy(
            role="refund_approver", requester_confirms=True, beneficiary_may_approve=False
        )


def _world(tmp_path: Path, tool: type[RefundOrder]) -> World:
    world = make_world(tmp_path)
    world.gate = Gate(
        Catalog([tool(world.shop, world.provider)]),
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
    )
    return world


@pytest.fixture
def two(tmp_path: Path) -> Iterator[World]:
    world = _world(tmp_path, TwoApprovers)
    yield world
    world.store.close()
    world.shop.close()


@pytest.fixture
def sequence(tmp_path: Path) -> Iterator[World]:
    world = _world(tmp_path, CustomerThenApprover)
    yield world
    world.store.close()
    world.shop.close()


def _approve(world: World, who: Principal, pid: str, version: int, key: str) -> str | None:
    result = world.gate.decide(
        who, pid, Decision(DecisionKind.APPROVE, version), idempotency_key=key
    )
    return result.confirmation_token


def test_the_inbox_leaves_out_what_the_person_already_approved(two: World) -> None:
    """Two approvals needed: after alice's, it is still awaiting — in bob's inbox, not hers."""
    proposal = two.gate.propose(AGENT, "refund_order", REFUND)
    assert [p.proposal_id for p in two.gate.inbox(APPROVER)] == [proposal.proposal_id]
    _approve(two, APPROVER, proposal.proposal_id, 1, "a1")
    assert two.gate.inbox(APPROVER) == []
    [waiting] = two.gate.inbox(APPROVER_2)
    assert waiting.proposal_id == proposal.proposal_id
    # bob sees who approved before him, as the detail page does
    assert [(a.approver, a.kind) for a in waiting.approvals] == [("alice", DecisionKind.APPROVE)]


def test_two_of_m_needs_two_distinct_people(two: World) -> None:
    """The first approval issues no token; the same person twice is refused; the second does."""
    proposal = two.gate.propose(AGENT, "refund_order", REFUND)
    assert _approve(two, APPROVER, proposal.proposal_id, 1, "a1") is None
    assert _approve(two, APPROVER, proposal.proposal_id, 1, "a1") is None  # replay: no token
    assert two.gate.proposal(AGENT, proposal.proposal_id).status is (
        ProposalStatus.AWAITING_CONFIRMATION
    )
    with pytest.raises(SeparationOfDuties):
        _approve(two, APPROVER, proposal.proposal_id, 2, "a2")
    token = _approve(two, APPROVER_2, proposal.proposal_id, 2, "b1")
    assert token is not None
    receipt = two.gate.execute(AGENT, proposal.proposal_id, token).receipt
    assert receipt is not None and receipt.approvers == ("alice", "bob")
    assert two.ledger_amounts() == [("ord_1001", 19900)]


def test_requester_confirms_before_the_role_holder(sequence: World) -> None:
    """The customer confirms their own request first; then an approver; never the agent."""
    proposal = sequence.gate.propose(AGENT, "refund_order", REFUND)
    with pytest.raises(NotEntitled):
        _approve(sequence, APPROVER, proposal.proposal_id, 1, "early")
    with pytest.raises(SeparationOfDuties):
        _approve(sequence, AGENT, proposal.proposal_id, 1, "agent")
    assert _approve(sequence, CUSTOMER, proposal.proposal_id, 1, "c1") is None
    # the customer's retry of the same request (a timeout, a double click) is answered
    # again, without asking for the approver role the customer never needed
    assert _approve(sequence, CUSTOMER, proposal.proposal_id, 1, "c1") is None
    token = _approve(sequence, APPROVER, proposal.proposal_id, 2, "a1")
    assert token is not None
    sequence.gate.execute(AGENT, proposal.proposal_id, token)
    assert sequence.ledger_amounts() == [("ord_1001", 19900)]

"""Who may see what (PROTOCOL rule 12): a proposal's circle, and 404 for everyone else."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from signoff import ExecutionStatus, Principal, ProposalStatus
from signoff.exceptions import NotEntitled, NotFound, SubjectMismatch
from tests.conftest import AGENT, APPROVER, NO_ROLE, World

OTHER_CUSTOMERS_AGENT = Principal("u_77", "acme", actor="agent:support-bot")
SAME_CUSTOMER_OTHER_AGENT = Principal("u_42", "acme", actor="agent:mail-bot")
CUSTOMER = Principal("u_42", "acme")
AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))
ADMIN = Principal("olga", "acme", frozenset({"signoff_admin"}))


def _executed(world: World) -> tuple[str, str]:
    proposal = world.propose()
    result = world.gate.execute(AGENT, proposal.proposal_id, world.approve(proposal))
    return proposal.proposal_id, result.execution.execution_id


@pytest.mark.parametrize("outsider", [OTHER_CUSTOMERS_AGENT, NO_ROLE])
def test_outside_the_circle_every_read_is_404(world: World, outsider: Principal) -> None:
    """Another customer's agent, a colleague without the role: nothing of it, as for a stranger."""
    proposal_id, execution_id = _executed(world)
    gate = world.gate
    reads: list[Callable[[], object]] = [
        lambda: gate.proposal(outsider, proposal_id),
        lambda: gate.execution(outsider, execution_id),
        lambda: gate.execution_for(outsider, proposal_id),
        lambda: gate.receipt(outsider, execution_id),
        lambda: gate.audit_events(outsider, proposal_id=proposal_id),
        lambda: gate.confirmation_token(outsider, proposal_id),
    ]
    for read in reads:
        with pytest.raises(NotFound):
            read()
    assert gate.proposals(outsider) == []
    assert proposal_id not in {p.proposal_id for p in gate.inbox(outsider)}


@pytest.mark.parametrize(
    "insider", [AGENT, SAME_CUSTOMER_OTHER_AGENT, CUSTOMER, APPROVER, AUDITOR, ADMIN]
)
def test_the_circle_reads_the_proposal_its_execution_and_receipt(
    world: World, insider: Principal
) -> None:
    """The person, their agents, the people who may decide, the auditors and admins."""
    proposal_id, execution_id = _executed(world)
    assert world.gate.proposal(insider, proposal_id).status is ProposalStatus.SUCCEEDED
    assert world.gate.execution(insider, execution_id).status is ExecutionStatus.SUCCEEDED
    assert world.gate.receipt(insider, execution_id).approvers == ("alice",)
    assert [p.proposal_id for p in world.gate.proposals(insider)] == [proposal_id]


def test_an_approver_who_lost_the_role_still_sees_what_they_decided(world: World) -> None:
    """alice decided it; a role holder who never did stops seeing it when the role goes."""
    proposal_id, _ = _executed(world)
    other = world.propose(order_id="ord_1002")
    world.directory.revoke("acme", "alice", "refund_approver")
    assert world.gate.proposal(APPROVER, proposal_id).proposal_id == proposal_id
    with pytest.raises(NotFound):
        world.gate.proposal(APPROVER, other.proposal_id)
    assert [p.proposal_id for p in world.gate.proposals(APPROVER)] == [proposal_id]


def test_only_auditors_and_admins_read_the_whole_tenant_log(world: World) -> None:
    _executed(world)
    for reader in (AUDITOR, ADMIN):
        assert world.gate.audit_events(reader)
    for other in (APPROVER, AGENT, CUSTOMER):
        with pytest.raises(NotEntitled):
            world.gate.audit_events(other)


def test_the_token_is_handed_only_to_the_requesting_agent(world: World) -> None:
    """The customer and their other agents see the proposal, yet never get its token."""
    proposal = world.propose()
    world.approve(proposal)
    for other in (CUSTOMER, SAME_CUSTOMER_OTHER_AGENT):
        with pytest.raises(SubjectMismatch):
            world.gate.confirmation_token(other, proposal.proposal_id)
    assert world.gate.confirmation_token(AGENT, proposal.proposal_id).startswith("sot_")


def test_the_inbox_lists_every_decidable_proposal_oldest_deadline_first(world: World) -> None:
    """200 low-risk proposals filed later cannot push the older pending one out of view."""
    pending = world.propose()
    for _ in range(200):
        world.clock.advance(timedelta(milliseconds=1))
        world.gate.propose(
            AGENT,
            "refund_order",
            {"order_id": "ord_1002", "amount_minor": 1, "currency": "CNY", "reason": None},
        )
    first_page = world.gate.inbox(APPROVER, limit=50)
    assert first_page[0].proposal_id == pending.proposal_id
    seen, after = [], None
    while True:
        page = world.gate.inbox(APPROVER, after=after, limit=50)
        seen += [p.proposal_id for p in page]
        if len(page) < 50:
            break
        after = (page[-1].expires_at, page[-1].proposal_id)
    assert len(seen) == len(set(seen)) == 201
    assert world.gate.inbox(AGENT) == [] and world.gate.inbox(NO_ROLE) == []


def test_the_inbox_leaves_out_what_the_person_decided_or_requested(world: World) -> None:
    bob = Principal("bob", "acme", frozenset({"refund_approver", "support"}))
    own = world.gate.propose(
        bob,
        "refund_order",
        {"order_id": "ord_1003", "amount_minor": 100, "currency": "CNY", "reason": None},
    )
    decided = world.propose()
    world.reject(decided, by=bob, key="r-bob")
    waiting = world.propose(order_id="ord_1002")
    assert [p.proposal_id for p in world.gate.inbox(bob)] == [waiting.proposal_id]
    assert own.proposal_id in {p.proposal_id for p in world.gate.inbox(APPROVER)}

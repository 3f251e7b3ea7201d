"""Who may see what (PROTOCOL rule 12): a proposal's circle, and 404 for everyone else."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from signoff import DecisionKind, ExecutionStatus, Gate, Principal, ProposalStatus
from signoff.exceptions import Forbidden, InvalidRequest, NotEntitled, NotFound, SubjectMismatch
from tests.conftest import AGENT, APPROVER, APPROVER_2, NO_ROLE, World, store_directory_gate

OTHER_CUSTOMERS_AGENT = Principal("u_77", "acme", actor="agent:support-bot")
SAME_CUSTOMER_OTHER_AGENT = Principal("u_42", "acme", actor="agent:mail-bot")
CUSTOMER = Principal("u_42", "acme")
AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))
ADMIN = Principal("olga", "acme", frozenset({"signoff_admin"}))


def _executed(world: World) -> tuple[str, str]:
    proposal = world.propose()
    result = world.gate.execute(AGENT, proposal.proposal_id, world.approve(proposal))
    return proposal.proposal_id, result.execution.execution_id


def _reads(
    gate: Gate, who: Principal, proposal_id: str, execution_id: str
) -> list[Callable[[], object]]:
    """Every read of one proposal's objects, as ``who``."""
    return [
        lambda: gate.proposal(who, proposal_id),
        lambda: gate.execution(who, execution_id),
        lambda: gate.execution_for(who, proposal_id),
        lambda: gate.receipt(who, execution_id),
        lambda: gate.audit_events(who, proposal_id=proposal_id),
    ]


@pytest.mark.parametrize("outsider", [OTHER_CUSTOMERS_AGENT, NO_ROLE])
def test_outside_the_circle_every_read_is_404(world: World, outsider: Principal) -> None:
    """Another customer's agent, a colleague without the role: nothing of it, as for a stranger."""
    proposal_id, execution_id = _executed(world)
    gate = world.gate
    reads: list[Callable[[], object]] = [
        *_reads(gate, outsider, proposal_id, execution_id),
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


ALICES_AGENT = Principal("alice", "acme", actor="agent:alice-helper")


@pytest.mark.parametrize("where", ["static", "store"])
def test_a_revoked_role_closes_every_read_the_role_gave(world: World, where: str) -> None:
    """bob approved; alice saw it only through her role. Her token still claims the role,
    the directory says it is gone: every read is 404, her list and inbox are empty."""
    gate, roles = store_directory_gate(world)
    if where == "static":
        gate = world.gate
    proposal = world.propose()
    token = world.approve(proposal, by=APPROVER_2, key="b1")
    execution_id = world.gate.execute(AGENT, proposal.proposal_id, token).execution.execution_id
    waiting = world.propose(order_id="ord_1002")
    pid = proposal.proposal_id
    reads = _reads(gate, APPROVER, pid, execution_id)
    for read in reads:
        read()  # the role holder is in the circle
    assert {p.proposal_id for p in gate.proposals(APPROVER)} == {pid, waiting.proposal_id}
    assert [p.proposal_id for p in gate.inbox(APPROVER)] == [waiting.proposal_id]
    gate.audit_events(AUDITOR)
    if where == "static":
        world.directory.revoke("acme", "alice", "refund_approver")
        world.directory.revoke("acme", "dave", "auditor")
    else:
        roles.revoke("acme", "alice", "refund_approver", by="olga")
        roles.revoke("acme", "dave", "auditor", by="olga")
    for read in reads:
        with pytest.raises(NotFound):
            read()
    assert gate.proposals(APPROVER) == [] and gate.inbox(APPROVER) == []
    with pytest.raises(NotEntitled):
        gate.audit_events(AUDITOR)


def test_an_approvers_agent_does_not_see_what_the_approver_decided(world: World) -> None:
    """Agents see only what their person requested, never what the person decided."""
    proposal = world.propose()
    world.approve(proposal)
    assert [p.proposal_id for p in world.gate.proposals(APPROVER)] == [proposal.proposal_id]
    assert world.gate.proposals(ALICES_AGENT) == []
    with pytest.raises(NotFound):
        world.gate.proposal(ALICES_AGENT, proposal.proposal_id)


def test_the_list_filters_by_status_and_carries_the_decisions(world: World) -> None:
    confirmed = world.propose()
    world.approve(confirmed)
    rejected = world.propose(order_id="ord_1002")
    world.reject(rejected)
    waiting = world.propose(order_id="ord_1003")
    by_status = {
        status: [p.proposal_id for p in world.gate.proposals(AGENT, statuses=[status])]
        for status in (ProposalStatus.CONFIRMED, ProposalStatus.DECLINED)
    }
    assert by_status == {
        ProposalStatus.CONFIRMED: [confirmed.proposal_id],
        ProposalStatus.DECLINED: [rejected.proposal_id],
    }
    both = world.gate.proposals(
        AGENT, statuses=[ProposalStatus.CONFIRMED, ProposalStatus.AWAITING_CONFIRMATION]
    )
    assert {p.proposal_id for p in both} == {confirmed.proposal_id, waiting.proposal_id}
    listed = {p.proposal_id: p for p in world.gate.proposals(AGENT)}
    assert [a.approver for a in listed[confirmed.proposal_id].approvals] == ["alice"]
    assert [a.kind for a in listed[rejected.proposal_id].approvals] == [DecisionKind.REJECT]
    assert listed[waiting.proposal_id].approvals == ()


def test_pages_hold_at_most_the_limit_and_the_defaults(world: World) -> None:
    """limit 1…500; default pages of 100 (list) and 50 (inbox); a bool is not a number."""
    for bad in (0, -1, 501, True, "5", 2.0):
        with pytest.raises(InvalidRequest):
            world.gate.proposals(AGENT, limit=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidRequest):
            world.gate.inbox(APPROVER, limit=bad)  # type: ignore[arg-type]
    for i in range(101):
        world.propose(amount_minor=1 + i)
    assert len(world.gate.proposals(AGENT)) == 100
    assert len(world.gate.proposals(AGENT, limit=500)) == 101
    assert len(world.gate.proposals(AGENT, limit=1)) == 1
    assert len(world.gate.inbox(APPROVER)) == 50
    assert len(world.gate.inbox(APPROVER, limit=500)) == 101


def test_inbox_pages_break_deadline_ties_by_id(world: World) -> None:
    """Proposals filed at one instant share a deadline: the cursor's id orders them."""
    ids = sorted(world.propose(amount_minor=100 + i).proposal_id for i in range(3))
    seen, after = [], None
    for _ in range(4):
        page = world.gate.inbox(APPROVER, after=after, limit=1)
        if not page:
            break
        seen.append(page[0].proposal_id)
        after = (page[0].expires_at, page[0].proposal_id)
    assert seen == ids


def test_a_person_with_two_roles_sees_what_either_role_may_decide(world: World) -> None:
    bob = Principal("bob", "acme", frozenset({"refund_approver", "support"}))
    world.directory.grant("acme", "bob", "support")
    proposal = world.propose()
    assert [p.proposal_id for p in world.gate.proposals(bob)] == [proposal.proposal_id]
    assert [p.proposal_id for p in world.gate.inbox(bob)] == [proposal.proposal_id]


def test_a_revoked_role_holder_is_told_404_not_403(world: World) -> None:
    """Outside the circle, asking for the token or cancelling is 'no such proposal'."""
    proposal = world.propose()
    world.directory.revoke("acme", "bob", "refund_approver")
    with pytest.raises(NotFound):
        world.gate.cancel(APPROVER_2, proposal.proposal_id)
    world.approve(proposal)
    with pytest.raises(NotFound):
        world.gate.confirmation_token(APPROVER_2, proposal.proposal_id)


def test_an_auditor_whose_approver_role_was_revoked_cannot_revoke(world: World) -> None:
    """In the circle as an auditor, the approver role the token claims is gone: 403."""
    proposal = world.propose()
    world.approve(proposal)
    dave = Principal("dave", "acme", frozenset({"auditor", "refund_approver"}))
    world.directory.revoke("acme", "dave", "refund_approver")
    with pytest.raises(Forbidden):
        world.gate.revoke(dave, proposal.proposal_id, reason="not mine any more")
    assert world.gate.proposal(AGENT, proposal.proposal_id).status is ProposalStatus.CONFIRMED

"""Who may withdraw consent (revoke, stop) or a request (cancel), and the evidence it leaves.

Withdrawing is the safe direction, so an approver may always withdraw what they approved; a
holder of the required role or a ``signoff_admin`` may too while the directory grants the role
now; agents never may. Each withdrawal is an audit event naming the person.
"""

from __future__ import annotations

import pytest

from signoff import ExecutionStatus, Principal, ProposalStatus
from signoff.demo import FaultMode
from signoff.exceptions import ApproverRevoked, Forbidden, InvalidRequest, NotFound, Refusal
from tests.conftest import AGENT, APPROVER, APPROVER_2, World

AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))
ADMIN = Principal("olga", "acme", frozenset({"signoff_admin"}))
CUSTOMER = Principal("u_42", "acme")


def _confirmed(world: World) -> str:
    proposal = world.propose()
    world.approve(proposal)
    return proposal.proposal_id


def _events(world: World, proposal_id: str, kind: str) -> list[tuple[str | None, str]]:
    events = world.gate.audit_events(AUDITOR, proposal_id=proposal_id)
    return [(e.actor, e.kind) for e in events if e.kind == kind]


@pytest.mark.parametrize("who", [APPROVER, APPROVER_2, ADMIN])
def test_an_approver_a_role_holder_or_an_admin_revokes(world: World, who: Principal) -> None:
    proposal_id = _confirmed(world)
    revoked = world.gate.revoke(who, proposal_id, reason="customer called back")
    assert revoked.status is ProposalStatus.REVOKED
    assert _events(world, proposal_id, "proposal.revoked") == [(who.subject, "proposal.revoked")]


@pytest.mark.parametrize(
    ("who", "refusal"),
    [(AGENT, Forbidden), (AUDITOR, Forbidden), (CUSTOMER, Forbidden)],
)
def test_others_in_the_circle_may_not_revoke(
    world: World, who: Principal, refusal: type[Refusal]
) -> None:
    proposal_id = _confirmed(world)
    with pytest.raises(refusal):
        world.gate.revoke(who, proposal_id, reason="not mine to revoke")
    assert world.gate.proposal(AGENT, proposal_id).status is ProposalStatus.CONFIRMED


def test_a_role_holder_whose_role_was_revoked_can_no_longer_revoke(world: World) -> None:
    """bob never approved; once the directory withdraws his role he is outside the circle."""
    proposal_id = _confirmed(world)
    world.directory.revoke("acme", "bob", "refund_approver")
    with pytest.raises(NotFound):
        world.gate.revoke(APPROVER_2, proposal_id, reason="no longer mine")
    world.directory.revoke("acme", "olga", "signoff_admin")
    with pytest.raises(NotFound):
        world.gate.revoke(ADMIN, proposal_id, reason="no longer an admin")
    assert world.gate.proposal(AGENT, proposal_id).status is ProposalStatus.CONFIRMED


def test_an_approver_who_lost_the_role_may_still_withdraw_their_consent(world: World) -> None:
    proposal_id = _confirmed(world)
    world.directory.revoke("acme", "alice", "refund_approver")
    revoked = world.gate.revoke(APPROVER, proposal_id, reason="withdrawing")
    assert revoked.status is ProposalStatus.REVOKED


def test_the_requester_and_the_asking_agent_cancel(world: World) -> None:
    by_person, by_agent = world.propose(), world.propose(order_id="ord_1002")
    assert world.gate.cancel(CUSTOMER, by_person.proposal_id).status is ProposalStatus.CANCELLED
    assert world.gate.cancel(AGENT, by_agent.proposal_id).status is ProposalStatus.CANCELLED
    assert _events(world, by_agent.proposal_id, "proposal.cancelled") == [
        (AGENT.label(), "proposal.cancelled")
    ]


@pytest.mark.parametrize(
    "who",
    [Principal("u_42", "acme", actor="agent:mail-bot"), APPROVER, ADMIN, AUDITOR],
)
def test_nobody_else_cancels(world: World, who: Principal) -> None:
    proposal = world.propose()
    with pytest.raises(Forbidden):
        world.gate.cancel(who, proposal.proposal_id)
    status = world.gate.proposal(AGENT, proposal.proposal_id).status
    assert status is ProposalStatus.AWAITING_CONFIRMATION


def test_a_stranger_is_told_404_on_cancel(world: World) -> None:
    proposal = world.propose()
    with pytest.raises(NotFound):
        world.gate.cancel(
            Principal("u_77", "acme", actor="agent:support-bot"), proposal.proposal_id
        )


def test_stop_needs_a_person_who_may_withdraw(world: World) -> None:
    proposal = world.propose()
    token = world.approve(proposal)
    world.provider.fail_next(FaultMode.RETRYABLE)
    execution_id = world.gate.execute(AGENT, proposal.proposal_id, token).execution.execution_id
    for who in (AUDITOR, CUSTOMER):
        with pytest.raises(Forbidden):
            world.gate.stop(who, execution_id, reason="not mine")
    world.directory.revoke("acme", "bob", "refund_approver")
    with pytest.raises(NotFound):
        world.gate.stop(APPROVER_2, execution_id, reason="no longer mine")
    stopped = world.gate.stop(ADMIN, execution_id, reason="paid by hand")
    assert stopped.execution.status is ExecutionStatus.FAILED_TERMINAL
    assert _events(world, proposal.proposal_id, "execution.stopped") == [
        ("olga", "execution.stopped")
    ]
    assert world.ledger_amounts() == []


def test_replaying_a_decision_after_the_role_was_revoked_is_refused(world: World) -> None:
    """The first answer is repeated only to someone who would pass the checks now."""
    proposal = world.propose()
    world.approve(proposal, key="click")
    world.directory.revoke("acme", "alice", "refund_approver")
    with pytest.raises(ApproverRevoked):
        world.approve(proposal, key="click")


def test_revoking_writes_the_reason_and_retires_the_token_row(world: World) -> None:
    """The reason is bounded and on the record; the token row itself is revoked as well."""
    proposal_id = _confirmed(world)
    for reason in ("", "x" * 2001):
        with pytest.raises(InvalidRequest):
            world.gate.revoke(APPROVER, proposal_id, reason=reason)
    world.gate.revoke(APPROVER, proposal_id, reason="r" * 2000)
    [event] = [
        e
        for e in world.gate.audit_events(AUDITOR, proposal_id=proposal_id)
        if e.kind == "proposal.revoked"
    ]
    assert event.payload()["reason"] == "r" * 2000
    with world.store.read() as tx:
        [(status,)] = tx.run(
            "SELECT status FROM tokens WHERE proposal_id = ?", (proposal_id,)
        ).fetchall()
    assert status == "revoked"


def test_an_auditor_whose_admin_role_was_revoked_sees_but_cannot_revoke(world: World) -> None:
    """Still in the circle as an auditor; the admin role the token claims is gone: 403."""
    proposal_id = _confirmed(world)
    both = Principal("olga", "acme", frozenset({"signoff_admin", "auditor"}))
    world.directory.grant("acme", "olga", "auditor")
    world.directory.revoke("acme", "olga", "signoff_admin")
    with pytest.raises(Forbidden):
        world.gate.revoke(both, proposal_id, reason="not an admin any more")
    assert world.gate.proposal(AGENT, proposal_id).status is ProposalStatus.CONFIRMED

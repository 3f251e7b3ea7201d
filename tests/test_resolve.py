"""A person settles what reconciliation could not: unknown or needs_attention executions."""

from __future__ import annotations

import pytest

from signoff import ExecutionStatus, Principal, ProposalStatus
from signoff.demo import FaultMode
from signoff.exceptions import Forbidden, InvalidRequest, InvalidState, NotFound
from tests.conftest import AGENT, APPROVER, OTHER_TENANT, World

ADMIN = Principal("olga", "acme", roles=frozenset({"signoff_admin"}))


def _unknown(world: World) -> str:
    proposal = world.propose()
    token = world.approve(proposal)
    world.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    result = world.gate.execute(AGENT, proposal.proposal_id, token)
    assert result.execution.status is ExecutionStatus.UNKNOWN
    return result.execution.execution_id


def test_admin_records_a_terminal_failure_and_nothing_is_called(world: World) -> None:
    """The person found nothing at the provider and closes it: failed_terminal, no refund."""
    world.directory.grant("acme", "olga", "signoff_admin")
    execution_id = _unknown(world)
    result = world.gate.resolve(
        ADMIN, execution_id, outcome="failed_terminal", reason="provider shows no refund"
    )
    assert result.execution.status is ExecutionStatus.FAILED_TERMINAL
    assert result.receipt is not None
    proposal = world.gate.proposal(AGENT, result.execution.proposal_id)
    assert proposal.status is ProposalStatus.FAILED_TERMINAL
    assert world.ledger_amounts() == []
    events = world.gate.audit_events(ADMIN, proposal_id=proposal.proposal_id)
    assert events[-1].kind == "execution.resolved" and events[-1].actor == "olga"
    assert world.gate.verify_audit().ok
    with pytest.raises(InvalidState):
        world.gate.resolve(ADMIN, execution_id, outcome="failed_terminal", reason="again")


def test_succeeded_needs_the_provider_reference(world: World) -> None:
    """succeeded without the provider's reference is refused; with it, the receipt carries it."""
    world.directory.grant("acme", "olga", "signoff_admin")
    execution_id = _unknown(world)
    with pytest.raises(InvalidRequest):
        world.gate.resolve(ADMIN, execution_id, outcome="succeeded", reason="seen it")
    result = world.gate.resolve(
        ADMIN, execution_id, outcome="succeeded", provider_reference="re_manual", reason="seen"
    )
    assert result.receipt is not None and result.receipt.provider_reference == "re_manual"


def test_only_a_person_with_the_admin_role_in_the_tenant(world: World) -> None:
    """Agents, approvers without the role, and other tenants cannot resolve."""
    world.directory.grant("acme", "olga", "signoff_admin")
    execution_id = _unknown(world)
    agent_admin = Principal("u_42", "acme", frozenset({"signoff_admin"}), actor="agent:x")
    for who in (agent_admin, APPROVER):
        with pytest.raises(Forbidden):
            world.gate.resolve(who, execution_id, outcome="failed_terminal", reason="x")
    globex_admin = Principal("gina", "globex", frozenset({"signoff_admin"}))
    world.directory.grant("globex", "gina", "signoff_admin")
    with pytest.raises(NotFound):
        world.gate.resolve(globex_admin, execution_id, outcome="failed_terminal", reason="x")
    assert OTHER_TENANT.tenant == "globex"


def test_a_finished_execution_cannot_be_resolved(world: World) -> None:
    """A succeeded execution stays as it is."""
    world.directory.grant("acme", "olga", "signoff_admin")
    proposal = world.propose()
    token = world.approve(proposal)
    done = world.gate.execute(AGENT, proposal.proposal_id, token)
    with pytest.raises(InvalidState):
        world.gate.resolve(
            ADMIN, done.execution.execution_id, outcome="failed_terminal", reason="oops"
        )
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_the_resolution_is_evidence_with_its_codes(world: World) -> None:
    """The audit event names the execution, what it was and became, the key and digest;
    failed_terminal carries resolved_by_person, succeeded no error code."""
    execution_id = _unknown(world)
    failed = world.gate.resolve(
        ADMIN, execution_id, outcome="failed_terminal", reason="provider shows no refund"
    )
    assert failed.duplicate is False
    assert (failed.execution.error_code, failed.execution.error_message) == (
        "resolved_by_person",
        "provider shows no refund",
    )
    proposal = world.gate.proposal(AGENT, failed.execution.proposal_id)
    [event] = [
        e
        for e in world.gate.audit_events(ADMIN, proposal_id=proposal.proposal_id)
        if e.kind == "execution.resolved"
    ]
    assert event.execution_id == execution_id
    assert event.payload() | {"request_id": None} == {
        "status": "failed_terminal",
        "from": "unknown",
        "request_key": proposal.request_key,
        "executed_digest": proposal.args_digest,
        "provider_reference": None,
        "reason": "provider shows no refund",
        "request_id": None,
    }
    other = _unknown_for(world, "ord_1002")
    done = world.gate.resolve(
        ADMIN, other, outcome="succeeded", provider_reference="re_manual", reason="seen"
    )
    assert (done.execution.status, done.execution.error_code) == (
        ExecutionStatus.SUCCEEDED,
        None,
    )


def test_reason_and_reference_have_bounds_and_a_revoked_admin_cannot_resolve(
    world: World,
) -> None:
    execution_id = _unknown(world)
    for reason in ("", "x" * 2001):
        with pytest.raises(InvalidRequest):
            world.gate.resolve(ADMIN, execution_id, outcome="failed_terminal", reason=reason)
    for reference in ("", "r" * 201):
        with pytest.raises(InvalidRequest):
            world.gate.resolve(
                ADMIN,
                execution_id,
                outcome="succeeded",
                provider_reference=reference,
                reason="x",
            )
    world.directory.revoke("acme", "olga", "signoff_admin")
    # the token still claims the role, the directory does not: outside the circle, 404
    with pytest.raises(NotFound):
        world.gate.resolve(ADMIN, execution_id, outcome="failed_terminal", reason="x")
    # still in the circle through another role, but no longer an admin: 403
    both = Principal("olga", "acme", frozenset({"signoff_admin", "refund_approver"}))
    world.directory.grant("acme", "olga", "refund_approver")
    with pytest.raises(Forbidden):
        world.gate.resolve(both, execution_id, outcome="failed_terminal", reason="x")
    world.directory.grant("acme", "olga", "signoff_admin")
    result = world.gate.resolve(
        ADMIN, execution_id, outcome="succeeded", provider_reference="r" * 200, reason="x" * 2000
    )
    assert result.execution.provider_reference == "r" * 200
    one = world.gate.resolve(
        ADMIN,
        _unknown_for(world, "ord_1002"),
        outcome="succeeded",
        provider_reference="r",
        reason="x",
    )
    assert one.execution.provider_reference == "r"  # one character is a reference too


def _unknown_for(world: World, order_id: str) -> str:
    proposal = world.propose(order_id=order_id)
    token = world.approve(proposal, key=f"k-{order_id}")
    world.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    return world.gate.execute(AGENT, proposal.proposal_id, token).execution.execution_id

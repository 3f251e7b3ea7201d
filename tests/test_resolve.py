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

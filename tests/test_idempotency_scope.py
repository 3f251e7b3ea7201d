"""Idempotency keys belong to (tenant, person, agent-or-none) (PROTOCOL rules 6 and 12)."""

from __future__ import annotations

import pytest

from signoff import Decision, DecisionKind, Principal, ProposalStatus
from signoff.exceptions import NotFound, SubjectMismatch
from tests.conftest import AGENT, APPROVER, World

GLOBEX_ALICE = Principal("alice", "globex", frozenset({"refund_approver"}))
GLOBEX_AGENT = Principal("u_77", "globex", actor="agent:support-bot")


def _approve(world: World, who: Principal, proposal_id: str, key: str) -> bool:
    result = world.gate.decide(
        who, proposal_id, Decision(DecisionKind.APPROVE, 1), idempotency_key=key
    )
    return result.duplicate


def test_one_key_in_two_tenants_is_two_keys(world: World) -> None:
    """alice of acme and alice of globex both use "k": two decisions, neither a replay."""
    world.directory.grant("globex", "alice", "refund_approver")
    acme = world.propose()
    globex = world.gate.propose(
        GLOBEX_AGENT,
        "refund_order",
        {"order_id": "ord_2001", "amount_minor": 100, "currency": "CNY", "reason": None},
    )
    assert _approve(world, APPROVER, acme.proposal_id, "k") is False
    assert _approve(world, GLOBEX_ALICE, globex.proposal_id, "k") is False
    assert world.gate.proposal(GLOBEX_AGENT, globex.proposal_id).status is (
        ProposalStatus.CONFIRMED
    )


def test_a_persons_key_is_not_their_agents(world: World) -> None:
    """An agent acting for alice sending alice's key gets no replay (and no token)."""
    proposal = world.propose()
    assert _approve(world, APPROVER, proposal.proposal_id, "click") is False
    alices_agent = Principal("alice", "acme", frozenset({"refund_approver"}), actor="agent:x")
    with pytest.raises(NotFound):
        _approve(world, alices_agent, proposal.proposal_id, "click")
    assert _approve(world, APPROVER, proposal.proposal_id, "click") is True


def test_an_execute_key_of_one_agent_is_not_another_agents(world: World) -> None:
    """The same person's other agent reusing the key is a new request: the token is bound."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="run-1")
    other = Principal("u_42", "acme", actor="agent:mail-bot")
    with pytest.raises(SubjectMismatch):
        world.gate.execute(other, proposal.proposal_id, token, idempotency_key="run-1")
    assert world.gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="run-1").duplicate
    assert world.ledger_amounts() == [("ord_1001", 19900)]

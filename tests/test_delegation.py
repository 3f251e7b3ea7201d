"""Delegation (out of office): alice lends her role to bob for a window; the directory honours
it at every step; bob decides as himself and as alice's delegate; receipts say so."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from signoff import Decision, DecisionKind, Gate, Principal
from signoff.exceptions import (
    ApproverRevoked,
    InvalidRequest,
    InvalidState,
    NotEntitled,
    NotFound,
    SeparationOfDuties,
)
from signoff.identity import StoreRoleDirectory
from tests.conftest import AGENT, REFUND, TOKEN_KEY, World

ALICE = Principal("alice", "acme", roles=frozenset({"refund_approver"}))
BOB = Principal("bob", "acme")  # his token claims no role: the delegation lends it
U42 = Principal("u_42", "acme", roles=frozenset({"refund_approver"}))


def _setup(world: World) -> tuple[Gate, StoreRoleDirectory]:
    directory = StoreRoleDirectory(world.store, mode="grants", clock=world.clock)
    directory.grant("acme", "alice", "refund_approver", by="olga")
    gate = Gate(
        world.gate.catalog, world.store, token_key=TOKEN_KEY, clock=world.clock, directory=directory
    )
    return gate, directory


def _lend(world: World, directory: StoreRoleDirectory, *, start: timedelta, hours: float) -> str:
    now = world.clock.now()
    return directory.delegate(
        "acme",
        "alice",
        "bob",
        "refund_approver",
        starts_at=now + start,
        ends_at=now + start + timedelta(hours=hours),
        by="alice",
    ).delegation_id


def _approve(gate: Gate, who: Principal, proposal_id: str, key: str = "k") -> str | None:
    return gate.decide(
        who, proposal_id, Decision(DecisionKind.APPROVE, 1), idempotency_key=key
    ).confirmation_token


def test_a_delegate_inside_the_window_approves_as_alices_delegate(world: World) -> None:
    gate, directory = _setup(world)
    _lend(world, directory, start=timedelta(0), hours=8)
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    assert [p.proposal_id for p in gate.inbox(BOB)] == [proposal.proposal_id]
    token = _approve(gate, BOB, proposal.proposal_id)
    assert token is not None
    [approval] = gate.proposal(BOB, proposal.proposal_id).approvals
    assert (approval.approver, approval.delegate_of) == ("bob", "alice")
    assert approval.label() == "bob, as delegate of alice"
    result = gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="x")
    assert result.receipt is not None
    assert result.receipt.approver_labels() == ("bob, as delegate of alice",)
    assert world.ledger_amounts() == [("ord_1001", 19900)]
    with world.store.read() as tx:
        events = tx.audit_events()
    assert [e.payload()["on_behalf_of"] for e in events if e.kind == "decision.approved"] == [
        "alice"
    ]
    assert "role.delegated" in [e.kind for e in events]


def test_outside_the_window_the_delegate_is_nobody(world: World) -> None:
    """Before it starts and after it ends, bob neither sees nor decides; a token approved
    inside the window does not run once the window closed (consent holds only while it holds)."""
    gate, directory = _setup(world)
    _lend(world, directory, start=timedelta(hours=1), hours=1 / 12)  # 5 minutes
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    assert gate.inbox(BOB) == []
    with pytest.raises(NotFound):
        _approve(gate, BOB, proposal.proposal_id)
    world.clock.advance(timedelta(hours=1))
    fresh = gate.propose(AGENT, "refund_order", {**REFUND, "order_id": "ord_1002"})
    token = _approve(gate, BOB, fresh.proposal_id, key="k2")
    assert token is not None
    world.clock.advance(timedelta(minutes=6))  # the window closed; the token has 4 min left
    with pytest.raises(ApproverRevoked):
        gate.execute(AGENT, fresh.proposal_id, token, idempotency_key="x")
    assert world.ledger_amounts() == []


def test_ending_a_delegation_early_stops_the_delegate(world: World) -> None:
    gate, directory = _setup(world)
    delegation = _lend(world, directory, start=timedelta(0), hours=8)
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    assert directory.end_delegation("acme", delegation, by="alice") is True
    with pytest.raises(NotFound):
        _approve(gate, BOB, proposal.proposal_id)
    with world.store.read() as tx:
        assert "role.delegation_ended" in [e.kind for e in tx.audit_events()]


def test_a_delegate_is_checked_as_themselves_and_as_the_one_they_stand_in_for(
    world: World,
) -> None:
    """u_42 (the customer) holds the role and lends it to bob: bob may not approve u_42's own
    refund in their place; and u_42 borrowing alice's role cannot approve their own request."""
    gate, directory = _setup(world)
    directory.grant("acme", "u_42", "refund_approver", by="olga")
    now = world.clock.now()
    directory.delegate(
        "acme", "u_42", "bob", "refund_approver",
        starts_at=now, ends_at=now + timedelta(hours=1), by="u_42",
    )  # fmt: skip
    directory.delegate(
        "acme", "alice", "u_42", "refund_approver",
        starts_at=now, ends_at=now + timedelta(hours=1), by="alice",
    )  # fmt: skip
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    with pytest.raises(SeparationOfDuties):
        _approve(gate, BOB, proposal.proposal_id)
    with pytest.raises(SeparationOfDuties):
        _approve(gate, Principal("u_42", "acme"), proposal.proposal_id, key="k2")
    assert gate.proposal(ALICE, proposal.proposal_id).approvals == ()


def test_the_one_stood_in_for_and_the_delegate_are_one_person_for_n_of_m(world: World) -> None:
    """Alice approved; bob, standing in for alice, is not a second person."""
    gate, directory = _setup(world)
    _lend(world, directory, start=timedelta(0), hours=8)
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    _approve(gate, ALICE, proposal.proposal_id)
    with pytest.raises(InvalidState):  # a one-approval policy: confirmed already
        _approve(gate, BOB, proposal.proposal_id, key="k2")
    from signoff.gate._policy import decision_step

    decided = gate.proposal(ALICE, proposal.proposal_id)
    pending = dataclasses.replace(decided, status=decided.status.AWAITING_CONFIRMATION)
    with pytest.raises(SeparationOfDuties):  # were it still open (N-of-M), bob is alice
        decision_step(pending, BOB, DecisionKind.APPROVE, directory)


def test_only_a_holder_delegates_and_the_window_is_bounded(world: World) -> None:
    _, directory = _setup(world)
    now = world.clock.now()
    with pytest.raises(NotEntitled):
        directory.delegate(
            "acme", "carol", "bob", "refund_approver",
            starts_at=now, ends_at=now + timedelta(hours=1), by="carol",
        )  # fmt: skip
    for start, end in ((now, now), (now - timedelta(days=2), now - timedelta(days=1))):
        with pytest.raises(InvalidRequest):
            directory.delegate(
                "acme", "alice", "bob", "refund_approver", starts_at=start, ends_at=end, by="a"
            )
    with pytest.raises(InvalidRequest):
        directory.delegate(
            "acme", "alice", "bob", "refund_approver",
            starts_at=now, ends_at=now + timedelta(days=91), by="alice",
        )  # fmt: skip
    with pytest.raises(InvalidRequest):
        directory.delegate(
            "acme", "alice", "alice", "refund_approver",
            starts_at=now, ends_at=now + timedelta(hours=1), by="alice",
        )  # fmt: skip

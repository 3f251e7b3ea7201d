"""The decision receipt (seed 003): audit event, action, status, version, tool status.

A decision answers what it did, so a client can show a definite result: the audit event
it wrote (``<tenant>:<seq>``), the business action, the proposal's status and version as it
left them, whether the tool ran yet, and ``duplicate``. A replay answers the same; only
``tool_status`` (and the live ``proposal``) move once the write runs. Both stores.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from signoff import (
    ApprovalPolicy,
    Catalog,
    Decision,
    DecisionKind,
    DecisionResult,
    Gate,
    Principal,
    ProposalStatus,
    ResourceState,
    Risk,
)
from signoff.demo import RefundArgs, RefundOrder
from signoff.exceptions import IdempotencyKeyReused
from tests.conftest import AGENT, APPROVER, APPROVER_2, REFUND, TOKEN_KEY
from tests.test_store_contract import STORES, Backend, backend_for

AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))


@pytest.fixture(params=STORES)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with backend_for(request.param, tmp_path) as b:
        b.directory.grant("acme", "dave", "auditor")
        yield b


def _event_of(gate: Gate, result: DecisionResult) -> tuple[str, str | None, dict[str, object]]:
    """The audit event ``result.audit_id`` names: kind, actor, payload."""
    tenant, seq = result.audit_id.rsplit(":", 1)
    assert tenant == result.proposal.tenant
    [event] = [
        e
        for e in gate.audit_events(AUDITOR, proposal_id=result.proposal.proposal_id)
        if e.seq == int(seq)
    ]
    return event.kind, event.actor, json.loads(event.data)


def _approve(
    gate: Gate, proposal_id: str, version: int, *, by: Principal, key: str
) -> DecisionResult:
    decision = Decision(DecisionKind.APPROVE, version)
    return gate.decide(by, proposal_id, decision, idempotency_key=key)


def test_an_approval_that_confirms_names_its_event_and_replays_alike(backend: Backend) -> None:
    """The confirming approval: its decision.approved event (not the token's, written
    after it), confirmed at version 2, not started; the replay answers the same values."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    first = _approve(gate, proposal.proposal_id, 1, by=APPROVER, key="a1")
    assert (first.status, first.version, first.tool_status, first.duplicate) == (
        ProposalStatus.CONFIRMED,
        2,
        "not_started",
        False,
    )
    assert first.action_id == proposal.action_id
    kind, actor, data = _event_of(gate, first)
    assert (kind, actor, data["status"]) == ("decision.approved", "alice", "confirmed")
    again = _approve(gate, proposal.proposal_id, 1, by=APPROVER, key="a1")
    assert again.duplicate
    assert (again.audit_id, again.action_id, again.status, again.version, again.tool_status) == (
        first.audit_id,
        first.action_id,
        first.status,
        first.version,
        first.tool_status,
    )
    assert again.confirmation_token == first.confirmation_token


def test_after_the_write_a_replay_reports_the_tools_status(backend: Backend) -> None:
    """The approval's replay after execute: the same decision values, tool_status
    succeeded, and the live proposal succeeded; one refund."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    first = _approve(gate, proposal.proposal_id, 1, by=APPROVER, key="a1")
    assert first.confirmation_token is not None
    gate.execute(AGENT, proposal.proposal_id, first.confirmation_token)
    later = _approve(gate, proposal.proposal_id, 1, by=APPROVER, key="a1")
    assert (later.audit_id, later.status, later.version) == (
        first.audit_id,
        ProposalStatus.CONFIRMED,
        2,
    )
    assert later.tool_status == "succeeded"
    assert later.proposal.status is ProposalStatus.SUCCEEDED
    assert len(backend.provider.ledger()) == 1


class TwoApprovers(RefundOrder):
    def policy(self, args: RefundArgs, state: ResourceState, risk: Risk) -> ApprovalPolicy:
        return ApprovalPolicy(role="refund_approver", approvals=2)


def test_the_first_of_two_approvals_and_a_rejection(backend: Backend) -> None:
    """2-of-N: the first approval leaves it awaiting (version 2, no token written, so its
    event is the chain's head); bob's rejection declines it (version 3); each names its own."""
    gate = Gate(
        Catalog([TwoApprovers(backend.shop, backend.provider)]),
        backend.store,
        token_key=TOKEN_KEY,
        clock=backend.clock,
        directory=backend.directory,
    )
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    first = _approve(gate, proposal.proposal_id, 1, by=APPROVER, key="a")
    assert (first.status, first.version, first.confirmation_token) == (
        ProposalStatus.AWAITING_CONFIRMATION,
        2,
        None,
    )
    assert _event_of(gate, first)[:2] == ("decision.approved", "alice")
    reject = Decision(DecisionKind.REJECT, 2, "policy", "not this one")
    second = gate.decide(APPROVER_2, proposal.proposal_id, reject, idempotency_key="r")
    assert (second.status, second.version, second.tool_status) == (
        ProposalStatus.DECLINED,
        3,
        "not_started",
    )
    assert _event_of(gate, second)[:2] == ("decision.rejected", "bob")
    replayed = _approve(gate, proposal.proposal_id, 1, by=APPROVER, key="a")
    assert (replayed.audit_id, replayed.status, replayed.version) == (
        first.audit_id,
        ProposalStatus.AWAITING_CONFIRMATION,
        2,
    )
    assert replayed.proposal.status is ProposalStatus.DECLINED
    with pytest.raises(IdempotencyKeyReused):
        gate.decide(APPROVER, proposal.proposal_id, reject, idempotency_key="a")

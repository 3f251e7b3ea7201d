"""Refusals are evidence (PROTOCOL rule 15): audited with hashes, counted, never secrets."""

from __future__ import annotations

import hashlib

import pytest

from signoff import AuditEvent, Decision, DecisionKind, Principal
from signoff.demo import FaultMode
from signoff.exceptions import AlreadyConsumed, NotFound, Refusal
from signoff.gate._refusals import MAX_AUDITED_PER_CODE
from tests.conftest import AGENT, APPROVER, World

AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))
FOREIGN_AGENT = Principal("u_77", "globex", actor="agent:support-bot")


def _refusals(world: World, proposal_id: str) -> list[AuditEvent]:
    events = world.gate.audit_events(AUDITOR, proposal_id=proposal_id)
    return [e for e in events if e.kind == "refusal"]


def test_a_replayed_token_is_recorded_with_its_hash_never_the_token(world: World) -> None:
    proposal = world.propose()
    token = world.approve(proposal)
    world.gate.execute(AGENT, proposal.proposal_id, token)
    with pytest.raises(AlreadyConsumed):
        world.gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="replay-1")
    [event] = _refusals(world, proposal.proposal_id)
    data = event.payload()
    assert (data["operation"], data["code"], data["count"]) == ("execute", "already_consumed", 1)
    assert event.actor == "agent:support-bot for u_42"
    token_digest = hashlib.sha256(b"signoff/presented/token\0" + token.encode()).hexdigest()
    key_digest = hashlib.sha256(b"signoff/presented/idempotency_key\0replay-1").hexdigest()
    assert data["presented"]["token_sha256"] == token_digest
    assert data["presented"]["idempotency_key_sha256"] == key_digest
    with world.store.read() as tx:  # never the lookup hash the token table keeps
        assert tx.token_by_hash(token_digest) is None
    assert token not in event.data and "replay-1" not in event.data
    assert world.gate.verify_audit().ok


def test_another_tenant_probing_is_recorded_in_the_owners_chain(world: World) -> None:
    """globex presents acme's id and token: 404 to them, evidence in acme's chain."""
    proposal = world.propose()
    token = world.approve(proposal)
    with pytest.raises(NotFound):
        world.gate.execute(FOREIGN_AGENT, proposal.proposal_id, token)
    [event] = _refusals(world, proposal.proposal_id)
    assert (event.tenant, event.payload()["code"]) == ("acme", "not_found")
    assert event.actor == "globex: agent:support-bot for u_77"
    assert world.ledger_amounts() == []


def test_a_flood_is_counted_not_written(world: World) -> None:
    """25 replays: the first ten are events, the rest only raise the counter."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.gate.execute(AGENT, proposal.proposal_id, token)
    for _ in range(25):
        with pytest.raises(AlreadyConsumed):
            world.gate.execute(AGENT, proposal.proposal_id, token)
    events = _refusals(world, proposal.proposal_id)
    assert len(events) == MAX_AUDITED_PER_CODE
    assert events[-1].payload()["further_refusals_counted_only"] is True
    with world.store.read() as tx:
        assert tx.refusal_counts(proposal.proposal_id) == {"already_consumed": 25}


@pytest.mark.parametrize(
    ("who", "code"),
    [
        (AGENT, "separation_of_duties"),
        (Principal("carol", "acme"), "not_found"),
        (Principal("dave", "acme", frozenset({"auditor"})), "not_entitled"),
    ],
)
def test_refused_decisions_are_recorded(world: World, who: Principal, code: str) -> None:
    proposal = world.propose()
    with pytest.raises(Refusal):
        world.gate.decide(
            who,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key="k-x",
        )
    [event] = _refusals(world, proposal.proposal_id)
    assert (event.payload()["operation"], event.payload()["code"]) == ("decide", code)
    assert event.payload()["presented"]["expected_version"] == proposal.version


def test_an_id_that_was_never_issued_leaves_no_event(world: World) -> None:
    """Nothing to attach evidence to: a random id writes nothing (no unbounded growth)."""
    before = len(world.gate.audit_events(AUDITOR))
    with pytest.raises(NotFound):
        world.gate.execute(AGENT, "prop_does_not_exist", "sot_x")
    assert len(world.gate.audit_events(AUDITOR)) == before


def test_a_revoked_approver_deciding_is_recorded(world: World) -> None:
    proposal = world.propose()
    world.directory.revoke("acme", "alice", "refund_approver")
    with pytest.raises(Refusal):
        world.approve(proposal)
    [event] = _refusals(world, proposal.proposal_id)
    assert (event.actor, event.payload()["code"]) == (APPROVER.subject, "approver_revoked")


def test_a_refusal_named_by_execution_id_lands_on_its_proposal(world: World) -> None:
    """A stranger asking to retry an execution: 404, and the evidence names both ids."""
    proposal = world.propose()
    world.provider.fail_next(FaultMode.RETRYABLE)
    execution = world.gate.execute(AGENT, proposal.proposal_id, world.approve(proposal)).execution
    stranger = Principal("u_77", "acme", actor="agent:support-bot")
    with pytest.raises(NotFound):
        world.gate.retry(stranger, execution.execution_id)
    [event] = _refusals(world, proposal.proposal_id)
    assert (event.proposal_id, event.execution_id) == (
        proposal.proposal_id,
        execution.execution_id,
    )
    assert (event.payload()["operation"], event.payload()["code"]) == ("retry", "not_found")
    with pytest.raises(NotFound):  # an execution id never issued: nothing to attach it to
        world.gate.retry(stranger, "exe_does_not_exist")
    assert len(_refusals(world, proposal.proposal_id)) == 1


def test_a_refused_token_pick_up_is_recorded(world: World) -> None:
    """Someone other than the requesting agent asks for the token: refused, on the record."""
    proposal = world.propose()
    world.approve(proposal)
    other_agent = Principal("u_42", "acme", actor="agent:mail-bot")
    with pytest.raises(Refusal):
        world.gate.confirmation_token(other_agent, proposal.proposal_id)
    [event] = _refusals(world, proposal.proposal_id)
    assert event.actor == "agent:mail-bot for u_42"
    assert (event.payload()["operation"], event.payload()["code"]) == (
        "confirmation_token",
        "subject_mismatch",
    )

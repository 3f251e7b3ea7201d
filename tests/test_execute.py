"""execute: every binding verified, one consumption, one provider effect."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from signoff import (
    Decision,
    DecisionKind,
    Execution,
    ExecutionStatus,
    Principal,
    ProposalStatus,
    ResourceState,
)
from signoff._clock import to_micros
from signoff.demo import FaultMode
from signoff.exceptions import (
    AlreadyConsumed,
    ApproverRevoked,
    ArgsMismatch,
    Expired,
    IdempotencyKeyReused,
    InvalidRequest,
    InvalidState,
    InvalidToken,
    NotFound,
    Revoked,
    StateChanged,
    SubjectMismatch,
)
from signoff.gate._hooks import HookPoint
from signoff.gate._reconcile import Reconciled
from tests.conftest import AGENT, APPROVER, OTHER_TENANT, REFUND, TOKEN_FORMS, World, make_world


@pytest.fixture(params=TOKEN_FORMS)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """Every contract test here runs on both token forms: opaque and signed (JWS)."""
    w = make_world(tmp_path, token_form=request.param)
    yield w
    w.store.close()
    w.shop.close()


def test_confirmed_refund_runs_once_with_a_receipt(world: World) -> None:
    """The happy path: one ledger entry, the order updated, a complete receipt."""
    proposal = world.propose()
    token = world.approve(proposal)
    result = world.gate.execute(AGENT, proposal.proposal_id, token)
    receipt = result.receipt
    assert receipt is not None
    assert receipt.status is ExecutionStatus.SUCCEEDED
    assert receipt.request_key == proposal.request_key
    assert receipt.args_digest == proposal.args_digest
    assert receipt.approvers == ("alice",)
    [entry] = world.provider.ledger()
    assert (entry.request_key, entry.amount_minor, entry.reference) == (
        proposal.request_key,
        19900,
        receipt.provider_reference,
    )
    assert world.refunded() == 19900
    assert world.gate.proposal(AGENT, proposal.proposal_id).status is ProposalStatus.SUCCEEDED


# The seed's nine checks ------------------------------------------------------------


def test_seed_key_reorder_passes(world: World) -> None:
    """Arguments with keys in another order are the same operation."""
    proposal = world.gate.propose(AGENT, "refund_order", dict(reversed(list(REFUND.items()))))
    token = world.approve(proposal)
    world.gate.execute(AGENT, proposal.proposal_id, token)
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_seed_amount_change_refused(world: World) -> None:
    """A token confirmed for ¥19.90 does not execute a ¥199.00 proposal."""
    small = world.propose(amount_minor=1990)
    token = world.approve(small)
    bigger = world.propose(amount_minor=19900)
    with pytest.raises(ArgsMismatch):
        world.gate.execute(AGENT, bigger.proposal_id, token)
    assert world.ledger_amounts() == []


def test_seed_tampered_snapshot_refused(world: World) -> None:
    """Editing the stored amount after approval breaks the digest: refused, no effect."""
    proposal = world.propose(amount_minor=1990)
    token = world.approve(proposal)
    with world.store.transaction() as tx:
        tx.run(
            "UPDATE proposals SET arguments = REPLACE(arguments, '1990', '19900') "
            "WHERE proposal_id = ?",
            (proposal.proposal_id,),
        )
    with pytest.raises(ArgsMismatch):
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert world.ledger_amounts() == []


def test_seed_target_change_refused(world: World) -> None:
    """A token for ord_1001 does not refund ord_1002."""
    one = world.propose()
    token = world.approve(one)
    two = world.propose(order_id="ord_1002")
    with pytest.raises(ArgsMismatch):
        world.gate.execute(AGENT, two.proposal_id, token)
    assert world.ledger_amounts() == []


def test_seed_tenant_change_refused(world: World) -> None:
    """Another tenant presenting the id and token sees nothing."""
    proposal = world.propose()
    token = world.approve(proposal)
    foreign = Principal("u_42", "globex", actor="agent:support-bot")
    with pytest.raises(NotFound):
        world.gate.execute(foreign, proposal.proposal_id, token)
    with pytest.raises(NotFound):
        world.gate.execute(OTHER_TENANT, proposal.proposal_id, token)
    assert world.ledger_amounts() == []


def test_seed_expired_refused(world: World) -> None:
    """At expires_at the token no longer executes."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.clock.set(proposal.expires_at)
    with pytest.raises(Expired):
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert world.ledger_amounts() == []
    assert world.gate.expire_due() == 1
    assert world.gate.proposal(AGENT, proposal.proposal_id).status is ProposalStatus.EXPIRED


def test_expire_due_counts_every_proposal_it_expires(world: World) -> None:
    """Awaiting and confirmed ones past their deadline, each counted; decided ones kept."""
    waiting = world.propose()
    confirmed = world.propose(order_id="ord_1002")
    world.approve(confirmed)
    rejected = world.propose(order_id="ord_1003")
    world.reject(rejected)
    world.clock.set(waiting.expires_at)
    assert world.gate.expire_due() == 2
    assert world.gate.expire_due() == 0
    statuses = {p.proposal_id: p.status for p in world.gate.proposals(AGENT)}
    assert statuses == {
        waiting.proposal_id: ProposalStatus.EXPIRED,
        confirmed.proposal_id: ProposalStatus.EXPIRED,
        rejected.proposal_id: ProposalStatus.DECLINED,
    }


def test_seed_revoked_reviewer_refused(world: World) -> None:
    """The approver lost the role between approval and execution: refused, no effect."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.directory.revoke("acme", "alice", "refund_approver")
    with pytest.raises(ApproverRevoked):
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert world.ledger_amounts() == []


def test_seed_unknown_field_and_boolean_amount_refused(world: World) -> None:
    """Unknown fields and boolean amounts never reach a proposal, let alone the provider."""
    from signoff.exceptions import InvalidArguments

    with pytest.raises(InvalidArguments):
        world.propose(approved=True)
    with pytest.raises(InvalidArguments):
        world.propose(amount_minor=True)
    assert world.ledger_amounts() == []


def test_seed_missing_approval_refused(world: World) -> None:
    """Without an approval there is no token; a made-up token is refused."""
    proposal = world.propose()
    with pytest.raises(InvalidToken):
        world.gate.execute(AGENT, proposal.proposal_id, "sot_" + "A" * 43)
    with pytest.raises(InvalidRequest):
        world.gate.execute(AGENT, proposal.proposal_id, "")
    assert world.ledger_amounts() == []


# Beyond the seed --------------------------------------------------------------------


def test_replayed_token_is_already_consumed(world: World) -> None:
    """Redelivery of the same token: refused with the existing execution's id."""
    proposal = world.propose()
    token = world.approve(proposal)
    first = world.gate.execute(AGENT, proposal.proposal_id, token)
    with pytest.raises(AlreadyConsumed) as caught:
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert caught.value.details["execution_id"] == first.execution.execution_id
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_retry_with_idempotency_key_returns_first_receipt(world: World) -> None:
    """A retried execute with the same key answers the first receipt, duplicate."""
    proposal = world.propose()
    token = world.approve(proposal)
    first = world.gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="x1")
    again = world.gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="x1")
    assert again.duplicate and again.receipt == first.receipt
    with pytest.raises(IdempotencyKeyReused):
        world.gate.execute(AGENT, proposal.proposal_id, "sot_other", idempotency_key="x1")
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_token_is_bound_to_the_requesting_principal(world: World) -> None:
    """The approver holding the token cannot use it; nor can the person without their agent."""
    proposal = world.propose()
    token = world.approve(proposal)
    for thief in (APPROVER, Principal("u_42", "acme"), Principal("u_42", "acme", actor="agent:x")):
        with pytest.raises(SubjectMismatch):
            world.gate.execute(thief, proposal.proposal_id, token)
    assert world.ledger_amounts() == []


def test_state_changed_after_approval_refused_before_consuming(world: World) -> None:
    """The order moved after the preview: state_changed, token intact, no effect."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.shop.touch_order("acme", "ord_1001")
    with pytest.raises(StateChanged):
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert world.ledger_amounts() == []
    assert world.gate.proposal(AGENT, proposal.proposal_id).status is ProposalStatus.CONFIRMED


def test_revoked_confirmation_refused(world: World) -> None:
    """An approver revokes the confirmation: the token is dead."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.gate.revoke(APPROVER, proposal.proposal_id, reason="customer called back")
    with pytest.raises(Revoked):
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert world.ledger_amounts() == []


def test_cancelled_proposal_cannot_be_decided(world: World) -> None:
    """The requester cancels before anyone decides; decisions are then refused."""
    proposal = world.propose()
    cancelled = world.gate.cancel(AGENT, proposal.proposal_id)
    assert cancelled.status is ProposalStatus.CANCELLED
    with pytest.raises(InvalidState):
        world.gate.decide(
            APPROVER,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, cancelled.version),
            idempotency_key="k",
        )


def test_timeout_that_succeeded_is_unknown_then_settled_by_lookup(world: World) -> None:
    """A lost answer is unknown, never failed; lookup by request key finds the refund."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    result = world.gate.execute(AGENT, proposal.proposal_id, token)
    assert result.execution.status is ExecutionStatus.UNKNOWN and result.receipt is None
    settled = world.gate.retry(AGENT, result.execution.execution_id)
    assert settled.execution.status is ExecutionStatus.SUCCEEDED
    [entry] = world.provider.ledger()
    assert settled.execution.provider_reference == entry.reference
    assert world.refunded() == 19900


def test_timeout_before_reaching_provider_is_retried_with_the_same_key(world: World) -> None:
    """The provider never saw it: the retry uses the same request key, one refund."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    result = world.gate.execute(AGENT, proposal.proposal_id, token)
    assert result.execution.status is ExecutionStatus.UNKNOWN
    assert world.ledger_amounts() == []
    settled = world.gate.retry(AGENT, result.execution.execution_id)
    assert settled.execution.status is ExecutionStatus.SUCCEEDED
    assert settled.execution.attempts == 2
    assert [e.request_key for e in world.provider.ledger()] == [proposal.request_key]


def test_retryable_failure_retries_with_the_same_key(world: World) -> None:
    """failed_retryable → retry with the same request key → one refund."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.provider.fail_next(FaultMode.RETRYABLE)
    result = world.gate.execute(AGENT, proposal.proposal_id, token)
    assert result.execution.status is ExecutionStatus.FAILED_RETRYABLE
    again = world.gate.retry(AGENT, result.execution.execution_id)
    assert again.execution.status is ExecutionStatus.SUCCEEDED
    assert [e.request_key for e in world.provider.ledger()] == [proposal.request_key]
    assert world.gate.retry(AGENT, result.execution.execution_id).duplicate


def test_terminal_failure_is_final(world: World) -> None:
    """failed_terminal is a receipt, not something to retry."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.provider.fail_next(FaultMode.TERMINAL)
    result = world.gate.execute(AGENT, proposal.proposal_id, token)
    assert result.execution.status is ExecutionStatus.FAILED_TERMINAL
    assert result.receipt is not None and result.receipt.provider_reference is None
    assert world.gate.proposal(AGENT, proposal.proposal_id).status is ProposalStatus.FAILED_TERMINAL
    assert world.ledger_amounts() == []


def test_state_change_racing_the_write_is_caught_by_the_conditional_update(world: World) -> None:
    """The order moves between the state re-read and the write: state_changed, no effect."""
    proposal = world.propose()
    token = world.approve(proposal)
    tool = world.gate.catalog.get("refund_order")
    original = tool.read_state

    def read_then_change(args: Any, principal: Principal) -> ResourceState:
        state = original(args, principal)
        world.shop.touch_order("acme", "ord_1001")
        return state

    tool.read_state = read_then_change  # type: ignore[method-assign]
    with pytest.raises(StateChanged) as caught:
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert caught.value.details["execution_id"]
    assert world.ledger_amounts() == [] and world.refunded() == 0


def test_retry_is_refused_to_other_principals(world: World) -> None:
    """Only the requesting principal may ask for a retry."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.provider.fail_next(FaultMode.RETRYABLE)
    result = world.gate.execute(AGENT, proposal.proposal_id, token)
    with pytest.raises(SubjectMismatch):
        world.gate.retry(APPROVER, result.execution.execution_id)
    with pytest.raises(NotFound):
        world.gate.retry(OTHER_TENANT, result.execution.execution_id)


def test_confirmation_token_is_handed_only_to_its_subject(world: World) -> None:
    """The agent can pick up its token after approval; nobody else can."""
    proposal = world.propose()
    token = world.approve(proposal)
    assert world.gate.confirmation_token(AGENT, proposal.proposal_id) == token
    with pytest.raises(SubjectMismatch):
        world.gate.confirmation_token(APPROVER, proposal.proposal_id)
    world.clock.advance(timedelta(seconds=1))
    world.gate.execute(AGENT, proposal.proposal_id, token)
    with pytest.raises(InvalidState):
        world.gate.confirmation_token(AGENT, proposal.proposal_id)


@pytest.mark.parametrize(
    ("column", "value"), [("operation", "delete_account"), ("resource_id", "order:ord_1002")]
)
def test_a_token_row_rewritten_for_another_operation_or_resource_is_refused(
    world: World, column: str, value: str
) -> None:
    """Someone with the database rewrites what the token confirms: refused, no refund.

    An opaque token is checked against the row (args_mismatch); a signed token's own
    claims no longer match the row it names (invalid_token)."""
    proposal = world.propose()
    token = world.approve(proposal)
    with world.store.transaction() as tx:
        tx.run(
            f"UPDATE tokens SET {column} = ? WHERE proposal_id = ?", (value, proposal.proposal_id)
        )
    expected = InvalidToken if token.count(".") == 2 else ArgsMismatch
    with pytest.raises(expected):
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert world.ledger_amounts() == []


def _recording_hooks(world: World) -> list[tuple[HookPoint, Execution]]:
    seen: list[tuple[HookPoint, Execution]] = []
    world.gate._ctx = dataclasses.replace(
        world.gate._ctx, hooks=lambda point, execution: seen.append((point, execution))
    )
    return seen


def test_a_retry_is_attempt_two_with_a_fresh_lease(world: World) -> None:
    """The provider is called by a running attempt 2 whose lease starts now; both audited."""
    seen = _recording_hooks(world)
    proposal = world.propose()
    token = world.approve(proposal)
    world.provider.fail_next(FaultMode.RETRYABLE)
    first = world.gate.execute(AGENT, proposal.proposal_id, token)
    assert (first.execution.status, first.execution.error_code) == (
        ExecutionStatus.FAILED_RETRYABLE,
        "provider_retryable",
    )
    world.clock.advance(timedelta(minutes=1))
    seen.clear()
    executing: list[ProposalStatus] = []

    def record(point: HookPoint, execution: Execution) -> None:
        seen.append((point, execution))
        if point is HookPoint.BEFORE_PROVIDER_CALL:
            executing.append(world.gate.proposal(AGENT, proposal.proposal_id).status)

    world.gate._ctx = dataclasses.replace(world.gate._ctx, hooks=record)
    again = world.gate.retry(AGENT, first.execution.execution_id)
    [running] = [e for point, e in seen if point is HookPoint.BEFORE_PROVIDER_CALL]
    now = world.clock.now()
    assert (running.status, running.attempts) == (ExecutionStatus.RUNNING, 2)
    assert executing == [ProposalStatus.EXECUTING]
    assert running.updated_at == now and running.lease_until == now + timedelta(minutes=5)
    assert (again.execution.status, again.execution.attempts) == (ExecutionStatus.SUCCEEDED, 2)
    started = [
        e.payload()["attempt"]
        for e in world.gate.audit_events(AGENT, proposal_id=proposal.proposal_id)
        if e.kind == "execution.started"
    ]
    assert started == [1, 2]
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_a_lost_answer_is_outcome_unknown_with_the_cause(world: World) -> None:
    proposal = world.propose()
    world.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    result = world.gate.execute(AGENT, proposal.proposal_id, world.approve(proposal))
    assert result.execution.error_code == "outcome_unknown"
    assert (result.execution.error_message or "").startswith("provider timed out")


def test_a_worker_whose_lease_lapsed_does_not_record_over_the_reconciler(world: World) -> None:
    """The provider answered a slow worker after its lease ran out; the reconciler had
    already settled the execution by request key. The slow worker's record loses and it
    answers with the reconciler's outcome: one refund, one success event."""
    reconciled: list[Reconciled] = []

    def slow_worker(point: HookPoint, execution: Execution) -> None:
        if point is HookPoint.AFTER_PROVIDER_SUCCESS and not reconciled:
            world.clock.advance(timedelta(minutes=6))
            reconciled.extend(world.gate.reconcile())

    world.gate._ctx = dataclasses.replace(world.gate._ctx, hooks=slow_worker)
    proposal = world.propose()
    result = world.gate.execute(AGENT, proposal.proposal_id, world.approve(proposal))
    assert len(reconciled) == 1
    assert result.execution.status is ExecutionStatus.SUCCEEDED
    assert (reconciled[0].execution_id, reconciled[0].status) == (
        result.execution.execution_id,
        ExecutionStatus.SUCCEEDED,
    )
    [entry] = world.provider.ledger()
    assert result.execution.provider_reference == entry.reference
    kinds = [e.kind for e in world.gate.audit_events(AGENT, proposal_id=proposal.proposal_id)]
    assert kinds.count("execution.succeeded") == 1


def test_the_row_records_when_an_execution_completed(world: World) -> None:
    """completed_at is set when the outcome is terminal, and only then (for operators' SQL)."""
    unknown = world.propose()
    world.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    pending = world.gate.execute(AGENT, unknown.proposal_id, world.approve(unknown)).execution
    world.clock.advance(timedelta(seconds=3))
    done = world.propose(order_id="ord_1002")
    finished = world.gate.execute(AGENT, done.proposal_id, world.approve(done, key="k2")).execution
    with world.store.read() as tx:
        rows = dict(tx.run("SELECT execution_id, completed_at FROM executions").fetchall())
    assert rows[pending.execution_id] is None
    assert rows[finished.execution_id] == to_micros(world.clock.now())

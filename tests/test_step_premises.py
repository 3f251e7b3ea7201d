"""A write step whose premise no longer holds writes nothing, on SQLite and on PostgreSQL.

The gate checks everything in a read, then writes on premises (store/_q_steps.py;
on PostgreSQL one server-side function each). These drive the steps directly
with premises that no longer hold and look at the rows: no decision, no token,
no execution, no idempotency record, no audit event — and the chain intact.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from signoff import DecisionKind, ExecutionStatus, Proposal, ProposalStatus
from signoff._clock import from_micros, to_micros
from signoff._model import Approval, Execution
from signoff.audit._chain import verify_chain
from signoff.identity import StoreRoleDirectory
from signoff.store._sql import (
    ConsumeWrite,
    DecisionWrite,
    OutcomeWrite,
    PasskeyRecord,
    PremiseFailed,
    audit_entry,
)
from tests.conftest import AGENT, APPROVER
from tests.test_store_contract import STORES, Backend, backend_for


@pytest.fixture(params=STORES)
def b(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with backend_for(request.param, tmp_path) as backend:
        yield backend


def _decision(p: Proposal, **changes: object) -> DecisionWrite:
    now = to_micros(p.created_at) + 1
    approval = Approval(
        "alice", DecisionKind.APPROVE, "role:refund_approver", None, None, from_micros(now)
    )
    write = DecisionWrite(
        proposal_id=p.proposal_id,
        expected_version=p.version,
        to=ProposalStatus.AWAITING_CONFIRMATION,
        now=now,
        roles={},
        idempotency=("acme", '["alice",null]', "key-1", "print"),
        approval=approval,
        event=audit_entry(tenant="acme", at=now, kind="decision.approved", data={}),
        token=None,
    )
    return dataclasses.replace(write, **changes)  # type: ignore[arg-type]


def _counts(b: Backend, proposal_id: str) -> tuple[int, ...]:
    with b.store.read() as tx:
        return tuple(
            tx.run(sql, params).fetchone()[0]
            for sql, params in (
                ("SELECT version FROM proposals WHERE proposal_id = ?", (proposal_id,)),
                ("SELECT count(*) FROM decisions WHERE proposal_id = ?", (proposal_id,)),
                ("SELECT count(*) FROM idempotency_keys", ()),
                ("SELECT count(*) FROM executions", ()),
                ("SELECT count(*) FROM audit_events", ()),
            )
        )


def _write(b: Backend, write: DecisionWrite | ConsumeWrite) -> None:
    with b.store.step() as tx:
        if isinstance(write, DecisionWrite):
            tx.record_decision(write)
        else:
            tx.consume_and_start(write)


def _refused(
    b: Backend, write: DecisionWrite | ConsumeWrite, proposal_id: str, premise: str
) -> None:
    before = _counts(b, proposal_id)
    with pytest.raises(PremiseFailed) as failed:
        _write(b, write)
    assert failed.value.premise == premise
    assert _counts(b, proposal_id) == before
    with b.store.read() as tx:
        assert verify_chain(tx.audit_events(), tx.audit_heads()).ok


def test_a_decision_on_another_version_writes_nothing(b: Backend) -> None:
    """The proposal moved since the read (its version): no decision, no key, no event."""
    p = b.propose(b.gate())
    _refused(b, _decision(p, expected_version=2), p.proposal_id, "proposal")


def test_a_decision_after_the_expiry_writes_nothing(b: Backend) -> None:
    """The clock passed the proposal's expiry between the read and the write."""
    p = b.propose(b.gate())
    _refused(b, _decision(p, now=to_micros(p.expires_at)), p.proposal_id, "proposal")


def test_a_decision_with_a_taken_key_writes_nothing(b: Backend) -> None:
    """Another request claimed the same Idempotency-Key meanwhile."""
    gate = b.gate()
    first, p = b.propose(gate, "ord_1002"), b.propose(gate)
    with b.store.step() as tx:
        tx.record_decision(_decision(first))
    _refused(b, _decision(p), p.proposal_id, "idempotency_key")


def test_a_decision_whose_role_entry_changed_writes_nothing(b: Backend) -> None:
    """The read saw alice granted in the store's directory; the entry is gone now."""
    p = b.propose(b.gate())
    roles = {("acme", "alice", "refund_approver"): True}
    _refused(b, _decision(p, roles=roles), p.proposal_id, "role_entries")


def test_a_device_approval_whose_counter_moved_writes_nothing(b: Backend) -> None:
    """Another decision used the passkey's next count first: this one keeps nothing."""
    p = b.propose(b.gate())
    with b.store.transaction() as tx:
        tx.insert_passkey(PasskeyRecord("cred-1", "acme", "alice", "cose", "{}", 5, 0))
    _refused(b, _decision(p, sign_count=("cred-1", 3, 7)), p.proposal_id, "passkey")
    with b.store.read() as tx:
        passkey = tx.passkey("cred-1")
    assert passkey is not None and passkey.sign_count == 5


def _consume(b: Backend, p: Proposal, token_id: str, now: int) -> ConsumeWrite:
    moment = from_micros(now)
    running = Execution(
        execution_id="exe_test",
        proposal_id=p.proposal_id,
        tenant="acme",
        token_id=token_id,
        request_key=p.request_key,
        status=ExecutionStatus.RUNNING,
        attempts=1,
        provider_reference=None,
        error_code=None,
        error_message=None,
        created_at=moment,
        updated_at=moment,
        lease_until=from_micros(now + 1),
    )
    event = audit_entry(tenant="acme", at=now, kind="token.consumed", data={})
    return ConsumeWrite(token_id, now, {}, None, running, event, event)


def test_consume_and_start_needs_an_issued_unexpired_token(b: Backend) -> None:
    """Expired, or consumed by another worker: no execution; the winner's one stands."""
    gate = b.gate()
    p = b.propose(gate)
    b.approve(gate, p)
    with b.store.read() as tx:
        token_id = tx.token_id_for(p.proposal_id)
    assert token_id is not None
    expired = to_micros(p.expires_at)
    _refused(b, _consume(b, p, token_id, expired), p.proposal_id, "token")
    now = expired - 1
    with b.store.step() as tx:
        tx.consume_and_start(_consume(b, p, token_id, now))
    _refused(b, _consume(b, p, token_id, now), p.proposal_id, "token")
    execution = gate.execution_for(AGENT, p.proposal_id)
    assert execution is not None and execution.status is ExecutionStatus.RUNNING
    assert execution.attempts == 1


def test_an_outcome_for_an_execution_that_moved_is_not_recorded(b: Backend) -> None:
    """A late worker's outcome loses to the one recorded first: None, no event."""
    gate = b.gate()
    p = b.propose(gate)
    gate.execute(AGENT, p.proposal_id, b.approve(gate, p))
    execution = gate.execution_for(AGENT, p.proposal_id)
    assert execution is not None and execution.status is ExecutionStatus.SUCCEEDED
    before = _counts(b, p.proposal_id)
    now = to_micros(p.created_at) + 10
    with b.store.step() as tx:
        moved = tx.record_outcome(
            OutcomeWrite(
                execution_id=execution.execution_id,
                from_statuses=(ExecutionStatus.RUNNING,),
                to=ExecutionStatus.FAILED_TERMINAL,
                now=now,
                reference=None,
                code="late",
                message=None,
                proposal_from=(ProposalStatus.EXECUTING,),
                proposal_to=ProposalStatus.FAILED_TERMINAL,
                event=audit_entry(tenant="acme", at=now, kind="execution.late", data={}),
            )
        )
    assert moved is None
    assert _counts(b, p.proposal_id) == before
    assert gate.proposal(APPROVER, p.proposal_id).status is ProposalStatus.SUCCEEDED


@pytest.mark.parametrize("stored", [None, True, False], ids=["none", "granted", "revoked"])
@pytest.mark.parametrize(
    "read", [None, True, False], ids=["read-none", "read-granted", "read-revoked"]
)
def test_a_role_entry_premise_holds_only_when_it_is_what_was_read(
    b: Backend, stored: bool | None, read: bool | None
) -> None:
    """Each directory entry the read saw (none, granted, revoked) is written back as that
    premise: the same entry lets the decision through, any other refuses it."""
    directory = StoreRoleDirectory(b.store)
    if stored is not None:
        directory.grant("acme", "alice", "refund_approver", by="ops")
        if stored is False:
            directory.revoke("acme", "alice", "refund_approver", by="ops")
    p = b.propose(b.gate())
    write = _decision(p, roles={("acme", "alice", "refund_approver"): read})
    if stored is read:
        _write(b, write)
        assert _counts(b, p.proposal_id)[1] == 1  # the decision is written
    else:
        _refused(b, write, p.proposal_id, "role_entries")

"""A decision replayed under its Idempotency-Key: the first answer again (rules 6 and 12).

The stored answer is given only after the checks a first request would pass (the
circle, the person who decided, the surface, the role), and it is the same decision
receipt: the same audit event, action, status and version, with ``tool_status`` read now.
"""

from __future__ import annotations

import json

from signoff._model import (
    NOT_STARTED,
    Decision,
    DecisionResult,
    Principal,
    Proposal,
    ProposalStatus,
    audit_reference,
)
from signoff.audit._chain import AuditEvent
from signoff.exceptions import IdempotencyKeyReused, SeparationOfDuties
from signoff.gate._circle import load_visible
from signoff.gate._context import GateContext
from signoff.gate._policy import (
    REQUESTER_STEP,
    check_role,
    check_surface,
    with_delegated_roles,
)
from signoff.gate._signed import handed_token
from signoff.store._sql import IdempotencyRecord, SqlTransaction

_DECISION_KINDS = ("decision.approved", "decision.rejected", "decision.changes_requested")


def replay(
    ctx: GateContext,
    tx: SqlTransaction,
    principal: Principal,
    record: IdempotencyRecord,
    fingerprint: str,
    decision: Decision,
) -> DecisionResult:
    """The first answer again, after the same checks a first request passes (rule 12)."""
    if record.operation != "decide" or record.fingerprint != fingerprint:
        raise IdempotencyKeyReused(
            "this Idempotency-Key was used with a different request",
            proposal_id=record.proposal_id,
        )
    assert record.proposal_id is not None
    # Seen with delegated roles too (a delegate repeating their decision).
    seen_as = with_delegated_roles(principal, ctx.directory_in(tx))
    proposal = load_visible(tx, seen_as, record.proposal_id, None)
    mine = next((a for a in proposal.approvals if a.approver == principal.subject), None)
    if principal.is_agent or mine is None:
        raise SeparationOfDuties("only the person who decided can repeat their decision")
    check_surface(proposal, principal, ctx.surfaces)
    role = proposal.required_role
    if mine.step != REQUESTER_STEP and role is not None:
        check_role(principal, role, ctx.directory_in(tx), proposal_id=proposal.proposal_id)
    token = None if record.token_id is None else handed_token(ctx, tx, record.token_id)
    event = _decision_event(tx, proposal, principal.subject)
    execution = tx.execution_for_proposal(proposal.proposal_id)
    return DecisionResult(
        proposal=proposal,
        duplicate=True,
        audit_id=audit_reference(event.tenant, event.seq),
        status=ProposalStatus(json.loads(event.data)["status"]),
        # The fingerprint holds expected_version: the first answer moved it by one.
        version=decision.expected_version + 1,
        tool_status=NOT_STARTED if execution is None else execution.status.value,
        confirmation_token=token,
    )


def _decision_event(tx: SqlTransaction, proposal: Proposal, person: str) -> AuditEvent:
    """The audit event of ``person``'s decision on ``proposal`` (one per person)."""
    events = tx.audit_events(tenant=proposal.tenant, proposal_id=proposal.proposal_id)
    return next(e for e in events if e.kind in _DECISION_KINDS and e.actor == person)

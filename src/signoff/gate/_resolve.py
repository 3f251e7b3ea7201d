"""A person settles an execution that reconciliation could not: ``unknown`` or ``needs_attention``.

PROTOCOL.md's lifecycle: ``unknown ──(lookup by request key, or a person)──▶
succeeded | failed_terminal``. The person (never an agent) holds ``signoff_admin``,
has checked the provider by the request key, and records what they found with
a reason; the provider is never called from here.
"""

from __future__ import annotations

from typing import Literal

from signoff._model import ExecutionResult, ExecutionStatus, Principal
from signoff.exceptions import Forbidden, InvalidRequest, InvalidState, NotFound
from signoff.gate._attempt import OPEN_PROPOSAL, PROPOSAL_STATUS_FOR
from signoff.gate._context import GateContext, load_proposal, log
from signoff.gate._lifecycle import ADMIN_ROLE
from signoff.gate._policy import holds_role
from signoff.gate._receipts import result_for
from signoff.store._sql import SqlTransaction

UNSETTLED = (ExecutionStatus.UNKNOWN, ExecutionStatus.NEEDS_ATTENTION)
MAX_REASON = 2000
MAX_REFERENCE = 200


def resolve(
    ctx: GateContext,
    principal: Principal,
    execution_id: str,
    *,
    outcome: Literal["succeeded", "failed_terminal"],
    provider_reference: str | None,
    reason: str,
) -> ExecutionResult:
    status = _validate(outcome, provider_reference, reason)
    if principal.is_agent or not holds_role(principal, ADMIN_ROLE, ctx.directory):
        raise Forbidden(f"resolving an execution needs a person with {ADMIN_ROLE!r}")

    def step(tx: SqlTransaction) -> ExecutionResult:
        execution = tx.execution(principal.tenant, execution_id)
        if execution is None:
            raise NotFound("no such execution", execution_id=execution_id)
        proposal = load_proposal(tx, principal, execution.proposal_id)
        now = ctx.now_micros()
        moved = tx.transition_execution_row(
            execution_id,
            from_statuses=UNSETTLED,
            to=status,
            now=now,
            provider_reference=provider_reference,
            error_code=None if status is ExecutionStatus.SUCCEEDED else "resolved_by_person",
            error_message=reason,
        )
        if moved is None:
            raise InvalidState(
                f"only an unknown or needs_attention execution can be resolved; this one is "
                f"{execution.status.value}",
                execution_id=execution_id,
                status=execution.status.value,
            )
        tx.transition_proposal(
            proposal.proposal_id,
            from_statuses=OPEN_PROPOSAL,
            to=PROPOSAL_STATUS_FOR[status],
            now=now,
        )
        tx.append_audit(
            tenant=proposal.tenant,
            at=now,
            kind="execution.resolved",
            proposal_id=proposal.proposal_id,
            execution_id=execution_id,
            actor=principal.subject,
            data={
                "status": status.value,
                "from": execution.status.value,
                "request_key": execution.request_key,
                "executed_digest": proposal.args_digest,
                "provider_reference": provider_reference,
                "reason": reason,
            },
        )
        return result_for(proposal, moved, duplicate=False)

    result = ctx.write(step)
    log.info("execution %s resolved by a person as %s", execution_id, status.value)
    return result


def _validate(outcome: str, reference: str | None, reason: str) -> ExecutionStatus:
    if outcome not in ("succeeded", "failed_terminal"):
        raise InvalidRequest("outcome must be succeeded or failed_terminal")
    if not reason or len(reason) > MAX_REASON:
        raise InvalidRequest(f"a reason of 1 to {MAX_REASON} characters is required")
    if reference is not None and not 0 < len(reference) <= MAX_REFERENCE:
        raise InvalidRequest(f"a provider reference has 1 to {MAX_REFERENCE} characters")
    if outcome == "succeeded" and reference is None:
        raise InvalidRequest("a succeeded execution needs the provider's reference")
    return ExecutionStatus(outcome)

"""A person ends an execution that the machinery cannot or must not: resolve and stop.

``resolve``: PROTOCOL's ``unknown ──(lookup by request key, or a person)──▶
succeeded | failed_terminal``. The person holds ``signoff_admin``, has checked
the provider by the request key, and records what they found with a reason.

``stop`` (rule 11): a person who may withdraw the confirmation (an approver, a
holder of the required role, an admin) ends a ``failed_retryable`` execution as
``failed_terminal``, so no further attempt ever starts.

Neither ever calls the provider; neither is open to agents.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from signoff._directory import RoleDirectory
from signoff._model import Execution, ExecutionResult, ExecutionStatus, Principal, Proposal
from signoff.exceptions import Forbidden, InvalidRequest, InvalidState
from signoff.gate._attempt import record_outcome
from signoff.gate._circle import ADMIN_ROLE, load_visible_execution
from signoff.gate._context import GateContext, log
from signoff.gate._lifecycle import may_withdraw
from signoff.gate._policy import holds_role
from signoff.gate._receipts import result_for
from signoff.store._sql import SqlTransaction

UNSETTLED = (ExecutionStatus.UNKNOWN, ExecutionStatus.NEEDS_ATTENTION)
MAX_REASON = 2000
MAX_REFERENCE = 200
RESOLVED_BY_PERSON = "resolved_by_person"
STOPPED_BY_PERSON = "stopped_by_person"


@dataclass(frozen=True, slots=True)
class _Settlement:
    status: ExecutionStatus
    from_statuses: tuple[ExecutionStatus, ...]
    provider_reference: str | None
    error_code: str | None
    reason: str
    kind: str
    allowed: Callable[[Principal, Proposal, RoleDirectory | None], bool]
    refusal: str


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
    settlement = _Settlement(
        status=status,
        from_statuses=UNSETTLED,
        provider_reference=provider_reference,
        error_code=None if status is ExecutionStatus.SUCCEEDED else RESOLVED_BY_PERSON,
        reason=reason,
        kind="execution.resolved",
        allowed=lambda p, _proposal, d: holds_role(p, ADMIN_ROLE, d),
        refusal=f"resolving an execution needs a person with {ADMIN_ROLE!r}",
    )
    return _settle(ctx, principal, execution_id, settlement)


def stop(
    ctx: GateContext, principal: Principal, execution_id: str, *, reason: str
) -> ExecutionResult:
    _check_reason(reason)
    settlement = _Settlement(
        status=ExecutionStatus.FAILED_TERMINAL,
        from_statuses=(ExecutionStatus.FAILED_RETRYABLE,),
        provider_reference=None,
        error_code=STOPPED_BY_PERSON,
        reason=reason,
        kind="execution.stopped",
        allowed=may_withdraw,
        refusal="stopping needs an approver, the required role or signoff_admin",
    )
    return _settle(ctx, principal, execution_id, settlement)


def _settle(
    ctx: GateContext, principal: Principal, execution_id: str, s: _Settlement
) -> ExecutionResult:
    def step(tx: SqlTransaction) -> ExecutionResult:
        directory = ctx.directory_in(tx)
        proposal, execution = load_visible_execution(tx, principal, execution_id, directory)
        if principal.is_agent or not s.allowed(principal, proposal, directory):
            raise Forbidden(s.refusal, execution_id=execution_id)
        now = ctx.now_micros()
        moved = record_outcome(
            ctx,
            tx,
            proposal,
            execution,
            (s.status, s.provider_reference, s.error_code, s.reason),
            from_statuses=s.from_statuses,
            now=now,
        )
        if moved is None:
            raise _not_settleable(execution, s)
        _audit(tx, principal, proposal, execution, s, now)
        return result_for(proposal, moved, duplicate=False)

    result = ctx.write(step)
    log.info("execution %s ended by a person as %s", execution_id, s.status.value)
    return result


def _audit(
    tx: SqlTransaction,
    principal: Principal,
    proposal: Proposal,
    execution: Execution,
    s: _Settlement,
    now: int,
) -> None:
    tx.append_audit(
        tenant=proposal.tenant,
        at=now,
        kind=s.kind,
        proposal_id=proposal.proposal_id,
        execution_id=execution.execution_id,
        actor=principal.subject,
        data={
            "status": s.status.value,
            "from": execution.status.value,
            "request_key": execution.request_key,
            "executed_digest": proposal.args_digest,
            "provider_reference": s.provider_reference,
            "reason": s.reason,
        },
    )


def _not_settleable(execution: Execution, s: _Settlement) -> InvalidState:
    wanted = " or ".join(status.value for status in s.from_statuses)
    return InvalidState(
        f"only a {wanted} execution can be ended this way; this one is {execution.status.value}",
        execution_id=execution.execution_id,
        status=execution.status.value,
    )


def _check_reason(reason: str) -> None:
    if not isinstance(reason, str) or not reason or len(reason) > MAX_REASON:
        raise InvalidRequest(f"a reason of 1 to {MAX_REASON} characters is required")


def _validate(outcome: str, reference: str | None, reason: str) -> ExecutionStatus:
    if outcome not in ("succeeded", "failed_terminal"):
        raise InvalidRequest("outcome must be succeeded or failed_terminal")
    _check_reason(reason)
    if reference is not None and not 0 < len(reference) <= MAX_REFERENCE:
        raise InvalidRequest(f"a provider reference has 1 to {MAX_REFERENCE} characters")
    if outcome == "succeeded" and reference is None:
        raise InvalidRequest("a succeeded execution needs the provider's reference")
    return ExecutionStatus(outcome)

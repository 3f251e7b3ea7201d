"""Reconciliation: settle stuck executions by asking the provider, never by re-running blindly.

A reconciler first *claims* an execution: a conditional UPDATE that only
succeeds while nobody holds a live lease on it, and that takes the lease. So
several reconcilers (and a requester's ``retry``) never handle one execution at
once. Then, by status:

    prepared (the provider was never called)  → the first attempt
    running whose lease lapsed, or unknown    → lookup(request_key):
        Succeeded / TerminalFailure           → succeeded (provider reference) / failed_terminal
        NotFoundAtProvider                    → another attempt with the SAME request key,
                                                if the tool allows it and attempts remain;
                                                otherwise needs_attention
        Pending                               → running again, looked up when the new lease ends
        the lookup itself failed              → unknown
    after ``tool.max_lookups`` inconclusive lookups → needs_attention

Every attempt made here re-checks that the approvers still hold their role and
sends the provider the state version the approver saw, so the business write's
conditional update still answers ``state_changed`` if the target moved.
"""

from __future__ import annotations

import dataclasses
import enum
from datetime import timedelta

from signoff._clock import from_micros
from signoff._model import (
    Execution,
    ExecutionResult,
    ExecutionStatus,
    Principal,
    Proposal,
    ProposalStatus,
)
from signoff.catalog._types import (
    NotFoundAtProvider,
    Pending,
    ResourceState,
    Succeeded,
    TerminalFailure,
)
from signoff.exceptions import (
    ApproverRevoked,
    CatalogError,
    ExecutionInProgress,
    NotFound,
    Refusal,
    StateChanged,
    SubjectMismatch,
)
from signoff.gate._attempt import NeedsAttention, call_provider, finish_attempt, run_attempt
from signoff.gate._context import GateContext, load_proposal, log
from signoff.gate._policy import approvers_who_lost_role
from signoff.gate._receipts import result_for
from signoff.store._sql import SqlTransaction

APPROVER_REVOKED = "approver_revoked"
LOOKUP_INCONCLUSIVE = "execution.lookup_inconclusive"
_CLAIMABLE = (ExecutionStatus.PREPARED, ExecutionStatus.RUNNING, ExecutionStatus.UNKNOWN)


class ReconcileAction(enum.StrEnum):
    """What a reconciler did with one execution it claimed."""

    ATTEMPTED = "attempted"
    """``prepared``: the provider had never been called; the first attempt ran."""
    SETTLED = "settled"
    """The lookup answered: ``succeeded`` or ``failed_terminal`` recorded."""
    RETRIED = "retried"
    """The provider never saw the request key: attempted again with the same key."""
    PENDING = "pending"
    """The provider is still working on it: ``running``, looked up again later."""
    LOOKUP_FAILED = "lookup_failed"
    """The lookup itself got no answer: ``unknown``."""
    ESCALATED = "escalated"
    """Reconciliation cannot settle it alone: ``needs_attention``."""
    REFUSED = "refused"
    """An approver lost their role: ``failed_terminal`` without calling the provider."""


@dataclasses.dataclass(frozen=True, slots=True)
class Reconciled:
    execution_id: str
    action: ReconcileAction
    status: ExecutionStatus


@dataclasses.dataclass(frozen=True, slots=True)
class _Handled:
    action: ReconcileAction
    execution: Execution
    refusal: Refusal | None = None


def retry(ctx: GateContext, principal: Principal, execution_id: str) -> ExecutionResult:
    """Ask again about an execution, as the principal its token was bound to.

    ``succeeded``/``failed_terminal`` → the original receipt; ``failed_retryable``
    → another attempt with the **same** request key; ``unknown``, or a
    ``prepared``/``running`` one whose lease lapsed → reconciled now; a live
    lease → :class:`ExecutionInProgress`; ``needs_attention`` → looked up, and
    settled only if the provider gives a final answer.
    """
    proposal, execution = _load_own(ctx, principal, execution_id)
    if execution.status.is_terminal:
        return result_for(proposal, execution, duplicate=True)
    if execution.status is ExecutionStatus.FAILED_RETRYABLE:
        return _answer(proposal, _attempt(ctx, proposal, execution, ReconcileAction.RETRIED))
    if execution.status is ExecutionStatus.NEEDS_ATTENTION:
        return _look_up_only(ctx, proposal, execution)
    claimed = ctx.write(lambda tx: _claim_one(ctx, tx, execution_id, principal.tenant))
    if claimed is None:
        raise ExecutionInProgress(
            "the provider call is in progress; ask for the status later",
            execution_id=execution_id,
        )
    if claimed.status.is_terminal or claimed.status not in _CLAIMABLE:
        return result_for(proposal, claimed, duplicate=True)
    return _answer(proposal, _handle(ctx, proposal, claimed))


def reconcile(
    ctx: GateContext, *, older_than: timedelta = timedelta(0), limit: int = 100
) -> list[Reconciled]:
    """Claim stuck executions (one reconciler each) and settle them; return what was done."""
    claimed = ctx.write(lambda tx: _claim(ctx, tx, older_than, limit))
    done = []
    for execution in claimed:
        with ctx.store.read() as tx:
            proposal = tx.proposal(execution.tenant, execution.proposal_id)
        assert proposal is not None
        try:
            handled = _handle(ctx, proposal, execution)
        except ExecutionInProgress:
            continue  # the worker whose lease lapsed finished first; nothing left to do
        except (Refusal, CatalogError) as exc:
            # e.g. the tool is missing from this reconciler's catalog: leave it for another.
            # A store error is not caught: the pass stops, and the claims lapse.
            log.error("cannot reconcile %s: %s", execution.execution_id, exc.to_dict())
            continue
        log.info(
            "reconciled %s: %s -> %s",
            execution.execution_id,
            handled.action.value,
            handled.execution.status.value,
        )
        done.append(Reconciled(execution.execution_id, handled.action, handled.execution.status))
    return done


def _load_own(
    ctx: GateContext, principal: Principal, execution_id: str
) -> tuple[Proposal, Execution]:
    with ctx.store.read() as tx:
        execution = tx.execution(principal.tenant, execution_id)
        if execution is None:
            raise NotFound("no such execution", execution_id=execution_id)
        token = tx.token(execution.token_id)
        assert token is not None
        if (token.subject, token.actor) != (principal.subject, principal.actor):
            raise SubjectMismatch("only the requesting principal may retry this execution")
        return load_proposal(tx, principal, execution.proposal_id), execution


def _claim(
    ctx: GateContext, tx: SqlTransaction, older_than: timedelta, limit: int
) -> list[Execution]:
    now = ctx.now_micros()
    cutoff = now - _micros(older_than)
    stuck = tx.stuck_executions(now, older_than=cutoff, limit=limit)
    return [c for c in (_take(ctx, tx, e, now) for e in stuck) if c is not None]


def _claim_one(
    ctx: GateContext, tx: SqlTransaction, execution_id: str, tenant: str
) -> Execution | None:
    """The execution, claimed; itself if it needs no reconciling; None if someone holds it."""
    current = tx.execution(tenant, execution_id)
    assert current is not None
    if current.status not in _CLAIMABLE:
        return current
    return _take(ctx, tx, current, ctx.now_micros())


def _take(ctx: GateContext, tx: SqlTransaction, e: Execution, now: int) -> Execution | None:
    lease = now + _micros(ctx.lease)
    if not tx.claim_execution(e, lease_until=lease, now=now):
        return None
    return dataclasses.replace(e, updated_at=from_micros(now), lease_until=from_micros(lease))


def _handle(ctx: GateContext, proposal: Proposal, execution: Execution) -> _Handled:
    if execution.status is ExecutionStatus.PREPARED:
        return _attempt(ctx, proposal, execution, ReconcileAction.ATTEMPTED)
    return _look_up(ctx, proposal, execution)


def _attempt(
    ctx: GateContext, proposal: Proposal, execution: Execution, action: ReconcileAction
) -> _Handled:
    """One more attempt with the same request key, for a request the provider never saw."""
    lost = approvers_who_lost_role(proposal, ctx.directory)
    if lost:
        refusal = ApproverRevoked(
            "an approver no longer holds the required role; nothing was done",
            proposal_id=proposal.proposal_id,
            execution_id=execution.execution_id,
            approvers=lost,
        )
        refused = TerminalFailure(refusal.message, code=APPROVER_REVOKED)
        return _Handled(
            ReconcileAction.REFUSED, _finish(ctx, proposal, execution, refused), refusal
        )
    tool = ctx.catalog.get(proposal.tool)
    args = tool.load(proposal.arguments)
    try:
        result = run_attempt(
            ctx, proposal, execution, args, _approved_state(proposal), from_status=execution.status
        )
    except StateChanged as exc:
        return _Handled(action, _reload(ctx, execution), exc)
    return _Handled(action, result.execution)


def _approved_state(proposal: Proposal) -> ResourceState:
    """The state the approver saw: the provider's conditional write checks this version."""
    return ResourceState(
        resource_id=proposal.resource_id,
        version=proposal.state_version,
        summary=dict(proposal.state.get("summary") or {}),
        beneficiary=proposal.state.get("beneficiary"),
    )


def _look_up(ctx: GateContext, proposal: Proposal, execution: Execution) -> _Handled:
    tool = ctx.catalog.get(proposal.tool)
    answer = call_provider(lambda: tool.lookup(execution.request_key))
    log.info("lookup of execution %s: %s", execution.execution_id, type(answer).__name__)
    if isinstance(answer, Succeeded | TerminalFailure):
        return _Handled(ReconcileAction.SETTLED, _finish(ctx, proposal, execution, answer))
    if isinstance(answer, NotFoundAtProvider):
        if not tool.auto_retry:
            return _escalate(ctx, proposal, execution, "the provider never saw it; no auto retry")
        if execution.attempts >= tool.max_attempts:
            reason = f"the provider never saw it after {execution.attempts} attempts"
            return _escalate(ctx, proposal, execution, reason)
        return _attempt(ctx, proposal, execution, ReconcileAction.RETRIED)
    pending = isinstance(answer, Pending)
    lookups = _inconclusive_lookups(ctx, execution) + 1
    if lookups >= tool.max_lookups:
        reason = f"{lookups} lookups without a final answer"
        return _escalate(ctx, proposal, execution, reason)
    return _record_inconclusive(ctx, execution, pending=pending, lookups=lookups)


def _look_up_only(ctx: GateContext, proposal: Proposal, execution: Execution) -> ExecutionResult:
    """For ``needs_attention``: settle on a final answer from the provider; never attempt."""
    tool = ctx.catalog.get(proposal.tool)
    answer = call_provider(lambda: tool.lookup(execution.request_key))
    if isinstance(answer, Succeeded | TerminalFailure):
        return _answer(
            proposal, _Handled(ReconcileAction.SETTLED, _finish(ctx, proposal, execution, answer))
        )
    return result_for(proposal, execution, duplicate=True)


def _escalate(ctx: GateContext, proposal: Proposal, execution: Execution, reason: str) -> _Handled:
    log.warning("execution %s needs attention: %s", execution.execution_id, reason)
    escalated = _finish(ctx, proposal, execution, NeedsAttention(reason))
    return _Handled(ReconcileAction.ESCALATED, escalated)


def _finish(
    ctx: GateContext,
    proposal: Proposal,
    execution: Execution,
    outcome: Succeeded | TerminalFailure | NeedsAttention,
) -> Execution:
    """Record a final answer for the status we claimed; a lost race returns the winner's record."""
    try:
        result = finish_attempt(
            ctx, proposal, execution, outcome, from_statuses=(execution.status,)
        )
    except StateChanged:
        return _reload(ctx, execution)
    return result.execution


def _record_inconclusive(
    ctx: GateContext, execution: Execution, *, pending: bool, lookups: int
) -> _Handled:
    """Pending → ``running`` with a fresh lease; a failed lookup → ``unknown``."""
    to = ExecutionStatus.RUNNING if pending else ExecutionStatus.UNKNOWN
    proposal_status = ProposalStatus.EXECUTING if pending else ProposalStatus.UNKNOWN
    answer = "pending" if pending else "no_answer"

    def record(tx: SqlTransaction) -> Execution:
        now = ctx.now_micros()
        won = tx.transition_execution(
            execution.execution_id,
            from_statuses=(execution.status,),
            to=to,
            now=now,
            lease_until=now + _micros(ctx.lease) if pending else None,
            error_code=None if pending else "outcome_unknown",
            error_message=None if pending else "the lookup by request key got no answer",
        )
        if won:
            tx.transition_proposal(
                execution.proposal_id,
                from_statuses=(ProposalStatus.EXECUTING, ProposalStatus.UNKNOWN),
                to=proposal_status,
                now=now,
            )
            tx.append_audit(
                tenant=execution.tenant,
                at=now,
                kind=LOOKUP_INCONCLUSIVE,
                proposal_id=execution.proposal_id,
                execution_id=execution.execution_id,
                data={"answer": answer, "lookups": lookups, "request_key": execution.request_key},
            )
        current = tx.execution(execution.tenant, execution.execution_id)
        assert current is not None
        return current

    action = ReconcileAction.PENDING if pending else ReconcileAction.LOOKUP_FAILED
    return _Handled(action, ctx.write(record))


def _inconclusive_lookups(ctx: GateContext, execution: Execution) -> int:
    """How many lookups of this execution ended without a final answer (from the audit log)."""
    with ctx.store.read() as tx:
        events = tx.audit_events(tenant=execution.tenant, proposal_id=execution.proposal_id)
    return sum(
        1
        for e in events
        if e.kind == LOOKUP_INCONCLUSIVE and e.execution_id == execution.execution_id
    )


def _reload(ctx: GateContext, execution: Execution) -> Execution:
    with ctx.store.read() as tx:
        current = tx.execution(execution.tenant, execution.execution_id)
    assert current is not None
    return current


def _answer(proposal: Proposal, handled: _Handled) -> ExecutionResult:
    if handled.refusal is not None:
        raise handled.refusal
    return result_for(proposal, handled.execution, duplicate=False)


def _micros(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1_000_000)

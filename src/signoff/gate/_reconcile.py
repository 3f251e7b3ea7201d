"""Reconciliation: settle stuck executions by asking the provider, never by re-running blindly."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from signoff._model import (
    Execution,
    ExecutionResult,
    ExecutionStatus,
    Principal,
    Proposal,
)
from signoff.catalog._types import (
    NotFoundAtProvider,
    Pending,
    Succeeded,
    TerminalFailure,
)
from signoff.exceptions import ApproverRevoked, ExecutionInProgress, NotFound, SubjectMismatch
from signoff.gate._attempt import (
    NeedsAttention,
    Unknown,
    call_provider,
    finish_attempt,
    run_attempt,
)
from signoff.gate._context import GateContext, load_proposal, log
from signoff.gate._policy import approvers_who_lost_role
from signoff.gate._receipts import result_for
from signoff.store._sql import SqlTransaction


@dataclass(frozen=True, slots=True)
class Reconciled:
    execution_id: str
    action: str
    status: ExecutionStatus


def retry(ctx: GateContext, principal: Principal, execution_id: str) -> ExecutionResult:
    """Ask again about an execution, as the principal its token was bound to.

    ``succeeded``/``failed_terminal`` → the original receipt; ``running`` → in
    progress; ``unknown`` → look up by request key; ``failed_retryable`` →
    another attempt with the **same** request key.
    """
    with ctx.store.read() as tx:
        execution = tx.execution(principal.tenant, execution_id)
        if execution is None:
            raise NotFound("no such execution", execution_id=execution_id)
        token = tx.token(execution.token_id)
        assert token is not None
        if (token.subject, token.actor) != (principal.subject, principal.actor):
            raise SubjectMismatch("only the requesting principal may retry this execution")
        proposal = load_proposal(tx, principal, execution.proposal_id)
    if execution.status.is_terminal:
        return result_for(proposal, execution, duplicate=True)
    if execution.status in (ExecutionStatus.PREPARED, ExecutionStatus.RUNNING):
        raise ExecutionInProgress(
            "the provider call is in progress; ask for the status later",
            execution_id=execution_id,
        )
    if execution.status is ExecutionStatus.FAILED_RETRYABLE:
        return _attempt_again(ctx, proposal, execution)
    return _settle(ctx, proposal, execution)


def reconcile(
    ctx: GateContext, *, older_than: timedelta = timedelta(0), limit: int = 100
) -> list[Reconciled]:
    """Claim stuck executions (one reconciler each) and settle them."""
    claimed = ctx.write(lambda tx: _claim(ctx, tx, older_than, limit))
    done = []
    for execution in claimed:
        with ctx.store.read() as tx:
            proposal = tx.proposal(execution.tenant, execution.proposal_id)
        assert proposal is not None
        try:
            if execution.status is ExecutionStatus.PREPARED:
                result = _attempt_again(ctx, proposal, execution)
                action = "attempted"
            else:
                result = _settle(ctx, proposal, execution)
                action = "looked_up"
        except ExecutionInProgress:
            continue
        except ApproverRevoked:
            log.warning("execution %s waits: an approver lost their role", execution.execution_id)
            continue
        done.append(Reconciled(execution.execution_id, action, result.execution.status))
    return done


def _claim(
    ctx: GateContext, tx: SqlTransaction, older_than: timedelta, limit: int
) -> list[Execution]:
    now = ctx.now_micros()
    cutoff = now - int(older_than.total_seconds() * 1_000_000)
    lease = now + int(ctx.lease.total_seconds() * 1_000_000)
    stuck = tx.stuck_executions(now, older_than=cutoff, limit=limit)
    return [e for e in stuck if tx.claim_execution(e, lease_until=lease, now=now)]


def _attempt_again(ctx: GateContext, proposal: Proposal, execution: Execution) -> ExecutionResult:
    lost = approvers_who_lost_role(proposal, ctx.directory)
    if lost:
        raise ApproverRevoked("an approver no longer holds the required role", approvers=lost)
    tool = ctx.catalog.get(proposal.tool)
    args = tool.load(proposal.arguments)
    requester = Principal(
        proposal.requester_subject, proposal.tenant, actor=proposal.requester_actor
    )
    state = tool.read_state(args, requester)
    return run_attempt(ctx, proposal, execution, args, state, from_status=execution.status)


def _settle(ctx: GateContext, proposal: Proposal, execution: Execution) -> ExecutionResult:
    tool = ctx.catalog.get(proposal.tool)
    answer = call_provider(lambda: tool.lookup(execution.request_key))
    log.info("lookup of execution %s: %s", execution.execution_id, type(answer).__name__)
    source = (execution.status,)
    if isinstance(answer, Succeeded | TerminalFailure):
        return finish_attempt(ctx, proposal, execution, answer, from_statuses=source)
    if isinstance(answer, NotFoundAtProvider):
        if getattr(tool, "auto_retry", True):
            return _attempt_again(ctx, proposal, execution)
        escalate = NeedsAttention("the provider never saw it and the tool forbids retries")
        return finish_attempt(ctx, proposal, execution, escalate, from_statuses=source)
    if isinstance(answer, Pending | Unknown):
        if execution.status is ExecutionStatus.RUNNING:
            return finish_attempt(
                ctx, proposal, execution, Unknown("still pending"), from_statuses=source
            )
        return result_for(proposal, execution, duplicate=True)
    raise AssertionError(f"unexpected lookup answer {answer!r}")

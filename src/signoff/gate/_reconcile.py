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

Every attempt made here starts only while consent holds (``_consent``: not
expired, not revoked, approvers still hold their role, attempts left) and
sends the provider the state version the approver saw, so the business write's
conditional update still answers ``state_changed`` if the target moved.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from signoff._clock import from_micros
from signoff._model import Execution, ExecutionResult, ExecutionStatus, Principal, Proposal
from signoff.exceptions import (
    CatalogError,
    ExecutionInProgress,
    Refusal,
    SubjectMismatch,
)
from signoff.gate._circle import load_visible_execution
from signoff.gate._context import GateContext, log
from signoff.gate._receipts import result_for
from signoff.gate._settle import (
    ReconcileAction,
    attempt,
    handle,
    look_up_only,
    micros,
    to_result,
)
from signoff.store._sql import SqlTransaction

_CLAIMABLE = (ExecutionStatus.PREPARED, ExecutionStatus.RUNNING, ExecutionStatus.UNKNOWN)


@dataclasses.dataclass(frozen=True, slots=True)
class Reconciled:
    execution_id: str
    action: ReconcileAction
    status: ExecutionStatus


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
        return to_result(proposal, attempt(ctx, proposal, execution, ReconcileAction.RETRIED))
    if execution.status is ExecutionStatus.NEEDS_ATTENTION:
        return look_up_only(ctx, proposal, execution)
    claimed = ctx.write(lambda tx: _claim_one(ctx, tx, execution_id, principal.tenant))
    if claimed is None:
        raise ExecutionInProgress(
            "the provider call is in progress; ask for the status later",
            execution_id=execution_id,
        )
    if claimed.status not in _CLAIMABLE:
        return result_for(proposal, claimed, duplicate=True)
    return to_result(proposal, handle(ctx, proposal, claimed))


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
            handled = handle(ctx, proposal, execution)
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
        proposal, execution = load_visible_execution(
            tx, principal, execution_id, ctx.directory_in(tx)
        )
        token = tx.token(execution.token_id)
        assert token is not None
        if (token.subject, token.actor) != (principal.subject, principal.actor):
            raise SubjectMismatch("only the requesting principal may retry this execution")
        return proposal, execution


def _claim(
    ctx: GateContext, tx: SqlTransaction, older_than: timedelta, limit: int
) -> list[Execution]:
    now = ctx.now_micros()
    cutoff = now - micros(older_than)
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
    lease = now + micros(ctx.lease)
    if not tx.claim_execution(e, lease_until=lease, now=now):
        return None
    return dataclasses.replace(e, updated_at=from_micros(now), lease_until=from_micros(lease))


__all__ = ["ReconcileAction", "Reconciled", "reconcile", "retry"]

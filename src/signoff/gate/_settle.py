"""Settling one claimed execution: an attempt, or a lookup and what its answer means.

See the table in ``_reconcile``'s docstring and docs/ADAPTERS.md.
"""

from __future__ import annotations

import dataclasses
import enum
from datetime import timedelta
from typing import Any

from signoff._model import Execution, ExecutionResult, ExecutionStatus, Proposal, ProposalStatus
from signoff.catalog._tool import WriteTool
from signoff.catalog._types import (
    NotFoundAtProvider,
    Pending,
    ResourceState,
    Succeeded,
    TerminalFailure,
)
from signoff.exceptions import Refusal, StateChanged
from signoff.gate._attempt import (
    LOOKUP_ANSWERS,
    OUTCOME_UNKNOWN,
    ConsentEnded,
    NeedsAttention,
    Unknown,
    call_provider,
    finish_attempt,
    run_attempt,
)
from signoff.gate._context import GateContext, log
from signoff.gate._receipts import result_for
from signoff.store._sql import SqlTransaction

LOOKUP_INCONCLUSIVE = "execution.lookup_inconclusive"


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
    """Consent ended (expired, revoked, an approver lost their role, attempts used up):
    ``failed_terminal`` without calling the provider."""


@dataclasses.dataclass(frozen=True, slots=True)
class Handled:
    action: ReconcileAction
    execution: Execution
    refusal: Refusal | None = None


def handle(ctx: GateContext, proposal: Proposal, execution: Execution) -> Handled:
    """``prepared``: the first attempt; otherwise ask the provider by request key."""
    if execution.status is ExecutionStatus.PREPARED:
        return attempt(ctx, proposal, execution, ReconcileAction.ATTEMPTED)
    return _look_up(ctx, proposal, execution)


def attempt(
    ctx: GateContext, proposal: Proposal, execution: Execution, action: ReconcileAction
) -> Handled:
    """One more attempt with the same request key, for a request the provider never saw.

    Consent is checked as the attempt starts (``_consent``): once it has ended the
    execution is ``failed_terminal`` and the provider is never called.
    """
    tool = ctx.catalog.get(proposal.tool)
    args = tool.load(proposal.arguments)
    try:
        result = run_attempt(
            ctx, proposal, execution, args, _approved_state(proposal), from_status=execution.status
        )
    except ConsentEnded as ended:
        return Handled(ReconcileAction.REFUSED, ended.execution, ended.refusal)
    except StateChanged as exc:
        return Handled(action, _reload(ctx, execution), exc)
    return Handled(action, result.execution)


def _approved_state(proposal: Proposal) -> ResourceState:
    """The state the approver saw: the provider's conditional write checks this version."""
    return ResourceState(
        resource_id=proposal.resource_id,
        version=proposal.state_version,
        summary=dict(proposal.state.get("summary") or {}),
        beneficiary=proposal.state.get("beneficiary"),
    )


def _look_up(ctx: GateContext, proposal: Proposal, execution: Execution) -> Handled:
    tool = ctx.catalog.get(proposal.tool)
    answer = _lookup(tool, execution)
    log.info("lookup of execution %s: %s", execution.execution_id, type(answer).__name__)
    if isinstance(answer, Succeeded | TerminalFailure):
        return Handled(ReconcileAction.SETTLED, _finish(ctx, proposal, execution, answer))
    if isinstance(answer, NotFoundAtProvider):
        if not tool.auto_retry:
            return _escalate(ctx, proposal, execution, "the provider never saw it; no auto retry")
        if execution.attempts >= tool.max_attempts:
            reason = f"the provider never saw it after {execution.attempts} attempts"
            return _escalate(ctx, proposal, execution, reason)
        return attempt(ctx, proposal, execution, ReconcileAction.RETRIED)
    lookups = _inconclusive_lookups(ctx, execution) + 1
    if lookups >= tool.max_lookups:
        reason = f"{lookups} lookups without a final answer"
        return _escalate(ctx, proposal, execution, reason)
    return _record_inconclusive(ctx, execution, answer, lookups=lookups)


def _lookup(tool: WriteTool[Any], execution: Execution) -> Any:
    """The tool's lookup answer; :class:`Unknown` when it raised or broke its contract."""
    return call_provider(
        lambda: tool.lookup(execution.request_key),
        tool=tool.name,
        hook="lookup",
        answers=LOOKUP_ANSWERS,
    )


def look_up_only(ctx: GateContext, proposal: Proposal, execution: Execution) -> ExecutionResult:
    """For ``needs_attention``: settle on a final answer from the provider; never attempt."""
    tool = ctx.catalog.get(proposal.tool)
    answer = _lookup(tool, execution)
    if isinstance(answer, Succeeded | TerminalFailure):
        return to_result(
            proposal, Handled(ReconcileAction.SETTLED, _finish(ctx, proposal, execution, answer))
        )
    return result_for(proposal, execution, duplicate=True)


def _escalate(ctx: GateContext, proposal: Proposal, execution: Execution, reason: str) -> Handled:
    log.warning("execution %s needs attention: %s", execution.execution_id, reason)
    escalated = _finish(ctx, proposal, execution, NeedsAttention(reason))
    return Handled(ReconcileAction.ESCALATED, escalated)


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
    ctx: GateContext, execution: Execution, answer: Pending | Unknown, *, lookups: int
) -> Handled:
    """Pending → ``running`` with a fresh lease; a failed lookup → ``unknown``."""
    pending = isinstance(answer, Pending)
    failed = Unknown("the lookup by request key got no answer")
    if isinstance(answer, Unknown) and answer.code != OUTCOME_UNKNOWN:
        failed = answer  # a broken contract says so, not "no answer"
    to = ExecutionStatus.RUNNING if pending else ExecutionStatus.UNKNOWN
    proposal_status = ProposalStatus.EXECUTING if pending else ProposalStatus.UNKNOWN
    said = "pending" if pending else "no_answer"

    def record(tx: SqlTransaction) -> Execution:
        now = ctx.now_micros()
        won = tx.transition_execution(
            execution.execution_id,
            from_statuses=(execution.status,),
            to=to,
            now=now,
            lease_until=now + micros(ctx.lease) if pending else None,
            error_code=None if pending else failed.code,
            error_message=None if pending else failed.message,
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
                data={"answer": said, "lookups": lookups, "request_key": execution.request_key},
            )
        current = tx.execution(execution.tenant, execution.execution_id)
        assert current is not None
        return current

    action = ReconcileAction.PENDING if pending else ReconcileAction.LOOKUP_FAILED
    return Handled(action, ctx.write(record))


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


def to_result(proposal: Proposal, handled: Handled) -> ExecutionResult:
    if handled.refusal is not None:
        raise handled.refusal
    return result_for(proposal, handled.execution, duplicate=False)


def micros(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1_000_000)

"""One provider attempt with the proposal's stable request key, outside any transaction."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from signoff._clock import from_micros
from signoff._model import (
    Execution,
    ExecutionResult,
    ExecutionStatus,
    Proposal,
    ProposalStatus,
)
from signoff._telemetry import span
from signoff.catalog._types import (
    ItemOutcome,
    NotFoundAtProvider,
    Pending,
    ProviderOutcome,
    ProviderTimeout,
    ResourceState,
    RetryableFailure,
    Succeeded,
    TerminalFailure,
)
from signoff.exceptions import ExecutionInProgress, Refusal, StateChanged
from signoff.gate._consent import consent_refusal
from signoff.gate._context import GateContext, log
from signoff.gate._hooks import HookPoint
from signoff.gate._receipts import result_for
from signoff.store._sql import AuditEntry, OutcomeWrite, SqlTransaction, audit_entry

STATE_CHANGED = "state_changed"

PROPOSAL_STATUS_FOR = {
    ExecutionStatus.SUCCEEDED: ProposalStatus.SUCCEEDED,
    ExecutionStatus.FAILED_RETRYABLE: ProposalStatus.FAILED_RETRYABLE,
    ExecutionStatus.FAILED_TERMINAL: ProposalStatus.FAILED_TERMINAL,
    ExecutionStatus.UNKNOWN: ProposalStatus.UNKNOWN,
    ExecutionStatus.NEEDS_ATTENTION: ProposalStatus.NEEDS_ATTENTION,
}
OPEN_PROPOSAL = (
    ProposalStatus.EXECUTING,
    ProposalStatus.FAILED_RETRYABLE,
    ProposalStatus.UNKNOWN,
    ProposalStatus.NEEDS_ATTENTION,
)


OUTCOME_UNKNOWN = "outcome_unknown"
TOOL_CONTRACT_VIOLATION = "tool_contract_violation"


@dataclasses.dataclass(frozen=True, slots=True)
class Unknown:
    """The provider's answer was lost (or is not an answer): it may or may not have acted."""

    message: str
    code: str = OUTCOME_UNKNOWN


@dataclasses.dataclass(frozen=True, slots=True)
class NeedsAttention:
    """Reconciliation cannot settle it alone: a person must look."""

    message: str


Outcome = ProviderOutcome | Unknown | NeedsAttention


def run_attempt(
    ctx: GateContext,
    proposal: Proposal,
    execution: Execution,
    args: Any,
    state: ResourceState,
    *,
    from_status: ExecutionStatus = ExecutionStatus.PREPARED,
) -> ExecutionResult:
    """Mark the attempt running while consent holds, call the provider, record its answer."""
    running = start_attempt(ctx, proposal, execution, from_status)
    return call_and_finish(ctx, proposal, running, args, state)


def call_and_finish(
    ctx: GateContext, proposal: Proposal, running: Execution, args: Any, state: ResourceState
) -> ExecutionResult:
    """The provider call of a started attempt, outside any transaction, then its record."""
    ctx.hooks(HookPoint.BEFORE_PROVIDER_CALL, running)
    tool = ctx.catalog.get(proposal.tool)
    with span(
        "signoff.provider.call",
        tool=tool.name,
        execution_id=running.execution_id,
        attempt=running.attempts,
    ) as call:
        outcome = call_provider(
            lambda: tool.execute(args, running.request_key, state),
            tool=tool.name,
            hook="execute",
            answers=EXECUTE_ANSWERS,
        )
        call.set(outcome=_classify(outcome)[0].value)
    if isinstance(outcome, Succeeded):
        ctx.hooks(HookPoint.AFTER_PROVIDER_SUCCESS, running)
    return finish_attempt(ctx, proposal, running, outcome)


def started_event(execution: Execution, now: int) -> AuditEntry:
    """``execution.started``: the attempt (counted from 1) and the request key it uses."""
    return audit_entry(
        tenant=execution.tenant,
        at=now,
        kind="execution.started",
        proposal_id=execution.proposal_id,
        execution_id=execution.execution_id,
        data={"attempt": execution.attempts, "request_key": execution.request_key},
    )


class ConsentEnded(Exception):
    """No attempt started: consent ended; the execution is now ``failed_terminal``."""

    def __init__(self, refusal: Refusal, execution: Execution) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal
        self.execution = execution


def start_attempt(
    ctx: GateContext, proposal: Proposal, execution: Execution, from_status: ExecutionStatus
) -> Execution:
    """Move to ``running`` with a fresh lease; or end it, if consent no longer holds.

    Raises :class:`ConsentEnded` (the provider is never called) or
    :class:`ExecutionInProgress` (another worker moved it first).
    """

    def start(tx: SqlTransaction) -> Execution | ConsentEnded:
        now = ctx.now_micros()
        refusal = consent_refusal(ctx, tx, proposal, execution, now)
        if refusal is not None:
            ended = record_outcome(
                ctx,
                tx,
                proposal,
                execution,
                (ExecutionStatus.FAILED_TERMINAL, None, refusal.code, refusal.message),
                from_statuses=(from_status,),
                now=now,
            )
            if ended is None:
                raise _in_progress(execution)
            return ConsentEnded(refusal, ended)
        lease = now + int(ctx.lease.total_seconds() * 1_000_000)
        if not tx.transition_execution(
            execution.execution_id,
            from_statuses=(from_status,),
            to=ExecutionStatus.RUNNING,
            now=now,
            lease_until=lease,
            new_attempt=True,
        ):
            raise _in_progress(execution)
        tx.transition_proposal(
            execution.proposal_id,
            from_statuses=OPEN_PROPOSAL,
            to=ProposalStatus.EXECUTING,
            now=now,
        )
        running = dataclasses.replace(
            execution,
            status=ExecutionStatus.RUNNING,
            attempts=execution.attempts + 1,
            updated_at=from_micros(now),
            lease_until=from_micros(lease),
        )
        tx.append(started_event(running, now))
        return running

    started = ctx.write(start)
    if isinstance(started, ConsentEnded):
        log.warning(
            "execution %s ended without an attempt: %s", execution.execution_id, started.refusal
        )
        raise started
    return started


def _in_progress(execution: Execution) -> ExecutionInProgress:
    return ExecutionInProgress(
        "another worker is handling this execution", execution_id=execution.execution_id
    )


EXECUTE_ANSWERS: tuple[type, ...] = (Succeeded, RetryableFailure, TerminalFailure)
LOOKUP_ANSWERS: tuple[type, ...] = (Succeeded, TerminalFailure, Pending, NotFoundAtProvider)


def call_provider(
    call: Callable[[], object], *, tool: str, hook: str, answers: tuple[type, ...]
) -> Any:
    """The tool's answer, or :class:`Unknown` when it raised or answered something else.

    The provider may have acted before a bug in the adapter surfaced, so neither a raise
    nor a value that is not one of ``answers`` (a bare string instead of
    ``Succeeded(...)``) is ever a failure: the outcome is unknown, and a reconciler or a
    person settles it by the request key.
    """
    try:
        outcome = call()
    except ProviderTimeout as exc:
        return Unknown(f"provider timed out: {exc}")
    except Exception as exc:  # an adapter bug or a lost connection: the outcome is unknown
        log.warning("provider call raised %s; outcome unknown", type(exc).__name__)
        return Unknown(f"provider raised {type(exc).__name__}")
    if not isinstance(outcome, answers):
        wanted = " | ".join(t.__name__ for t in answers)
        message = (
            f"tool {tool!r}: {hook} returned {type(outcome).__name__}, not {wanted}; "
            "the effect may have happened"
        )
        log.error("%s", message)
        return Unknown(message, code=TOOL_CONTRACT_VIOLATION)
    return outcome


def finish_attempt(
    ctx: GateContext,
    proposal: Proposal,
    running: Execution,
    outcome: Outcome,
    *,
    from_statuses: tuple[ExecutionStatus, ...] = (ExecutionStatus.RUNNING,),
) -> ExecutionResult:
    classified = _classify(outcome)
    items = () if isinstance(outcome, Unknown | NeedsAttention) else outcome.items

    def record(tx: SqlTransaction) -> Execution:
        now = ctx.now_micros()
        moved = record_outcome(
            ctx,
            tx,
            proposal,
            running,
            classified,
            from_statuses=from_statuses,
            now=now,
            items=items,
        )
        if moved is None:
            current = tx.execution(running.tenant, running.execution_id)
            assert current is not None
            return current
        return moved

    finished = ctx.write(record, one_statement=True)
    ctx.hooks(HookPoint.AFTER_RECORD, finished)
    log.info("execution %s is %s", finished.execution_id, finished.status.value)
    if finished.error_code == STATE_CHANGED:
        raise StateChanged(
            "the business state changed before the write; nothing was done",
            proposal_id=proposal.proposal_id,
            execution_id=finished.execution_id,
        )
    return result_for(proposal, finished, duplicate=False)


Classified = tuple[ExecutionStatus, str | None, str | None, str | None]
"""(status, provider reference, error code, error message)."""


def record_outcome(
    ctx: GateContext,
    tx: SqlTransaction,
    proposal: Proposal,
    execution: Execution,
    classified: Classified,
    *,
    from_statuses: tuple[ExecutionStatus, ...],
    now: int,
    items: tuple[ItemOutcome, ...] = (),
) -> Execution | None:
    """Move the execution (and its proposal) to ``classified``; None if it was not in
    ``from_statuses`` any more (another worker recorded first). A batch's ``items`` are
    kept with it and in its audit event, each item on its own."""
    status, reference, code, message = classified
    return tx.record_outcome(
        OutcomeWrite(
            execution_id=execution.execution_id,
            from_statuses=from_statuses,
            to=status,
            now=now,
            reference=reference,
            code=code,
            message=message,
            proposal_from=OPEN_PROPOSAL,
            proposal_to=PROPOSAL_STATUS_FOR[status],
            event=audit_entry(
                tenant=execution.tenant,
                at=now,
                kind=f"execution.{status.value}",
                proposal_id=execution.proposal_id,
                execution_id=execution.execution_id,
                data={
                    "attempt": execution.attempts,
                    "request_key": execution.request_key,
                    "executed_digest": proposal.args_digest,
                    "provider_reference": reference,
                    "error_code": code,
                    **({"items": [item.to_dict() for item in items]} if items else {}),
                },
            ),
            items=items,
        )
    )


def _classify(outcome: Outcome) -> Classified:
    if isinstance(outcome, Succeeded):
        return ExecutionStatus.SUCCEEDED, outcome.reference, None, None
    if isinstance(outcome, RetryableFailure):
        return ExecutionStatus.FAILED_RETRYABLE, None, "provider_retryable", outcome.message
    if isinstance(outcome, TerminalFailure):
        return ExecutionStatus.FAILED_TERMINAL, None, outcome.code, outcome.message
    if isinstance(outcome, NeedsAttention):
        return ExecutionStatus.NEEDS_ATTENTION, None, "needs_attention", outcome.message
    return ExecutionStatus.UNKNOWN, None, outcome.code, outcome.message

"""execute: verify every binding, consume the token once, call the provider once."""

from __future__ import annotations

from dataclasses import dataclass

from signoff._canonical import fingerprint
from signoff._clock import from_micros
from signoff._model import (
    Execution,
    ExecutionResult,
    ExecutionStatus,
    Principal,
    Proposal,
    ProposalStatus,
)
from signoff.exceptions import (
    AlreadyConsumed,
    ApproverRevoked,
    ArgsMismatch,
    AudienceMismatch,
    IdempotencyKeyInFlight,
    IdempotencyKeyReused,
    InvalidRequest,
    InvalidState,
    InvalidToken,
    Refusal,
    Revoked,
    SubjectMismatch,
    TokenExpired,
)
from signoff.gate._attempt import ConsentEnded, run_attempt
from signoff.gate._circle import load_visible, load_visible_execution
from signoff.gate._context import (
    Fallback,
    GateContext,
    check_digest,
    idempotency_scope,
    log,
    write_fast,
)
from signoff.gate._freshness import check_fresh
from signoff.gate._hooks import HookPoint
from signoff.gate._policy import approvers_who_lost_role
from signoff.gate._receipts import result_for
from signoff.gate._signed import Presented, find_token, present
from signoff.store._sql import IdempotencyRecord, SqlTransaction, TokenRecord

MAX_KEY_LENGTH = 255
MAX_TOKEN_LENGTH = 4096  # a signed (JWS) token is ~800 characters


@dataclass(frozen=True, slots=True)
class _Verified:
    proposal: Proposal
    token: TokenRecord


def execute(
    ctx: GateContext,
    principal: Principal,
    proposal_id: str,
    token: str,
    *,
    idempotency_key: str | None = None,
) -> ExecutionResult:
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_LENGTH:
        raise InvalidRequest("a confirmation token is required")
    if idempotency_key is not None and not 0 < len(idempotency_key) <= MAX_KEY_LENGTH:
        raise InvalidRequest(f"an idempotency key has 1 to {MAX_KEY_LENGTH} characters")
    presented = present(ctx, token)
    print_ = fingerprint("execute", {"proposal_id": proposal_id, "token_hash": presented.identity})
    with ctx.store.read() as tx:
        if idempotency_key is not None:
            replay = _replay(ctx, tx, principal, idempotency_key, print_)
            if replay is not None:
                return replay
        verified = _verify(ctx, tx, principal, proposal_id, presented, ctx.now_micros())
    # Re-read the business state outside any transaction: refuse before consuming.
    tool = ctx.catalog.get(verified.proposal.tool)
    args = tool.load(verified.proposal.arguments)
    try:
        state = check_fresh(ctx, verified.proposal, principal)
    except Refusal:
        # A racing winner may have consumed the token and moved the state meanwhile:
        # the loser is told `already_consumed`, not a misleading state refusal.
        with ctx.store.read() as tx:
            _verify(ctx, tx, principal, proposal_id, presented, ctx.now_micros())
        raise

    def consume(tx: SqlTransaction) -> Execution | ExecutionResult:
        now = ctx.now_micros()
        if idempotency_key is not None:
            replay = _replay(ctx, tx, principal, idempotency_key, print_)
            if replay is not None:
                return replay
        v = _verify(ctx, tx, principal, proposal_id, presented, now)
        return _consume(ctx, tx, principal, v, now, idempotency_key, print_)

    def consume_fast(tx: SqlTransaction) -> Execution | ExecutionResult:
        # Verified in the read transaction above; the conditional updates in
        # _consume fail (and `consume` answers instead) if anything changed since.
        now = ctx.now_micros()
        if now >= verified.token.expires_at or approvers_who_lost_role(
            verified.proposal, ctx.directory_in(tx)
        ):
            raise Fallback
        return _consume(ctx, tx, principal, verified, now, idempotency_key, print_, fast=True)

    consumed = write_fast(ctx, consume_fast, consume)
    if isinstance(consumed, ExecutionResult):
        return consumed
    ctx.hooks(HookPoint.AFTER_CONSUME, consumed)
    try:
        return run_attempt(ctx, verified.proposal, consumed, args, state)
    except ConsentEnded as ended:
        raise ended.refusal from None


def _replay(
    ctx: GateContext, tx: SqlTransaction, principal: Principal, key: str, print_: str
) -> ExecutionResult | None:
    record = tx.idempotency(principal.tenant, idempotency_scope(principal), key)
    if record is None:
        return None
    if record.operation != "execute" or record.fingerprint != print_:
        raise IdempotencyKeyReused("this Idempotency-Key was used with a different request")
    assert record.execution_id is not None
    # The scope is (tenant, person, agent): only the principal the token was bound to
    # stored this record; it must still see the proposal to be answered.
    proposal, execution = load_visible_execution(
        tx, principal, record.execution_id, ctx.directory_in(tx)
    )
    if execution.status in (ExecutionStatus.PREPARED, ExecutionStatus.RUNNING):
        raise IdempotencyKeyInFlight(
            "the first request with this Idempotency-Key is still running",
            execution_id=execution.execution_id,
        )
    return result_for(proposal, execution, duplicate=True)


def _verify(
    ctx: GateContext,
    tx: SqlTransaction,
    principal: Principal,
    proposal_id: str,
    presented: Presented,
    now: int,
) -> _Verified:
    proposal = load_visible(tx, principal, proposal_id, ctx.directory_in(tx))
    token = find_token(tx, presented)
    if token is None or token.tenant != principal.tenant:
        raise InvalidToken("this confirmation token was never issued", proposal_id=proposal_id)
    if token.proposal_id != proposal.proposal_id:
        raise ArgsMismatch("the token confirms a different proposal", proposal_id=proposal_id)
    if (token.subject, token.actor) != (principal.subject, principal.actor):
        raise SubjectMismatch(
            "only the principal that requested this operation may present its token",
            proposal_id=proposal_id,
        )
    if token.audience != ctx.audience:
        raise AudienceMismatch("the token is meant for another executor", proposal_id=proposal_id)
    if token.operation != proposal.tool or token.resource_id != proposal.resource_id:
        raise ArgsMismatch("the token confirms another operation", proposal_id=proposal_id)
    check_digest(proposal, against=token.args_digest)
    _check_token_state(tx, proposal, token, now)
    lost = approvers_who_lost_role(proposal, ctx.directory_in(tx))
    if lost:
        raise ApproverRevoked(
            "an approver no longer holds the required role", proposal_id=proposal_id, approvers=lost
        )
    return _Verified(proposal, token)


def _check_token_state(
    tx: SqlTransaction, proposal: Proposal, token: TokenRecord, now: int
) -> None:
    pid = proposal.proposal_id
    if token.status == "consumed":
        existing = tx.execution_for_proposal(pid)
        raise AlreadyConsumed(
            "this confirmation token was already used",
            proposal_id=pid,
            execution_id=existing and existing.execution_id,
        )
    if token.status == "revoked" or proposal.status is ProposalStatus.REVOKED:
        raise Revoked("this confirmation was revoked", proposal_id=pid)
    if now >= token.expires_at or proposal.status is ProposalStatus.EXPIRED:
        raise TokenExpired("this confirmation expired; ask for a new proposal", proposal_id=pid)
    if proposal.status is not ProposalStatus.CONFIRMED:
        raise InvalidState(
            f"the proposal is {proposal.status.value}",
            proposal_id=pid,
            status=proposal.status.value,
        )


def _consume(
    ctx: GateContext,
    tx: SqlTransaction,
    principal: Principal,
    v: _Verified,
    now: int,
    key: str | None,
    print_: str,
    *,
    fast: bool = False,
) -> Execution:
    pid = v.proposal.proposal_id
    if not tx.consume_token(v.token.token_id, now):
        if fast:
            raise Fallback
        raise AlreadyConsumed("this confirmation token was already used", proposal_id=pid)
    if not tx.transition_proposal(
        pid, from_statuses=(ProposalStatus.CONFIRMED,), to=ProposalStatus.EXECUTING, now=now
    ):
        if fast:
            raise Fallback
        raise InvalidState("the proposal left the confirmed state", proposal_id=pid)
    moment = from_micros(now)
    execution = Execution(
        execution_id=ctx.minter.new_id("exe_"),
        proposal_id=pid,
        tenant=v.proposal.tenant,
        token_id=v.token.token_id,
        request_key=v.proposal.request_key,
        status=ExecutionStatus.PREPARED,
        attempts=0,
        provider_reference=None,
        error_code=None,
        error_message=None,
        created_at=moment,
        updated_at=moment,
        # The consuming worker holds the execution; a reconciler waits until this lapses.
        lease_until=from_micros(now + int(ctx.lease.total_seconds() * 1_000_000)),
    )
    tx.insert_execution(execution)
    if key is not None:
        tx.insert_idempotency(
            principal.tenant,
            idempotency_scope(principal),
            key,
            IdempotencyRecord("execute", print_, "done", pid, execution.execution_id, None),
            now,
        )
    tx.append_audit(
        tenant=v.proposal.tenant,
        at=now,
        kind="token.consumed",
        proposal_id=pid,
        execution_id=execution.execution_id,
        actor=principal.label(),
        data={
            "token_id": v.token.token_id,
            "args_digest": v.token.args_digest,
            "request_key": execution.request_key,
        },
    )
    log.info("token for %s consumed by execution %s", pid, execution.execution_id)
    return execution

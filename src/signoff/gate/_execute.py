"""execute: verify every binding, consume the token once, call the provider once."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

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
    AttemptsExhausted,
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
    VersionConflict,
)
from signoff.gate._attempt import call_and_finish, started_event
from signoff.gate._circle import load_visible, load_visible_execution
from signoff.gate._context import (
    READ_ATTEMPTS,
    GateContext,
    check_digest,
    idempotency_scope,
    log,
)
from signoff.gate._freshness import check_fresh
from signoff.gate._hooks import HookPoint
from signoff.gate._policy import (
    approvers_who_lost_role,
    check_requester,
    is_requester,
    requester_lost_roles,
)
from signoff.gate._receipts import result_for
from signoff.gate._signed import Presented, find_token, present
from signoff.store._sql import ConsumeWrite, PremiseFailed, SqlTransaction, TokenRecord, audit_entry

MAX_KEY_LENGTH = 255
MAX_TOKEN_LENGTH = 4096  # a signed (JWS) token is ~800 characters


@dataclass(frozen=True, slots=True)
class _Verified:
    proposal: Proposal
    token: TokenRecord
    roles: dict[tuple[str, str, str], bool | None]
    """The role entries the checks read: premises of the consuming write."""


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
    scope = idempotency_scope(principal)
    request = _Request(principal, proposal_id, presented, idempotency_key, print_, scope)
    for _ in range(READ_ATTEMPTS):
        verified = _read(ctx, request)
        if isinstance(verified, ExecutionResult):
            return verified  # a replay of this Idempotency-Key
        tool = ctx.catalog.get(verified.proposal.tool)
        args = tool.load(verified.proposal.arguments)
        try:
            # Re-read the business state outside any transaction: refuse before consuming.
            state = check_fresh(ctx, verified.proposal, principal, args)
        except Refusal:
            # A racing winner may have consumed the token and moved the state meanwhile:
            # the loser is told `already_consumed`, not a misleading state refusal.
            _read(ctx, dataclasses.replace(request, key=None))
            raise
        try:
            running = ctx.write(
                partial(_consume_and_start, ctx, request, verified), one_statement=True
            )
        except PremiseFailed:
            continue  # something moved since the read: read again, answer from what is there
        ctx.hooks(HookPoint.AFTER_CONSUME, running)
        return call_and_finish(ctx, verified.proposal, running, args, state)
    raise VersionConflict("the confirmation kept changing; try again", proposal_id=proposal_id)


@dataclass(frozen=True, slots=True)
class _Request:
    principal: Principal
    proposal_id: str
    presented: Presented
    key: str | None
    print_: str
    scope: str
    """The Idempotency-Key's scope: (tenant,) person, agent-or-none."""


def _read(ctx: GateContext, request: _Request) -> ExecutionResult | _Verified:
    """A replay's first answer, or every binding verified on what one read finds."""
    principal, presented, key = request.principal, request.presented, request.key
    with ctx.store.peek() as tx:
        tx.read_for_execution(
            principal.tenant,
            request.proposal_id,
            token_hash=None if presented.claims else presented.identity,
            token_id=presented.claims.jti if presented.claims else None,
            idempotency=None if key is None else (request.scope, key),
        )
        if key is not None:
            replay = _replay(ctx, tx, principal, key, request.print_)
            if replay is not None:
                return replay
        return _verify(ctx, tx, principal, request.proposal_id, presented, ctx.now_micros())


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
    if (token.subject, token.actor) != (principal.subject, principal.actor) or not is_requester(
        proposal, principal
    ):
        raise SubjectMismatch(
            "only the principal that requested this operation may present its token",
            proposal_id=proposal_id,
        )
    if token.audience != ctx.audience:
        raise AudienceMismatch("the token is meant for another executor", proposal_id=proposal_id)
    if token.operation != proposal.tool or token.resource_id != proposal.resource_id:
        raise ArgsMismatch("the token confirms another operation", proposal_id=proposal_id)
    if token.policy_version != str(proposal.policy.get("version")):
        raise ArgsMismatch(
            "the token was issued under another policy version than the proposal's",
            proposal_id=proposal_id,
        )
    if token.request_key != proposal.request_key:
        raise ArgsMismatch(
            "the token is bound to another request key than the proposal's",
            proposal_id=proposal_id,
        )
    check_digest(proposal, against=token.args_digest)
    _check_token_state(tx, proposal, token, now)
    lost = approvers_who_lost_role(proposal, ctx.directory_in(tx))
    if lost:
        raise ApproverRevoked(
            "an approver no longer holds the required role", proposal_id=proposal_id, approvers=lost
        )
    check_requester(proposal, ctx.directory_in(tx))
    max_attempts = ctx.catalog.get(proposal.tool).max_attempts
    if max_attempts < 1:
        raise AttemptsExhausted("this tool allows no attempt", proposal_id=proposal_id, attempts=0)
    return _Verified(proposal, token, tx.roles_read())


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


def _consume_and_start(
    ctx: GateContext, request: _Request, v: _Verified, tx: SqlTransaction
) -> Execution:
    """Consume the token and start the first attempt: one write, on the read's premises.

    Consent for this attempt (PROTOCOL rule 11) is what ``_verify`` checked — unexpired,
    unrevoked, approvers still in their role — and the write holds it to that: the token
    moves ``issued → consumed`` only while unexpired, and the role entries read then must
    read the same.
    """
    # Asked again as the write starts; a store directory's entries are premises instead.
    outside = ctx.directory is not None and not ctx.directory_in_store
    if outside and (
        approvers_who_lost_role(v.proposal, ctx.directory)
        or requester_lost_roles(v.proposal, ctx.directory)
    ):
        raise PremiseFailed("role_entries")
    now = ctx.now_micros()
    moment = from_micros(now)
    pid, principal = v.proposal.proposal_id, request.principal
    running = Execution(
        execution_id=ctx.minter.new_id("exe_"),
        proposal_id=pid,
        tenant=v.proposal.tenant,
        token_id=v.token.token_id,
        request_key=v.proposal.request_key,
        status=ExecutionStatus.RUNNING,
        attempts=1,
        provider_reference=None,
        error_code=None,
        error_message=None,
        created_at=moment,
        updated_at=moment,
        # This worker holds the execution; a reconciler waits until the lease lapses.
        lease_until=from_micros(now + int(ctx.lease.total_seconds() * 1_000_000)),
    )
    key, scope = request.key, request.scope
    tx.consume_and_start(
        ConsumeWrite(
            token_id=v.token.token_id,
            now=now,
            roles=v.roles,
            idempotency=None if key is None else (principal.tenant, scope, key, request.print_),
            execution=running,
            consumed=audit_entry(
                tenant=running.tenant,
                at=now,
                kind="token.consumed",
                proposal_id=pid,
                execution_id=running.execution_id,
                actor=principal.label(),
                data={
                    "token_id": v.token.token_id,
                    "args_digest": v.token.args_digest,
                    "request_key": running.request_key,
                    **({} if principal.issuer is None else {"issuer": principal.issuer}),
                },
            ),
            started=started_event(running, now),
        )
    )
    log.info("token for %s consumed by execution %s", pid, running.execution_id)
    return running

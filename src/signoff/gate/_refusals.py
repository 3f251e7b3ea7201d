"""Refusals are evidence (PROTOCOL rule 15).

Every refused attempt on a proposal — replay, tamper, wrong tenant, subject or
audience, missing or revoked role, expiry, wrong surface — becomes a
``refusal`` event in the chain of the tenant that owns the proposal, with the
code, the actor and hashes of what was presented, never a secret. The refused
step's own transaction rolled back, so the event is written in one of its own.

A flood must not grow the audit without bound: each (proposal, code) is counted
in ``refusal_counts``, and only its first ``MAX_AUDITED_PER_CODE`` refusals are
written as events; the last of those says that further ones are only counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import TypeVar

from signoff._model import Principal
from signoff.exceptions import OutcomeUnknown, Refusal
from signoff.gate._context import GateContext, check_text, log
from signoff.store._sql import SqlTransaction

T = TypeVar("T")
MAX_AUDITED_PER_CODE = 10
Presented = Mapping[str, str | int | None]


def presented_hash(kind: str, value: object) -> str | None:
    """What was presented, as a hash: the audit never holds a token or a key.

    Domain-separated (``signoff/presented/<kind>\0`` + value), so a presented token's hash
    is never the lookup hash the token table keeps; whoever holds a token can still
    recompute it to find the refusals it caused.
    """
    if not isinstance(value, str):
        return None
    prefix = f"signoff/presented/{kind}\0".encode()
    return hashlib.sha256(prefix + value.encode("utf-8", "surrogatepass")).hexdigest()


def audited(
    ctx: GateContext,
    operation: str,
    principal: Principal,
    call: Callable[[], T],
    *,
    proposal_id: str | None = None,
    execution_id: str | None = None,
    presented: Presented | None = None,
) -> T:
    """Run ``call``; if it refuses, record the refusal against its proposal, then re-raise.

    An id no store can hold (a NUL in it) names no proposal: refused before anything.
    """
    check_text(proposal_id=proposal_id, execution_id=execution_id)
    try:
        return call()
    except Refusal as refusal:
        if not isinstance(refusal, OutcomeUnknown):
            where = _Target(proposal_id, execution_id)
            _record(ctx, operation, principal, where, refusal, presented or {})
        raise


class _Target:
    __slots__ = ("execution_id", "proposal_id")

    def __init__(self, proposal_id: str | None, execution_id: str | None) -> None:
        self.proposal_id = proposal_id
        self.execution_id = execution_id

    def resolve(self, tx: SqlTransaction) -> tuple[str, str] | None:
        """(proposal id, owning tenant), looked up across tenants; None if there is none."""
        pid = self.proposal_id
        if pid is None and self.execution_id is not None:
            pid = tx.execution_proposal(self.execution_id)
        if pid is None:
            return None
        tenant = tx.proposal_tenant(pid)
        return None if tenant is None else (pid, tenant)


def _record(
    ctx: GateContext,
    operation: str,
    principal: Principal,
    target: _Target,
    refusal: Refusal,
    presented: Presented,
) -> None:
    def step(tx: SqlTransaction) -> None:
        found = target.resolve(tx)
        if found is None:
            return
        proposal_id, tenant = found
        now = ctx.now_micros()
        count = tx.count_refusal(proposal_id, refusal.code, now)
        if count > MAX_AUDITED_PER_CODE:
            return
        actor = principal.label()
        if principal.tenant != tenant:
            actor = f"{principal.tenant}: {actor}"
        tx.append_audit(
            tenant=tenant,
            at=now,
            kind="refusal",
            proposal_id=proposal_id,
            execution_id=target.execution_id,
            actor=actor,
            data={
                "operation": operation,
                "code": refusal.code,
                "count": count,
                "surface": principal.client,
                "presented": dict(presented),
                "further_refusals_counted_only": count == MAX_AUDITED_PER_CODE,
                **{
                    key: value
                    for key, value in (
                        ("issuer", principal.issuer),
                        ("signed_in_client", principal.signed_in_client),
                    )
                    if value is not None
                },
            },
        )

    try:
        ctx.write(step)
    except Exception as exc:
        # The refusal stands and is answered; only its evidence could not be written
        # (the store is down or busy). Never turn a refusal into a server error.
        log.error("could not record a %s refusal: %s", refusal.code, type(exc).__name__)

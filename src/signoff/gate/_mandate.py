"""Standing approvals (mandates): proposed, previewed, decided and audited like a proposal.

A mandate names one tool, constraints over its canonical arguments
(``signoff.policy.Constraints``) and a validity window; its digest binds them.
Its decision runs the same checks as a proposal's — the circle, surfaces,
entitlement and separation of duties (``decision_step``), a device signature
where its policy asks — on a :func:`proposal view <as_proposal>` of the
mandate, so there is one implementation of "who may decide". Revocation, and an
approver found without the role, end it at once (PROTOCOL rule 11): writes
confirmed under it and not yet started are revoked in the same transaction,
which gives their amounts back. Writes under it: ``_mandate_debit``.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

from signoff._clock import from_micros
from signoff._directory import RoleDirectory
from signoff._model import Approval, Decision, DecisionKind, Principal
from signoff.exceptions import (
    IdempotencyKeyReused,
    InvalidRequest,
    InvalidState,
    MandateExpired,
    MandateNotApplicable,
    SeparationOfDuties,
    VersionConflict,
)
from signoff.gate._context import GateContext, idempotency_scope, log
from signoff.gate._decision_checks import (
    check_retyped,
    decision_fingerprint,
    reason_code_of,
    validate_decision,
)
from signoff.gate._device import check_device
from signoff.gate._mandate_end import end_mandate, revoke_mandate
from signoff.gate._mandate_view import (
    ACTIVE,
    AWAITING,
    DECLINED,
    EXPIRED,
    REVOKED,
    MandateState,
    as_proposal,
    load_visible_mandate,
    mandate_preview,
    state_of,
)
from signoff.gate._policy import approvals_complete, check_surface, decision_step
from signoff.policy import Constraints, mandate_digest, mandate_policy
from signoff.store._sql import IdempotencyRecord, MandateRecord, PremiseFailed, SqlTransaction

DECIDE_MANDATE = "decide_mandate"
__all__ = [
    "ACTIVE",
    "AWAITING",
    "DECLINED",
    "EXPIRED",
    "REVOKED",
    "MandateState",
    "as_proposal",
    "decide_mandate",
    "end_mandate",
    "load_visible_mandate",
    "mandate_preview",
    "propose_mandate",
    "read_mandate",
    "revoke_mandate",
    "state_of",
]


def propose_mandate(
    ctx: GateContext,
    principal: Principal,
    tool_name: str,
    constraints: Any,
    *,
    expires_in_seconds: int,
) -> MandateState:
    tool = ctx.catalog.get(tool_name)
    policy_file = ctx.policy_file
    allowed = tool.mandates
    for layer in policy_file.layers(tool.name, principal.tenant) if policy_file else ():
        allowed = bool(layer.values.get("mandates", allowed))
    if not allowed:
        raise MandateNotApplicable(
            f"the policy does not let standing approvals cover {tool.name}", constraint="policy"
        )
    parsed = Constraints.parse(constraints, has_amount=tool.amount_argument is not None)
    policy = mandate_policy(policy_file, tool, principal.tenant)
    most = int(policy.carried["mandate"]["max_ttl_seconds"])
    if isinstance(expires_in_seconds, bool) or not isinstance(expires_in_seconds, int):
        raise InvalidRequest("expires_in_seconds is an integer", field="expires_in_seconds")
    if not 1 <= expires_in_seconds <= most:
        raise InvalidRequest(
            f"expires_in_seconds is between 1 and {most} for {tool.name} (the policy's max_ttl)",
            field="expires_in_seconds",
        )
    now = ctx.now_micros()
    expires_at = now + expires_in_seconds * 1_000_000
    body = parsed.to_dict()
    recorded = policy.to_dict()
    record = MandateRecord(
        mandate_id=ctx.minter.new_id("mnd_"),
        tenant=principal.tenant,
        requester_subject=principal.subject,
        requester_actor=principal.actor,
        tool=tool.name,
        tool_version=tool.version,
        constraints=body,
        digest=mandate_digest(
            tool=tool.name,
            tool_version=tool.version,
            requester_subject=principal.subject,
            requester_actor=principal.actor,
            constraints=body,
            expires_at=expires_at,
        ),
        policy=recorded,
        required_role=policy.approval.role,
        requester_confirms=policy.approval.requester_confirms,
        total_minor=parsed.total_amount_minor,
        max_count=parsed.max_count,
        spent_minor=0,
        used=0,
        status=AWAITING,
        version=1,
        created_at=now,
        expires_at=expires_at,
        updated_at=now,
        ended_reason=None,
    )

    def step(tx: SqlTransaction) -> MandateRecord:
        tx.insert_mandate(record)
        tx.append_audit(
            tenant=record.tenant,
            at=now,
            kind="mandate.created",
            actor=principal.label(),
            data={
                "mandate_id": record.mandate_id,
                "tool": record.tool,
                "tool_version": record.tool_version,
                "requester": {"subject": record.requester_subject, "actor": record.requester_actor},
                "constraints": body,
                "digest": record.digest,
                "policy": recorded,
                "expires_at": expires_at,
            },
        )
        return record

    created = ctx.write(step)
    log.info("mandate %s proposed for %s", created.mandate_id, created.tool)
    return state_of(created)


def read_mandate(ctx: GateContext, principal: Principal, mandate_id: str) -> MandateState:
    with ctx.store.read() as tx:
        record = load_visible_mandate(tx, principal, mandate_id, ctx.directory_in(tx))
        writes = tuple(tx.mandate_writes(mandate_id))
    if record.status in (AWAITING, ACTIVE) and ctx.now_micros() >= record.expires_at:
        # Past its window it covers nothing, whether or not a write has recorded that yet.
        record = dataclasses.replace(record, status=EXPIRED)
    return state_of(record, writes)


def decide_mandate(
    ctx: GateContext,
    principal: Principal,
    mandate_id: str,
    decision: Decision,
    *,
    idempotency_key: str,
) -> MandateState:
    """Approve or reject a mandate, as a proposal's decision (``expected_version``, key)."""
    validate_decision(decision, idempotency_key)
    scope = idempotency_scope(principal)
    print_ = decision_fingerprint(mandate_id, decision)
    for _ in range(3):
        try:
            outcome = ctx.write(
                lambda tx: _decide_in(
                    ctx, tx, principal, mandate_id, decision, (scope, idempotency_key, print_)
                )
            )
        except PremiseFailed:
            continue
        if isinstance(outcome, MandateRecord):
            ctx.write(partial(_expire, record=outcome, now=ctx.now_micros()))
            raise MandateExpired(
                "the mandate expired before a decision; ask for a new one", mandate_id=mandate_id
            )
        return outcome
    raise VersionConflict("the mandate kept changing; read it again", mandate_id=mandate_id)


def _decide_in(
    ctx: GateContext,
    tx: SqlTransaction,
    principal: Principal,
    mandate_id: str,
    decision: Decision,
    key: tuple[str, str, str],
) -> MandateState | MandateRecord:
    scope, idem_key, print_ = key
    directory = ctx.directory_in(tx)
    existing = tx.idempotency(principal.tenant, scope, idem_key)
    if existing is not None:
        return _replay(tx, principal, existing, print_, directory)
    record = load_visible_mandate(tx, principal, mandate_id, directory)
    now = ctx.now_micros()
    _check_open(record, decision, now)
    if now >= record.expires_at:
        return record  # expired: recorded by the caller, outside this rolled-back step
    _check_digest(record)
    view = as_proposal(record)
    check_surface(view, principal, ctx.surfaces)
    step = decision_step(view, principal, decision.kind, directory)
    if decision.kind is DecisionKind.APPROVE:
        check_retyped(view, decision)
    device = check_device(tx, principal, view, decision)
    approval = Approval(
        approver=principal.subject,
        kind=decision.kind,
        step=step,
        reason_code=reason_code_of(decision),
        reason=decision.reason,
        decided_at=from_micros(now),
    )
    decided = dataclasses.replace(view, approvals=(*view.approvals, approval))
    if decision.kind is DecisionKind.REJECT:
        target = DECLINED
    elif approvals_complete(decided):
        target = ACTIVE
    else:
        target = AWAITING
    tx.insert_idempotency(
        principal.tenant,
        scope,
        idem_key,
        IdempotencyRecord(DECIDE_MANDATE, print_, "done", mandate_id, None, None),
        now,
    )
    if not tx.move_mandate(
        mandate_id,
        from_statuses=(AWAITING,),
        to=target,
        now=now,
        expected_version=record.version,
        unexpired=True,
    ):
        raise PremiseFailed("mandate")
    if device is not None and device.counter is not None:
        credential, seen, new = device.counter
        if not tx.advance_sign_count(credential, seen, new):
            raise PremiseFailed("passkey")
    tx.insert_mandate_decision(mandate_id, approval)
    data: dict[str, Any] = {
        "mandate_id": mandate_id,
        "step": step,
        "reason_code": approval.reason_code,
        "digest": record.digest,
        "status": target,
        "surface": principal.client,
        "approvers": [a.approver for a in decided.approvals if a.kind is DecisionKind.APPROVE],
    }
    if device is not None:
        data["device"] = device.assertion
    kind = "approved" if decision.kind is DecisionKind.APPROVE else "rejected"
    tx.append_audit(
        tenant=record.tenant, at=now, kind=f"mandate.{kind}", actor=principal.subject, data=data
    )
    log.info("mandate %s %s by a decision", mandate_id, target)
    current = tx.mandate(record.tenant, mandate_id)
    assert current is not None
    return state_of(current)


def _replay(
    tx: SqlTransaction,
    principal: Principal,
    existing: IdempotencyRecord,
    print_: str,
    directory: RoleDirectory | None,
) -> MandateState:
    if existing.operation != DECIDE_MANDATE or existing.fingerprint != print_:
        raise IdempotencyKeyReused("this Idempotency-Key was used with a different request")
    assert existing.proposal_id is not None
    record = load_visible_mandate(tx, principal, existing.proposal_id, directory)
    if principal.is_agent or not any(a.approver == principal.subject for a in record.approvals):
        raise SeparationOfDuties("only the person who decided can repeat their decision")
    return dataclasses.replace(state_of(record), duplicate=True)


def _check_open(record: MandateRecord, decision: Decision, now: int) -> None:
    if record.status != AWAITING:
        raise InvalidState(
            f"the mandate is {record.status}, not awaiting confirmation",
            mandate_id=record.mandate_id,
            status=record.status,
        )
    if decision.expected_version != record.version:
        raise VersionConflict(
            "the mandate changed since you saw it",
            mandate_id=record.mandate_id,
            current_version=record.version,
        )


def _check_digest(record: MandateRecord) -> None:
    recomputed = mandate_digest(
        tool=record.tool,
        tool_version=record.tool_version,
        requester_subject=record.requester_subject,
        requester_actor=record.requester_actor,
        constraints=record.constraints,
        expires_at=record.expires_at,
    )
    if recomputed != record.digest:
        log.error("digest mismatch on mandate %s", record.mandate_id)
        raise InvalidState("the mandate no longer matches its digest", mandate_id=record.mandate_id)


def _expire(tx: SqlTransaction, *, record: MandateRecord, now: int) -> None:
    if tx.move_mandate(record.mandate_id, from_statuses=(AWAITING, ACTIVE), to=EXPIRED, now=now):
        tx.append_audit(
            tenant=record.tenant,
            at=now,
            kind="mandate.expired",
            data={"mandate_id": record.mandate_id, "expires_at": record.expires_at},
        )

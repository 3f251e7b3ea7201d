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
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

from signoff._clock import from_micros
from signoff._directory import RoleDirectory
from signoff._model import (
    Approval,
    Decision,
    DecisionKind,
    Principal,
    Proposal,
    ProposalStatus,
)
from signoff.catalog._types import Preview, PreviewField, Risk, RiskLevel
from signoff.exceptions import (
    Forbidden,
    IdempotencyKeyReused,
    InvalidRequest,
    InvalidState,
    MandateExpired,
    MandateNotApplicable,
    NotFound,
    SeparationOfDuties,
    VersionConflict,
)
from signoff.gate._circle import ADMIN_ROLE, may_see
from signoff.gate._context import GateContext, idempotency_scope, log
from signoff.gate._decision_checks import (
    check_retyped,
    decision_fingerprint,
    reason_code_of,
    validate_decision,
)
from signoff.gate._device import check_device
from signoff.gate._policy import approvals_complete, check_surface, decision_step, holds_role
from signoff.policy import Constraints, mandate_digest, mandate_policy
from signoff.store._sql import (
    IdempotencyRecord,
    MandateRecord,
    MandateWriteRecord,
    PremiseFailed,
    SqlTransaction,
)

AWAITING = "awaiting_confirmation"
ACTIVE = "active"
DECLINED = "declined"
REVOKED = "revoked"
EXPIRED = "expired"
MAX_REASON = 2000
DECIDE_MANDATE = "decide_mandate"
_VIEW_STATUS = {
    AWAITING: ProposalStatus.AWAITING_CONFIRMATION,
    ACTIVE: ProposalStatus.CONFIRMED,
    DECLINED: ProposalStatus.DECLINED,
    REVOKED: ProposalStatus.REVOKED,
    EXPIRED: ProposalStatus.EXPIRED,
}


@dataclass(frozen=True, slots=True)
class MandateState:
    """A mandate as its circle may read it: the record, what is left, its writes."""

    record: MandateRecord
    remaining_amount_minor: int | None
    remaining_count: int | None
    writes: tuple[MandateWriteRecord, ...] = ()
    duplicate: bool = False

    @property
    def status(self) -> str:
        return self.record.status


def state_of(record: MandateRecord, writes: tuple[MandateWriteRecord, ...] = ()) -> MandateState:
    amount, count = Constraints.from_dict(record.constraints).remaining(
        record.spent_minor, record.used
    )
    return MandateState(record, amount, count, writes)


def as_proposal(m: MandateRecord) -> Proposal:
    """The mandate as the decision checks read a proposal: its id, digest, policy, approvals."""
    return Proposal(
        proposal_id=m.mandate_id,
        action_id=m.mandate_id,
        tenant=m.tenant,
        requester_subject=m.requester_subject,
        requester_actor=m.requester_actor,
        tool=m.tool,
        tool_version=m.tool_version,
        arguments=dict(m.constraints),
        args_digest=m.digest,
        resource_id=f"mandate:{m.tool}",
        state_version=str(m.version),
        state={"summary": {}, "beneficiary": None},
        risk=Risk(RiskLevel.HIGH, ("a standing approval covers several writes",)),
        policy=m.policy,
        preview=mandate_preview(m),
        rationale=None,
        request_key="",
        status=_VIEW_STATUS.get(m.status, ProposalStatus.REVOKED),
        version=m.version,
        created_at=from_micros(m.created_at),
        expires_at=from_micros(m.expires_at),
        approvals=m.approvals,
    )


def mandate_preview(m: MandateRecord) -> Preview:
    """What the approver reads: every constraint, the tool and the window."""
    c = m.constraints
    currency = c.get("currency")
    money = (lambda v: f"{v} {currency} minor units") if currency else str
    fields = [PreviewField("tool", "Tool", m.tool)]
    labels = {
        "currency": ("Currency", str),
        "max_amount_minor": ("Most per write", money),
        "total_amount_minor": ("Budget, in total", money),
        "max_count": ("Writes, at most", str),
        "resources": ("Only these resources", lambda v: ", ".join(v)),
        "agents": ("Only these agents", lambda v: ", ".join(v)),
    }
    for name, (label, show) in labels.items():
        if name in c:
            fields.append(PreviewField(name, label, c[name], show(c[name])))
    agents = ", ".join(c["agents"]) if "agents" in c else f"any agent of {m.requester_subject}"
    return Preview(
        title=f"Standing approval for {m.tool}",
        description=(
            f"{agents} may run {m.tool} without asking again, within these limits, until "
            f"{from_micros(m.expires_at).isoformat()}."
        ),
        fields=tuple(fields),
        impact="Each write under it is confirmed without a person and debits what is left.",
        reversibility="Revocable at any time; writes already started are not undone.",
    )


def load_visible_mandate(
    tx: SqlTransaction, principal: Principal, mandate_id: str, directory: RoleDirectory | None
) -> MandateRecord:
    """The mandate if the caller is in its circle (rule 12); otherwise 404."""
    record = tx.mandate(principal.tenant, mandate_id)
    if record is None or not may_see(as_proposal(record), principal, directory):
        raise NotFound("no such mandate", mandate_id=mandate_id)
    return record


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


def revoke_mandate(
    ctx: GateContext, principal: Principal, mandate_id: str, *, reason: str
) -> MandateState:
    """End a mandate now: the requester, an approver, a holder of its role, or an admin."""
    if not isinstance(reason, str) or not reason or len(reason) > MAX_REASON:
        raise InvalidRequest(f"a reason of 1 to {MAX_REASON} characters is required")

    def step(tx: SqlTransaction) -> MandateState:
        directory = ctx.directory_in(tx)
        record = load_visible_mandate(tx, principal, mandate_id, directory)
        if not _may_revoke(principal, record, directory):
            raise Forbidden(
                "revoking a mandate needs its requester, an approver, its role or signoff_admin"
            )
        now = ctx.now_micros()
        if not end_mandate(
            tx, record, now, kind="mandate.revoked", reason=reason, actor=principal.label()
        ):
            raise InvalidState(
                f"the mandate is {record.status}; only an open mandate can be revoked",
                mandate_id=mandate_id,
                status=record.status,
            )
        current = tx.mandate(record.tenant, mandate_id)
        assert current is not None
        return state_of(current, tuple(tx.mandate_writes(mandate_id)))

    return ctx.write(step)


def _may_revoke(
    principal: Principal, record: MandateRecord, directory: RoleDirectory | None
) -> bool:
    if principal.subject == record.requester_subject:
        return True
    if principal.is_agent:
        return False
    if any(a.approver == principal.subject for a in record.approvals):
        return True
    if holds_role(principal, ADMIN_ROLE, directory):
        return True
    role = record.required_role
    return role is not None and holds_role(principal, role, directory)


def end_mandate(
    tx: SqlTransaction,
    record: MandateRecord,
    now: int,
    *,
    kind: str,
    reason: str,
    actor: str | None,
    data: dict[str, Any] | None = None,
) -> bool:
    """Mark it revoked and revoke its confirmed writes not yet started (their amounts come
    back with them); False if it was no longer open."""
    if not tx.move_mandate(
        record.mandate_id,
        from_statuses=(AWAITING, ACTIVE),
        to=REVOKED,
        now=now,
        ended_reason=reason,
    ):
        return False
    revoked = []
    for write in tx.mandate_writes(record.mandate_id):
        if write.status != "held" or write.proposal_status != ProposalStatus.CONFIRMED.value:
            continue
        if tx.transition_proposal(
            write.proposal_id,
            from_statuses=(ProposalStatus.CONFIRMED,),
            to=ProposalStatus.REVOKED,
            now=now,
        ):
            tx.revoke_token(write.proposal_id)
            tx.append_audit(
                tenant=record.tenant,
                at=now,
                kind="proposal.revoked",
                proposal_id=write.proposal_id,
                actor=actor,
                data={"reason": f"mandate {record.mandate_id} ended: {reason}"},
            )
            revoked.append(write.proposal_id)
    tx.append_audit(
        tenant=record.tenant,
        at=now,
        kind=kind,
        actor=actor,
        data={
            "mandate_id": record.mandate_id,
            "reason": reason,
            "revoked_writes": revoked,
            **(data or {}),
        },
    )
    log.info(
        "mandate %s ended (%s); %d confirmed writes revoked",
        record.mandate_id,
        reason,
        len(revoked),
    )
    return True


def mandate_ttl_left(record: MandateRecord, now: int) -> timedelta:
    return timedelta(microseconds=max(0, record.expires_at - now))

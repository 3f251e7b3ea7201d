"""A write under a mandate: every constraint checked on one read, then one atomic debit.

The read finds the mandate, checks that it is live (approved, unexpired,
unrevoked, every approver still holding the role now), that the current
policy lets mandates cover this tool at this risk, and each constraint
(agents, resources, currency, per-write maximum, what is left of the budget
and the count). The write then debits it with a conditional update — the
mandate still ``active`` at the version read, unexpired, and the budget and
count not overrun — in the same transaction that inserts the proposal already
``confirmed``, the mandate's approvers as its approvals, the write row and the
confirmation token. A racing writer that spent the mandate first makes the
premise fail; this one reads again and answers from what is left. The agent
picks the token up as for any confirmed proposal.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial
from typing import Any

from signoff._clock import from_micros, to_micros
from signoff._model import Approval, DecisionKind, Principal, Proposal, ProposalStatus
from signoff.exceptions import (
    InvalidState,
    MandateExpired,
    MandateNotApplicable,
    MandateRevoked,
    NotFound,
    Refusal,
    VersionConflict,
)
from signoff.gate._context import GateContext, log
from signoff.gate._mandate import (
    ACTIVE,
    AWAITING,
    DECLINED,
    as_proposal,
    end_mandate,
)
from signoff.gate._policy import approvals_complete, approvers_who_lost_role, role_step
from signoff.gate._propose import created_event, record_new
from signoff.gate._refusals import MAX_AUDITED_PER_CODE
from signoff.gate._tokens import issued_token
from signoff.policy import Constraints, EffectivePolicy, mandate_coverage, mandate_digest
from signoff.store._sql import (
    MandateRecord,
    MandateWrite,
    PremiseFailed,
    SqlTransaction,
    audit_entry,
)

MAX_READS = 64
"""Each lost race means another write won (and used some of the mandate): bounded."""


@dataclass(frozen=True, slots=True)
class _Covered:
    mandate: MandateRecord
    roles: dict[tuple[str, str, str], bool | None]
    amount: int | None
    currency: str | None


@dataclass(frozen=True, slots=True)
class _Ended:
    mandate: MandateRecord
    lost: list[str]


def propose_under_mandate(
    ctx: GateContext,
    principal: Principal,
    proposal: Proposal,
    policy: EffectivePolicy,
    mandate_id: str,
) -> Proposal:
    """Confirm ``proposal`` under the mandate, or refuse naming the constraint (or fall back
    to an ordinary proposal for a person, where the policy says so)."""
    for _ in range(MAX_READS):
        found = _read(ctx, principal, proposal, policy, mandate_id)
        if isinstance(found, _Ended):
            ctx.write(partial(_end, ctx, found))
            found = MandateRevoked(
                "an approver of the mandate no longer holds the role; the mandate ended",
                mandate_id=mandate_id,
                approvers=found.lost,
            )
        if isinstance(found, Refusal):
            _evidence(ctx, principal, proposal, mandate_id, found)
            if policy.mandate_fallback and not isinstance(found, NotFound):
                return _fall_back(ctx, principal, proposal, found)
            raise found
        try:
            return ctx.write(partial(_record, ctx, principal, proposal, policy, found))
        except PremiseFailed:
            continue  # another write spent it first, or it moved: read what is left
    raise VersionConflict("the mandate kept changing; try again", mandate_id=mandate_id)


def _read(
    ctx: GateContext,
    principal: Principal,
    proposal: Proposal,
    policy: EffectivePolicy,
    mandate_id: str,
) -> _Covered | _Ended | Refusal:
    with ctx.store.read() as tx:
        record = tx.mandate(principal.tenant, mandate_id)
        if record is None or record.requester_subject != principal.subject:
            # Another person's mandate is not theirs to see, let alone to spend.
            return NotFound("no such mandate", mandate_id=mandate_id)
        refusal = _check_live(ctx, record, proposal)
        if refusal is not None:
            return refusal
        lost = approvers_who_lost_role(as_proposal(record), ctx.directory_in(tx))
        if lost:
            return _Ended(record, lost)
        refusal = _check_covers(ctx, record, proposal, policy)
        if refusal is not None:
            return refusal
        tool = ctx.catalog.get(proposal.tool)
        amount = _argument(proposal, tool.amount_argument)
        currency = _argument(proposal, tool.currency_argument)
        refusal = Constraints.from_dict(record.constraints).refusal(
            mandate_id=mandate_id,
            actor=principal.actor,
            resource_id=proposal.resource_id,
            amount=amount,
            currency=currency,
            spent=record.spent_minor,
            used=record.used,
        )
        if refusal is not None:
            return refusal
        return _Covered(record, tx.roles_read(), amount, currency)


def _argument(proposal: Proposal, name: str | None) -> Any:
    return None if name is None else proposal.arguments.get(name)


def _check_live(ctx: GateContext, m: MandateRecord, proposal: Proposal) -> Refusal | None:
    ids = {"mandate_id": m.mandate_id}
    if m.status in ("revoked", DECLINED):
        why = m.ended_reason or m.status
        return MandateRevoked(f"the mandate was {m.status} ({why})", **ids)
    if m.status == "expired" or ctx.now_micros() >= m.expires_at:
        return MandateExpired("the mandate's validity window has closed", **ids)
    if m.status == AWAITING:
        return MandateNotApplicable("the mandate is not approved yet", constraint="status", **ids)
    if m.status != ACTIVE:
        return MandateRevoked(f"the mandate is {m.status}", **ids)
    if m.tool != proposal.tool:
        return MandateNotApplicable(
            f"the mandate covers {m.tool}, not {proposal.tool}", constraint="tool", **ids
        )
    recomputed = mandate_digest(
        tool=m.tool,
        tool_version=m.tool_version,
        requester_subject=m.requester_subject,
        requester_actor=m.requester_actor,
        constraints=m.constraints,
        expires_at=m.expires_at,
    )
    if recomputed != m.digest or m.tool_version != proposal.tool_version:
        return InvalidState("the mandate no longer matches its digest or tool version", **ids)
    return None


def _check_covers(
    ctx: GateContext, m: MandateRecord, proposal: Proposal, policy: EffectivePolicy
) -> Refusal | None:
    """The policy in force now (a tightening applies to the next write at once)."""
    ids = {"mandate_id": m.mandate_id}
    if not policy.mandates:
        return MandateNotApplicable(
            f"the policy does not let standing approvals cover {proposal.tool}",
            constraint="policy",
            **ids,
        )
    tool = ctx.catalog.get(proposal.tool)
    covered = mandate_coverage(ctx.policy_file, tool, proposal.tenant)
    level = proposal.risk.level.value
    if level not in covered:
        return MandateNotApplicable(
            f"a {level}-risk write is never covered by a mandate unless the policy says so "
            f"(covers_risk: {', '.join(covered)})",
            constraint="risk",
            **ids,
        )
    beneficiary = proposal.state.get("beneficiary")
    role = m.policy.get("role")
    role_approvers = {a.approver for a in m.approvals if a.step == role_step(str(role))}
    if beneficiary in role_approvers and not m.policy.get("beneficiary_may_approve"):
        return MandateNotApplicable(
            "an approver of the mandate is the beneficiary of this write",
            constraint="beneficiary",
            **ids,
        )
    return None


def _record(
    ctx: GateContext,
    principal: Principal,
    proposal: Proposal,
    policy: EffectivePolicy,
    covered: _Covered,
    tx: SqlTransaction,
) -> Proposal:
    m = covered.mandate
    now = ctx.now_micros()
    approvals = tuple(
        Approval(
            approver=a.approver,
            kind=DecisionKind.APPROVE,
            step=a.step,
            reason_code=None,
            reason=f"standing approval {m.mandate_id}",
            decided_at=a.decided_at,
        )
        for a in m.approvals
        if a.kind is DecisionKind.APPROVE
    )
    left_amount, left_count = Constraints.from_dict(m.constraints).remaining(
        m.spent_minor + (covered.amount or 0), m.used + 1
    )
    cover = {
        "mandate_id": m.mandate_id,
        "digest": m.digest,
        "approvers": [a.approver for a in approvals],
        "amount_minor": covered.amount,
        "currency": covered.currency,
        "remaining_amount_minor": left_amount,
        "remaining_count": left_count,
        "mandate_expires_at": m.expires_at,
        "write_policy_version": policy.version,
    }
    confirmed = dataclasses.replace(
        proposal,
        status=ProposalStatus.CONFIRMED,
        version=2,
        # Approved under the mandate's policy (the version its approvers decided under).
        policy=dict(m.policy),
        state={**proposal.state, "mandate": cover},
        approvals=approvals,
        # A write confirmed under a mandate never outlives it.
        expires_at=min(proposal.expires_at, from_micros(m.expires_at)),
    )
    assert approvals_complete(confirmed)
    token = issued_token(ctx, confirmed, now)
    tx.record_mandate_write(
        MandateWrite(
            mandate_id=m.mandate_id,
            mandate_version=m.version,
            amount_minor=covered.amount,
            currency=covered.currency,
            now=now,
            roles=covered.roles,
            proposal=confirmed,
            created=created_event(principal, confirmed, to_micros(confirmed.created_at)),
            debited=audit_entry(
                tenant=confirmed.tenant,
                at=now,
                kind="mandate.debited",
                proposal_id=confirmed.proposal_id,
                actor=principal.label(),
                data={
                    "mandate_id": m.mandate_id,
                    "mandate_digest": m.digest,
                    "args_digest": confirmed.args_digest,
                    "resource_id": confirmed.resource_id,
                    "agent": principal.actor,
                    "amount_minor": covered.amount,
                    "currency": covered.currency,
                    "approvers": cover["approvers"],
                    "remaining_amount_minor": left_amount,
                    "remaining_count": left_count,
                },
            ),
            token=token,
        )
    )
    log.info("proposal %s confirmed under mandate %s", confirmed.proposal_id, m.mandate_id)
    return confirmed


def _end(ctx: GateContext, ended: _Ended, tx: SqlTransaction) -> None:
    current = tx.mandate(ended.mandate.tenant, ended.mandate.mandate_id)
    if current is None:
        return
    end_mandate(
        tx,
        current,
        ctx.now_micros(),
        kind="mandate.ended",
        reason="approver_revoked",
        actor=None,
        data={"approvers": ended.lost},
    )


def _evidence(
    ctx: GateContext, principal: Principal, proposal: Proposal, mandate_id: str, refusal: Refusal
) -> None:
    """Rule 15: a refused write under an existing mandate is a ``mandate.refused`` event in
    the tenant's chain (the first ten per mandate and code; the rest are counted)."""

    def step(tx: SqlTransaction) -> None:
        if tx.mandate(proposal.tenant, mandate_id) is None:
            return  # no such mandate in this tenant: nothing to attach the evidence to
        now = ctx.now_micros()
        count = tx.count_refusal(mandate_id, refusal.code, now)
        if count > MAX_AUDITED_PER_CODE:
            return
        tx.append_audit(
            tenant=proposal.tenant,
            at=now,
            kind="mandate.refused",
            actor=principal.label(),
            data={
                "mandate_id": mandate_id,
                "code": refusal.code,
                "constraint": refusal.details.get("constraint"),
                "tool": proposal.tool,
                "args_digest": proposal.args_digest,
                "resource_id": proposal.resource_id,
                "count": count,
                "further_refusals_counted_only": count == MAX_AUDITED_PER_CODE,
            },
        )

    try:
        ctx.write(step)
    except Exception as exc:  # the refusal stands; only its evidence could not be written
        log.error("could not record a %s refusal: %s", refusal.code, type(exc).__name__)


def _fall_back(
    ctx: GateContext, principal: Principal, proposal: Proposal, refusal: Refusal
) -> Proposal:
    """The policy's ``mandate_fallback``: an ordinary proposal for a person, saying why."""
    waiting = dataclasses.replace(
        proposal,
        state={
            **proposal.state,
            "mandate_refusal": {
                "code": refusal.code,
                "message": refusal.message,
                **{k: v for k, v in refusal.details.items() if isinstance(v, str | int)},
            },
        },
    )
    record_new(ctx, principal, waiting)
    log.info("proposal %s falls back to a person: %s", waiting.proposal_id, refusal.code)
    return waiting

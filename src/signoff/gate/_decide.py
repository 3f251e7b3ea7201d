"""decide: one structured, entitled, version-checked decision on fresh state; then a token."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

from signoff._clock import from_micros, to_micros
from signoff._model import (
    DELEGATE_CODE,
    NOT_STARTED,
    Approval,
    Decision,
    DecisionKind,
    DecisionResult,
    Principal,
    Proposal,
    ProposalStatus,
    audit_reference,
)
from signoff.exceptions import (
    InvalidState,
    PreviewExpired,
    VersionConflict,
)
from signoff.gate._circle import load_visible
from signoff.gate._context import (
    READ_ATTEMPTS,
    GateContext,
    approvers,
    check_digest,
    idempotency_scope,
    log,
)
from signoff.gate._decision_checks import (
    check_reason,
    check_retyped,
    decision_fingerprint,
    reason_code_of,
    suggestion_text,
    validate_decision,
)
from signoff.gate._decision_replay import replay
from signoff.gate._device import DeviceApproval, check_device
from signoff.gate._freshness import check_fresh
from signoff.gate._idp_evidence import check_idp
from signoff.gate._policy import (
    REQUESTER_STEP,
    acting_for,
    approvals_complete,
    assigned_target,
    check_requester,
    check_surface,
    decision_step,
    with_delegated_roles,
)
from signoff.gate._signed import token_for_record
from signoff.gate._step_up import check_step_up
from signoff.gate._tokens import issued_token
from signoff.store._sql import (
    Assignment,
    DecisionWrite,
    PremiseFailed,
    SqlTransaction,
    audit_entry,
)


@dataclasses.dataclass(frozen=True, slots=True)
class _Request:
    principal: Principal
    proposal_id: str
    decision: Decision
    key: str
    scope: str
    print_: str


def decide(
    ctx: GateContext,
    principal: Principal,
    proposal_id: str,
    decision: Decision,
    *,
    idempotency_key: str,
) -> DecisionResult:
    validate_decision(decision, idempotency_key)
    request = _Request(
        principal,
        proposal_id,
        decision,
        idempotency_key,
        idempotency_scope(principal),
        decision_fingerprint(proposal_id, decision),
    )
    for _ in range(READ_ATTEMPTS):
        checked = _read(ctx, request)
        if isinstance(checked, DecisionResult):
            return checked  # a replay: the first answer again
        if isinstance(checked, _Expired):
            ctx.write(partial(_expire, checked))
            raise PreviewExpired(
                "the proposal expired before a decision; ask for a new one",
                proposal_id=proposal_id,
            )
        if decision.kind is DecisionKind.APPROVE:
            # PROTOCOL rule 11: a token is never issued for a proposal whose state moved.
            check_fresh(ctx, checked.proposal)
        try:
            return ctx.write(partial(_record, ctx, request, checked), one_statement=True)
        except PremiseFailed:
            continue  # something moved since the read: read again, answer from what is there
    raise VersionConflict("the proposal kept changing; read it again", proposal_id=proposal_id)


def repeated(
    ctx: GateContext,
    principal: Principal,
    proposal_id: str,
    decision: Decision,
    *,
    idempotency_key: str,
) -> DecisionResult | None:
    """The first answer when this is a repeat of a decision already made with this key, else
    None (nothing recorded either way). A page asks this before verifying a passkey
    assertion again: a double submit carries one already spent, and must get the first
    answer, as every repeated decision does (rule 12)."""
    validate_decision(decision, idempotency_key)
    request = _Request(
        principal,
        proposal_id,
        decision,
        idempotency_key,
        idempotency_scope(principal),
        decision_fingerprint(proposal_id, decision),
    )
    with ctx.store.peek() as tx:
        record = tx.idempotency(principal.tenant, request.scope, request.key)
        return (
            None
            if record is None
            else replay(ctx, tx, principal, record, request.print_, request.decision)
        )


@dataclasses.dataclass(frozen=True, slots=True)
class _Checked:
    """A decision that passed every check on what the read found."""

    proposal: Proposal
    step: str
    roles: dict[tuple[str, str, str], bool | None]
    """The role entries the checks read: the write's premises."""
    device: DeviceApproval | None
    """A verified device signature; its sign counter moves with the write."""
    authentication: dict[str, Any] | None = None
    """Under a step-up policy: the ``acr`` and ``auth_time`` the identity provider returned."""
    delegator: str | None = None
    """Whom the decider stands in for (a delegation of the required role), if anyone."""
    assignment: Assignment | None = None
    """Who an escalation or a reassignment added, as the read found it."""
    assigned: str | None = None
    """The escalation or reassignment target the decider answered to, if not the role."""
    idp: dict[str, Any] | None = None
    """Under ``evidence: idp``: the identity provider's verified token (issuer, token)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Expired:
    proposal: Proposal
    now: int


def _read(ctx: GateContext, request: _Request) -> DecisionResult | _Checked | _Expired:
    """Every check a decision needs, on what one read finds; a replay answers from it."""
    principal = request.principal
    with ctx.store.peek() as tx:
        tx.read_for_decision(
            principal.tenant,
            request.proposal_id,
            scope=request.scope,
            key=request.key,
            subject=principal.subject,
        )
        record = tx.idempotency(principal.tenant, request.scope, request.key)
        if record is not None:
            return replay(ctx, tx, principal, record, request.print_, request.decision)
        directory = ctx.directory_in(tx)
        # Seen with delegated roles too (out of office); decided as the person they are.
        seen_as = with_delegated_roles(principal, directory)
        proposal = load_visible(tx, seen_as, request.proposal_id, None)
        now = ctx.now_micros()
        if _check_open(proposal, request.decision, now):
            return _Expired(proposal, now)
        assignment = tx.assignment(proposal.tenant, proposal.proposal_id)
        step = _check_entitled(ctx, request, proposal, directory, assignment)
        authentication = None
        if request.decision.kind is DecisionKind.APPROVE:
            authentication = check_step_up(proposal, principal, now)
        device = check_device(tx, principal, proposal, request.decision)
        idp = check_idp(ctx, principal, proposal, request.decision, now)
        role = proposal.required_role
        delegator = None
        if step != REQUESTER_STEP and role is not None:
            delegator = acting_for(principal, role, directory)
        assigned = None
        if assignment.widened and step != REQUESTER_STEP:
            assigned = assigned_target(principal, assignment, directory)
            delegator = None if assigned is not None else delegator
        return _Checked(
            proposal,
            step,
            tx.roles_read(),
            device,
            authentication=authentication,
            delegator=delegator,
            assignment=assignment,
            assigned=assigned,
            idp=idp,
        )


def _check_entitled(
    ctx: GateContext,
    request: _Request,
    proposal: Proposal,
    directory: Any,
    assignment: Assignment | None = None,
) -> str:
    check_surface(proposal, request.principal, ctx.surfaces)
    step = decision_step(proposal, request.principal, request.decision.kind, directory, assignment)
    if request.decision.kind is DecisionKind.APPROVE:
        # Consent on both sides: the requester still holds the roles they asked with.
        check_requester(proposal, directory)
        check_retyped(proposal, request.decision)
    check_reason(ctx, proposal, request.decision)
    return step


def _check_open(proposal: Proposal, decision: Decision, now: int) -> bool:
    """Refuse a decision on a proposal that is not open to it; True when it has expired."""
    if proposal.status is not ProposalStatus.AWAITING_CONFIRMATION:
        last = proposal.approvals[-1] if proposal.approvals else None
        raise InvalidState(
            f"the proposal is {proposal.status.value}, not awaiting confirmation",
            proposal_id=proposal.proposal_id,
            status=proposal.status.value,
            decided_by=last and last.approver,
            decided_at=last and last.decided_at.isoformat(),
        )
    if decision.expected_version != proposal.version:
        raise VersionConflict(
            "the proposal changed since you saw it",
            proposal_id=proposal.proposal_id,
            current_version=proposal.version,
        )
    if now >= to_micros(proposal.expires_at):
        return True
    check_digest(proposal)
    return False


def expire(tx: SqlTransaction, proposal: Proposal, now: int) -> bool:
    won = tx.transition_proposal(
        proposal.proposal_id,
        from_statuses=(ProposalStatus.AWAITING_CONFIRMATION, ProposalStatus.CONFIRMED),
        to=ProposalStatus.EXPIRED,
        now=now,
    )
    if won:
        tx.append_audit(
            tenant=proposal.tenant,
            at=now,
            kind="proposal.expired",
            proposal_id=proposal.proposal_id,
            data={"expires_at": to_micros(proposal.expires_at)},
        )
    return won


def _expire(expired: _Expired, tx: SqlTransaction) -> bool:
    return expire(tx, expired.proposal, expired.now)


def _record(
    ctx: GateContext, request: _Request, checked: _Checked, tx: SqlTransaction
) -> DecisionResult:
    """Write the decision (and its token) on the premises the read checked."""
    principal, decision, proposal = request.principal, request.decision, checked.proposal
    device = checked.device
    if ctx.directory is not None and not ctx.directory_in_store:
        # Asked again as the write starts; a store directory's entries are premises instead.
        _check_entitled(ctx, request, proposal, ctx.directory, checked.assignment)
    now = ctx.now_micros()
    approval = Approval(
        approver=principal.subject,
        kind=decision.kind,
        step=checked.step,
        reason_code=reason_code_of(decision),
        reason=suggestion_text(decision)
        if decision.kind is DecisionKind.REQUEST_CHANGES
        else decision.reason,
        decided_at=from_micros(now),
    )
    if checked.delegator is not None and decision.kind is DecisionKind.APPROVE:
        # An approval has no reason of its own: the row keeps whom the approver stood in for.
        approval = dataclasses.replace(
            approval, reason_code=DELEGATE_CODE, reason=checked.delegator
        )
    decided = dataclasses.replace(proposal, approvals=(*proposal.approvals, approval))
    if decision.kind is DecisionKind.REJECT:
        target = ProposalStatus.DECLINED
    elif decision.kind is DecisionKind.REQUEST_CHANGES:
        target = ProposalStatus.CHANGES_REQUESTED  # frozen as it is; the agent proposes anew
    elif approvals_complete(decided):
        target = ProposalStatus.CONFIRMED
    else:
        target = ProposalStatus.AWAITING_CONFIRMATION
    decided = dataclasses.replace(decided, status=target, version=proposal.version + 1)
    token = issued_token(ctx, decided, now) if target is ProposalStatus.CONFIRMED else None
    kind = EVENT_KINDS[decision.kind]
    seq = tx.record_decision(
        DecisionWrite(
            proposal_id=proposal.proposal_id,
            expected_version=proposal.version,
            to=target,
            now=now,
            roles=checked.roles,
            idempotency=(principal.tenant, request.scope, request.key, request.print_),
            approval=approval,
            event=audit_entry(
                tenant=proposal.tenant,
                at=now,
                kind=f"decision.{kind}",
                proposal_id=proposal.proposal_id,
                actor=principal.subject,
                data=_decision_data(
                    proposal,
                    approval,
                    target,
                    principal,
                    device.assertion if device else None,
                    checked.authentication,
                    checked.delegator,
                    checked.assigned,
                    checked.idp,
                ),
            ),
            token=token,
            sign_count=device.counter if device else None,
        )
    )
    log.info("proposal %s %s by a decision", proposal.proposal_id, target.value)
    handed = None if token is None else token_for_record(ctx, token.record, proposal.tool_version)
    return DecisionResult(
        proposal=decided,
        duplicate=False,
        audit_id=audit_reference(proposal.tenant, seq),
        status=decided.status,
        version=decided.version,
        tool_status=NOT_STARTED,  # nothing runs until the requester executes
        confirmation_token=handed,
    )


def _decision_data(
    proposal: Proposal,
    approval: Approval,
    target: ProposalStatus,
    principal: Principal,
    device: dict[str, Any] | None = None,
    authentication: dict[str, Any] | None = None,
    delegator: str | None = None,
    assigned: str | None = None,
    idp: dict[str, Any] | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "step": approval.step,
        "reason_code": approval.reason_code,
        "args_digest": proposal.args_digest,
        "status": target.value,
        "surface": principal.client,
        "approvers": list(approvers(proposal))
        + ([approval.approver] if approval.kind is DecisionKind.APPROVE else []),
    }
    if principal.issuer is not None:
        data["issuer"] = principal.issuer
    if principal.signed_in_client is not None:
        data["signed_in_client"] = principal.signed_in_client
    if device is not None:
        data["device"] = device  # the assertion, re-verifiable offline (docs/PROOF.md)
    if approval.suggestion is not None:
        data["suggestion"] = approval.suggestion
    if delegator is not None:
        data["on_behalf_of"] = delegator  # the person this decider stood in for
    if assigned is not None:
        data["assigned_as"] = assigned  # an escalation or reassignment target, not the role
    if authentication is not None:
        data["authentication"] = authentication  # step-up: what the provider returned
    if idp is not None:
        data["idp"] = idp  # the provider's signed token, re-verifiable offline (docs/PROOF.md)
    return data


EVENT_KINDS = {
    DecisionKind.APPROVE: "approved",
    DecisionKind.REJECT: "rejected",
    DecisionKind.REQUEST_CHANGES: "changes_requested",
}

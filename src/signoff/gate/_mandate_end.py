"""Ending a mandate at once: revocation, or an approver found without the role (rule 11).

Its confirmed writes not yet started are revoked in the same transaction (the give-back
trigger returns their amounts); writes already started run to their outcome.
"""

from __future__ import annotations

from typing import Any

from signoff._directory import RoleDirectory
from signoff._model import Principal, ProposalStatus
from signoff.exceptions import Forbidden, InvalidRequest, InvalidState
from signoff.gate._circle import ADMIN_ROLE
from signoff.gate._context import GateContext, log
from signoff.gate._mandate_view import (
    ACTIVE,
    AWAITING,
    MAX_REASON,
    REVOKED,
    MandateState,
    load_visible_mandate,
    state_of,
)
from signoff.gate._policy import holds_role
from signoff.store._sql import MandateRecord, SqlTransaction


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

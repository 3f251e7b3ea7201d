"""revoke, cancel and expire: ending a proposal that will not run."""

from __future__ import annotations

from signoff._directory import RoleDirectory
from signoff._model import Principal, Proposal, ProposalStatus
from signoff.exceptions import Forbidden, InvalidRequest, InvalidState
from signoff.gate._circle import ADMIN_ROLE, load_visible
from signoff.gate._context import GateContext, approvers, log
from signoff.gate._decide import expire
from signoff.gate._policy import holds_role
from signoff.store._sql import SqlTransaction

MAX_REASON = 2000


def revoke(ctx: GateContext, principal: Principal, proposal_id: str, *, reason: str) -> Proposal:
    """Withdraw a confirmation before it is used (an approver, a role holder or an admin)."""
    if not reason or len(reason) > MAX_REASON:
        raise InvalidRequest(f"a reason of 1 to {MAX_REASON} characters is required")

    def step(tx: SqlTransaction) -> Proposal:
        directory = ctx.directory_in(tx)
        proposal = load_visible(tx, principal, proposal_id, directory)
        _check_may_revoke(principal, proposal, directory)
        now = ctx.now_micros()
        if not tx.transition_proposal(
            proposal_id,
            from_statuses=(ProposalStatus.CONFIRMED,),
            to=ProposalStatus.REVOKED,
            now=now,
        ):
            raise InvalidState(
                f"only a confirmed proposal can be revoked; this one is {proposal.status.value}",
                proposal_id=proposal_id,
                status=proposal.status.value,
            )
        tx.revoke_token(proposal_id)
        tx.append_audit(
            tenant=proposal.tenant,
            at=now,
            kind="proposal.revoked",
            proposal_id=proposal_id,
            actor=principal.subject,
            data={"reason": reason},
        )
        return load_visible(tx, principal, proposal_id, None)

    return ctx.write(step)


def may_withdraw(principal: Principal, proposal: Proposal, directory: RoleDirectory | None) -> bool:
    """An approver, a holder of the required role, or an admin, as a person."""
    if principal.is_agent:
        return False
    role = proposal.required_role
    if principal.subject in approvers(proposal) or holds_role(principal, ADMIN_ROLE, directory):
        return True
    return role is not None and holds_role(principal, role, directory)


def _check_may_revoke(
    principal: Principal, proposal: Proposal, directory: RoleDirectory | None
) -> None:
    if not may_withdraw(principal, proposal, directory):
        raise Forbidden("revoking needs an approver, the required role or signoff_admin")


def cancel(ctx: GateContext, principal: Principal, proposal_id: str) -> Proposal:
    """The requester withdraws a proposal that nobody has decided yet."""

    def step(tx: SqlTransaction) -> Proposal:
        proposal = load_visible(tx, principal, proposal_id, ctx.directory_in(tx))
        if principal.subject != proposal.requester_subject or principal.actor not in (
            None,
            proposal.requester_actor,
        ):
            raise Forbidden("only the requesting person, or the agent that asked, can cancel")
        now = ctx.now_micros()
        if not tx.transition_proposal(
            proposal_id,
            from_statuses=(ProposalStatus.AWAITING_CONFIRMATION,),
            to=ProposalStatus.CANCELLED,
            now=now,
        ):
            raise InvalidState(
                f"only a proposal awaiting confirmation can be cancelled; this one is "
                f"{proposal.status.value}",
                proposal_id=proposal_id,
                status=proposal.status.value,
            )
        tx.append_audit(
            tenant=proposal.tenant,
            at=now,
            kind="proposal.cancelled",
            proposal_id=proposal_id,
            actor=principal.label(),
            data={},
        )
        return load_visible(tx, principal, proposal_id, None)

    return ctx.write(step)


def expire_due(ctx: GateContext) -> int:
    """Mark every proposal past its expiry (awaiting or confirmed) as expired."""
    now = ctx.now_micros()
    statuses = (ProposalStatus.AWAITING_CONFIRMATION, ProposalStatus.CONFIRMED)
    with ctx.store.read() as tx:
        due = tx.due_proposals(now, statuses)
    expired = 0
    for proposal_id, tenant in due:

        def step(tx: SqlTransaction, pid: str = proposal_id, tenant: str = tenant) -> bool:
            proposal = tx.proposal(tenant, pid)
            return proposal is not None and expire(tx, proposal, now)

        expired += ctx.write(step)
    if expired:
        log.info("expired %d proposals", expired)
    return expired

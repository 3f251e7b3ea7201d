"""Who may see a proposal, its executions and its receipt: its circle (PROTOCOL rule 12).

The requesting person and that person's agents; the people who may decide it
(holders of its required role, and whoever already decided it); the tenant's
auditors and admins. Everyone else is told 404, exactly as for another tenant.
"""

from __future__ import annotations

from signoff._directory import RoleDirectory
from signoff._model import Execution, Principal, Proposal
from signoff.exceptions import NotFound
from signoff.gate._context import check_text
from signoff.gate._policy import assigned_target, claimed_roles, holds_role, is_requester
from signoff.store._sql import Circle, SqlTransaction

AUDITOR_ROLE = "auditor"
ADMIN_ROLE = "signoff_admin"
WHOLE_TENANT_ROLES = (AUDITOR_ROLE, ADMIN_ROLE)


def may_see(proposal: Proposal, principal: Principal, directory: RoleDirectory | None) -> bool:
    if proposal.tenant != principal.tenant:
        return False
    if is_requester(proposal, principal):
        return True
    if principal.is_agent:
        return False
    if any(a.approver == principal.subject for a in proposal.approvals):
        return True
    role = proposal.required_role
    if role is not None and holds_role(principal, role, directory):
        return True
    return any(holds_role(principal, r, directory) for r in WHOLE_TENANT_ROLES)


def circle_of(principal: Principal, directory: RoleDirectory | None) -> Circle:
    """The caller as a store filter: the roles they hold now, and whether they see all."""
    if principal.is_agent:
        return Circle(principal.subject, True, ())
    claimed = claimed_roles(principal, directory)
    roles = tuple(sorted(r for r in claimed if holds_role(principal, r, directory)))
    whole = any(r in roles for r in WHOLE_TENANT_ROLES)
    return Circle(principal.subject, False, roles, whole_tenant=whole)


def load_visible(
    tx: SqlTransaction,
    principal: Principal,
    proposal_id: str,
    directory: RoleDirectory | None,
) -> Proposal:
    """The proposal if the caller is in its circle; otherwise 404, as for another tenant.

    People an escalation or a reassignment made eligible to decide it are in its circle.
    """
    check_text(proposal_id=proposal_id)
    proposal = tx.proposal(principal.tenant, proposal_id)
    if proposal is None:
        raise NotFound("no such proposal", proposal_id=proposal_id)
    if not may_see(proposal, principal, directory) and (
        principal.is_agent
        or assigned_target(principal, tx.assignment(principal.tenant, proposal_id), directory)
        is None
    ):
        raise NotFound("no such proposal", proposal_id=proposal_id)
    return proposal


def load_visible_execution(
    tx: SqlTransaction,
    principal: Principal,
    execution_id: str,
    directory: RoleDirectory | None,
) -> tuple[Proposal, Execution]:
    check_text(execution_id=execution_id)
    execution = tx.execution(principal.tenant, execution_id)
    if execution is None:
        raise NotFound("no such execution", execution_id=execution_id)
    try:
        proposal = load_visible(tx, principal, execution.proposal_id, directory)
    except NotFound:
        raise NotFound("no such execution", execution_id=execution_id) from None
    return proposal, execution

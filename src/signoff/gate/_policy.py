"""Who may decide a proposal, and from where: the tool's policy, never the agent's choice."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any, TypeGuard

from signoff._directory import DelegatingDirectory, ExplainingDirectory, RoleDirectory
from signoff._model import API_SURFACE, CHAT_SURFACES, DecisionKind, Principal, Proposal
from signoff.catalog._types import policy_chat_max_risk, within_risk
from signoff.exceptions import (
    ApproverRevoked,
    NotEntitled,
    RequesterRevoked,
    SeparationOfDuties,
    SurfaceNotAllowed,
)
from signoff.store._q_followups import Assignment

REQUESTER_STEP = "requester"
UNNAMED_SURFACE = API_SURFACE
"""The surface of a bearer token that names no client (``azp``/``client_id``)."""


def role_step(role: str) -> str:
    return f"role:{role}"


def surface_of(principal: Principal) -> str:
    return principal.client or UNNAMED_SURFACE


def check_surface(proposal: Proposal, principal: Principal, deployment: Sequence[str]) -> None:
    """PROTOCOL rule 14: the tool's surfaces, else the deployment's; empty allows any.

    A page session opened with another client's token came through that client too:
    both must be allowed.
    """
    allowed = list(proposal.policy.get("surfaces") or ()) or list(deployment)
    surfaces = [surface_of(principal)]
    if principal.signed_in_client is not None:
        surfaces.append(principal.signed_in_client)
    for surface in surfaces:
        if allowed and surface not in allowed:
            raise SurfaceNotAllowed(
                f"decisions on this proposal must come through {', '.join(sorted(allowed))}; "
                f"this one came through {surface!r}",
                proposal_id=proposal.proposal_id,
                surface=surface,
                allowed=sorted(allowed),
            )
    surface = surface_of(principal)
    if surface in CHAT_SURFACES and not chat_may_decide(proposal):
        raise SurfaceNotAllowed(
            f"a {proposal.risk.level.value}-risk proposal cannot be decided through {surface}; "
            "open it on the confirmation page",
            proposal_id=proposal.proposal_id,
            surface=surface,
            allowed=sorted(a for a in allowed if a not in CHAT_SURFACES),
        )


def chat_may_decide(proposal: Proposal) -> bool:
    """Whether the proposal's risk is within its policy's ``chat_max_risk`` (default medium)."""
    return within_risk(proposal.risk.level, policy_chat_max_risk(proposal.policy))


def is_requester(proposal: Proposal, principal: Principal) -> bool:
    """The person who asked: same subject *and* the same identity provider vouching.

    Every verified token names its issuer; a principal built in-process (the embedding
    code, ``signoff mcp --principal``) names none and is taken as the embedder says.
    Proposals stored before the issuer was kept match on the subject alone.
    """
    if principal.subject != proposal.requester_subject:
        return False
    issuer = proposal.state.get("requester_issuer")
    return issuer is None or principal.issuer is None or issuer == principal.issuer


def decision_step(
    proposal: Proposal,
    principal: Principal,
    kind: DecisionKind,
    directory: RoleDirectory | None,
    assignment: Assignment | None = None,
) -> str:
    """The approval step ``principal`` may take now, or a typed refusal.

    ``assignment``: the people an escalation or a reassignment made eligible for this
    proposal; they take the role's step (and count towards its N approvals), under the
    same separation of duties — the requester never.
    """
    policy = proposal.policy
    if principal.is_agent or principal.subject == proposal.requester_actor:
        raise SeparationOfDuties("an agent can never decide; a person must", actor=principal.actor)
    if any(principal.subject in (a.approver, a.delegate_of) for a in proposal.approvals):
        raise SeparationOfDuties("you already decided on this proposal; N approvals need N people")
    requester_pending = policy["requester_confirms"] and not any(
        a.step == REQUESTER_STEP for a in proposal.approvals
    )
    if requester_pending and is_requester(proposal, principal):
        return REQUESTER_STEP
    role = policy["role"]
    if role is None:
        raise NotEntitled("only the person this request is for may confirm it")
    if assignment is not None and assignment.widened:
        _check_assigned_or_holder(proposal, principal, role, policy, directory, assignment)
    else:
        _check_role_holder(proposal, principal, role, policy, directory)
    if requester_pending and kind is DecisionKind.APPROVE:
        raise NotEntitled("the requester must confirm before role holders approve")
    return role_step(role)


def assigned_target(
    principal: Principal, assignment: Assignment, directory: RoleDirectory | None
) -> str | None:
    """The escalation or reassignment target ``principal`` answers to, if any.

    ``person:SUBJECT`` names the person; ``role:NAME`` needs the role in their own token
    and the directory (a delegation does not reach an escalation target).
    """
    if principal.is_agent:
        return None
    for target in assignment.targets:
        kind, _, name = target.partition(":")
        if kind == "person" and name == principal.subject:
            return target
        if kind == "role" and _holds_own(principal, name, directory):
            return target
    return None


def _holds_own(principal: Principal, role: str, directory: RoleDirectory | None) -> bool:
    """The role is in the person's own token, and the directory grants it now."""
    if role not in principal.roles:
        return False
    return directory is None or directory.holds_role(principal.tenant, principal.subject, role)


def _check_assigned_or_holder(
    proposal: Proposal,
    principal: Principal,
    role: str,
    policy: dict[str, Any],
    directory: RoleDirectory | None,
    assignment: Assignment,
) -> None:
    target = assigned_target(principal, assignment, directory)
    if target is None:
        if assignment.role_replaced:
            raise NotEntitled(
                "an admin reassigned this proposal to other people; you may no longer decide it",
                proposal_id=proposal.proposal_id,
            )
        _check_role_holder(proposal, principal, role, policy, directory)
        return
    if principal.subject == proposal.requester_subject:
        raise SeparationOfDuties("the requester cannot approve their own request, even escalated")
    if not policy["beneficiary_may_approve"] and principal.subject == proposal.state.get(
        "beneficiary"
    ):
        raise SeparationOfDuties("the beneficiary may not approve this operation")


def _check_role_holder(
    proposal: Proposal,
    principal: Principal,
    role: str,
    policy: dict[str, Any],
    directory: RoleDirectory | None,
) -> None:
    if principal.subject == proposal.requester_subject:
        raise SeparationOfDuties("the requester cannot approve their own request as a role holder")
    beneficiary = proposal.state.get("beneficiary")
    if not policy["beneficiary_may_approve"] and principal.subject == beneficiary:
        raise SeparationOfDuties("the beneficiary may not approve this operation")
    check_role(principal, role, directory, proposal_id=proposal.proposal_id)
    delegator = acting_for(principal, role, directory)
    if delegator is not None:
        # The delegate was checked as themselves above; now as the person they stand in for.
        if delegator in (proposal.requester_subject, proposal.requester_actor):
            raise SeparationOfDuties(
                f"you stand in for {delegator}, who requested this; they may not approve it"
            )
        if not policy["beneficiary_may_approve"] and delegator == beneficiary:
            raise SeparationOfDuties(f"you stand in for {delegator}, the beneficiary")
        if any(delegator in (a.approver, a.delegate_of) for a in proposal.approvals):
            raise SeparationOfDuties(
                f"{delegator}, whom you stand in for, already decided; N approvals need N people"
            )


def _delegating(directory: RoleDirectory | None) -> TypeGuard[DelegatingDirectory]:
    """``isinstance(directory, DelegatingDirectory)``, answered once per directory class: a
    runtime Protocol check walks the protocol's members (~15 µs, three times per flow)."""
    return directory is not None and _delegating_class(type(directory))


@functools.cache
def _delegating_class(kind: type) -> bool:
    return issubclass(kind, DelegatingDirectory)


def claimed_roles(principal: Principal, directory: RoleDirectory | None) -> frozenset[str]:
    """The roles the token claims, and those delegated to the person now (out of office)."""
    if principal.is_agent or not _delegating(directory):
        return principal.roles
    return principal.roles | directory.delegated_roles(principal.tenant, principal.subject)


def with_delegated_roles(principal: Principal, directory: RoleDirectory | None) -> Principal:
    """The principal as a circle sees it: token roles plus the roles delegated to them now."""
    import dataclasses

    roles = claimed_roles(principal, directory)
    return principal if roles == principal.roles else dataclasses.replace(principal, roles=roles)


def acting_for(principal: Principal, role: str, directory: RoleDirectory | None) -> str | None:
    """Whom the person stands in for with ``role`` (a delegation), when not for themselves."""
    if role in principal.roles or not _delegating(directory):
        return None
    return directory.delegator_of(principal.tenant, principal.subject, role)


def check_role(
    principal: Principal,
    role: str,
    directory: RoleDirectory | None,
    *,
    proposal_id: str | None = None,
) -> None:
    """The token claims ``role`` (or a delegation lends it) and the directory still grants it,
    or a typed refusal."""
    if role not in claimed_roles(principal, directory):
        raise NotEntitled(f"this needs the role {role!r}", required_role=role)
    if directory is None or directory.holds_role(principal.tenant, principal.subject, role):
        return
    never_granted = isinstance(directory, ExplainingDirectory) and not directory.was_revoked(
        principal.tenant, principal.subject, role
    )
    if never_granted:
        raise NotEntitled(
            f"the role directory does not grant you {role!r}; an operator grants it "
            f"(`signoff roles grant … --role {role}`)",
            proposal_id=proposal_id,
            required_role=role,
        )
    raise ApproverRevoked(
        f"the role {role!r} was withdrawn from you in the role directory",
        proposal_id=proposal_id,
        required_role=role,
    )


def confirmed(principal: Principal, directory: RoleDirectory | None) -> Principal:
    """``principal`` with only the roles its token claims *and* the directory grants now.

    What a tool's ``read_state`` (and ``normalize``) receives at every step: the
    requester's roles go through the same directory as an approver's, so a role
    withdrawn there stops a request made with it (docs/PROTOCOL.md rule 11).
    """
    if directory is None or not principal.roles:
        return principal
    roles = frozenset(r for r in principal.roles if holds_role(principal, r, directory))
    return principal if roles == principal.roles else dataclasses.replace(principal, roles=roles)


def requester_roles(proposal: Proposal) -> tuple[str, ...]:
    """The roles the requester held (token and directory) when they asked."""
    return tuple(str(role) for role in proposal.state.get("requester_roles") or ())


def requester_lost_roles(proposal: Proposal, directory: RoleDirectory | None) -> list[str]:
    """Roles the requester asked with that the directory no longer grants them (empty: none)."""
    if directory is None:
        return []
    return [
        role
        for role in requester_roles(proposal)
        if not directory.holds_role(proposal.tenant, proposal.requester_subject, role)
    ]


def check_requester(proposal: Proposal, directory: RoleDirectory | None) -> None:
    """The requester still holds every role they asked with, or ``requester_revoked``."""
    lost = requester_lost_roles(proposal, directory)
    if lost:
        raise RequesterRevoked(
            f"the requester no longer holds {', '.join(map(repr, lost))} in the role directory; "
            "nothing was done",
            proposal_id=proposal.proposal_id,
            roles=lost,
        )


def holds_role(principal: Principal, role: str, directory: RoleDirectory | None) -> bool:
    if role not in claimed_roles(principal, directory):
        return False
    return directory is None or directory.holds_role(principal.tenant, principal.subject, role)


def approvals_complete(proposal: Proposal) -> bool:
    policy = proposal.policy
    approved = [a for a in proposal.approvals if a.kind is DecisionKind.APPROVE]
    if policy["requester_confirms"] and not any(a.step == REQUESTER_STEP for a in approved):
        return False
    role = policy["role"]
    if role is None:
        return True
    holders = {a.approver for a in approved if a.step == role_step(role)}
    return len(holders) >= int(policy["approvals"])


def approvers_who_lost_role(proposal: Proposal, directory: RoleDirectory | None) -> list[str]:
    """Role approvers who have lost their role since approving (empty when all hold it)."""
    role = proposal.policy["role"]
    if directory is None or role is None:
        return []
    return [
        a.approver
        for a in proposal.approvals
        if a.kind is DecisionKind.APPROVE
        and a.step == role_step(role)
        and not directory.holds_role(proposal.tenant, a.approver, role)
    ]

"""/v1/delegations: a person lends a role to another of their tenant for a window.

The delegator is the caller (a person who holds the role themselves), or, for a
``signoff_admin``, the person named in ``delegator``. Every delegation and its end is
an audit event; the role directory honours it at every step (propose's circle, the
inbox, decide, every execution attempt) and the decision records whom the delegate
stood in for.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Path, Response
from pydantic import AwareDatetime, Field

from signoff._clock import from_micros
from signoff._model import Principal
from signoff.exceptions import Forbidden, InvalidState
from signoff.gate._circle import ADMIN_ROLE
from signoff.http._deps import Caller, State
from signoff.http._openapi import problems
from signoff.http._requests import Body
from signoff.http._state import AppState
from signoff.http._views import View
from signoff.identity import StoreRoleDirectory
from signoff.store._sql import Delegation

router = APIRouter(prefix="/v1/delegations", tags=["roles"])
Name = Annotated[str, Field(min_length=1, max_length=255, pattern=r"^[\x21-\x7e]+$")]


class DelegationRequest(Body):
    delegate: Name = Field(description="Who stands in (a person of the caller's tenant)")
    role: Name
    starts_at: AwareDatetime = Field(strict=False, description="RFC 3339 with an offset")
    ends_at: AwareDatetime = Field(strict=False, description="At most 90 days after starts_at")
    delegator: Name | None = Field(
        default=None, description="Only a signoff_admin names someone else as the delegator"
    )


class DelegationView(View):
    delegation_id: str
    delegator: str
    delegate: str
    role: str
    starts_at: datetime
    ends_at: datetime
    created_by: str
    ended_at: datetime | None

    @classmethod
    def of(cls, d: Delegation) -> DelegationView:
        return cls(
            delegation_id=d.delegation_id,
            delegator=d.delegator,
            delegate=d.delegate,
            role=d.role,
            starts_at=from_micros(d.starts_at),
            ends_at=from_micros(d.ends_at),
            created_by=d.created_by,
            ended_at=None if d.ended_at is None else from_micros(d.ended_at),
        )


class DelegationList(View):
    delegations: list[DelegationView]


@router.post(
    "",
    status_code=201,
    operation_id="createDelegation",
    response_model=DelegationView,
    responses=problems(400, 401, 403, 409),
    summary="Lend a role to another person of the tenant for a window (out of office)",
)
def delegate(body: DelegationRequest, caller: Caller, state: State) -> DelegationView:
    directory = _directory(state, caller)
    delegator = body.delegator or caller.subject
    if delegator != caller.subject and not _is_admin(directory, caller):
        raise Forbidden(f"only a {ADMIN_ROLE!r} delegates someone else's role")
    if delegator == caller.subject and body.role not in caller.roles:
        raise Forbidden(f"you can only delegate a role you hold; your token lacks {body.role!r}")
    record = directory.delegate(
        caller.tenant,
        delegator,
        body.delegate,
        body.role,
        starts_at=body.starts_at,
        ends_at=body.ends_at,
        by=caller.subject,
    )
    return DelegationView.of(record)


@router.get(
    "",
    operation_id="listDelegations",
    response_model=DelegationList,
    responses=problems(400, 401, 403, 409),
    summary="Your delegations, given and held (an admin: the whole tenant's)",
)
def list_delegations(caller: Caller, state: State) -> DelegationList:
    directory = _directory(state, caller)
    subject = None if _is_admin(directory, caller) else caller.subject
    found = directory.delegations(caller.tenant, subject=subject)
    return DelegationList(delegations=[DelegationView.of(d) for d in found])


@router.delete(
    "/{delegation_id}",
    status_code=204,
    operation_id="endDelegation",
    responses=problems(400, 401, 403, 404, 409),
    summary="End a delegation now (the delegator, the delegate or an admin)",
)
def end(
    delegation_id: Annotated[str, Path(min_length=1, max_length=64)], caller: Caller, state: State
) -> Response:
    directory = _directory(state, caller)
    mine = {d.delegation_id for d in directory.delegations(caller.tenant, subject=caller.subject)}
    if delegation_id not in mine and not _is_admin(directory, caller):
        from signoff.exceptions import NotFound

        raise NotFound("no such delegation", delegation_id=delegation_id)
    directory.end_delegation(caller.tenant, delegation_id, by=caller.subject)
    return Response(status_code=204)


def _directory(state: AppState, caller: Principal) -> StoreRoleDirectory:
    directory = state.gate.directory
    if not isinstance(directory, StoreRoleDirectory):
        raise InvalidState("delegations need the role directory (role_directory = off)")
    if caller.is_agent:
        raise Forbidden("an agent never delegates; a person does")
    return directory


def _is_admin(directory: StoreRoleDirectory, caller: Principal) -> bool:
    return ADMIN_ROLE in caller.roles and directory.holds_role(
        caller.tenant, caller.subject, ADMIN_ROLE
    )

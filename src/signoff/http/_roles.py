"""/v1/roles: the role directory, for the tenant's admins (``signoff_admin``, as a person)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from signoff._clock import from_micros
from signoff._directory import ExplainingDirectory
from signoff._model import Principal
from signoff.exceptions import Forbidden, InvalidState
from signoff.gate._circle import ADMIN_ROLE
from signoff.http._deps import Caller, State
from signoff.http._openapi import problems
from signoff.http._state import AppState
from signoff.http._views import RoleGrantsView, RoleGrantView
from signoff.identity import StoreRoleDirectory

router = APIRouter(prefix="/v1/roles", tags=["roles"])
Name = Annotated[str, Path(min_length=1, max_length=255, pattern=r"^[\x21-\x7e]+$")]


@router.get(
    "",
    operation_id="listRoles",
    response_model=RoleGrantsView,
    responses=problems(401, 403, 409),
    summary="Every role entry of the caller's tenant (granted and revoked)",
)
def list_roles(caller: Caller, state: State) -> RoleGrantsView:
    directory = _directory(state, caller)
    return RoleGrantsView(
        grants=[
            RoleGrantView(
                tenant=g.tenant,
                subject=g.subject,
                role=g.role,
                status="revoked" if g.revoked else "granted",
                changed_by=g.changed_by,
                changed_at=from_micros(g.changed_at),
            )
            for g in directory.grants(caller.tenant)
        ],
        mode=directory.mode,
    )


@router.put(
    "/{subject}/{role}",
    operation_id="grantRole",
    status_code=204,
    responses=problems(400, 401, 403, 409),
    summary="Grant a role to a person of the caller's tenant (audited)",
)
def grant_role(subject: Name, role: Name, caller: Caller, state: State) -> Response:
    _directory(state, caller).grant(caller.tenant, subject, role, by=caller.subject)
    return Response(status_code=204)


@router.delete(
    "/{subject}/{role}",
    operation_id="revokeRole",
    status_code=204,
    responses=problems(400, 401, 403, 409),
    summary="Revoke a role: decisions and executions that need it stop at once (audited)",
)
def revoke_role(subject: Name, role: Name, caller: Caller, state: State) -> Response:
    _directory(state, caller).revoke(caller.tenant, subject, role, by=caller.subject)
    return Response(status_code=204)


def _directory(state: AppState, caller: Principal) -> StoreRoleDirectory:
    directory = state.gate.directory
    if not isinstance(directory, StoreRoleDirectory):
        raise InvalidState("this server has no role directory (role_directory = off)")
    require_admin(state, caller, "managing roles")
    return directory


def require_admin(state: AppState, caller: Principal, purpose: str) -> None:
    """A person whose token claims ``signoff_admin`` *and* whom the directory grants it now.

    The same check for every admin route (roles, deliveries): a role withdrawn in the
    directory stops its holder at once. One never granted is told so, not "revoked".
    """
    if caller.is_agent or ADMIN_ROLE not in caller.roles:
        raise Forbidden(f"{purpose} needs a person with {ADMIN_ROLE!r}")
    directory = state.gate.directory
    if directory is None or directory.holds_role(caller.tenant, caller.subject, ADMIN_ROLE):
        return
    if isinstance(directory, ExplainingDirectory) and directory.was_revoked(
        caller.tenant, caller.subject, ADMIN_ROLE
    ):
        raise Forbidden(f"your {ADMIN_ROLE!r} role was revoked in the directory")
    raise Forbidden(
        f"the role directory does not grant you {ADMIN_ROLE!r}; an operator grants it "
        f"(`signoff roles grant … --role {ADMIN_ROLE}`)"
    )

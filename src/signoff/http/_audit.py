"""/v1/audit: the tenant's hash-chained audit events, for holders of the auditor role."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from signoff.exceptions import NotEntitled
from signoff.http._deps import Caller, State
from signoff.http._openapi import problems
from signoff.http._views import AuditEventView, AuditLog

router = APIRouter(prefix="/v1/audit", tags=["audit"])
AUDITOR_ROLE = "auditor"
MAX_PAGE = 200


@router.get(
    "",
    operation_id="listAuditEvents",
    response_model=AuditLog,
    responses=problems(400, 401, 403, 404),
    summary="Audit events of the caller's tenant, optionally of one proposal",
)
async def audit(
    caller: Caller,
    state: State,
    proposal_id: Annotated[str | None, Query(min_length=1, max_length=128)] = None,
    after: Annotated[
        int, Query(ge=0, le=2**62, description="next_after of the previous page (a seq)")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = MAX_PAGE,
) -> AuditLog:
    """In chain order, a page at a time: ``next_after`` is the cursor of the next page."""
    if AUDITOR_ROLE not in caller.roles:
        raise NotEntitled(f"reading the audit log needs the role {AUDITOR_ROLE!r}")
    if proposal_id is not None:
        await state.agate.proposal(caller, proposal_id)  # 404 outside the caller's tenant
    events = await state.agate.audit_events(
        caller, proposal_id=proposal_id, after=after, limit=limit + 1
    )
    page = events[:limit]
    more = len(events) > limit
    return AuditLog(
        events=[AuditEventView.of(e) for e in page],
        next_after=page[-1].seq if more else None,
    )

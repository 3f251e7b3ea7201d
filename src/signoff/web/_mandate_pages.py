"""The mandate page: a standing approval, what is left of it, and every write under it.

Read-only; mandates are decided through ``POST /v1/mandates/{id}/decision``.
The same circle as the API sees it (rule 12); everyone else reads the same
"no such" page as for another tenant.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from signoff._clock import from_micros
from signoff.exceptions import NotFound, SignoffError
from signoff.gate._mandate import mandate_preview
from signoff.web._refusals import refusal_page
from signoff.web._ui import PREFIX, signed_in

router = APIRouter(prefix=PREFIX, include_in_schema=False)
MAX_ID = 128


@router.get("/mandates/{mandate_id}")
def mandate(request: Request, mandate_id: str) -> Response:
    who = signed_in(request)
    if isinstance(who, Response):
        return who
    ui, session, principal = who
    try:
        if not 0 < len(mandate_id) <= MAX_ID:
            raise NotFound("no such mandate", mandate_id=mandate_id[:MAX_ID])
        state = ui.app_state.gate.mandate(principal, mandate_id)
    except SignoffError as exc:
        return refusal_page(ui, session, exc)
    m = state.record
    context = {
        "m": m,
        "state": state,
        "preview": mandate_preview(m),
        "expires_at": from_micros(m.expires_at),
        "writes": [(w, from_micros(w.debited_at)) for w in state.writes],
    }
    return ui.render("mandate.html", session, context)

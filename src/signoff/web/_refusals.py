"""Refusals from the gate as pages: the same codes and statuses as the API, in words.

A stale tab that posts after someone else decided gets the "already decided
by … at …" page (409); nothing is decided a second time.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.responses import Response

from signoff.exceptions import (
    Expired,
    Forbidden,
    IdempotencyKeyInFlight,
    IdempotencyKeyReused,
    InvalidState,
    NotAuthenticated,
    NotFound,
    SignoffError,
    VersionConflict,
)
from signoff.web._session import WebSession
from signoff.web._ui import PREFIX, Ui

_TITLES: dict[type[SignoffError], str] = {
    NotFound: "Not found",
    Forbidden: "You may not decide this",
    NotAuthenticated: "Sign-in refused",
    VersionConflict: "This proposal changed since you opened it",
    Expired: "This proposal has expired",
    IdempotencyKeyInFlight: "Your first click is still being processed",
    IdempotencyKeyReused: "This form was already used for another decision",
}


def refusal_page(
    ui: Ui, session: WebSession, exc: SignoffError, *, proposal_id: str | None = None
) -> Response:
    if isinstance(exc, InvalidState):
        return already_decided(ui, session, exc, proposal_id)
    if isinstance(exc, NotFound):
        # Same words for "not in your tenant" and "never existed": no existence leak.
        message = "There is no such proposal for your organisation."
    else:
        message = exc.message
    status = exc.status if 400 <= exc.status < 500 else 503
    context: dict[str, Any] = {
        "title": _title(exc),
        "message": message,
        "code": exc.code,
        "proposal_id": None if isinstance(exc, NotFound) else proposal_id,
    }
    if status == 503:
        context["message"] = (
            "The server could not complete this and does not know the outcome. "
            "Open the proposal again to see its status before retrying."
        )
    return ui.render("error.html", session, context, status=status)


def already_decided(
    ui: Ui, session: WebSession, exc: InvalidState, proposal_id: str | None
) -> Response:
    details = exc.details
    return ui.render(
        "conflict.html",
        session,
        {
            "proposal_id": proposal_id,
            "status": details.get("status"),
            "decided_by": details.get("decided_by"),
            "decided_at": _moment(details.get("decided_at")),
            "result_url": f"{PREFIX}/proposals/{proposal_id}/result" if proposal_id else None,
        },
        status=409,
    )


def _moment(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _title(exc: SignoffError) -> str:
    for kind, title in _TITLES.items():
        if isinstance(exc, kind):
            return title
    return "Refused" if exc.status < 500 else "Outcome unknown"

"""Linking a chat user (Slack, Teams) to the person signed in here: a one-time code, confirmed.

The chat app sends an unlinked user a link with a one-time code. Opening it
needs the page's sign-in (OIDC or a token); the person then confirms with a
CSRF-protected POST, and the link records who they are and the roles their
sign-in carried. A code is used once and within ten minutes; the chat user's
display name is never consulted.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from signoff._clock import from_micros
from signoff.channels import IdentityLinks
from signoff.exceptions import LinkCodeInvalid, SignoffError
from signoff.web._forms import posted_form
from signoff.web._render import when
from signoff.web._session import WebSession
from signoff.web._ui import PREFIX, Ui, signed_in

router = APIRouter(prefix=PREFIX, include_in_schema=False)
NAMES = {"slack": "Slack", "teams": "Microsoft Teams"}


def links_of(request: Request, ui: Ui) -> IdentityLinks:
    """The links the channels extension keeps (its link lifetime), else a default one."""
    found = getattr(request.app.state, "signoff_links", None)
    if isinstance(found, IdentityLinks):
        return found
    return IdentityLinks(ui.app_state.gate.store, ui.app_state.gate.clock)


@router.get("/links/{code}")
def show(request: Request, code: str) -> Response:
    who = signed_in(request)
    if isinstance(who, Response):
        return who
    ui, session, principal = who
    try:
        record = links_of(request, ui).pending(code)
        if record.tenant != principal.tenant:
            raise LinkCodeInvalid("this link code is unknown, used or expired")
    except SignoffError as exc:
        return _refused(ui, session, exc)
    return ui.render("link.html", session, _context(record, code, linked=False))


@router.post("/links/{code}")
async def complete(request: Request, code: str) -> Response:
    form = await posted_form(request)
    if isinstance(form, Response):
        return form
    ui, session, _ = form
    principal = session.principal
    if principal is None:
        return _refused(ui, session, LinkCodeInvalid("sign in first"))
    links = links_of(request, ui)
    try:
        record = links.pending(code)
        link = await run_in_threadpool(links.complete, code, principal)
    except SignoffError as exc:
        return _refused(ui, session, exc)
    context = _context(record, code, linked=True)
    context["expires"] = (
        "you unlink it" if link.expires_at is None else when(from_micros(link.expires_at))
    )
    return ui.render("link.html", session, context)


def _context(record: object, code: str, *, linked: bool) -> dict[str, object]:
    channel = str(getattr(record, "channel", ""))
    return {
        "code": record,
        "code_value": code,
        "channel": channel,
        "channel_name": NAMES.get(channel, channel),
        "linked": linked,
        "expires": "",
    }


def _refused(ui: Ui, session: WebSession, exc: SignoffError) -> Response:
    status = exc.status if 400 <= exc.status < 500 else 503
    return ui.render(
        "error.html",
        session,
        {"title": "Link refused", "message": exc.message, "code": exc.code},
        status=status,
    )

"""A POST of the pages: parsed with limits, then checked for its CSRF token before anything."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import Response

from signoff.web._csrf import FIELD as CSRF_FIELD
from signoff.web._session import WebSession
from signoff.web._ui import Ui, ui_of

MAX_FIELDS = 32
Form = dict[str, str]


async def posted_form(request: Request) -> tuple[Ui, WebSession, Form] | Response:
    """The session and the form fields, or the refusal page (400 malformed, 403 CSRF)."""
    ui = ui_of(request)
    session = await run_in_threadpool(ui.session, request)
    anonymous = session or ui_anonymous(ui)
    try:
        raw = await request.form(max_files=0, max_fields=MAX_FIELDS)
    except (MultiPartException, HTTPException) as exc:
        return ui.render("error.html", anonymous, _bad_form(str(exc)), status=400)
    fields: Form = {}
    for name, value in raw.multi_items():
        if isinstance(value, UploadFile) or name in fields:
            return ui.render("error.html", anonymous, _bad_form(f"field {name!r}"), status=400)
        fields[name] = value
    if not ui.csrf.matches(session, fields.get(CSRF_FIELD)):
        return ui.render(
            "error.html",
            anonymous,
            {
                "title": "Form refused",
                "message": "This form did not come from this page or your session has "
                "ended (missing or wrong CSRF token). Nothing was changed. "
                "Reload the page and try again.",
            },
            status=403,
        )
    assert session is not None
    return ui, session, fields


def ui_anonymous(ui: Ui) -> WebSession:
    return WebSession.anonymous(ui.now())


def _bad_form(what: str) -> dict[str, str]:
    return {"title": "Malformed form", "message": f"The form could not be read ({what})."}

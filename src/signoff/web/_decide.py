"""The one state-changing page action: approve or reject, exactly as the gate decides.

The form carries only the decision, ``expected_version``, the idempotency key
generated when the page was rendered, the CSRF token, re-typed values and a
reason. Arguments are never read from the form: the gate decides on the
stored snapshot. A double submit repeats the key and gets the first answer.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, urlencode

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from signoff._model import Decision, DecisionKind, DecisionResult, Principal
from signoff.exceptions import InvalidRequest, RetypeMismatch, SignoffError, StepUpRequired
from signoff.web._forms import Form, posted_form
from signoff.web._passkeys import signed_decision
from signoff.web._proposal_pages import detail_context, load
from signoff.web._refusals import refusal_page
from signoff.web._session import WebSession
from signoff.web._ui import PREFIX, Ui
from signoff.web._webauthn import device_of

router = APIRouter(prefix=PREFIX, include_in_schema=False)
RETYPE_PREFIX = "retype."
SUGGEST_PREFIX = "suggest."
MAX_REASON = 2000
MAX_RETYPED = 200
_KEY = re.compile(r"^ui_[0-9a-f]{32}$")
_VERSION = re.compile(r"^[1-9][0-9]{0,9}$")
_REASON = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


@router.post("/proposals/{proposal_id}/decision")
async def decide(request: Request, proposal_id: str) -> Response:
    form = await posted_form(request)
    if isinstance(form, Response):
        return form
    ui, session, fields = form
    principal = session.principal
    if principal is None:
        return RedirectResponse(f"{PREFIX}/sign-in", status_code=303)
    try:
        decision, key = parse_decision(fields)
        posted = device_of(fields)
        if posted is not None:  # the passkey signed this approval (static/passkey.js)
            # A double submit carries an assertion already spent: answer the first decision.
            first = await run_in_threadpool(
                ui.app_state.gate.repeated_decision,
                principal,
                proposal_id,
                decision,
                idempotency_key=key,
            )
            if first is not None:
                return _decided(first)
            decision = await run_in_threadpool(
                signed_decision, ui, request, session, proposal_id, decision, posted
            )
        result = await run_in_threadpool(
            ui.app_state.gate.decide, principal, proposal_id, decision, idempotency_key=key
        )
    except RetypeMismatch as exc:
        return await run_in_threadpool(_retype_refused, ui, session, principal, proposal_id, exc)
    except StepUpRequired as exc:
        return _step_up(ui, session, proposal_id, exc)
    except SignoffError as exc:
        return refusal_page(ui, session, exc, proposal_id=proposal_id)
    return _decided(result)


def _step_up(ui: Ui, session: WebSession, proposal_id: str, exc: StepUpRequired) -> Response:
    """Back to the identity provider with the policy's ``max_age``/``acr_values``: the person
    authenticates again, returns to the proposal and decides (nothing was decided yet)."""
    via = (session.signed_in_via or "").removeprefix("oidc:")
    names = list(ui.login_providers)
    name = via if via in ui.login_providers else (names[0] if names else None)
    if name is None:
        return refusal_page(ui, session, exc, proposal_id=proposal_id)
    query: dict[str, str] = {"next": f"{PREFIX}/proposals/{proposal_id}"}
    if exc.details.get("max_age") is not None:
        query["max_age"] = str(exc.details["max_age"])
    if exc.details.get("acr_values"):
        query["acr_values"] = " ".join(exc.details["acr_values"])
    url = f"{PREFIX}/sign-in/oidc/{quote(name, safe='')}?{urlencode(query)}"
    return RedirectResponse(url, status_code=303)


def parse_decision(fields: Form) -> tuple[Decision, str]:
    """The decision as the gate takes it; a malformed form is an InvalidRequest (400)."""
    key = fields.get("idempotency_key", "")
    version = fields.get("expected_version", "")
    if not _KEY.match(key) or not _VERSION.match(version):
        raise InvalidRequest("the form is incomplete; reload the proposal and decide again")
    kind = fields.get("decision")
    if kind == DecisionKind.APPROVE.value:
        retyped = {
            name.removeprefix(RETYPE_PREFIX): value.strip()[:MAX_RETYPED]
            for name, value in fields.items()
            if name.startswith(RETYPE_PREFIX)
        }
        return Decision(DecisionKind.APPROVE, int(version), retyped=retyped or None), key
    if kind == DecisionKind.REJECT.value:
        code = fields.get("reason_code", "")
        if not _REASON.match(code):  # the gate checks it is one the tool offers
            raise InvalidRequest("choose a reason to reject")
        reason = fields.get("reason", "").strip()
        if len(reason) > MAX_REASON:
            raise InvalidRequest(f"the reason is longer than {MAX_REASON} characters")
        return Decision(DecisionKind.REJECT, int(version), code, reason or None), key
    if kind == DecisionKind.REQUEST_CHANGES.value:
        note = fields.get("changes_note", "").strip()
        if len(note) > MAX_REASON:
            raise InvalidRequest(f"the note is longer than {MAX_REASON} characters")
        suggestion = {
            name.removeprefix(SUGGEST_PREFIX): _suggested(value)
            for name, value in fields.items()
            if name.startswith(SUGGEST_PREFIX) and value.strip()
        }
        return (
            Decision(
                DecisionKind.REQUEST_CHANGES,
                int(version),
                reason=note or None,
                suggestion=suggestion,
            ),
            key,
        )
    raise InvalidRequest("the decision must be approve, reject or request changes")


def _suggested(text: str) -> object:
    """A suggested value as typed: JSON when it reads as JSON (19900, null, "x"), else text."""
    value = text.strip()[:MAX_RETYPED]
    try:
        return json.loads(value)
    except ValueError:
        return value


def _decided(result: DecisionResult) -> Response:
    # The confirmation token is never shown: it is bound to the requesting agent,
    # which fetches it itself. The page only says what was decided.
    url = f"{PREFIX}/proposals/{result.proposal.proposal_id}/result"
    return RedirectResponse(url + ("?repeat=1" if result.duplicate else ""), status_code=303)


def _retype_refused(
    ui: Ui, session: WebSession, principal: Principal, proposal_id: str, exc: RetypeMismatch
) -> Response:
    """The detail page again with the mismatch said next to the field; nothing decided."""
    try:
        proposal = load(ui, principal, proposal_id)
    except SignoffError as error:
        return refusal_page(ui, session, error, proposal_id=proposal_id)
    context = detail_context(
        ui,
        principal,
        proposal,
        retype_error="The value you typed does not match the proposal. Nothing was decided; "
        "read the value again and re-type it exactly.",
        retype_field=str(exc.details.get("field") or ""),
    )
    return ui.render("detail.html", session, context, status=422)

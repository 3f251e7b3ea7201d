"""Passkey enrolment on the page: ``GET /ui/passkeys`` shows them, ``POST`` adds one.

The ceremony runs in ``static/passkey.js`` (CSP: same-origin scripts only, no
inline code, no fetch): the page carries the options in a data attribute, the
script calls ``navigator.credentials.create`` and posts the result with the
form. py_webauthn verifies it; when the person signed in through an OpenID
provider, that provider vouches for it first (a fresh sign-in bound to the
credential, ``_enrolment.py``); the gate keeps it and records
``passkey.registered`` in the person's tenant chain, with that evidence.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from signoff._model import Decision, Principal, Proposal, ProposalStatus
from signoff.exceptions import DeviceSignatureInvalid, InvalidRequest, SignoffError
from signoff.web import _enrolment
from signoff.web._forms import posted_form
from signoff.web._refusals import refusal_page
from signoff.web._session import WebSession
from signoff.web._ui import PREFIX, Ui, signed_in
from signoff.web._webauthn import RelyingParty, payment_request

router = APIRouter(prefix=PREFIX, include_in_schema=False)
MAX_CREDENTIAL = 16_384


def relying_party(ui: Ui, request: Request) -> RelyingParty:
    return RelyingParty.of(request, ui.app_state.settings.public_url)


@router.get("/passkeys")
def passkeys(request: Request) -> Response:
    """This person's passkeys and the button that enrols another."""
    who = signed_in(request)
    if isinstance(who, Response):
        return who
    ui, session, _ = who
    return _page(ui, request, session)


def _page(ui: Ui, request: Request, session: WebSession, *, added: bool = False) -> Response:
    assert ui.ceremonies is not None and session.principal is not None
    enrolled = ui.app_state.gate.passkeys(session.principal)
    options, salt = ui.ceremonies.registration_options(
        relying_party(ui, request), session, session.principal, [p.credential_id for p in enrolled]
    )
    context = {"passkeys": enrolled, "options": options, "salt": salt, "added": added}
    return ui.render("passkeys.html", session, context)


@router.post("/passkeys")
async def enrol(request: Request) -> Response:
    form = await posted_form(request)
    if isinstance(form, Response):
        return form
    ui, session, fields = form
    principal = session.principal
    if principal is None:
        return RedirectResponse(f"{PREFIX}/sign-in", status_code=303)
    assert ui.ceremonies is not None
    try:
        credential, salt = fields.get("credential", ""), fields.get("salt", "")
        if not credential or len(credential) > MAX_CREDENTIAL or not salt:
            raise InvalidRequest("no passkey came back from the browser; try again")
        passkey = ui.ceremonies.verify_registration(
            relying_party(ui, request), session, salt, credential
        )
        provider = _enrolment.vouching_provider(ui, session)
        if provider is not None:
            return _enrolment.start(ui, request, session, provider, passkey)
        await run_in_threadpool(ui.app_state.gate.register_passkey, principal, **passkey)
    except SignoffError as exc:
        return refusal_page(ui, session, exc)
    return RedirectResponse(f"{PREFIX}/passkeys?added=1", status_code=303)


def device_context(
    ui: Ui, request: Request, session: WebSession, principal: Principal, proposal: Proposal
) -> dict[str, Any]:
    """What the approve form needs for a device-signed approval (``device`` in the template)."""
    rule = str(proposal.policy.get("device", "none"))
    if rule == "none" or proposal.status is not ProposalStatus.AWAITING_CONFIRMATION:
        return {"device": None}
    enrolled = ui.app_state.gate.passkeys(principal)
    if not enrolled or ui.ceremonies is None:
        return {"device": {"rule": rule, "options": None}}
    nonce = ui.ceremonies.nonce(session, proposal)
    rp = relying_party(ui, request)
    options = ui.ceremonies.approval_options(rp, principal, proposal, nonce, enrolled)
    payment = payment_request(rp, proposal)
    return {"device": {"rule": rule, "options": options, "nonce": nonce, "payment": payment}}


def signed_decision(
    ui: Ui,
    request: Request,
    session: WebSession,
    proposal_id: str,
    decision: Decision,
    posted: tuple[str, str, str],
) -> Decision:
    """The decision with the passkey's assertion, checked by py_webauthn (origin, RP ID, UV)."""
    credential, credential_id, nonce = posted
    principal = session.principal
    assert principal is not None and ui.ceremonies is not None
    gate = ui.app_state.gate
    proposal = gate.proposal(principal, proposal_id)
    passkey = next((p for p in gate.passkeys(principal) if p.credential_id == credential_id), None)
    if passkey is None:
        raise DeviceSignatureInvalid("this passkey is not one of yours", proposal_id=proposal_id)
    device = ui.ceremonies.verify_approval(
        relying_party(ui, request),
        session,
        principal,
        proposal,
        decision.expected_version,
        nonce,
        credential,
        passkey,
    )
    return dataclasses.replace(decision, device=device)

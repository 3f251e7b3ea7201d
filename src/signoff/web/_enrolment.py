"""Vouched passkey enrolment: a new passkey waits for a fresh sign-in at the person's provider.

When the person signed in to the page through an OpenID provider, the passkey
py_webauthn just verified is not kept yet: the browser goes back to that
provider with ``max_age=0`` and ``prompt=login`` and a ``nonce`` that is
``signoff.proof.enrolment_nonce`` of the tenant, the person and the new
credential's id and key. The pending passkey rides in the signed login
cookie; when the provider's ID token comes back for the same person with that
nonce and a fresh ``auth_time``, the gate keeps the passkey with the token as
the ``passkey.registered`` event's ``evidence``, so an offline verifier
believes the enrolment on the provider's word, not signoff's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from signoff.exceptions import NotAuthenticated, SignoffError
from signoff.proof import enrolment_nonce
from signoff.proof._enrolment import FRESH_SIGN_IN_SECONDS
from signoff.web._identity import SignIn
from signoff.web._refusals import refusal_page
from signoff.web._session import MAX_COOKIE_BYTES, PendingLogin, WebSession
from signoff.web._ui import PREFIX, Ui

PASSKEYS = f"{PREFIX}/passkeys"


def vouching_provider(ui: Ui, session: WebSession) -> str | None:
    """The OIDC sign-in this session came through, which must vouch for its passkeys."""
    via = session.signed_in_via or ""
    name = via.removeprefix("oidc:")
    return name if via.startswith("oidc:") and name in ui.login_providers else None


def start(
    ui: Ui, request: Request, session: WebSession, provider: str, passkey: dict[str, Any]
) -> Response:
    """Send the browser to ``provider`` for a fresh sign-in bound to this new passkey."""
    principal = session.principal
    assert principal is not None
    nonce = enrolment_nonce(
        tenant=principal.tenant,
        subject=principal.subject,
        credential_id=passkey["credential_id"],
        public_key=passkey["public_jwk"],
    )
    verifier = secrets.token_urlsafe(48)
    login = PendingLogin(
        provider=provider,
        state=secrets.token_urlsafe(24),
        nonce=nonce,
        code_verifier=verifier,
        next_path=PASSKEYS,
        max_age="0",
        enrolment=_pending(ui, passkey),
    )
    try:
        url = ui.login_providers[provider].authorization_url(
            state=login.state,
            nonce=nonce,
            code_challenge=_s256(verifier),
            redirect_uri=str(request.url_for("oidc_callback", name=provider)),
            max_age=0,
            prompt="login",
        )
    except NotAuthenticated as exc:
        return refusal_page(ui, session, exc)
    response = RedirectResponse(url, status_code=303)
    ui.set_login_cookie(response, login)
    return response


def _pending(ui: Ui, passkey: dict[str, Any]) -> str:
    """The passkey as the login cookie carries it; without the attestation when too big."""
    kept = {k: passkey[k] for k in ("credential_id", "public_key", "public_jwk", "sign_count")}
    with_attestation = json.dumps({**kept, "attestation": passkey.get("attestation")})
    # The cookie holds the rest of the login too, signed and base64url-encoded (4/3).
    if len(with_attestation) * 4 // 3 + 600 <= MAX_COOKIE_BYTES:
        return with_attestation
    fmt = (passkey.get("attestation") or {}).get("fmt")
    return json.dumps({**kept, "attestation": None if fmt is None else {"fmt": fmt}})


def finish(ui: Ui, session: WebSession, login: PendingLogin, signed: SignIn) -> Response:
    """Keep the pending passkey with the provider's ID token as its evidence."""
    principal = session.principal
    try:
        if principal is None or (signed.principal.tenant, signed.principal.subject) != (
            principal.tenant,
            principal.subject,
        ):
            raise NotAuthenticated(
                "the identity provider signed in someone else than the person enrolling",
                reason="login",
            )
        auth_time = signed.principal.auth_time
        if auth_time is None or abs((ui.now() - auth_time).total_seconds()) > FRESH_SIGN_IN_SECONDS:
            raise NotAuthenticated(
                "the identity provider did not authenticate you again just now (auth_time)",
                reason="login",
            )
        pending = json.loads(login.enrolment)
        ui.app_state.gate.register_passkey(
            principal,
            credential_id=str(pending["credential_id"]),
            public_key=str(pending["public_key"]),
            public_jwk=dict(pending["public_jwk"]),
            sign_count=int(pending["sign_count"]),
            evidence={"kind": "idp", "id_token": signed.id_token},
            attestation=pending.get("attestation"),
        )
    except SignoffError as exc:
        response = refusal_page(ui, session, exc)
    else:
        response = RedirectResponse(f"{PASSKEYS}?added=1&vouched=1", status_code=303)
    ui.set_login_cookie(response, None)
    return response


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

"""Vouched passkey enrolment: the identity provider, not signoff, says whose passkey it is.

Enrolling a passkey ends with a fresh sign-in at the person's identity provider
(``max_age=0``, ``prompt=login``) whose ``nonce`` is :func:`enrolment_nonce`:
a digest of the tenant, the person and the credential's id and public key. The
provider-signed ID token is kept in the ``passkey.registered`` event as
``evidence`` = ``{"kind": "idp", "id_token": …}``; offline, it must verify with
the provider's keys in the trust file, name this person, carry this nonce and
say the person authenticated just before the enrolment was recorded. An
operator holding signoff's keys cannot enrol a key for someone without them.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from signoff._canonical import canonical_json
from signoff.audit._chain import AuditEvent
from signoff.proof._events import payload_of
from signoff.proof._idp import SKEW_SECONDS, IdpTokenRejected, verify_idp_token
from signoff.proof._keys import b64url
from signoff.proof._trust import TrustRoot

ENROLMENT_PURPOSE = "signoff-passkey-enrolment"
FRESH_SIGN_IN_SECONDS = 600
"""How long before the recorded enrolment the provider may have authenticated the person."""


def enrolment_nonce(
    *, tenant: str, subject: str, credential_id: str, public_key: Mapping[str, Any]
) -> str:
    """The OIDC ``nonce`` that binds a fresh sign-in to this one credential of this person."""
    document = {
        "purpose": ENROLMENT_PURPOSE,
        "tenant": tenant,
        "subject": subject,
        "credential_id": credential_id,
        "public_key": dict(public_key),
    }
    return b64url(hashlib.sha256(canonical_json(document)).digest())


def enrolment_refusal(registered: AuditEvent, trust: TrustRoot) -> str | None:
    """Why this ``passkey.registered`` event is not vouched for; None when it is."""
    data = payload_of(registered)
    evidence = data.get("evidence")
    if not isinstance(evidence, dict) or evidence.get("kind") != "idp":
        return "the enrolment carries no identity provider's evidence"
    token, key = evidence.get("id_token"), data.get("public_key")
    if not isinstance(token, str) or not isinstance(key, dict) or registered.actor is None:
        return "the enrolment's evidence has no ID token, or the event no key or person"
    at = registered.at // 1_000_000
    try:
        claims = verify_idp_token(
            token, trust, at_seconds=at, subject=registered.actor, tenant=registered.tenant
        )
    except IdpTokenRejected as exc:
        return str(exc)
    expected = enrolment_nonce(
        tenant=registered.tenant,
        subject=registered.actor,
        credential_id=str(data.get("credential_id")),
        public_key=key,
    )
    nonce = claims.get("nonce")
    if not isinstance(nonce, str) or not hmac.compare_digest(nonce, expected):
        return "the ID token was issued for another credential or person (nonce)"
    auth_time = claims.get("auth_time")
    # The provider's clock and signoff's may differ by a little (SKEW_SECONDS).
    if not isinstance(auth_time, int) or not (
        -SKEW_SECONDS <= at - auth_time <= FRESH_SIGN_IN_SECONDS
    ):
        return "the ID token does not show a fresh sign-in just before the enrolment (auth_time)"
    return None


def enrolment_vouched(registered: AuditEvent, trust: TrustRoot) -> bool:
    """True when a trusted identity provider vouches that this passkey is this person's."""
    return enrolment_refusal(registered, trust) is None

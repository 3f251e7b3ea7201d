"""Device-signed approvals: the dynamic-linking challenge and offline re-verification.

The challenge a person's authenticator signs is
``sha256(JCS({proposal_id, version, args_digest, decision, nonce, subject,
tenant}))``, so the assertion is specific to exactly one decision by one
person on one operation (PSD2 dynamic linking): it cannot be recorded as
another person's approval, even one whose passkey has the same key. The
server checks the ceremony with py_webauthn; this module re-checks a stored
assertion with ``cryptography`` alone, so a third party needs no WebAuthn
server library: WebAuthn §7.2 steps that do not depend on
server state (type, challenge, origin, RP ID hash, UP/UV flags, signature).
A Secure Payment Confirmation assertion (``payment.get``) verifies the same
way, and what the browser showed must be the proposal's display values
(``_spc``): the assertion carries the preview, whose digest the proposal
recorded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from jwt import PyJWK
from jwt.exceptions import PyJWKError

from signoff._canonical import canonical_json
from signoff.proof._keys import b64url, b64url_decode
from signoff.proof._spc import PAYMENT_GET, PaymentMismatch, check_shown, spc_display
from signoff.proof._spc import preview_digest as digest_of_preview

FLAG_USER_PRESENT = 0x01
FLAG_USER_VERIFIED = 0x04
ASSERTION_FIELDS = (
    "credential_id", "public_key", "authenticator_data", "client_data_json", "signature",
    "nonce", "rp_id", "origin",
)  # fmt: skip


class DeviceCheckFailed(Exception):
    """The stored assertion does not prove the device signed this decision."""


def device_challenge(
    *,
    proposal_id: str,
    version: int,
    args_digest: str,
    decision: str,
    nonce: str,
    subject: str,
    tenant: str,
) -> bytes:
    document = {
        "proposal_id": proposal_id,
        "version": version,
        "args_digest": args_digest,
        "decision": decision,
        "nonce": nonce,
        "subject": subject,
        "tenant": tenant,
    }
    return hashlib.sha256(canonical_json(document)).digest()


def verify_device_assertion(
    assertion: Mapping[str, Any],
    *,
    proposal_id: str,
    version: int,
    args_digest: str,
    decision: str,
    subject: str,
    tenant: str,
    preview_digest: str | None = None,
    require_user_verification: bool = True,
) -> int:
    """Re-verify a stored assertion for this decision; returns its sign counter.

    ``preview_digest`` is the proposal's recorded ``preview_digest``: a payment
    confirmation verifies only with it (what the browser showed is checked against it).
    """
    missing = [name for name in ASSERTION_FIELDS if not assertion.get(name)]
    if missing:
        raise DeviceCheckFailed(f"the assertion lacks {', '.join(missing)}")
    expected = device_challenge(
        proposal_id=proposal_id,
        version=version,
        args_digest=args_digest,
        decision=decision,
        nonce=str(assertion["nonce"]),
        subject=subject,
        tenant=tenant,
    )
    raw_client_data = b64url_decode(str(assertion["client_data_json"]))
    client_data = _check_client_data(raw_client_data, expected, str(assertion["origin"]))
    if client_data.get("type") == PAYMENT_GET:
        _check_payment(client_data, assertion.get("preview"), preview_digest)
    auth_data = b64url_decode(str(assertion["authenticator_data"]))
    counter = _check_authenticator_data(
        auth_data, str(assertion["rp_id"]), require_user_verification
    )
    signed = auth_data + hashlib.sha256(raw_client_data).digest()
    _check_signature(assertion["public_key"], b64url_decode(str(assertion["signature"])), signed)
    return counter


def _check_client_data(raw: bytes, challenge: bytes, origin: str) -> dict[str, Any]:
    try:
        client_data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise DeviceCheckFailed("clientDataJSON is not JSON") from None
    if not isinstance(client_data, dict):
        raise DeviceCheckFailed("clientDataJSON is not a JSON object")
    if client_data.get("type") not in ("webauthn.get", PAYMENT_GET):
        raise DeviceCheckFailed("clientDataJSON is not from an assertion (webauthn.get)")
    if client_data.get("challenge") != b64url(challenge):
        raise DeviceCheckFailed("the device signed another challenge than this decision's")
    if client_data.get("origin") != origin:
        raise DeviceCheckFailed(f"the device signed for origin {client_data.get('origin')!r}")
    return client_data


def _check_payment(client_data: dict[str, Any], preview: Any, recorded: str | None) -> None:
    """A payment confirmation: the browser showed the proposal's payee and amount."""
    if not isinstance(preview, dict) or recorded is None:
        raise DeviceCheckFailed("a payment confirmation without the proposal's preview")
    if digest_of_preview(preview) != recorded:
        raise DeviceCheckFailed("the payment confirmation's preview is not the proposal's")
    expected = spc_display(preview)
    if expected is None:
        raise DeviceCheckFailed("a payment confirmation for a proposal that moves no money")
    try:
        check_shown(client_data, expected)
    except PaymentMismatch as exc:
        raise DeviceCheckFailed(str(exc)) from None


def _check_authenticator_data(auth_data: bytes, rp_id: str, require_uv: bool) -> int:
    if len(auth_data) < 37:
        raise DeviceCheckFailed("authenticatorData is too short")
    if auth_data[:32] != hashlib.sha256(rp_id.encode()).digest():
        raise DeviceCheckFailed(f"authenticatorData is for another RP ID than {rp_id!r}")
    flags = auth_data[32]
    if not flags & FLAG_USER_PRESENT:
        raise DeviceCheckFailed("the authenticator did not record user presence")
    if require_uv and not flags & FLAG_USER_VERIFIED:
        raise DeviceCheckFailed("the authenticator did not verify the user")
    return int.from_bytes(auth_data[33:37], "big")


def _check_signature(public_jwk: Any, signature: bytes, signed: bytes) -> None:
    if not isinstance(public_jwk, dict):
        raise DeviceCheckFailed("the credential public key is not a JWK")
    try:
        key = PyJWK.from_dict(public_jwk).key
    except PyJWKError as exc:
        raise DeviceCheckFailed(f"the credential public key does not load: {exc}") from None
    try:
        if isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(signature, signed, ec.ECDSA(hashes.SHA256()))
        elif isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(signature, signed)
        elif isinstance(key, rsa.RSAPublicKey):
            key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
        else:
            raise DeviceCheckFailed("unsupported credential key type")
    except InvalidSignature:
        raise DeviceCheckFailed("the device signature does not verify") from None

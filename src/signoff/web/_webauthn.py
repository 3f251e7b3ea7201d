"""The WebAuthn ceremonies of the page, through py_webauthn (duo-labs/py_webauthn).

Relying party: the host of ``SIGNOFF_PUBLIC_URL`` when it is set, else (demo,
development) the host the page was requested on. Challenges need no server
storage: a registration challenge is an HMAC of the session id and a random
value; an approval's challenge is ``signoff.proof.device_challenge`` over the
proposal id, version, digest, decision, the approver (subject and tenant) and
a nonce whose HMAC binds it to the session and the proposal version. The gate
verifies the assertion again and advances the sign counter; this module checks origin, RP ID and UV.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from starlette.requests import Request
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import (
    base64url_to_bytes,
    bytes_to_base64url,
    decode_credential_public_key,
    decoded_public_key_to_cryptography,
)
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AttestationConveyancePreference,
    AttestationFormat,
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from signoff._model import Principal, Proposal
from signoff.exceptions import DeviceSignatureInvalid, InvalidRequest
from signoff.proof import DeviceCheckFailed, device_challenge, verify_device_assertion
from signoff.proof._spc import is_payment_confirmation, preview_digest, spc_display
from signoff.store._sql import PasskeyRecord
from signoff.web._session import WebSession, derive_key

RP_NAME = "signoff"


@dataclass(frozen=True, slots=True)
class RelyingParty:
    rp_id: str
    origin: str

    @classmethod
    def of(cls, request: Request, public_url: str | None) -> RelyingParty:
        if public_url is not None:
            parts = urlsplit(public_url)
            return cls(str(parts.hostname), f"{parts.scheme}://{parts.netloc}")
        return cls(str(request.url.hostname), f"{request.url.scheme}://{request.url.netloc}")


class Ceremonies:
    """Registration and approval challenges bound to the session by HMAC."""

    def __init__(self, master: bytes) -> None:
        self._key = derive_key(master, "webauthn")

    def _mac(self, *parts: str) -> str:
        message = "\x1f".join(parts).encode()
        return bytes_to_base64url(hmac.new(self._key, message, hashlib.sha256).digest()[:16])

    def registration_options(
        self, rp: RelyingParty, session: WebSession, principal: Principal, enrolled: list[str]
    ) -> tuple[str, str]:
        """The options JSON for ``navigator.credentials.create`` and the random part of it."""
        salt = secrets.token_urlsafe(16)
        user = hashlib.sha256(f"{principal.tenant}\x1f{principal.subject}".encode()).digest()
        options = generate_registration_options(
            rp_id=rp.rp_id,
            rp_name=RP_NAME,
            user_name=f"{principal.subject} ({principal.tenant})",
            user_id=user[:16],
            challenge=self._registration_challenge(session, salt),
            # Kept as the enrolment's evidence when the authenticator offers one.
            attestation=AttestationConveyancePreference.DIRECT,
            authenticator_selection=AuthenticatorSelectionCriteria(
                resident_key=ResidentKeyRequirement.PREFERRED,
                user_verification=UserVerificationRequirement.REQUIRED,
            ),
            exclude_credentials=[
                PublicKeyCredentialDescriptor(id=base64url_to_bytes(c)) for c in enrolled
            ],
        )
        return options_to_json(options), salt

    def _registration_challenge(self, session: WebSession, salt: str) -> bytes:
        message = f"register\x1f{session.sid}\x1f{salt}".encode()
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def verify_registration(
        self, rp: RelyingParty, session: WebSession, salt: str, credential: str
    ) -> dict[str, Any]:
        """The passkey to keep: id, COSE key (py_webauthn), JWK (offline verifiers), counter,
        and the attestation (with the client data it signs) when the authenticator gave one."""
        try:
            verified = verify_registration_response(
                credential=credential,
                expected_challenge=self._registration_challenge(session, salt),
                expected_rp_id=rp.rp_id,
                expected_origin=rp.origin,
                require_user_verification=True,
            )
        except (WebAuthnException, ValueError, KeyError) as exc:
            raise InvalidRequest(f"the passkey registration did not verify: {exc}") from None
        attestation = None
        fmt = str(getattr(verified.fmt, "value", verified.fmt))  # py_webauthn may give a str
        if fmt != AttestationFormat.NONE.value:
            attestation = {
                "fmt": fmt,
                "attestation_object": bytes_to_base64url(verified.attestation_object),
                "client_data_json": json.loads(credential)["response"]["clientDataJSON"],
            }
        return {
            "credential_id": bytes_to_base64url(verified.credential_id),
            "public_key": bytes_to_base64url(verified.credential_public_key),
            "public_jwk": jwk_of(verified.credential_public_key),
            "sign_count": verified.sign_count,
            "attestation": attestation,
        }

    def nonce(self, session: WebSession, proposal: Proposal) -> str:
        salt = secrets.token_urlsafe(12)
        mac = self._mac(session.sid, proposal.proposal_id, str(proposal.version), salt)
        return f"{salt}.{mac}"

    def approval_options(
        self,
        rp: RelyingParty,
        principal: Principal,
        proposal: Proposal,
        nonce: str,
        passkeys: list[PasskeyRecord],
    ) -> str:
        """Options for ``navigator.credentials.get`` whose challenge is this decision's."""
        options = generate_authentication_options(
            rp_id=rp.rp_id,
            challenge=_challenge(principal, proposal, proposal.version, nonce),
            allow_credentials=[
                PublicKeyCredentialDescriptor(id=base64url_to_bytes(p.credential_id))
                for p in passkeys
            ],
            user_verification=UserVerificationRequirement.REQUIRED,
        )
        return options_to_json(options)

    def verify_approval(
        self,
        rp: RelyingParty,
        session: WebSession,
        principal: Principal,
        proposal: Proposal,
        version: int,
        nonce: str,
        credential: str,
        passkey: PasskeyRecord,
    ) -> dict[str, Any]:
        """The checked assertion as the gate takes it (``Decision.device``)."""
        salt, _, mac = nonce.partition(".")
        expected = self._mac(session.sid, proposal.proposal_id, str(version), salt)
        if not hmac.compare_digest(mac, expected):
            raise DeviceSignatureInvalid("this approval's nonce was not issued to this page")
        response = _response_of(credential)
        if is_payment_confirmation(str(response.get("clientDataJSON", ""))):
            _verify_payment(rp, principal, proposal, version, nonce, response, passkey)
            return _device(passkey, response, nonce, rp)
        try:
            verify_authentication_response(
                credential=credential,
                expected_challenge=_challenge(principal, proposal, version, nonce),
                expected_rp_id=rp.rp_id,
                expected_origin=rp.origin,
                credential_public_key=base64url_to_bytes(passkey.public_key),
                credential_current_sign_count=passkey.sign_count,
                require_user_verification=True,
            )
        except (WebAuthnException, ValueError, KeyError) as exc:
            raise DeviceSignatureInvalid(f"the passkey's signature did not verify: {exc}") from None
        return _device(passkey, response, nonce, rp)


def _response_of(credential: str) -> dict[str, Any]:
    try:
        response = json.loads(credential)["response"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise DeviceSignatureInvalid("the passkey's answer is malformed; approve again") from None
    if not isinstance(response, dict):
        raise DeviceSignatureInvalid("the passkey's answer is malformed; approve again")
    return response


def _device(
    passkey: PasskeyRecord, response: dict[str, Any], nonce: str, rp: RelyingParty
) -> dict[str, Any]:
    return {
        "credential_id": passkey.credential_id,
        "authenticator_data": response.get("authenticatorData"),
        "client_data_json": response.get("clientDataJSON"),
        "signature": response.get("signature"),
        "nonce": nonce,
        "rp_id": rp.rp_id,
        "origin": rp.origin,
    }


def _verify_payment(
    rp: RelyingParty,
    principal: Principal,
    proposal: Proposal,
    version: int,
    nonce: str,
    response: dict[str, Any],
    passkey: PasskeyRecord,
) -> None:
    """A Secure Payment Confirmation assertion (``payment.get``), which py_webauthn's
    ``verify_authentication_response`` refuses by its type: the same WebAuthn §7.2 checks
    with ``cryptography`` (``signoff.proof``), and what the browser showed must be the
    proposal's payee and amount. The gate checks it again and moves the sign counter."""
    preview = proposal.preview.to_dict()
    assertion = {
        **_device(passkey, response, nonce, rp),
        "public_key": json.loads(passkey.public_jwk),
        "preview": preview,
    }
    try:
        verify_device_assertion(
            assertion,
            proposal_id=proposal.proposal_id,
            version=version,
            args_digest=proposal.args_digest,
            decision="approve",
            subject=principal.subject,
            tenant=principal.tenant,
            preview_digest=preview_digest(preview),
        )
    except DeviceCheckFailed as exc:
        raise DeviceSignatureInvalid(f"the payment confirmation did not verify: {exc}") from None


def payment_request(rp: RelyingParty, proposal: Proposal) -> str | None:
    """What ``passkey.js`` asks the browser's Secure Payment Confirmation dialog to show
    (JSON), or None when the proposal moves no money (WebAuthn then, as for any other)."""
    shown = spc_display(proposal.preview.to_dict())
    if shown is None:
        return None
    instrument = {
        "displayName": f"signoff · {proposal.tool}",
        "icon": f"{rp.origin}/ui/static/icon.svg",
        "iconMustBeShown": False,
    }
    return json.dumps({**shown, "rpId": rp.rp_id, "instrument": instrument})


def _challenge(principal: Principal, proposal: Proposal, version: int, nonce: str) -> bytes:
    return device_challenge(
        proposal_id=proposal.proposal_id,
        version=version,
        args_digest=proposal.args_digest,
        decision="approve",
        nonce=nonce,
        subject=principal.subject,
        tenant=principal.tenant,
    )


def jwk_of(cose_key: bytes) -> dict[str, Any]:
    """The credential's public key as a JWK, so verifiers need no CBOR or COSE parser."""
    key = decoded_public_key_to_cryptography(decode_credential_public_key(cose_key))
    if isinstance(key, ec.EllipticCurvePublicKey):
        return ECAlgorithm.to_jwk(key, as_dict=True)
    if isinstance(key, ed25519.Ed25519PublicKey):
        return OKPAlgorithm.to_jwk(key, as_dict=True)
    if isinstance(key, rsa.RSAPublicKey):
        return RSAAlgorithm.to_jwk(key, as_dict=True)
    raise InvalidRequest("the passkey uses a key type signoff cannot record")


def device_of(fields: dict[str, str]) -> tuple[str, str, str] | None:
    """(credential JSON, its id, nonce) posted by ``passkey.js``, or None without one."""
    credential = fields.get("device_assertion", "")
    if not credential:
        return None
    try:
        credential_id = json.loads(credential)["id"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise InvalidRequest("the passkey's answer is malformed; approve again") from None
    return credential, str(credential_id), fields.get("device_nonce", "")

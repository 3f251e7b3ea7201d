"""Helpers for proof tests: key sets, a hand-built audit chain, a software authenticator."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import cbor2
import jwt
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from signoff.audit._chain import GENESIS, AuditEvent, event_hash
from signoff.proof import (
    Checkpoint,
    KeySet,
    PublicKeys,
    TrustRoot,
    enrolment_nonce,
    origin_for,
    sign_checkpoint,
)
from signoff.proof._device import device_challenge
from signoff.proof._events import leaf_of
from signoff.proof._keys import b64url, b64url_decode
from signoff.proof._merkle import CompactTree
from signoff.proof._spc import preview_digest, spc_display

LOG = "signoff.test"
TENANT = "acme"
ORIGIN = origin_for(LOG, TENANT)
SIGNED_AT = 100_000
"""When the hand-built checkpoints are signed (seconds): after every hand-built event."""
RP_ID = "signoff.test"
ORIGIN_URL = "https://signoff.test"


@pytest.fixture
def keyset() -> KeySet:
    return KeySet.generate()


def rehash(events: list[AuditEvent]) -> list[AuditEvent]:
    """Renumber and recompute every hash and link, as a database writer could."""
    out: list[AuditEvent] = []
    prev = GENESIS
    for seq, e in enumerate(events, start=1):
        fields = {
            "tenant": e.tenant, "seq": seq, "at": e.at, "kind": e.kind,
            "proposal_id": e.proposal_id, "execution_id": e.execution_id, "actor": e.actor,
            "data": e.data, "prev_hash": prev,
        }  # fmt: skip
        digest = event_hash(**fields)  # type: ignore[arg-type]
        out.append(AuditEvent(**fields, hash=digest))  # type: ignore[arg-type]
        prev = digest
    return out


@dataclass
class Log:
    """A tenant chain built by hand, with the same hashing as the store."""

    tenant: str = TENANT
    events: list[AuditEvent] = field(default_factory=list)

    def add(self, kind: str, data: dict[str, Any], **ids: str | None) -> AuditEvent:
        seq = len(self.events) + 1
        prev = self.events[-1].hash if self.events else GENESIS
        fields: dict[str, Any] = {
            "tenant": self.tenant, "seq": seq, "at": 1_000_000 * seq, "kind": kind,
            "proposal_id": ids.get("proposal_id"), "execution_id": ids.get("execution_id"),
            "actor": ids.get("actor"), "data": json.dumps(data, sort_keys=True), "prev_hash": prev,
        }  # fmt: skip
        event = AuditEvent(**fields, hash=event_hash(**fields))
        self.events.append(event)
        return event

    def enrol(
        self, device: SoftAuthenticator, *, actor: str = "alice", idp: SoftIdp | None = None
    ) -> AuditEvent:
        """``passkey.registered`` of ``device`` by ``actor``, vouched for by ``idp``
        (the shared test provider, :data:`IDP`, unless another is named)."""
        at = len(self.events) + 1  # the next event's time, in seconds
        evidence = (idp or IDP).evidence(device, subject=actor, tenant=self.tenant, at=at)
        data = {
            "credential_id": device.credential_id,
            "public_key": device.public_jwk(),
            "evidence": evidence,
        }
        return self.add("passkey.registered", data, actor=actor)

    def checkpoints(self, keyset: KeySet, sizes: list[int]) -> list[tuple[int, str]]:
        return signed_checkpoints(self.events, keyset, sizes)


def signed_checkpoints(
    events: list[AuditEvent], keyset: KeySet, sizes: list[int], origin: str = ORIGIN
) -> list[tuple[int, str]]:
    tree = CompactTree()
    notes = []
    for event in events:
        tree.append(leaf_of(event))
        if tree.size in sizes:
            body = Checkpoint(origin, tree.size, tree.root())
            note = sign_checkpoint(keyset.note_key(), body, timestamp=SIGNED_AT)
            notes.append((tree.size, note))
    return notes


POLICY = {
    "role": "refund_approver", "requester_confirms": False, "approvals": 1,
    "beneficiary_may_approve": False, "retype": [], "in_band": False, "version": "1",
}  # fmt: skip


def refund_flow(
    log: Log,
    pid: str,
    *,
    approver: str = "alice",
    digest: str = "d" * 64,
    executed: str | None = None,
    policy: dict[str, Any] | None = None,
    device: dict[str, Any] | None = None,
    preview: dict[str, Any] | None = None,
    idp: dict[str, Any] | None = None,
) -> None:
    """proposal.created → decision.approved → token.issued/consumed → execution.succeeded;
    with ``preview``, the proposal records its digest (``preview_digest``)."""
    created = {
        "tool": "refund_order", "tool_version": "1", "args_digest": digest,
        "resource_id": "ord_1001", "state_version": "v1", "policy": policy or POLICY,
    }  # fmt: skip
    if preview is not None:
        created["preview_digest"] = preview_digest(preview)
    log.add("proposal.created", created, proposal_id=pid, actor="agent:bot for u_42")
    decision: dict[str, Any] = {"step": "role:refund_approver", "args_digest": digest}
    if device is not None:
        decision["device"] = device
    if idp is not None:
        decision["idp"] = idp
    log.add("decision.approved", decision, proposal_id=pid, actor=approver)
    log.add("token.issued", {"subject": "u_42", "args_digest": digest}, proposal_id=pid)
    exe = f"exe_{pid}"
    log.add(
        "token.consumed",
        {"args_digest": digest, "request_key": f"rk:{pid}"},
        proposal_id=pid,
        execution_id=exe,
    )
    log.add(
        "execution.succeeded",
        {"executed_digest": executed or digest, "provider_reference": f"re_{pid}",
         "request_key": f"rk:{pid}"},
        proposal_id=pid, execution_id=exe,
    )  # fmt: skip


class SoftAuthenticator:
    """A P-256 passkey in software: signs WebAuthn assertions like a device would."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.counter = 0
        self.credential_id = b64url(hashlib.sha256(b"cred" + bytes(8)).digest()[:16])

    def public_jwk(self) -> dict[str, Any]:
        return ECAlgorithm.to_jwk(self.key.public_key(), as_dict=True)

    def sign_assertion(
        self,
        challenge: bytes,
        *,
        rp_id: str = RP_ID,
        origin: str = ORIGIN_URL,
        flags: int = 0x05,
        payment: dict[str, Any] | None = None,
    ) -> tuple[bytes, bytes, bytes]:
        """An assertion; with ``payment`` (what the browser's dialog showed: ``payeeName``
        and ``total``) a Secure Payment Confirmation one, as Chromium writes it."""
        self.counter += 1
        auth = hashlib.sha256(rp_id.encode()).digest() + bytes([flags])
        auth += self.counter.to_bytes(4, "big")
        data: dict[str, Any] = {
            "type": "webauthn.get", "challenge": b64url(challenge), "origin": origin,
        }  # fmt: skip
        if payment is not None:
            instrument = {"displayName": "signoff approval", "icon": f"{origin}/icon.svg"}
            data["type"] = "payment.get"
            data["payment"] = {
                "rpId": rp_id, "topOrigin": origin, "instrument": instrument, **payment,
            }  # fmt: skip
        client = json.dumps(data).encode()
        signature = self.key.sign(auth + hashlib.sha256(client).digest(), ec.ECDSA(hashes.SHA256()))
        return auth, client, signature

    def registration(self, challenge: bytes, *, rp_id: str, origin: str) -> str:
        """The browser's answer to ``navigator.credentials.create`` (attestation ``none``),
        as the page posts it: py_webauthn verifies it like a real device's."""
        numbers = self.key.public_key().public_numbers()
        x, y = numbers.x.to_bytes(32, "big"), numbers.y.to_bytes(32, "big")
        cose = cbor2.dumps({1: 2, 3: -7, -1: 1, -2: x, -3: y})  # EC2, ES256, P-256
        raw_id = b64url_decode(self.credential_id)
        auth = hashlib.sha256(rp_id.encode()).digest() + bytes([0x45]) + bytes(4)
        auth += bytes(16) + len(raw_id).to_bytes(2, "big") + raw_id + cose
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth})
        client = json.dumps(
            {"type": "webauthn.create", "challenge": b64url(challenge), "origin": origin}
        ).encode()
        response = {"clientDataJSON": b64url(client), "attestationObject": b64url(attestation)}
        return json.dumps(
            {"id": self.credential_id, "rawId": self.credential_id, "type": "public-key",
             "response": response}
        )  # fmt: skip

    def approval(
        self,
        pid: str,
        digest: str,
        *,
        version: int = 1,
        subject: str = "alice",
        tenant: str = TENANT,
        **kw: Any,
    ) -> dict[str, Any]:
        nonce = "n-" + pid
        challenge = device_challenge(
            proposal_id=pid, version=version, args_digest=digest, decision="approve",
            nonce=nonce, subject=subject, tenant=tenant,
        )  # fmt: skip
        auth, client, signature = self.sign_assertion(challenge, **kw)
        return {
            "credential_id": self.credential_id,
            "public_key": self.public_jwk(),
            "authenticator_data": b64url(auth),
            "client_data_json": b64url(client),
            "signature": b64url(signature),
            "nonce": nonce,
            "version": version,
            "rp_id": RP_ID,
            "origin": ORIGIN_URL,
        }


IDP_ISSUER = "https://idp.test"
IDP_AUDIENCE = "signoff-page"


class SoftIdp:
    """An identity provider in software: signs the ID token of a fresh sign-in (RS256)."""

    def __init__(self, issuer: str = IDP_ISSUER) -> None:
        self.issuer = issuer
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def trust_entry(self) -> dict[str, Any]:
        public = RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {
            "issuer": self.issuer,
            "jwks": {"keys": [{**public, "kid": "idp1", "alg": "RS256", "use": "sig"}]},
            "audiences": [IDP_AUDIENCE],
            "tenant_claim": "tenant",
        }

    def id_token(self, subject: str, tenant: str, nonce: str, *, at: int) -> str:
        claims = {
            "iss": self.issuer, "aud": IDP_AUDIENCE, "sub": subject, "tenant": tenant,
            "nonce": nonce, "iat": at, "exp": at + 300, "auth_time": at,
        }  # fmt: skip
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "idp1"})

    def evidence(
        self, device: SoftAuthenticator, *, subject: str = "alice", tenant: str = TENANT, at: int
    ) -> dict[str, Any]:
        """The ``evidence`` of a vouched enrolment of ``device`` by ``subject`` at ``at`` (s)."""
        nonce = enrolment_nonce(
            tenant=tenant,
            subject=subject,
            credential_id=device.credential_id,
            public_key=device.public_jwk(),
        )
        return {"kind": "idp", "id_token": self.id_token(subject, tenant, nonce, at=at)}


def trusting(trust: TrustRoot | PublicKeys, idp: SoftIdp) -> TrustRoot:
    """``trust`` with ``idp`` among its identity providers."""
    root = TrustRoot.of(trust)
    providers = (*root.identity_providers, idp.trust_entry())
    return dataclasses.replace(root, identity_providers=providers)


IDP = SoftIdp()
"""The identity provider the hand-built logs' enrolments come from (``Log.enrol``)."""


REFUND_PREVIEW = {
    "title": "Refund ¥1,000.00 on order ord_1001",
    "description": "Refund part or all of a paid order.",
    "fields": [
        {"name": "order_id", "label": "Order", "machine_value": "ord_1001",
         "display_value": "ord_1001"},
        {"name": "amount_minor", "label": "Amount", "machine_value": 100_000,
         "display_value": "¥1,000.00", "unit": "fen (1/100 CNY)", "currency": "CNY"},
    ],
    "impact": "", "reversibility": "Irreversible.", "external_reach": "", "facts": [],
}  # fmt: skip
"""A money-moving preview, for hand-built Secure Payment Confirmation approvals."""


def spc_approval(
    device: SoftAuthenticator, pid: str, digest: str, *, shown: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``device``'s SPC assertion for ``pid``: the browser showed ``shown`` (default: what the
    preview displays), and the gate kept the preview with it."""
    expected = spc_display(REFUND_PREVIEW)
    assertion = device.approval(pid, digest, payment=shown or expected)
    return {**assertion, "preview": REFUND_PREVIEW}

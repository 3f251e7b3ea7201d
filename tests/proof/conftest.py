"""Helpers for proof tests: key sets, a hand-built audit chain, a software authenticator."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from signoff.audit._chain import GENESIS, AuditEvent, event_hash
from signoff.proof import Checkpoint, KeySet, origin_for, sign_checkpoint
from signoff.proof._device import device_challenge
from signoff.proof._events import leaf_of
from signoff.proof._keys import b64url
from signoff.proof._merkle import CompactTree

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
    idp: dict[str, Any] | None = None,
) -> None:
    """proposal.created → decision.approved → token.issued/consumed → execution.succeeded."""
    log.add(
        "proposal.created",
        {"tool": "refund_order", "tool_version": "1", "args_digest": digest,
         "resource_id": "ord_1001", "state_version": "v1", "policy": policy or POLICY},
        proposal_id=pid, actor="agent:bot for u_42",
    )  # fmt: skip
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
    ) -> tuple[bytes, bytes, bytes]:
        self.counter += 1
        auth = hashlib.sha256(rp_id.encode()).digest() + bytes([flags])
        auth += self.counter.to_bytes(4, "big")
        client = json.dumps(
            {"type": "webauthn.get", "challenge": b64url(challenge), "origin": origin}
        ).encode()
        signature = self.key.sign(auth + hashlib.sha256(client).digest(), ec.ECDSA(hashes.SHA256()))
        return auth, client, signature

    def approval(self, pid: str, digest: str, *, version: int = 1, **kw: Any) -> dict[str, Any]:
        nonce = "n-" + pid
        challenge = device_challenge(
            proposal_id=pid, version=version, args_digest=digest, decision="approve", nonce=nonce
        )
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

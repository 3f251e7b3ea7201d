"""Device-signed approvals at the gate: asked for by the policy, checked, counted once.

The edge that ran the WebAuthn ceremony (the page, with py_webauthn) checked
origin and RP ID; the gate checks again what binds the signature to this
decision — the challenge ``sha256(JCS({proposal_id, version, args_digest,
decision, nonce, subject, tenant}))``, the RP ID hash, user verification, the signature with
the key this person enrolled — and moves the sign counter forward by a
conditional update, so a replayed assertion loses. What it accepted goes
into the decision's audit event, for offline verifiers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from signoff._model import Decision, DecisionKind, Principal, Proposal
from signoff.exceptions import DeviceSignatureInvalid, DeviceSignatureRequired
from signoff.store._sql import PasskeyRecord, SqlTransaction

if TYPE_CHECKING:
    from signoff.gate._context import GateContext

ENROL_HINT = "enrol a passkey on the confirmation page (/ui/passkeys), then approve there"


def device_rule(proposal: Proposal) -> str:
    """``none``, ``required`` or ``or_retype``; ``evidence: device`` requires the device."""
    if proposal.policy.get("evidence") == "device":
        return "required"
    return str(proposal.policy.get("device", "none"))


@dataclass(frozen=True, slots=True)
class DeviceApproval:
    """A verified assertion, to record with the approval."""

    assertion: dict[str, Any]
    counter: tuple[str, int, int] | None
    """(credential id, the count read, the new count): the decision's write moves the sign
    counter on that premise, so of two decisions with one assertion only one is kept."""


def check_device(
    tx: SqlTransaction, principal: Principal, proposal: Proposal, decision: Decision
) -> DeviceApproval | None:
    """The verified assertion to record with this approval, None when none is needed."""
    rule = device_rule(proposal)
    if decision.kind is not DecisionKind.APPROVE or rule == "none":
        return None
    if decision.device is None:
        if rule == "required" or tx.passkeys_of(principal.tenant, principal.subject):
            raise DeviceSignatureRequired(
                f"this approval must be signed with your passkey — {ENROL_HINT}",
                proposal_id=proposal.proposal_id,
            )
        return None  # or_retype without a passkey: re-typing is the fallback
    record = tx.passkey(str(decision.device.get("credential_id")))
    if record is None or (record.tenant, record.subject) != (principal.tenant, principal.subject):
        raise DeviceSignatureInvalid(
            "this passkey is not one you enrolled", proposal_id=proposal.proposal_id
        )
    assertion = {
        **decision.device,
        "public_key": json.loads(record.public_jwk),
        "version": decision.expected_version,
    }
    from signoff.proof._spc import is_payment_confirmation

    if is_payment_confirmation(str(assertion.get("client_data_json", ""))):
        # Secure Payment Confirmation: offline verifiers check what the browser showed
        # against this preview, whose digest proposal.created recorded.
        assertion["preview"] = proposal.preview.to_dict()
    counter = _verify(assertion, principal, proposal, decision)
    return DeviceApproval(assertion, _counter_move(record, counter, proposal))


def _verify(
    assertion: dict[str, Any], principal: Principal, proposal: Proposal, decision: Decision
) -> int:
    from signoff.proof import DeviceCheckFailed, verify_device_assertion
    from signoff.proof._spc import preview_digest

    try:
        return verify_device_assertion(
            assertion,
            proposal_id=proposal.proposal_id,
            version=decision.expected_version,
            args_digest=proposal.args_digest,
            decision=decision.kind.value,
            subject=principal.subject,
            tenant=principal.tenant,
            preview_digest=preview_digest(proposal.preview.to_dict()),
        )
    except DeviceCheckFailed as exc:
        raise DeviceSignatureInvalid(str(exc), proposal_id=proposal.proposal_id) from None


def _counter_move(
    record: PasskeyRecord, counter: int, proposal: Proposal
) -> tuple[str, int, int] | None:
    # Authenticators that keep no counter send 0 every time; any other must move forward.
    if counter == 0 and record.sign_count == 0:
        return None
    if counter <= record.sign_count:
        raise DeviceSignatureInvalid(
            "this assertion was used before (the sign counter did not advance)",
            proposal_id=proposal.proposal_id,
        )
    return (record.credential_id, record.sign_count, counter)


def register_passkey(
    ctx: GateContext,
    principal: Principal,
    *,
    credential_id: str,
    public_key: str,
    public_jwk: dict[str, Any],
    sign_count: int,
    evidence: dict[str, Any] | None = None,
    attestation: dict[str, Any] | None = None,
) -> PasskeyRecord:
    """Keep a verified registration and record it in the person's tenant chain.

    ``evidence`` is what vouches that the credential is this person's — the identity
    provider's ID token of a fresh sign-in bound to it (``signoff.proof.enrolment_nonce``);
    ``attestation`` the authenticator's attestation when it gave one. Without evidence
    the enrolment is signoff's word only, and offline verifiers do not count it.
    """
    if principal.is_agent:
        raise DeviceSignatureInvalid("an agent cannot enrol a passkey; a person must")
    now = ctx.now_micros()
    record = PasskeyRecord(
        credential_id=credential_id,
        tenant=principal.tenant,
        subject=principal.subject,
        public_key=public_key,
        public_jwk=json.dumps(public_jwk, sort_keys=True),
        sign_count=sign_count,
        created_at=now,
    )

    def step(tx: SqlTransaction) -> PasskeyRecord:
        if tx.passkey(credential_id) is not None:
            raise DeviceSignatureInvalid("this passkey is already enrolled")
        tx.insert_passkey(record)
        tx.append_audit(
            tenant=principal.tenant,
            at=now,
            kind="passkey.registered",
            actor=principal.subject,
            data={
                "credential_id": credential_id,
                "public_key": public_jwk,
                **({"evidence": evidence} if evidence is not None else {}),
                **({"attestation": attestation} if attestation is not None else {}),
            },
        )
        return record

    return ctx.write(step)

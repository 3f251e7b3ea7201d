"""Device-signed approvals at the gate: required when enrolled, bound to one decision and
one approver, once; offline, only from an enrolment an identity provider vouched for."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from signoff import Decision, DecisionKind, Principal, Proposal
from signoff.exceptions import DeviceSignatureInvalid, DeviceSignatureRequired, InvalidState
from signoff.proof import PublicKeys, TrustRoot, verify_bundle
from tests.conftest import AGENT, APPROVER, APPROVER_2, World, make_world
from tests.proof.conftest import SoftAuthenticator, SoftIdp, trusting

HIGH = {"order_id": "ord_9200", "amount_minor": 100_000}
AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, token_form="signed")
    yield w
    w.store.close()
    w.shop.close()


@pytest.fixture
def idp() -> SoftIdp:
    return SoftIdp()


@pytest.fixture
def device(world: World, idp: SoftIdp) -> SoftAuthenticator:
    """alice's passkey, enrolled after a fresh sign-in at her identity provider (as the
    page does after py_webauthn checked it and the provider's ID token came back)."""
    return _enrol(world, APPROVER, SoftAuthenticator(), idp)


def _enrol(
    world: World, who: Principal, device: SoftAuthenticator, idp: SoftIdp | None = None
) -> SoftAuthenticator:
    at = int(world.clock.now().timestamp())
    world.gate.register_passkey(
        who,
        credential_id=device.credential_id,
        public_key="(COSE key, used by py_webauthn on the page)",
        public_jwk=device.public_jwk(),
        sign_count=0,
        evidence=None if idp is None else idp.evidence(device, subject=who.subject, at=at),
    )
    return device


def _trust(world: World, idp: SoftIdp) -> TrustRoot:
    proof = world.gate.proof
    assert proof is not None
    return trusting(PublicKeys(proof.keys.public_jwks()), idp)


def _signed(device: SoftAuthenticator, proposal: Proposal, **kw: Any) -> Decision:
    assertion = device.approval(proposal.proposal_id, proposal.args_digest, **kw)
    for derived in ("public_key", "version"):  # the gate takes these from its own records
        assertion.pop(derived)
    return Decision(DecisionKind.APPROVE, proposal.version, device=assertion)


def test_device_signed_approval_runs_and_verifies_offline(
    world: World, device: SoftAuthenticator, idp: SoftIdp
) -> None:
    """alice's passkey signs the high-risk refund; it runs once; the bundle re-checks the device."""
    proposal = world.propose(**HIGH)
    assert proposal.policy["device"] == "or_retype"
    result = world.gate.decide(
        APPROVER, proposal.proposal_id, _signed(device, proposal), idempotency_key="d1"
    )
    assert result.confirmation_token is not None
    world.gate.execute(AGENT, proposal.proposal_id, result.confirmation_token)
    assert world.ledger_amounts() == [("ord_9200", 100_000)]
    [decision] = [
        e.payload()
        for e in world.gate.audit_events(AGENT, proposal_id=proposal.proposal_id)
        if e.kind == "decision.approved"
    ]
    assert decision["device"]["credential_id"] == device.credential_id
    report = verify_bundle(world.gate.export_bundle("acme"), _trust(world, idp))
    assert report.ok, report.findings
    assert report.device_signatures == 1


def _run_device_approved(world: World, device: SoftAuthenticator) -> None:
    proposal = world.propose(**HIGH)
    result = world.gate.decide(
        APPROVER, proposal.proposal_id, _signed(device, proposal), idempotency_key="d1"
    )
    assert result.confirmation_token is not None
    world.gate.execute(AGENT, proposal.proposal_id, result.confirmation_token)
    assert world.ledger_amounts() == [("ord_9200", 100_000)]


def test_a_passkey_the_operator_enrolled_fails_offline(world: World, idp: SoftIdp) -> None:
    """Issue 22: a passkey enrolled with no identity provider's evidence (the operator
    enrolled a key for alice) signs a high-risk refund; the gate took it, but the offline
    verifier fails it, even trusting alice's provider."""
    device = _enrol(world, APPROVER, SoftAuthenticator())
    _run_device_approved(world, device)
    report = verify_bundle(world.gate.export_bundle("acme"), _trust(world, idp))
    assert [f.code for f in report.findings] == ["device_enrolment_unvouched"]
    assert report.device_signatures == 0


def test_an_enrolment_token_from_another_provider_fails_offline(world: World, idp: SoftIdp) -> None:
    """An ID token signed by a provider the verifier does not trust (the operator's own)
    vouches for nothing; the trusted provider's keys are the only ones that count."""
    device = _enrol(world, APPROVER, SoftAuthenticator(), SoftIdp())  # same issuer, other key
    _run_device_approved(world, device)
    report = verify_bundle(world.gate.export_bundle("acme"), _trust(world, idp))
    [finding] = report.findings
    assert finding.code == "device_enrolment_unvouched"
    assert "does not verify" in finding.message


def test_an_enrolment_token_for_another_credential_fails_offline(
    world: World, idp: SoftIdp
) -> None:
    """alice's real ID token of another enrolment, copied onto a key the operator enrolled
    for her: the token's nonce binds the other credential, so it vouches for nothing here."""
    genuine, forged = SoftAuthenticator(), SoftAuthenticator()
    at = int(world.clock.now().timestamp())
    world.gate.register_passkey(
        APPROVER,
        credential_id=forged.credential_id,
        public_key="(COSE key)",
        public_jwk=forged.public_jwk(),
        sign_count=0,
        evidence=idp.evidence(genuine, at=at),
    )
    _run_device_approved(world, forged)
    report = verify_bundle(world.gate.export_bundle("acme"), _trust(world, idp))
    [finding] = report.findings
    assert (finding.code, "nonce" in finding.message) == ("device_enrolment_unvouched", True)


def test_an_assertion_replayed_for_another_approver_is_refused(
    world: World, device: SoftAuthenticator, idp: SoftIdp
) -> None:
    """The challenge binds the approver: alice's assertion, posted as bob's decision with a
    passkey of the same key enrolled for bob, does not verify (gate and offline)."""
    twin = SoftAuthenticator()
    twin.key, twin.credential_id = device.key, "bob-" + device.credential_id
    _enrol(world, APPROVER_2, twin, idp)
    proposal = world.propose(**HIGH)
    alices = device.approval(proposal.proposal_id, proposal.args_digest)
    alices["credential_id"] = twin.credential_id
    for derived in ("public_key", "version"):
        alices.pop(derived)
    decision = Decision(DecisionKind.APPROVE, proposal.version, device=alices)
    with pytest.raises(DeviceSignatureInvalid, match="another challenge"):
        world.gate.decide(APPROVER_2, proposal.proposal_id, decision, idempotency_key="bob")
    assert world.gate.proposal(AGENT, proposal.proposal_id).approvals == ()


def test_an_enrolled_approver_must_use_the_passkey(world: World, device: SoftAuthenticator) -> None:
    """With a passkey enrolled, a re-typed approval of a high-risk refund is refused."""
    proposal = world.propose(**HIGH)
    decision = Decision(DecisionKind.APPROVE, 1, retyped={"amount_minor": "100000"})
    with pytest.raises(DeviceSignatureRequired, match="passkey"):
        world.gate.decide(APPROVER, proposal.proposal_id, decision, idempotency_key="r1")
    assert world.gate.proposal(AGENT, proposal.proposal_id).version == 1


def test_without_a_passkey_retyping_is_the_fallback(world: World) -> None:
    """bob has no passkey: or_retype lets him approve by re-typing the amount."""
    proposal = world.propose(**HIGH)
    decision = Decision(DecisionKind.APPROVE, 1, retyped={"amount_minor": "100000"})
    result = world.gate.decide(APPROVER_2, proposal.proposal_id, decision, idempotency_key="b1")
    assert result.confirmation_token is not None


def test_another_proposals_challenge_is_refused(world: World, device: SoftAuthenticator) -> None:
    """An assertion over proposal B's challenge does not approve proposal A."""
    a, b = world.propose(**HIGH), world.propose(order_id="ord_9200", amount_minor=100_001)
    signed_for_b = _signed(device, b).device
    decision = Decision(DecisionKind.APPROVE, a.version, device=signed_for_b)
    with pytest.raises(DeviceSignatureInvalid, match="another challenge"):
        world.gate.decide(APPROVER, a.proposal_id, decision, idempotency_key="x1")
    assert world.gate.proposal(AGENT, a.proposal_id).version == 1
    assert world.ledger_amounts() == []


def test_a_replayed_assertion_is_refused(world: World, device: SoftAuthenticator) -> None:
    """An assertion whose sign counter does not move past the last one used is refused."""
    a, b = world.propose(**HIGH), world.propose(order_id="ord_9200", amount_minor=100_001)
    early = _signed(device, a)  # counter 1
    later = _signed(device, b)  # counter 2, used first
    world.gate.decide(APPROVER, b.proposal_id, later, idempotency_key="b-ok")
    with pytest.raises(DeviceSignatureInvalid, match="used before"):
        world.gate.decide(APPROVER, a.proposal_id, early, idempotency_key="a-late")
    assert world.gate.proposal(AGENT, a.proposal_id).version == 1


def test_someone_elses_passkey_is_refused(world: World, device: SoftAuthenticator) -> None:
    """bob cannot approve with alice's enrolled credential."""
    proposal = world.propose(**HIGH)
    with pytest.raises(DeviceSignatureInvalid, match="not one you enrolled"):
        world.gate.decide(
            APPROVER_2, proposal.proposal_id, _signed(device, proposal), idempotency_key="bob"
        )


def test_wrong_rp_id_is_refused(world: World, device: SoftAuthenticator) -> None:
    """An assertion made for another relying party's ID does not verify."""
    proposal = world.propose(**HIGH)
    decision = _signed(device, proposal, rp_id="evil.example")
    assert decision.device is not None
    decision.device["rp_id"] = "signoff.test"
    with pytest.raises(DeviceSignatureInvalid, match="RP ID"):
        world.gate.decide(APPROVER, proposal.proposal_id, decision, idempotency_key="rp")


def test_a_device_that_keeps_no_counter_signs_with_zero_each_time(world: World) -> None:
    """Counter 0 on a passkey enrolled at 0 is a device without a counter: accepted."""
    device = _enrol(world, APPROVER, SoftAuthenticator())
    for i, amount in enumerate((100_000, 100_001)):
        proposal = world.propose(order_id="ord_9200", amount_minor=amount)
        device.counter = -1  # the next assertion carries 0
        world.gate.decide(
            APPROVER, proposal.proposal_id, _signed(device, proposal), idempotency_key=f"z{i}"
        )
        assert world.gate.proposal(AGENT, proposal.proposal_id).approvals[0].approver == "alice"


def test_the_same_counter_twice_is_a_replay(world: World, device: SoftAuthenticator) -> None:
    """Counter 1 used; another assertion also at 1 (not past it) is refused."""
    a, b = world.propose(**HIGH), world.propose(order_id="ord_9200", amount_minor=100_001)
    world.gate.decide(APPROVER, a.proposal_id, _signed(device, a), idempotency_key="a")
    device.counter = 0  # the next assertion carries 1 again
    with pytest.raises(DeviceSignatureInvalid, match="used before"):
        world.gate.decide(APPROVER, b.proposal_id, _signed(device, b), idempotency_key="b")


def test_enrolment_is_recorded_once_with_the_public_key(
    world: World, device: SoftAuthenticator
) -> None:
    """The chain holds who enrolled which credential and its public key (the offline
    verifier checks device signatures against it); the same credential twice is refused."""
    [event] = [e for e in world.gate.audit_events(AUDITOR) if e.kind == "passkey.registered"]
    assert event.actor == "alice"
    recorded = event.payload()
    assert recorded["evidence"]["kind"] == "idp"
    assert recorded | {"request_id": None, "evidence": None} == {
        "credential_id": device.credential_id,
        "public_key": device.public_jwk(),
        "evidence": None,
        "request_id": None,
    }
    [record] = world.gate.passkeys(APPROVER)
    assert record.public_jwk == json.dumps(device.public_jwk(), sort_keys=True)
    with pytest.raises(DeviceSignatureInvalid, match="already enrolled"):
        _enrol(world, APPROVER_2, device)
    kinds = [e.kind for e in world.gate.audit_events(AUDITOR)]
    assert kinds.count("passkey.registered") == 1


def test_an_assertion_another_key_signed_is_refused(
    world: World, device: SoftAuthenticator
) -> None:
    """Everything in the assertion names this decision and alice's enrolled credential, but
    the signature is another key's: refused, no token, nothing refunded."""
    proposal = world.propose(**HIGH)
    impostor = SoftAuthenticator()  # the same credential id, another private key
    assert impostor.credential_id == device.credential_id
    with pytest.raises(DeviceSignatureInvalid, match="does not verify"):
        world.gate.decide(
            APPROVER, proposal.proposal_id, _signed(impostor, proposal), idempotency_key="fake"
        )
    after = world.gate.proposal(AGENT, proposal.proposal_id)
    assert (after.version, after.approvals) == (1, ())
    with pytest.raises(InvalidState, match="no token"):
        world.gate.confirmation_token(AGENT, proposal.proposal_id)
    assert world.ledger_amounts() == []


def test_evidence_device_requires_the_passkey_even_without_an_enrolment(world: World) -> None:
    """A policy file's `evidence = "device"`: bob has no passkey, and still may not approve by
    clicking (offline verification would fail it: `device_required`)."""
    from signoff import Gate
    from signoff.policy import parse_policy
    from tests.conftest import REFUND, TOKEN_KEY

    policy = parse_policy('[tools.refund_order]\nevidence = "device"\n')
    gate = Gate(
        world.gate.catalog, world.store, token_key=TOKEN_KEY, clock=world.clock,
        directory=world.directory, policy=policy,
    )  # fmt: skip
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    decision = Decision(DecisionKind.APPROVE, proposal.version)
    with pytest.raises(DeviceSignatureRequired):
        gate.decide(APPROVER_2, proposal.proposal_id, decision, idempotency_key="e1")

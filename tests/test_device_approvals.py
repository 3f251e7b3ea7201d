"""Device-signed approvals at the gate: required when enrolled, bound to one decision, once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from signoff import Decision, DecisionKind, Principal, Proposal
from signoff.exceptions import DeviceSignatureInvalid, DeviceSignatureRequired, InvalidState
from signoff.proof import PublicKeys, verify_bundle
from tests.conftest import AGENT, APPROVER, APPROVER_2, World, make_world
from tests.proof.conftest import SoftAuthenticator

HIGH = {"order_id": "ord_9200", "amount_minor": 100_000}
AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, token_form="signed")
    yield w
    w.store.close()
    w.shop.close()


@pytest.fixture
def device(world: World) -> SoftAuthenticator:
    """alice's passkey, enrolled (as the page does after py_webauthn checked it)."""
    return _enrol(world, APPROVER, SoftAuthenticator())


def _enrol(world: World, who: Principal, device: SoftAuthenticator) -> SoftAuthenticator:
    world.gate.register_passkey(
        who,
        credential_id=device.credential_id,
        public_key="(COSE key, used by py_webauthn on the page)",
        public_jwk=device.public_jwk(),
        sign_count=0,
    )
    return device


def _signed(device: SoftAuthenticator, proposal: Proposal, **kw: Any) -> Decision:
    assertion = device.approval(proposal.proposal_id, proposal.args_digest, **kw)
    for derived in ("public_key", "version"):  # the gate takes these from its own records
        assertion.pop(derived)
    return Decision(DecisionKind.APPROVE, proposal.version, device=assertion)


def test_device_signed_approval_runs_and_verifies_offline(
    world: World, device: SoftAuthenticator
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
    proof = world.gate.proof
    assert proof is not None
    report = verify_bundle(world.gate.export_bundle("acme"), PublicKeys(proof.keys.public_jwks()))
    assert report.ok, report.findings
    assert report.device_signatures == 1


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
    assert event.payload() | {"request_id": None} == {
        "credential_id": device.credential_id,
        "public_key": device.public_jwk(),
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

"""The offline verifier catches what a server that skipped its own checks wrote down.

PROTOCOL rule 17: under a device policy, an approval without valid evidence fails offline
verification whoever holds signoff's keys. Each test runs a real gate flow on a server whose
check was switched off (as an operator with the database and the keys could), exports the
tenant's bundle and runs ``signoff audit verify --bundle`` on it: exit 1, naming the finding.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from signoff import Decision, DecisionKind, Proposal
from signoff._canonical import args_digest
from signoff.cli._main import cli
from signoff.gate import _decide, _device
from signoff.proof import PublicKeys
from tests.conftest import AGENT, APPROVER, World, make_world
from tests.proof.conftest import IDP, SoftAuthenticator, trusting

HIGH = {"order_id": "ord_9200", "amount_minor": 100_000}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, token_form="signed")
    yield w
    w.store.close()
    w.shop.close()


def _verify_offline(world: World) -> tuple[int, str]:
    """Export the tenant's bundle and a trust file (signoff's public keys and alice's
    identity provider) to files; run the CLI verifier on them."""
    proof = world.gate.proof
    assert proof is not None
    bundle, trust = world.path / "bundle.json", world.path / "trust.json"
    bundle.write_text(json.dumps(world.gate.export_bundle("acme")))
    root = trusting(PublicKeys(proof.keys.public_jwks()), IDP)
    trust.write_text(json.dumps(root.to_document()))
    result = CliRunner().invoke(
        cli, ["audit", "verify", "--bundle", str(bundle), "--trust", str(trust)]
    )
    return result.exit_code, result.output


def _enrol(world: World, device: SoftAuthenticator) -> None:
    world.gate.register_passkey(
        APPROVER,
        credential_id=device.credential_id,
        public_key="(COSE key, used by py_webauthn on the page)",
        public_jwk=device.public_jwk(),
        sign_count=0,
        evidence=IDP.evidence(device, at=int(world.clock.now().timestamp())),
    )


def _device_decision(device: SoftAuthenticator, proposal: Proposal) -> Decision:
    assertion = device.approval(proposal.proposal_id, proposal.args_digest)
    for derived in ("public_key", "version"):  # the gate takes these from its own records
        assertion.pop(derived)
    return Decision(DecisionKind.APPROVE, proposal.version, device=assertion)


def _approve_and_run(world: World, proposal: Proposal, decision: Decision) -> None:
    result = world.gate.decide(APPROVER, proposal.proposal_id, decision, idempotency_key="d1")
    assert result.confirmation_token is not None
    world.gate.execute(AGENT, proposal.proposal_id, result.confirmation_token)
    assert world.ledger_amounts() == [(proposal.arguments["order_id"], 100_000)]


def test_an_honest_device_signed_refund_verifies(world: World) -> None:
    """The baseline: alice's own passkey signed; the bundle verifies (exit 0)."""
    device = SoftAuthenticator()
    _enrol(world, device)
    proposal = world.propose(**HIGH)
    _approve_and_run(world, proposal, _device_decision(device, proposal))
    code, output = _verify_offline(world)
    assert code == 0, output
    assert "1 executions checked, 1 device signatures verified" in output


def test_a_passkey_the_operator_enrolled_fails_the_bundle(world: World) -> None:
    """Issue 22: an operator enrolled a key "for alice" with no identity provider's evidence
    and signed a high-risk refund with it; the gate took it, the bundle fails (exit 1)."""
    device = SoftAuthenticator()
    world.gate.register_passkey(
        APPROVER,
        credential_id=device.credential_id,
        public_key="(COSE key)",
        public_jwk=device.public_jwk(),
        sign_count=0,
    )
    proposal = world.propose(**HIGH)
    _approve_and_run(world, proposal, _device_decision(device, proposal))
    code, output = _verify_offline(world)
    assert code == 1, output
    assert "BROKEN [device_enrolment_unvouched]" in output
    assert "0 device signatures verified" in output


def test_a_device_signature_that_does_not_verify_fails_the_bundle(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server accepted an assertion another key signed (its check switched off): the
    refund ran, and the exported bundle says ``device_signature_invalid`` (exit 1)."""
    _enrol(world, SoftAuthenticator())
    monkeypatch.setattr(_device, "_verify", lambda assertion, principal, proposal, decision: 1)
    proposal = world.propose(**HIGH)
    impostor = SoftAuthenticator()  # alice's credential id, another private key
    _approve_and_run(world, proposal, _device_decision(impostor, proposal))
    code, output = _verify_offline(world)
    assert code == 1, output
    assert "BROKEN [device_signature_invalid]" in output
    assert "does not verify" in output


def test_an_approval_of_another_digest_fails_the_bundle(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server recorded alice's approval as naming another digest than the proposal's
    (¥100.00 where ¥1,000.00 was proposed and executed): ``approval_digest_mismatch``."""
    real = _decide._decision_data

    def other_digest(*args: Any, **kwargs: Any) -> dict[str, Any]:
        data = real(*args, **kwargs)
        other = {**args[0].arguments, "amount_minor": 10_000}
        return {**data, "args_digest": args_digest("refund_order", "1", other)}

    monkeypatch.setattr(_decide, "_decision_data", other_digest)
    proposal = world.propose(**HIGH, currency="CNY")
    retyped = Decision(DecisionKind.APPROVE, proposal.version, retyped={"amount_minor": "100000"})
    _approve_and_run(world, proposal, retyped)
    code, output = _verify_offline(world)
    assert code == 1, output
    assert "BROKEN [approval_digest_mismatch]" in output
    assert "BROKEN [executed_digest_mismatch]" not in output

"""Secure Payment Confirmation: what the browser showed must be what the proposal displays.

A software authenticator answers like Chromium's SPC (``clientDataJSON`` of type
``payment.get`` with ``payment.payeeName`` and ``payment.total``); the gate and the
offline verifier check the shown payee and amount against the proposal's display
values (the preview whose digest ``proposal.created`` recorded) and the challenge
against the digest, the version and the approver.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from signoff import Decision, DecisionKind, Principal, Proposal
from signoff.exceptions import DeviceSignatureInvalid
from signoff.gate import _device
from signoff.proof import PublicKeys, Report, verify_bundle
from signoff.proof._spc import major_units, spc_display
from tests.conftest import AGENT, APPROVER, World, make_world
from tests.proof.conftest import IDP, SoftAuthenticator, trusting

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
    """alice's passkey, enrolled with her identity provider's evidence."""
    device = SoftAuthenticator()
    world.gate.register_passkey(
        APPROVER,
        credential_id=device.credential_id,
        public_key="(COSE key)",
        public_jwk=device.public_jwk(),
        sign_count=0,
        evidence=IDP.evidence(device, at=int(world.clock.now().timestamp())),
    )
    return device


def _spc(device: SoftAuthenticator, proposal: Proposal, shown: dict[str, Any]) -> Decision:
    assertion = device.approval(proposal.proposal_id, proposal.args_digest, payment=shown)
    for derived in ("public_key", "version"):
        assertion.pop(derived)
    return Decision(DecisionKind.APPROVE, proposal.version, device=assertion)


def _run(world: World, proposal: Proposal, decision: Decision) -> None:
    result = world.gate.decide(APPROVER, proposal.proposal_id, decision, idempotency_key="d1")
    assert result.confirmation_token is not None
    world.gate.execute(AGENT, proposal.proposal_id, result.confirmation_token)


def _offline(world: World) -> tuple[Report, dict[str, Any]]:
    proof = world.gate.proof
    assert proof is not None
    bundle = world.gate.export_bundle("acme")
    return verify_bundle(bundle, trusting(PublicKeys(proof.keys.public_jwks()), IDP)), bundle


def _shown_in(bundle: dict[str, Any]) -> dict[str, Any]:
    """What the browser's dialog showed, read from the bundle's decision event alone."""
    [decision] = [
        json.loads(e["data"]) for e in bundle["events"] if e["kind"] == "decision.approved"
    ]
    raw = decision["device"]["client_data_json"]
    client = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    assert client["type"] == "payment.get"
    return dict(client["payment"])


def test_the_amount_the_browser_showed_is_checked_offline(
    world: World, device: SoftAuthenticator
) -> None:
    """The browser showed ¥1,000.00 (CNY 1000.00) to the proposal's payee: the refund runs
    once, and the exported bundle alone shows that amount, verified against the preview."""
    proposal = world.propose(**HIGH, currency="CNY")
    shown = spc_display(proposal.preview.to_dict())
    assert shown == {
        "payeeName": proposal.preview.title,
        "total": {"currency": "CNY", "value": "1000.00"},
    }
    _run(world, proposal, _spc(device, proposal, shown))
    assert world.ledger_amounts() == [("ord_9200", 100_000)]
    report, bundle = _offline(world)
    assert report.ok, report.findings
    assert report.device_signatures == 1
    seen = _shown_in(bundle)
    assert seen["total"] == {"currency": "CNY", "value": "1000.00"}
    assert seen["payeeName"] == "Refund ¥1,000.00 on order ord_9200"


@pytest.mark.parametrize(
    ("shown", "why"),
    [
        ({"total": {"currency": "CNY", "value": "100.00"}}, "amount"),
        ({"total": {"currency": "USD", "value": "1000.00"}}, "amount"),
        ({"payeeName": "Refund ¥100.00 on order ord_9200"}, "payee"),
    ],
)
def test_a_browser_that_showed_something_else_is_refused(
    world: World, device: SoftAuthenticator, shown: dict[str, Any], why: str
) -> None:
    """Another amount, currency or payee in the dialog: refused, nothing approved or run."""
    proposal = world.propose(**HIGH, currency="CNY")
    expected = spc_display(proposal.preview.to_dict())
    assert expected is not None
    with pytest.raises(DeviceSignatureInvalid, match=why):
        world.gate.decide(
            APPROVER,
            proposal.proposal_id,
            _spc(device, proposal, {**expected, **shown}),
            idempotency_key="x",
        )
    assert world.gate.proposal(AGENT, proposal.proposal_id).approvals == ()
    assert world.ledger_amounts() == []


def test_a_server_that_skipped_the_check_fails_offline(
    world: World, device: SoftAuthenticator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate's check switched off: an SPC assertion whose dialog showed ¥100.00 approved
    a ¥1,000.00 refund; the bundle says so (device_signature_invalid)."""
    monkeypatch.setattr(_device, "_verify", lambda *args: 1)
    proposal = world.propose(**HIGH, currency="CNY")
    expected = spc_display(proposal.preview.to_dict())
    assert expected is not None
    cheaper = {**expected, "total": {"currency": "CNY", "value": "100.00"}}
    _run(world, proposal, _spc(device, proposal, cheaper))
    report, _ = _offline(world)
    [finding] = report.findings
    assert finding.code == "device_signature_invalid"
    assert "showed the amount" in finding.message


def test_a_preview_swapped_in_the_assertion_fails_offline(
    world: World, device: SoftAuthenticator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored preview edited to match a cheaper dialog: its digest is not the one the
    proposal recorded, so the verifier does not believe it."""
    monkeypatch.setattr(_device, "_verify", lambda *args: 1)
    proposal = world.propose(**HIGH, currency="CNY")
    cheap = world.propose(order_id="ord_9200", amount_minor=10_000, currency="CNY")
    real_check = _device.check_device

    def swap(*args: Any) -> Any:
        approval = real_check(*args)
        if approval is not None:
            approval.assertion["preview"] = cheap.preview.to_dict()
        return approval

    monkeypatch.setattr("signoff.gate._decide.check_device", swap)
    shown = spc_display(cheap.preview.to_dict())
    assert shown is not None
    _run(world, proposal, _spc(device, proposal, shown))
    report, _ = _offline(world)
    assert [f.code for f in report.findings] == ["device_signature_invalid"]
    assert "preview is not the proposal's" in report.findings[0].message


def test_the_webauthn_fallback_still_verifies(world: World, device: SoftAuthenticator) -> None:
    """A browser without SPC signs a plain WebAuthn assertion: accepted, as before."""
    proposal = world.propose(**HIGH, currency="CNY")
    assertion = device.approval(proposal.proposal_id, proposal.args_digest)
    for derived in ("public_key", "version"):
        assertion.pop(derived)
    _run(world, proposal, Decision(DecisionKind.APPROVE, proposal.version, device=assertion))
    report, _ = _offline(world)
    assert report.ok, report.findings


def test_amounts_are_written_in_each_currencys_minor_units() -> None:
    """ISO 4217 exponents: yen has none, dinar three, most currencies two."""
    assert (major_units(100_000, "CNY"), major_units(1500, "JPY")) == ("1000.00", "1500")
    assert major_units(1234, "KWD") == "1.234"
    assert (
        spc_display({"title": "Send mail", "fields": [{"name": "to", "machine_value": 1}]}) is None
    )

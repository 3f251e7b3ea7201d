"""Offline: the writes under a mandate respect it, checked from an exported bundle alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest

from signoff import Decision, DecisionKind, Gate
from signoff.demo import FaultMode
from signoff.exceptions import DeviceSignatureRequired
from signoff.policy import parse_policy
from signoff.proof import PublicKeys, verify_bundle, verify_receipt
from signoff.proof._jws import sign_jws
from signoff.proof._receipt import RECEIPT_TYP
from tests.conftest import AGENT, APPROVER, TOKEN_KEY, World, make_world
from tests.proof.conftest import IDP, SoftAuthenticator, trusting

DEMO = {"currency": "CNY", "max_amount_minor": 20000, "total_amount_minor": 30000, "max_count": 3}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, token_form="signed")
    yield w
    w.store.close()
    w.shop.close()


def _mandate(world: World) -> str:
    state = world.gate.propose_mandate(AGENT, "refund_order", DEMO, expires_in_seconds=3600)
    world.gate.decide_mandate(
        APPROVER,
        state.record.mandate_id,
        Decision(DecisionKind.APPROVE, state.record.version),
        idempotency_key="m",
    )
    return state.record.mandate_id


def _write(world: World, mandate_id: str, order: str, amount: int) -> Any:
    arguments = {"order_id": order, "amount_minor": amount, "currency": "CNY", "reason": None}
    proposal = world.gate.propose(AGENT, "refund_order", arguments, mandate_id=mandate_id)
    token = world.gate.confirmation_token(AGENT, proposal.proposal_id)
    return world.gate.execute(AGENT, proposal.proposal_id, token)


def _verify(world: World) -> set[str]:
    world.gate.checkpoint_now()
    proof = world.gate.proof
    assert proof is not None
    trust = trusting(PublicKeys(proof.keys.public_jwks()), IDP)
    report = verify_bundle(world.gate.export_bundle("acme"), trust)
    return {finding.code for finding in report.findings}


def _forge_write(world: World, mandate_id: str, *, amount: int, pid: str = "prop_forged") -> None:
    """What a gate that skipped the debit's conditions would have written: a valid chain."""
    at = int(world.clock.now().timestamp() * 1_000_000)
    with world.store.transaction() as tx:
        mandate = tx.mandate("acme", mandate_id)
        assert mandate is not None
        digest = "f" * 64
        tx.append_audit(
            tenant="acme", at=at, kind="proposal.created", proposal_id=pid, actor=AGENT.label(),
            data={"tool": "refund_order", "args_digest": digest, "mandate_id": mandate_id},
        )  # fmt: skip
        tx.append_audit(
            tenant="acme", at=at, kind="mandate.debited", proposal_id=pid, actor=AGENT.label(),
            data={
                "mandate_id": mandate_id, "args_digest": digest, "resource_id": "order:ord_1099",
                "agent": AGENT.actor, "amount_minor": amount, "currency": "CNY",
                "approvers": ["alice"], "remaining_amount_minor": 0, "remaining_count": 0,
            },
        )  # fmt: skip
        tx.append_audit(
            tenant="acme", at=at, kind="execution.succeeded", proposal_id=pid,
            data={"executed_digest": digest},
        )  # fmt: skip


def test_honest_writes_under_a_mandate_verify(world: World) -> None:
    """Three writes, one refused by the provider (its amount given back), verify offline."""
    mid = _mandate(world)
    _write(world, mid, "ord_1001", 15000)
    world.provider.fail_next(FaultMode.TERMINAL)
    _write(world, mid, "ord_1002", 15000)
    _write(world, mid, "ord_1003", 15000)
    assert _verify(world) == set()


def test_a_bundle_whose_writes_exceed_the_mandate_fails(world: World) -> None:
    """A fourth write past the count and the budget, in a correctly hashed and signed log."""
    mid = _mandate(world)
    _write(world, mid, "ord_1001", 15000)
    _write(world, mid, "ord_1002", 15000)
    _forge_write(world, mid, amount=10000)
    assert "mandate_overspent" in _verify(world)


def test_a_write_above_the_per_write_maximum_fails(world: World) -> None:
    mid = _mandate(world)
    _forge_write(world, mid, amount=25000)
    assert {"mandate_exceeded", "mandate_budget_mismatch"} <= _verify(world)


def test_a_write_after_revocation_fails(world: World) -> None:
    mid = _mandate(world)
    world.gate.revoke_mandate(AGENT, mid, reason="done")
    _forge_write(world, mid, amount=1000)
    assert "mandate_ended" in _verify(world)


def test_the_signed_receipt_of_a_write_names_its_mandate(world: World) -> None:
    mid = _mandate(world)
    result = _write(world, mid, "ord_1001", 12000)
    assert result.signed_receipt is not None
    proof = world.gate.proof
    assert proof is not None
    report = verify_receipt(result.signed_receipt, PublicKeys(proof.keys.public_jwks()))
    assert report.ok, report.findings
    claims = jwt.decode(result.signed_receipt, options={"verify_signature": False})
    assert claims["mandate"]["mandate_id"] == mid
    assert claims["mandate"]["approvers"] == ["alice"]
    assert (claims["mandate"]["remaining_amount_minor"], claims["mandate"]["remaining_count"]) == (
        18000,
        2,
    )


@pytest.mark.parametrize("vouched", [True, False])
def test_a_device_signed_mandate_approval_is_required_and_verifies_offline(
    world: World, vouched: bool
) -> None:
    """[tools.refund_order.mandate] device = "required": the approver's passkey signs the
    mandate's own digest; without it nothing is approved; the bundle re-checks it — and
    counts it only when an identity provider vouched for the passkey's enrolment."""
    gate = Gate(
        world.gate.catalog,
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        proof=world.gate.proof,
        policy=parse_policy('[tools.refund_order.mandate]\ndevice = "required"\n'),
    )
    device = SoftAuthenticator()
    gate.register_passkey(
        APPROVER,
        credential_id=device.credential_id,
        public_key="(COSE key)",
        public_jwk=device.public_jwk(),
        sign_count=0,
        evidence=IDP.evidence(device, at=int(world.clock.now().timestamp())) if vouched else None,
    )
    state = gate.propose_mandate(AGENT, "refund_order", DEMO, expires_in_seconds=600)
    mid, version = state.record.mandate_id, state.record.version
    with pytest.raises(DeviceSignatureRequired):
        gate.decide_mandate(
            APPROVER, mid, Decision(DecisionKind.APPROVE, version), idempotency_key="a"
        )
    assertion = device.approval(mid, state.record.digest, version=version)
    for derived in ("public_key", "version"):
        assertion.pop(derived)
    decided = gate.decide_mandate(
        APPROVER,
        mid,
        Decision(DecisionKind.APPROVE, version, device=assertion),
        idempotency_key="b",
    )
    assert decided.status == "active"
    arguments = {"order_id": "ord_1001", "amount_minor": 5000, "currency": "CNY", "reason": None}
    proposal = gate.propose(AGENT, "refund_order", arguments, mandate_id=mid)
    gate.execute(AGENT, proposal.proposal_id, gate.confirmation_token(AGENT, proposal.proposal_id))
    if vouched:
        assert _verify(world) == set()
    else:  # the approval does not count, so neither does the mandate its write relied on
        assert "device_enrolment_unvouched" in _verify(world)


def test_a_receipt_whose_mandate_claim_differs_from_its_events_is_refused(world: World) -> None:
    """The mandate a receipt names (and what it says is left) is checked against its events."""
    mid = _mandate(world)
    result = _write(world, mid, "ord_1001", 12000)
    proof = world.gate.proof
    assert proof is not None and result.signed_receipt is not None
    claims = jwt.decode(result.signed_receipt, options={"verify_signature": False})
    claims["mandate"]["remaining_amount_minor"] = 30000
    forged = sign_jws(proof.keys.active_key, claims, typ=RECEIPT_TYP)
    report = verify_receipt(forged, PublicKeys(proof.keys.public_jwks()))
    assert {f.code for f in report.findings} == {"receipt_mismatch"}

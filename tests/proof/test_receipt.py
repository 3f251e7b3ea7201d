"""A signed receipt proves one write alone: its events, inclusion proofs and checkpoint."""

from __future__ import annotations

from typing import Any

from signoff.proof import KeySet, PublicKeys, Report, evidence_for, sign_receipt, verify_receipt
from signoff.proof._events import leaf_of
from signoff.proof._jws import sign_jws
from signoff.proof._merkle import inclusion_proof
from signoff.proof._receipt import RECEIPT_TYP, stated_claims
from tests.proof.conftest import Log, refund_flow, signed_checkpoints


def _receipt(keyset: KeySet, *, executed: str | None = None) -> tuple[str, Log]:
    log = Log()
    refund_flow(log, "prp_0")
    refund_flow(log, "prp_1", executed=executed)
    refund_flow(log, "prp_2")
    [(size, note)] = signed_checkpoints(log.events, keyset, [10])
    mine = [e for e in log.events[:size] if e.proposal_id == "prp_1"]
    leaves = [leaf_of(e) for e in log.events[:size]]
    token = sign_receipt(
        keyset.active_key,
        issuer="https://signoff.test",
        issued_at=1,
        events=mine,
        evidence=evidence_for(mine, lambda i: inclusion_proof(i, leaves), note),
    )
    return token, log


def _codes(report: Report) -> set[str]:
    return {f.code for f in report.findings}


def test_receipt_verifies_alone(keyset: KeySet) -> None:
    """Signature, checkpoint, five inclusion proofs and the stated claims all hold."""
    token, _ = _receipt(keyset)
    report = verify_receipt(token, PublicKeys(keyset.public_jwks()))
    assert report.ok, report.findings
    assert (report.events, report.covered, report.executions) == (5, 5, 1)


def test_receipt_states_the_protocol_fields(keyset: KeySet) -> None:
    """Proposal, tool + version, digest, resource + state, approvers, key, reference, outcome."""
    _, log = _receipt(keyset)
    stated = stated_claims([e for e in log.events if e.proposal_id == "prp_1"])
    assert stated["op"] == {"tool": "refund_order", "version": "1"}
    assert stated["resource"] == {"id": "ord_1001", "state": "v1"}
    assert stated["approvers"][0]["subject"] == "alice"
    assert stated["approvers"][0]["role"] == "role:refund_approver"
    assert (stated["outcome"], stated["provider_reference"]) == ("succeeded", "re_prp_1")
    assert stated["request_key"] == "rk:prp_1"


def test_receipt_whose_execution_digest_differs_from_its_approval(keyset: KeySet) -> None:
    """Executed digest ≠ approved digest is named, though everything is signed."""
    token, _ = _receipt(keyset, executed="e" * 64)
    report = verify_receipt(token, PublicKeys(keyset.public_jwks()))
    assert _codes(report) == {"executed_digest_mismatch"}


def test_receipt_from_another_key_is_refused(keyset: KeySet) -> None:
    """A receipt signed by a key outside the trusted JWKS fails its signature check."""
    token, _ = _receipt(KeySet.generate())
    assert _codes(verify_receipt(token, PublicKeys(keyset.public_jwks()))) == {"receipt_signature"}


def _resigned(keyset: KeySet, token: str, change: Any) -> str:
    import base64
    import json

    payload = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    change(payload)
    return sign_jws(keyset.active_key, payload, typ=RECEIPT_TYP)


def test_claims_that_differ_from_the_evidence_are_named(keyset: KeySet) -> None:
    """Even validly signed, a receipt naming mallory over alice's events is refused."""
    token, _ = _receipt(keyset)
    forged = _resigned(keyset, token, lambda p: p["approvers"][0].update(subject="mallory"))
    assert _codes(verify_receipt(forged, PublicKeys(keyset.public_jwks()))) == {"receipt_mismatch"}


def test_evidence_outside_the_checkpoint_is_named(keyset: KeySet) -> None:
    """An inclusion proof that does not lead to the signed root is named."""
    token, _ = _receipt(keyset)

    def break_proof(payload: dict[str, Any]) -> None:
        payload["evidence"]["proofs"][0] = payload["evidence"]["proofs"][1]

    forged = _resigned(keyset, token, break_proof)
    assert "not_included" in _codes(verify_receipt(forged, PublicKeys(keyset.public_jwks())))


def test_a_receipt_without_an_integer_iat_is_refused(keyset: KeySet) -> None:
    """The key window is checked at the receipt's own signed time; no time, no proof."""
    token, _ = _receipt(keyset)
    for iat in (None, "1", True):
        forged = _resigned(keyset, token, lambda p, iat=iat: p.update(iat=iat))
        assert "key_window" in _codes(verify_receipt(forged, PublicKeys(keyset.public_jwks())))


def test_evidence_events_of_another_tenant_are_refused(keyset: KeySet) -> None:
    """A receipt's events must all be of the tenant it names (as in a bundle)."""
    token, _ = _receipt(keyset)

    def other_tenant(payload: dict[str, Any]) -> None:
        payload["evidence"]["events"][1]["tenant"] = "globex"

    forged = _resigned(keyset, token, other_tenant)
    assert "wrong_tenant" in _codes(verify_receipt(forged, PublicKeys(keyset.public_jwks())))

"""Offline bundle verification: an intact log verifies; each kind of tampering is named."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import jwt
import pytest

from signoff.exceptions import NoTrustRoot
from signoff.proof import KeySet, PublicKeys, Report, TrustRoot, build_bundle, verify_bundle
from tests.proof.conftest import (
    IDP,
    ORIGIN,
    POLICY,
    TENANT,
    Log,
    SoftAuthenticator,
    SoftIdp,
    refund_flow,
    rehash,
    signed_checkpoints,
    trusting,
)


def _log(flows: int = 3) -> Log:
    log = Log()
    for i in range(flows):
        refund_flow(log, f"prp_{i}")
    return log


def _bundle(log: Log, keyset: KeySet, sizes: list[int], **kw: Any) -> dict[str, Any]:
    return build_bundle(
        tenant=TENANT,
        origin=ORIGIN,
        events=log.events,
        checkpoints=signed_checkpoints(log.events, keyset, sizes),
        jwks=keyset.public_jwks(),
        **kw,
    )


def _trust(keyset: KeySet) -> TrustRoot:
    return trusting(PublicKeys(keyset.public_jwks()), IDP)


def _codes(report: Report) -> set[str]:
    return {finding.code for finding in report.findings}


def test_intact_bundle_verifies_with_trusted_keys(keyset: KeySet) -> None:
    """Chain, tree, signatures, consistency and approvals all hold; nothing uncovered."""
    log = _log()
    report = verify_bundle(_bundle(log, keyset, [5, 10, 15]), PublicKeys(keyset.public_jwks()))
    assert report.ok, report.findings
    assert (report.events, report.checkpoints, report.covered, report.uncovered) == (15, 3, 15, 0)
    assert report.executions == 3
    assert report.notes == []


def test_bundle_survives_json_round_trip(keyset: KeySet) -> None:
    """What is written to a file and read back verifies the same."""
    document = json.loads(json.dumps(_bundle(_log(), keyset, [15])))
    assert verify_bundle(document, PublicKeys(keyset.public_jwks())).ok


def test_events_after_the_last_checkpoint_fail_unless_allowed(keyset: KeySet) -> None:
    """Events newer than the last checkpoint fail; --allow-uncovered reports them instead."""
    document = _bundle(_log(), keyset, [10])
    report = verify_bundle(document, _trust(keyset))
    assert _codes(report) == {"events_uncovered"}
    assert (report.covered, report.uncovered) == (10, 5)
    allowed = verify_bundle(document, _trust(keyset), allow_uncovered=True)
    assert allowed.ok and "5 events after checkpoint 10" in allowed.notes[0]


def test_rewritten_history_with_recomputed_hashes_is_caught(keyset: KeySet) -> None:
    """alice → mallory, hashes and links recomputed: the chain holds, the signed root not."""
    log = _log()
    checkpoints = signed_checkpoints(log.events, keyset, [5, 15])
    forged = [
        dataclasses.replace(e, actor="mallory") if e.kind == "decision.approved" else e
        for e in log.events
    ]
    document = build_bundle(
        tenant=TENANT, origin=ORIGIN, events=rehash(forged), checkpoints=checkpoints,
        jwks=keyset.public_jwks(),
    )  # fmt: skip
    report = verify_bundle(document, PublicKeys(keyset.public_jwks()))
    assert "checkpoint_mismatch" in _codes(report)
    assert "chain_broken" not in _codes(report) and "event_edited" not in _codes(report)


def test_edited_event_without_rehash_is_caught(keyset: KeySet) -> None:
    """An edit that leaves the old hash in place is named as edited content."""
    document = _bundle(_log(), keyset, [15])
    document["events"][1]["actor"] = "mallory"
    assert "event_edited" in _codes(verify_bundle(document, PublicKeys(keyset.public_jwks())))


def test_dropped_tail_after_a_checkpoint_is_caught(keyset: KeySet) -> None:
    """A checkpoint signed 15 events; a bundle ending at 12 is missing signed events."""
    document = _bundle(_log(), keyset, [5, 15])
    document["events"] = document["events"][:12]
    report = verify_bundle(document, PublicKeys(keyset.public_jwks()))
    assert _codes(report) == {"events_missing"}


def test_swapped_key_is_caught(keyset: KeySet) -> None:
    """Checkpoints re-signed with another key (and that key put in the bundle) fail pinned keys."""
    log = _log()
    attacker = KeySet.generate()
    document = _bundle(log, attacker, [15])
    report = verify_bundle(document, PublicKeys(keyset.public_jwks()))
    assert _codes(report) == {"checkpoint_signature", "no_checkpoint"}


def test_a_bundle_without_a_trust_root_never_verifies(keyset: KeySet) -> None:
    """The keys a bundle carries are never trusted: no trust root, no verification."""
    with pytest.raises(NoTrustRoot):
        verify_bundle(_bundle(_log(), keyset, [15]), None)


def test_inconsistent_checkpoint_is_caught(keyset: KeySet) -> None:
    """A later checkpoint over a forked history does not extend the earlier one."""
    log = _log()
    early = signed_checkpoints(log.events, keyset, [5])
    forked = rehash([dataclasses.replace(log.events[1], actor="mallory"), *log.events[2:]])
    forked = rehash([log.events[0], *forked])
    late = signed_checkpoints(forked, keyset, [15])
    document = build_bundle(
        tenant=TENANT, origin=ORIGIN, events=forked, checkpoints=[*early, *late],
        jwks=keyset.public_jwks(),
    )  # fmt: skip
    assert "checkpoint_inconsistent" in _codes(verify_bundle(document, _trust(keyset)))


def test_executed_digest_differs_from_approval(keyset: KeySet) -> None:
    """An execution event whose digest is not the approved one is named."""
    log = _log(1)
    refund_flow(log, "prp_x", executed="e" * 64)
    report = verify_bundle(_bundle(log, keyset, [10]), _trust(keyset))
    assert _codes(report) == {"executed_digest_mismatch"}


def test_execution_without_approval_is_caught(keyset: KeySet) -> None:
    """A log that shows an execution but no approval fails the policy check."""
    log = Log()
    refund_flow(log, "prp_0")
    events = rehash([e for e in log.events if e.kind != "decision.approved"])
    document = build_bundle(
        tenant=TENANT, origin=ORIGIN, events=events,
        checkpoints=signed_checkpoints(events, keyset, [4]), jwks=keyset.public_jwks(),
    )  # fmt: skip
    assert _codes(verify_bundle(document, _trust(keyset))) == {"executed_without_approval"}


def test_two_approvals_by_one_person_do_not_count_twice(keyset: KeySet) -> None:
    """A 2-of-N policy met by the same person twice is flagged."""
    log = Log()
    refund_flow(log, "prp_0", policy={**POLICY, "approvals": 2})
    events = list(log.events)
    events.insert(2, dataclasses.replace(events[1]))
    events = rehash(events)
    document = build_bundle(
        tenant=TENANT, origin=ORIGIN, events=events,
        checkpoints=signed_checkpoints(events, keyset, [6]), jwks=keyset.public_jwks(),
    )  # fmt: skip
    report = verify_bundle(document, _trust(keyset))
    assert {"duplicate_approver", "executed_without_approval"} <= _codes(report)


def test_since_bundle_verifies_from_a_checkpoint(keyset: KeySet) -> None:
    """A bundle exported from checkpoint 5 proves its range continues that checkpoint."""
    document = _bundle(_log(), keyset, [5, 10, 15], since=5)
    assert len(document["events"]) == 10
    report = verify_bundle(document, PublicKeys(keyset.public_jwks()))
    assert report.ok, report.findings
    assert (report.covered, report.uncovered) == (10, 0)


def test_since_bundle_with_a_forged_frontier_is_caught(keyset: KeySet) -> None:
    """A range that does not start at the signed checkpoint is named."""
    document = _bundle(_log(), keyset, [5, 15], since=5)
    document["start"]["frontier"][0] = base64.b64encode(bytes(32)).decode()
    assert "start_mismatch" in _codes(verify_bundle(document, _trust(keyset)))


def _device_log(device: dict[str, Any] | None, pid: str = "prp_d") -> Log:
    log = Log()
    refund_flow(log, pid, policy={**POLICY, "device": "required"}, device=device)
    return log


def test_device_signed_approval_verifies_offline(keyset: KeySet) -> None:
    """A high-risk approval carries an assertion that re-verifies from the bundle alone."""
    authenticator = SoftAuthenticator()
    log = Log()
    log.enrol(authenticator)
    device = authenticator.approval("prp_d", "d" * 64)
    refund_flow(log, "prp_d", policy={**POLICY, "device": "required"}, device=device)
    report = verify_bundle(_bundle(log, keyset, [6]), _trust(keyset))
    assert report.ok, report.findings
    assert report.device_signatures == 1


def _device_run(
    enrolment: Callable[[SoftAuthenticator], dict[str, Any]] | None, keyset: KeySet
) -> Report:
    """alice enrolled (with ``enrolment`` as the event's data) and approved with the device."""
    authenticator = SoftAuthenticator()
    log = Log()
    if enrolment is None:
        log.enrol(authenticator)
    else:
        log.add("passkey.registered", enrolment(authenticator), actor="alice")
    device = authenticator.approval("prp_d", "d" * 64)
    refund_flow(log, "prp_d", policy={**POLICY, "device": "required"}, device=device)
    return verify_bundle(_bundle(log, keyset, [6]), _trust(keyset))


def test_a_device_approval_from_an_unvouched_enrolment_fails(keyset: KeySet) -> None:
    """Issue 22: the enrolment is the log's word only (no evidence): the approval fails."""

    def operator_enrolled(a: SoftAuthenticator) -> dict[str, Any]:
        return {"credential_id": a.credential_id, "public_key": a.public_jwk()}

    report = _device_run(operator_enrolled, keyset)
    assert _codes(report) == {"device_enrolment_unvouched"}
    assert report.device_signatures == 0


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda t: t.update(sub="bob"), "another person"),
        (lambda t: t.update(tenant="globex"), "another tenant"),
        (lambda t: t.update(nonce="n" * 43), "nonce"),
        (lambda t: t.update(auth_time=t["iat"] - 3600), "auth_time"),
        (lambda t: t.update(iat=10_000, exp=10_300), "lifetime"),
        (lambda t: t.update(aud="another-client"), "does not verify"),
        (lambda t: t.pop("auth_time"), "auth_time"),
    ],
)
def test_an_enrolment_token_that_does_not_vouch_fails(
    keyset: KeySet, change: Any, why: str
) -> None:
    """The provider signed it, but for another person, tenant, credential, an old sign-in,
    another time or another client: the device approval fails, saying which."""

    def enrolment(a: SoftAuthenticator) -> dict[str, Any]:
        evidence = IDP.evidence(a, at=1)
        claims = jwt_claims(evidence["id_token"])
        change(claims)
        token = jwt.encode(claims, IDP.key, algorithm="RS256", headers={"kid": "idp1"})
        return {
            "credential_id": a.credential_id,
            "public_key": a.public_jwk(),
            "evidence": {"kind": "idp", "id_token": token},
        }

    report = _device_run(enrolment, keyset)
    [finding] = report.findings
    assert finding.code == "device_enrolment_unvouched"
    assert why in finding.message


def test_an_enrolment_token_of_an_untrusted_provider_fails(keyset: KeySet) -> None:
    """Signed by a provider key the trust file does not list (the same issuer name)."""

    def enrolment(a: SoftAuthenticator) -> dict[str, Any]:
        evidence = SoftIdp().evidence(a, at=1)
        return {"credential_id": a.credential_id, "public_key": a.public_jwk(),
                "evidence": evidence}  # fmt: skip

    report = _device_run(enrolment, keyset)
    assert _codes(report) == {"device_enrolment_unvouched"}


def test_a_verifier_that_trusts_no_provider_counts_no_enrolment(keyset: KeySet) -> None:
    """A vouched enrolment, checked with a trust file listing no identity provider: fails."""
    authenticator = SoftAuthenticator()
    log = Log()
    log.enrol(authenticator)
    device = authenticator.approval("prp_d", "d" * 64)
    refund_flow(log, "prp_d", policy={**POLICY, "device": "required"}, device=device)
    report = verify_bundle(_bundle(log, keyset, [6]), PublicKeys(keyset.public_jwks()))
    [finding] = report.findings
    assert finding.code == "device_enrolment_unvouched"
    assert "not in the trust file" in finding.message


def test_an_assertion_recorded_as_another_approvers_fails(keyset: KeySet) -> None:
    """Issue 22: the challenge binds the approver. alice's assertion recorded as bob's
    approval, with bob (vouched) enrolled on the same key and credential id, fails."""
    alice = SoftAuthenticator()
    log = Log()
    log.enrol(alice, actor="bob")
    device = alice.approval("prp_d", "d" * 64)  # signed over alice's challenge
    refund_flow(
        log, "prp_d", policy={**POLICY, "device": "required"}, device=device, approver="bob"
    )
    report = verify_bundle(_bundle(log, keyset, [6]), _trust(keyset))
    assert _codes(report) == {"device_signature_invalid"}
    assert "another challenge" in report.findings[0].message


def test_missing_device_signature_is_caught(keyset: KeySet) -> None:
    """A policy that asks for a device signature, met without one, is named."""
    report = verify_bundle(_bundle(_device_log(None), keyset, [5]), _trust(keyset))
    assert _codes(report) == {"device_signature_missing"}


def test_device_signature_over_another_proposal_is_caught(keyset: KeySet) -> None:
    """An assertion made for another proposal's challenge does not verify here."""
    device = SoftAuthenticator().approval("prp_other", "d" * 64)
    report = verify_bundle(_bundle(_device_log(device), keyset, [5]), _trust(keyset))
    assert _codes(report) == {"device_signature_invalid"}


def test_device_signature_for_another_origin_is_caught(keyset: KeySet) -> None:
    """An assertion whose client data names another origin than recorded is refused."""
    device = SoftAuthenticator().approval("prp_d", "d" * 64, origin="https://evil.example")
    device["origin"] = "https://signoff.test"
    report = verify_bundle(_bundle(_device_log(device), keyset, [5]), _trust(keyset))
    assert _codes(report) == {"device_signature_invalid"}


def test_device_key_other_than_enrolled_is_caught(keyset: KeySet) -> None:
    """An assertion by a key the person never enrolled is named, even if it verifies."""
    enrolled, other = SoftAuthenticator(), SoftAuthenticator()
    log = Log()
    log.enrol(enrolled)
    device = other.approval("prp_d", "d" * 64)
    refund_flow(log, "prp_d", policy={**POLICY, "device": "required"}, device=device)
    report = verify_bundle(_bundle(log, keyset, [6]), _trust(keyset))
    assert _codes(report) == {"device_key_unknown"}


def jwt_claims(token: str) -> dict[str, Any]:
    return dict(jwt.decode(token, options={"verify_signature": False}))


def test_allowing_uncovered_events_never_lists_their_executions_as_proven(
    keyset: KeySet,
) -> None:
    """--allow-uncovered reports the tail; what no trusted checkpoint covers is not proven."""
    document = _bundle(_log(), keyset, [10])
    allowed = verify_bundle(document, _trust(keyset), allow_uncovered=True)
    assert allowed.ok
    assert [p["proposal_id"] for p in allowed.proven] == ["prp_0", "prp_1"]
    covered = verify_bundle(_bundle(_log(), keyset, [15]), _trust(keyset))
    assert len(covered.proven) == 3

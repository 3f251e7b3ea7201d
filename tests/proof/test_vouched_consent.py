"""Who vouches for each approval, offline: the fabrications of issue 22 now fail.

An operator holding signoff's signing key can write any event and sign checkpoints over
it (the hand-built logs below are signed with the deployment's real key, which is what
that operator can do). What they cannot make is the identity provider's token or the
person's device signature. Under the policy recorded in the log, and under a reader's
``--require-evidence``, approvals without that evidence fail ``signoff audit verify``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from signoff.proof import (
    KeySet,
    PublicKeys,
    Report,
    TrustRoot,
    build_bundle,
    evidence_for,
    sign_receipt,
    verify_bundle,
    verify_receipt,
)
from signoff.proof._events import leaf_of
from signoff.proof._idp import signoff_authorization
from signoff.proof._merkle import inclusion_proof
from tests.proof.conftest import IDP as ENROLMENT_IDP
from tests.proof.conftest import (
    ORIGIN,
    POLICY,
    TENANT,
    Log,
    SoftAuthenticator,
    refund_flow,
    rehash,
    signed_checkpoints,
)

ISSUER = "https://ciba.idp.test"
"""Another provider than the enrolments' (conftest ``IDP``): the trust file lists both."""
DIGEST = "d" * 64
IDP_POLICY = {**POLICY, "evidence": "idp"}
DEVICE_POLICY = {**POLICY, "device": "required"}
OR_RETYPE = {**POLICY, "device": "or_retype"}


class IdPSigner:
    """An identity provider's signing key, outside signoff: what it signs, the operator can't."""

    def __init__(self, issuer: str = ISSUER, *, algorithm: str = "ES256") -> None:
        self.issuer, self.algorithm = issuer, algorithm
        self.key: Any = (
            rsa.generate_private_key(public_exponent=65537, key_size=2048)
            if algorithm == "RS256"
            else ec.generate_private_key(ec.SECP256R1())
        )

    def jwks(self) -> dict[str, Any]:
        family = RSAAlgorithm if self.algorithm == "RS256" else ECAlgorithm
        jwk = family.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**jwk, "kid": "idp-1", "alg": self.algorithm, "use": "sig"}]}

    def token(self, sub: str, pid: str, *, digest: str = DIGEST, **claims: Any) -> dict[str, Any]:
        detail = signoff_authorization(
            proposal_id=pid, version=1, tenant=TENANT, tool="refund_order", args_digest=digest,
            title="Refund order ord_1001", amount="JPY 19,900",
        )  # fmt: skip
        body = {"iss": self.issuer, "sub": sub, "aud": "signoff", "iat": 1,
                "exp": 2, "authorization_details": [detail], **claims}  # fmt: skip
        token = jwt.encode(body, self.key, algorithm=self.algorithm, headers={"kid": "idp-1"})
        return {"issuer": self.issuer, "token": token}


@pytest.fixture
def idp() -> IdPSigner:
    return IdPSigner()


def _trust(keyset: KeySet, idp: IdPSigner | None = None) -> TrustRoot:
    """The deployment's keys, the provider that vouches for enrolments and ``idp``'s."""
    ciba = () if idp is None else ({"issuer": idp.issuer, "jwks": idp.jwks()},)
    providers = (ENROLMENT_IDP.trust_entry(), *ciba)
    return TrustRoot(PublicKeys(keyset.public_jwks()), identity_providers=providers)


def _bundle(log: Log, keyset: KeySet) -> dict[str, Any]:
    notes = signed_checkpoints(log.events, keyset, [len(log.events)])
    return build_bundle(tenant=TENANT, origin=ORIGIN, events=log.events, checkpoints=notes, jwks={})


def _codes(report: Report) -> set[str]:
    return {finding.code for finding in report.findings}


def _enrol(log: Log, who: str, device: SoftAuthenticator) -> None:
    """``who`` enrolled ``device``, vouched for by the enrolments' identity provider."""
    log.enrol(device, actor=who)


def _cli(tmp_path: Path, trust: TrustRoot, *args: str, **files: Any) -> tuple[int, str, str]:
    trust_file = tmp_path / "trust.json"
    trust_file.write_text(json.dumps(trust.to_document()))
    paths = []
    for option, document in files.items():
        path = tmp_path / f"{option}.json"
        path.write_text(document if isinstance(document, str) else json.dumps(document))
        paths += [f"--{option}", str(path)]
    done = subprocess.run(
        [sys.executable, "-m", "signoff", "audit", "verify", *paths, "--trust", str(trust_file),
         *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


# (a) A refund "approved by bob" under `evidence: idp` -----------------------------------


def test_an_approval_without_the_providers_token_fails_under_evidence_idp(
    keyset: KeySet, idp: IdPSigner, tmp_path: Path
) -> None:
    """The operator writes bob's approval and signs the checkpoint with the real key: the
    policy the proposal recorded asks for the identity provider's token, and there is none."""
    log = Log()
    refund_flow(log, "prp_a", approver="bob", policy=IDP_POLICY)
    report = verify_bundle(_bundle(log, keyset), _trust(keyset, idp))
    assert _codes(report) == {"evidence_missing"}
    status, out, err = _cli(tmp_path, _trust(keyset, idp), bundle=_bundle(log, keyset))
    assert status == 1 and "BROKEN [evidence_missing]" in err and "NOT verified" in out


def test_a_token_the_operator_signed_as_the_provider_does_not_count(
    keyset: KeySet, idp: IdPSigner
) -> None:
    """A token naming the real issuer but signed with a key of the operator's: refused by
    the provider's keys from the trust file; a token of an issuer not in it, too."""
    impostor = IdPSigner()  # same issuer name, another key
    log = Log()
    refund_flow(log, "prp_a", approver="bob", policy=IDP_POLICY, idp=impostor.token("bob", "prp_a"))
    assert _codes(verify_bundle(_bundle(log, keyset), _trust(keyset, idp))) == {"evidence_invalid"}
    other = IdPSigner("https://other.test")
    log = Log()
    refund_flow(log, "prp_a", approver="bob", policy=IDP_POLICY, idp=other.token("bob", "prp_a"))
    report = verify_bundle(_bundle(log, keyset), _trust(keyset, idp))
    assert _codes(report) == {"evidence_invalid"}
    assert "not in the trust file" in report.findings[0].message


def test_the_providers_token_for_this_proposal_vouches_for_the_approval(
    keyset: KeySet, idp: IdPSigner, tmp_path: Path
) -> None:
    """bob's own token, naming this proposal and digest, verifies with the provider's keys
    alone; the report says the identity provider vouched for it, in text and in --json."""
    log = Log()
    refund_flow(log, "prp_a", approver="bob", policy=IDP_POLICY, idp=idp.token("bob", "prp_a"))
    report = verify_bundle(_bundle(log, keyset), _trust(keyset, idp), require_evidence="idp")
    assert report.ok, report.findings
    assert [(a["subject"], a["vouched_by"], a["issuer"]) for a in report.approvals] == [
        ("bob", "idp", ISSUER)
    ]
    status, out, _ = _cli(
        tmp_path, _trust(keyset, idp), "--require-evidence", "idp", bundle=_bundle(log, keyset)
    )
    assert status == 0 and "vouched for by the identity provider's token" in out, out
    status, out, _ = _cli(tmp_path, _trust(keyset, idp), "--json", bundle=_bundle(log, keyset))
    document = json.loads(out)
    assert status == 0 and document["ok"] is True
    assert document["proven"][0]["approvers"][0]["vouched_by"] == "idp"


def test_a_token_for_another_digest_or_person_is_a_mismatch(keyset: KeySet, idp: IdPSigner) -> None:
    """The provider signed alice's consent to another digest: it vouches for neither this
    digest nor bob; without any valid token the idp policy is still unmet."""
    for token in (idp.token("bob", "prp_a", digest="e" * 64), idp.token("alice", "prp_a")):
        log = Log()
        refund_flow(log, "prp_a", approver="bob", policy=IDP_POLICY, idp=token)
        report = verify_bundle(_bundle(log, keyset), _trust(keyset, idp))
        assert _codes(report) == {"evidence_mismatch"}, report.findings
        assert report.approvals[0]["vouched_by"] == "signoff"


def test_a_token_issued_after_the_decision_does_not_count(keyset: KeySet, idp: IdPSigner) -> None:
    """A token made later (the operator got the person to approve something else afterwards)
    cannot be the evidence of an approval recorded earlier."""
    log = Log()
    late = idp.token("bob", "prp_a", iat=int(time.time()))
    refund_flow(log, "prp_a", approver="bob", policy=IDP_POLICY, idp=late)
    assert _codes(verify_bundle(_bundle(log, keyset), _trust(keyset, idp))) == {"evidence_invalid"}


# (b) A re-typed high-risk approval where the device is required -------------------------


def test_a_retyped_approval_fails_where_the_device_is_required(
    keyset: KeySet, tmp_path: Path
) -> None:
    """`device: required`, approved by re-typing (no assertion): fails, exit 1."""
    log = Log()
    refund_flow(log, "prp_b", approver="bob", policy=DEVICE_POLICY)
    assert _codes(verify_bundle(_bundle(log, keyset), _trust(keyset))) == {
        "device_signature_missing"
    }
    status, _, err = _cli(tmp_path, _trust(keyset), bundle=_bundle(log, keyset))
    assert status == 1 and "[device_signature_missing]" in err


def test_a_retyped_approval_fails_for_a_person_who_had_enrolled_a_passkey(
    keyset: KeySet, tmp_path: Path
) -> None:
    """`device: or_retype`: bob had enrolled a passkey, so re-typing was not his to use
    (the gate refuses it; offline it now fails too). Someone without one may re-type."""
    log = Log()
    _enrol(log, "bob", SoftAuthenticator())
    refund_flow(log, "prp_b", approver="bob", policy=OR_RETYPE)
    report = verify_bundle(_bundle(log, keyset), _trust(keyset))
    assert _codes(report) == {"device_required"}
    status, _, err = _cli(tmp_path, _trust(keyset), bundle=_bundle(log, keyset))
    assert status == 1 and "[device_required]" in err
    unenrolled = Log()
    refund_flow(unenrolled, "prp_b", approver="bob", policy=OR_RETYPE)
    report = verify_bundle(_bundle(unenrolled, keyset), _trust(keyset))
    assert report.ok and report.approvals[0]["vouched_by"] == "signoff"


def test_an_approval_under_evidence_device_needs_the_device(keyset: KeySet) -> None:
    """`evidence: device` is met by the person's passkey, not by re-typing."""
    log = Log()
    refund_flow(log, "prp_b", approver="bob", policy={**POLICY, "evidence": "device"})
    assert _codes(verify_bundle(_bundle(log, keyset), _trust(keyset))) == {"device_required"}


# (c) A device approval with a passkey whose enrolment is not in the log -----------------


def test_a_device_approval_whose_enrolment_is_not_in_the_log_fails(
    keyset: KeySet, tmp_path: Path
) -> None:
    """The operator made a passkey "for alice" and signed with it, but wrote no enrolment:
    fails (it was a note before). With the enrolment written after the approval, too."""
    device = SoftAuthenticator()
    log = Log()
    refund_flow(log, "prp_c", policy=DEVICE_POLICY, device=device.approval("prp_c", DIGEST))
    assert _codes(verify_bundle(_bundle(log, keyset), _trust(keyset))) == {
        "device_enrolment_missing"
    }
    status, _, err = _cli(tmp_path, _trust(keyset), bundle=_bundle(log, keyset))
    assert status == 1 and "[device_enrolment_missing]" in err
    _enrol(log, "alice", device)  # enrolled after approving: still nothing vouched then
    assert "device_enrolment_missing" in _codes(verify_bundle(_bundle(log, keyset), _trust(keyset)))


def test_a_device_approval_names_whether_its_enrolment_is_vouched(
    keyset: KeySet, tmp_path: Path
) -> None:
    """An enrolled passkey's approval verifies and is vouched for by the device, its
    enrolment vouched for by the identity provider; the same approval from an enrolment
    without the provider's evidence (the operator's word) is named unvouched and fails."""
    device = SoftAuthenticator()
    log = Log()
    _enrol(log, "alice", device)
    refund_flow(log, "prp_c", policy=DEVICE_POLICY, device=device.approval("prp_c", DIGEST))
    report = verify_bundle(_bundle(log, keyset), _trust(keyset), require_evidence="device")
    assert report.ok, report.findings
    assert report.approvals[0]["vouched_by"] == "device"
    assert report.approvals[0]["enrolment_vouched"] is True
    status, out, _ = _cli(tmp_path, _trust(keyset), bundle=_bundle(log, keyset))
    assert status == 0 and "the person's device (WebAuthn), enrolment vouched" in out
    unvouched = Log()
    registered = {"credential_id": device.credential_id, "public_key": device.public_jwk()}
    unvouched.add("passkey.registered", registered, actor="alice")
    refund_flow(unvouched, "prp_c", policy=DEVICE_POLICY, device=device.approval("prp_c", DIGEST))
    report = verify_bundle(_bundle(unvouched, keyset), _trust(keyset), require_evidence="device")
    assert _codes(report) == {"device_enrolment_unvouched", "evidence_insufficient"}
    assert report.approvals[0]["vouched_by"] == "device"
    assert report.approvals[0]["enrolment_vouched"] is False
    status, out, err = _cli(tmp_path, _trust(keyset), bundle=_bundle(unvouched, keyset))
    assert status == 1 and "[device_enrolment_unvouched]" in err
    assert "the person's device (WebAuthn), enrolment not vouched" in out


# --require-evidence --------------------------------------------------------------------


def test_require_evidence_fails_approvals_weaker_than_asked(
    keyset: KeySet, idp: IdPSigner, tmp_path: Path
) -> None:
    """idp > device > any: a re-typed approval fails device and idp; a device-signed one
    passes device, fails idp; the policy the operator recorded does not matter."""
    device = SoftAuthenticator()
    log = Log()
    _enrol(log, "alice", device)
    refund_flow(log, "prp_1")
    refund_flow(log, "prp_2", policy=DEVICE_POLICY, device=device.approval("prp_2", DIGEST))
    bundle, trust = _bundle(log, keyset), _trust(keyset, idp)
    assert verify_bundle(bundle, trust, require_evidence="any").ok
    weak = verify_bundle(bundle, trust, require_evidence="device")
    assert _codes(weak) == {"evidence_insufficient"} and len(weak.findings) == 1
    assert "prp_1" in weak.findings[0].message
    assert len(verify_bundle(bundle, trust, require_evidence="idp").findings) == 2
    status, _, err = _cli(tmp_path, trust, "--require-evidence", "device", bundle=bundle)
    assert status == 1 and "[evidence_insufficient]" in err


def test_require_evidence_fails_an_approval_whose_proposal_is_not_in_the_range(
    keyset: KeySet,
) -> None:
    """An approval whose proposal.created is outside the events cannot be classified: under
    --require-evidence it fails rather than passing unchecked."""
    log = Log()
    refund_flow(log, "prp_1")
    log.events = rehash(log.events[1:])
    report = verify_bundle(_bundle(log, keyset), _trust(keyset), require_evidence="device")
    assert _codes(report) == {"evidence_insufficient"}


def test_a_receipt_is_held_to_the_same_evidence(
    keyset: KeySet, idp: IdPSigner, tmp_path: Path
) -> None:
    """`--receipt`: a receipt of bob's approval without the provider's token fails under
    its `evidence: idp` policy; with bob's token it passes `--require-evidence idp`."""
    bobs = idp.token("bob", "prp_r")
    for evidence, expected in (
        (None, {"evidence_missing", "evidence_insufficient"}),
        (bobs, set()),
    ):
        log = Log()
        refund_flow(log, "prp_r", approver="bob", policy=IDP_POLICY, idp=evidence)
        receipt = _receipt(log, keyset)
        trust = _trust(keyset, idp)
        assert _codes(verify_receipt(receipt, trust, require_evidence="idp")) == expected
        status, _, err = _cli(tmp_path, trust, "--require-evidence", "idp", receipt=receipt)
        assert status == (1 if expected else 0), err


def _receipt(log: Log, keyset: KeySet) -> str:
    [(_, note)] = signed_checkpoints(log.events, keyset, [len(log.events)])
    leaves = [leaf_of(e) for e in log.events]
    return sign_receipt(
        keyset.active_key, issuer="https://signoff.test", issued_at=1, events=log.events,
        evidence=evidence_for(log.events, lambda i: inclusion_proof(i, leaves), note),
    )  # fmt: skip


def test_a_trust_file_carries_the_identity_providers(keyset: KeySet, idp: IdPSigner) -> None:
    """The providers' issuers and keys — and the enrolment provider's audiences and tenant
    claim — round-trip through the trust file; a malformed entry is refused when the file
    is read, not when a token is checked."""
    from signoff.exceptions import ProofFormatError

    document = json.loads(json.dumps(_trust(keyset, idp).to_document()))
    read = {p.issuer: p for p in TrustRoot.from_document(document).providers()}
    assert set(read) == {ISSUER, ENROLMENT_IDP.issuer}
    enrolling = read[ENROLMENT_IDP.issuer]
    assert (enrolling.audiences, enrolling.tenant_claim) == (("signoff-page",), "tenant")
    with pytest.raises(ProofFormatError, match="identity provider"):
        TrustRoot.from_document({**document, "identity_providers": [{"issuer": ISSUER}]})


def test_export_trust_lists_an_identity_provider(
    keyset: KeySet, idp: IdPSigner, tmp_path: Path
) -> None:
    """`signoff keys export-trust --idp ISSUER JWKS_FILE`: the written trust file makes that
    provider's token count, and verifying with it passes `--require-evidence idp`."""
    keys, jwks, out = tmp_path / "keys.json", tmp_path / "idp-jwks.json", tmp_path / "t.json"
    keyset.save(keys)
    jwks.write_text(json.dumps(idp.jwks()))
    done = subprocess.run(
        [sys.executable, "-m", "signoff", "keys", "export-trust", "--keys", str(keys),
         "--idp", ISSUER, str(jwks), "--out", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    trust = TrustRoot.from_file(out)
    log = Log()
    refund_flow(log, "prp_a", approver="bob", policy=IDP_POLICY, idp=idp.token("bob", "prp_a"))
    assert verify_bundle(_bundle(log, keyset), trust, require_evidence="idp").ok
    assert _codes(verify_bundle(_bundle(log, keyset), _trust(keyset))) == {"evidence_invalid"}


def test_the_providers_subject_claim_names_the_approver_in_its_token(
    keyset: KeySet, idp: IdPSigner
) -> None:
    """One trust-file entry serves approvals and enrolments: a provider whose person is named
    by ``preferred_username`` (its ``subject_claim``) vouches for bob's approval through that
    claim, not through ``sub``; without the entry saying so, the same token names another."""
    log = Log()
    token = idp.token("u-7f3a", "prp_s", preferred_username="bob")
    refund_flow(log, "prp_s", approver="bob", policy=IDP_POLICY, idp=token)
    mapped = TrustRoot(
        PublicKeys(keyset.public_jwks()),
        identity_providers=(
            {"issuer": idp.issuer, "jwks": idp.jwks(), "subject_claim": "preferred_username"},
        ),
    )
    report = verify_bundle(_bundle(log, keyset), mapped, require_evidence="idp")
    assert report.ok, report.findings
    assert report.approvals[0]["vouched_by"] == "idp"
    assert _codes(verify_bundle(_bundle(log, keyset), _trust(keyset, idp))) == {"evidence_mismatch"}

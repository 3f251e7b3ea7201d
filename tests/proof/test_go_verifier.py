"""An independent verifier (Go, clients/verifier-go) written from docs/PROOF-FORMAT.md alone.

It uses no signoff code: its own JCS, Go's crypto, and Debian's `golang.org/x/mod/sumdb/note`
and `sumdb/tlog`, built offline in GOPATH mode (`.ci/run` installs `golang-go` and
`golang-golang-x-mod-dev`). Over bundles a real gate exported — and over the same bundles
tampered with — it reaches the verdict `signoff audit verify` reaches.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from signoff.proof import (
    FileSignerState,
    KeySet,
    PublicKeys,
    TrustRoot,
    build_bundle,
    parse_vkey,
    verify_bundle,
)
from signoff.proof._note import cosign
from tests.conftest import AGENT, World, make_world
from tests.proof.conftest import (
    IDP,
    ORIGIN,
    POLICY,
    REFUND_PREVIEW,
    TENANT,
    Log,
    SoftAuthenticator,
    SoftIdp,
    refund_flow,
    rehash,
    signed_checkpoints,
    spc_approval,
    trusting,
)

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "clients" / "verifier-go"
GOPATH = Path("/usr/share/gocode")


@pytest.fixture(scope="module")
def verifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go")
    if go is None or not (GOPATH / "src/golang.org/x/mod/sumdb/note").is_dir():
        message = (
            "Go or golang.org/x/mod missing: apt-get install golang-go golang-golang-x-mod-dev"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    out = tmp_path_factory.mktemp("go") / "verifier-go"
    env = {
        **os.environ, "GO111MODULE": "off", "GOPATH": str(GOPATH), "GOPROXY": "off",
        "GOFLAGS": "", "GOCACHE": str(out.parent / "cache"), "CGO_ENABLED": "0",
    }  # fmt: skip
    subprocess.run([go, "vet", "."], cwd=SOURCE, env=env, check=True, capture_output=True)
    subprocess.run([go, "build", "-o", str(out), "."], cwd=SOURCE, env=env, check=True)
    return out


def go_verify(verifier: Path, tmp_path: Path, bundle: dict[str, Any], trust: TrustRoot,
              *flags: str) -> tuple[int, str]:  # fmt: skip
    bundle_file, trust_file = tmp_path / "bundle.json", tmp_path / "trust.json"
    bundle_file.write_text(json.dumps(bundle))
    trust_file.write_text(json.dumps(trust.to_document()))
    run = subprocess.run(
        [str(verifier), "--trust", str(trust_file), "--bundle", str(bundle_file), *flags],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return run.returncode, run.stdout + run.stderr


def codes(output: str) -> set[str]:
    return {line.split("]")[0][len("BROKEN [") :] for line in output.splitlines()
            if line.startswith("BROKEN [")}  # fmt: skip


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, token_form="signed")
    assert w.gate.proof is not None
    w.gate._ctx = dataclasses.replace(
        w.gate._ctx,
        proof=dataclasses.replace(w.gate.proof, signer=FileSignerState(tmp_path / "state")),
    )
    yield w
    w.store.close()
    w.shop.close()


def _exported(world: World) -> tuple[dict[str, Any], TrustRoot]:
    for order, amount in (("ord_1001", 9900), ("ord_1002", 5000), ("ord_1001", 100)):
        proposal = world.propose(order_id=order, amount_minor=amount)
        token = world.approve(proposal, key=f"k-{order}-{amount}")
        world.gate.execute(AGENT, proposal.proposal_id, token)
    world.propose(order_id="ord_1002", amount_minor=1)
    world.gate.checkpoint_now()
    proof = world.gate.proof
    assert proof is not None
    bundle = json.loads(json.dumps(world.gate.export_bundle("acme")))
    trust = TrustRoot(PublicKeys(proof.keys.public_jwks()), frozenset({proof.origin("acme")}))
    return bundle, trust


def test_the_go_verifier_verifies_an_exported_bundle(
    verifier: Path, world: World, tmp_path: Path
) -> None:
    """A real gate's bundle (MACs, several checkpoints, consistency proofs): both say verified,
    and the Go verifier says what it proves."""
    bundle, trust = _exported(world)
    assert len(bundle["checkpoints"]) >= 3 and bundle["consistency"]
    assert all("mac" in e for e in bundle["events"])
    assert verify_bundle(bundle, trust).ok
    status, output = go_verify(verifier, tmp_path, bundle, trust)
    assert status == 0, output
    assert output.strip().endswith("verified")
    assert (
        output.count("proves proposal ") == 3
        and "approved by alice as role:refund_approver" in output
    )
    since = json.loads(json.dumps(world.gate.export_bundle("acme", since=bundle_sizes(bundle)[1])))
    status, output = go_verify(verifier, tmp_path, since, trust)
    assert status == 0 and verify_bundle(since, trust).ok, output


def bundle_sizes(bundle: dict[str, Any]) -> list[int]:
    return [int(note.split("\n")[1]) for note in bundle["checkpoints"]]


def test_the_go_verifier_refuses_what_signoff_refuses(
    verifier: Path, world: World, tmp_path: Path
) -> None:
    """Rewritten history, an edited event, a cut tail, a replayed event, an attacker's key,
    another origin, events no checkpoint covers: the same codes from both verifiers."""
    bundle, trust = _exported(world)

    def rewritten(b: dict[str, Any]) -> None:
        from signoff.proof._events import event_from_dict, event_to_dict

        events = [event_from_dict(e) for e in b["events"]]
        events = [dataclasses.replace(e, actor="mallory") if e.actor == "alice" else e
                  for e in events]  # fmt: skip
        b["events"] = [event_to_dict(e) for e in _rehash_keeping_macs(events)]

    def edited(b: dict[str, Any]) -> None:
        b["events"][1]["actor"] = "mallory"

    def cut(b: dict[str, Any]) -> None:
        b["events"] = b["events"][:-4]

    def uncovered(b: dict[str, Any]) -> None:
        b["checkpoints"] = b["checkpoints"][:-1]
        b["consistency"] = b["consistency"][:-1]

    cases = {
        "checkpoint_mismatch": rewritten,
        "event_edited": edited,
        "events_missing": cut,
        "events_uncovered": uncovered,
    }
    for code, tamper in cases.items():
        forged = json.loads(json.dumps(bundle))
        tamper(forged)
        python = {f.code for f in verify_bundle(forged, trust).findings}
        status, output = go_verify(verifier, tmp_path, forged, trust)
        assert status == 1 and code in codes(output) and code in python, (code, output, python)
    status, output = go_verify(
        verifier, tmp_path, bundle, TrustRoot(PublicKeys(KeySet.generate().public_jwks()))
    )
    assert status == 1 and {"checkpoint_signature", "no_checkpoint"} <= codes(output)
    status, output = go_verify(
        verifier, tmp_path, bundle, dataclasses.replace(trust, origins=frozenset({"other/acme"}))
    )
    assert status == 1 and "origin_untrusted" in codes(output)


def _rehash_keeping_macs(events: list[Any]) -> list[Any]:
    from signoff.audit._chain import GENESIS, AuditEvent, event_hash

    out, prev = [], GENESIS
    for e in events:
        fields = {**dataclasses.asdict(e), "prev_hash": prev}
        fields.pop("hash")
        digest = event_hash(**fields)
        out.append(AuditEvent(**fields, hash=digest))
        prev = digest
    return out


def test_the_go_verifier_checks_policies_devices_witnesses_and_key_windows(
    verifier: Path, tmp_path: Path
) -> None:
    """Hand-built logs: a device-signed approval verifies; a forged one, a missing approval, a
    missing witness cosignature and a retired key's late checkpoint are each refused."""
    keys = KeySet.generate()
    authenticator = SoftAuthenticator()
    log = Log()
    log.enrol(authenticator)
    device = authenticator.approval("prp_d", "d" * 64)
    refund_flow(log, "prp_d", policy={**POLICY, "device": "required"}, device=device)
    trust = trusting(PublicKeys(keys.public_jwks()), IDP)

    def bundle_of(events: list[Any], signer: KeySet = keys) -> dict[str, Any]:
        notes = signed_checkpoints(events, signer, [len(events)])
        return build_bundle(tenant=TENANT, origin=ORIGIN, events=events, checkpoints=notes, jwks={})

    good = bundle_of(log.events)
    status, output = go_verify(verifier, tmp_path, good, trust)
    assert status == 0, output
    wrong_challenge = authenticator.approval("prp_other", "d" * 64)
    forged_log = Log()
    refund_flow(
        forged_log, "prp_d", policy={**POLICY, "device": "required"}, device=wrong_challenge
    )
    status, output = go_verify(verifier, tmp_path, bundle_of(forged_log.events), trust)
    assert codes(output) == {"device_signature_invalid"}, output
    # Issue 22: an enrolment no trusted provider vouched for (none, another key) or a verifier
    # trusting no provider: device_enrolment_unvouched, as in Python; bob's enrolment of the
    # credential is no enrolment of alice's: device_enrolment_missing.
    unvouched, untrusted, for_bob = Log(), Log(), Log()
    unvouched.add(
        "passkey.registered",
        {"credential_id": authenticator.credential_id, "public_key": authenticator.public_jwk()},
        actor="alice",
    )
    untrusted.enrol(authenticator, idp=SoftIdp())
    for_bob.enrol(authenticator, actor="bob")
    for case, code in (
        (unvouched, "device_enrolment_unvouched"),
        (untrusted, "device_enrolment_unvouched"),
        (for_bob, "device_enrolment_missing"),
    ):
        refund_flow(case, "prp_d", policy={**POLICY, "device": "required"}, device=device)
        bundle = bundle_of(case.events)
        assert {f.code for f in verify_bundle(bundle, trust).findings} == {code}
        status, output = go_verify(verifier, tmp_path, bundle, trust)
        assert codes(output) == {code}, output
    status, output = go_verify(verifier, tmp_path, good, TrustRoot(PublicKeys(keys.public_jwks())))
    assert codes(output) == {"device_enrolment_unvouched"}, output
    # Secure Payment Confirmation: the dialog showed the preview's payee and amount, or not.
    cheaper = {"payeeName": REFUND_PREVIEW["title"], "total": {"currency": "CNY", "value": "1.00"}}
    for shown, expected in ((None, set()), (cheaper, {"device_signature_invalid"})):
        spc = Log()
        spc.enrol(authenticator)
        refund_flow(
            spc, "prp_s", policy={**POLICY, "device": "required"}, preview=REFUND_PREVIEW,
            device=spc_approval(authenticator, "prp_s", "d" * 64, shown=shown),
        )  # fmt: skip
        bundle = bundle_of(spc.events)
        assert {f.code for f in verify_bundle(bundle, trust).findings} == expected
        status, output = go_verify(verifier, tmp_path, bundle, trust)
        assert codes(output) == expected, output
    unapproved = rehash([e for e in log.events if e.kind != "decision.approved"])
    status, output = go_verify(verifier, tmp_path, bundle_of(unapproved), trust)
    assert "executed_without_approval" in codes(output), output
    from cryptography.hazmat.primitives.asymmetric import ed25519

    witness_key = ed25519.Ed25519PrivateKey.generate()
    from signoff.proof._note import Cosigner

    witness = Cosigner("witness.test/w1", witness_key.public_key())
    needs_witness = dataclasses.replace(
        trust, witnesses=(parse_vkey(witness.vkey()),), witness_quorum=1
    )
    status, output = go_verify(verifier, tmp_path, good, needs_witness)
    assert codes(output) == {"cosignatures_missing"}, output
    note = good["checkpoints"][0]
    text = note[: note.rindex("\n\n") + 1]
    cosigned = {**good, "checkpoints": [note + cosign(text, witness.name, witness_key, 100_001)]}
    status, output = go_verify(verifier, tmp_path, cosigned, needs_witness)
    assert status == 0, output
    retired = keys.rotated(now=50_000)  # retired before the checkpoints' time (100 000)
    late = TrustRoot(PublicKeys(retired.public_jwks()))
    status, output = go_verify(verifier, tmp_path, good, late)
    assert {"checkpoint_signature", "no_checkpoint"} <= codes(output), output
    assert {f.code for f in verify_bundle(good, late).findings} >= {"checkpoint_signature"}
    tampered = {**good, "checkpoints": [_flip(good["checkpoints"][0])]}
    status, output = go_verify(verifier, tmp_path, tampered, trust)
    assert "checkpoint_signature" in codes(output), output


def _flip(note: str) -> str:
    head, _, line = note.rstrip("\n").rpartition("\n")
    head, _, first = head.rpartition("\n")
    name, blob = first.rsplit(" ", 1)
    raw = bytearray(base64.b64decode(blob))
    raw[-1] ^= 1
    return f"{head}\n{name} {base64.b64encode(bytes(raw)).decode()}\n{line}\n"


def test_the_go_verifier_checks_who_vouched_for_each_approval(
    verifier: Path, tmp_path: Path
) -> None:
    """Issue 22's checks reach the same codes as signoff.proof: a device approval without an
    enrolment before it, a re-typed approval by an enrolled person (`or_retype`) or under
    `evidence: device`, and under `evidence: idp` no token, a valid ES256 or RS256 token, a
    foreign one and one naming another digest or person."""
    from signoff.proof import verify_bundle as python_verify
    from tests.proof.test_vouched_consent import IdPSigner

    keys, idp, rs256 = (
        KeySet.generate(),
        IdPSigner(),
        IdPSigner("https://rsa.test", algorithm="RS256"),
    )
    providers = tuple({"issuer": p.issuer, "jwks": p.jwks()} for p in (idp, rs256))
    trust = TrustRoot(
        PublicKeys(keys.public_jwks()), identity_providers=(IDP.trust_entry(), *providers)
    )
    device = SoftAuthenticator()
    registered = {"credential_id": device.credential_id, "public_key": device.public_jwk()}

    def same(log: Log) -> set[str]:
        notes = signed_checkpoints(log.events, keys, [len(log.events)])
        bundle = build_bundle(
            tenant=TENANT, origin=ORIGIN, events=log.events, checkpoints=notes, jwks={}
        )
        python = {f.code for f in python_verify(bundle, trust).findings}
        status, output = go_verify(verifier, tmp_path, bundle, trust)
        assert codes(output) == python and status == (0 if not python else 1), (output, python)
        return python

    def flow(*, enrol: bool = False, unvouched: bool = False, **kw: Any) -> Log:
        """With ``enrol``, the approver enrolled ``device`` first, vouched for by the shared
        test provider (conftest ``IDP``) — or, ``unvouched``, on the log's word alone."""
        log = Log()
        if unvouched:
            log.add("passkey.registered", registered, actor=kw.get("approver", "alice"))
        elif enrol:
            log.enrol(device, actor=kw.get("approver", "alice"))
        refund_flow(log, "prp_v", **kw)
        return log

    signed = device.approval("prp_v", "d" * 64)
    required = {**POLICY, "device": "required"}
    assert same(flow(policy=required, device=signed)) == {"device_enrolment_missing"}
    assert same(flow(enrol=True, policy=required, device=signed)) == set()
    assert same(flow(unvouched=True, policy=required, device=signed)) == {
        "device_enrolment_unvouched"
    }
    assert same(flow(enrol=True, policy={**POLICY, "device": "or_retype"})) == {"device_required"}
    assert same(flow(policy={**POLICY, "evidence": "device"})) == {"device_required"}
    idp_policy = {**POLICY, "evidence": "idp"}
    assert same(flow(approver="bob", policy=idp_policy)) == {"evidence_missing"}
    for signer in (idp, rs256):
        assert (
            same(flow(approver="bob", policy=idp_policy, idp=signer.token("bob", "prp_v"))) == set()
        )
    foreign = IdPSigner().token("bob", "prp_v")
    assert same(flow(approver="bob", policy=idp_policy, idp=foreign)) == {"evidence_invalid"}
    other = idp.token("bob", "prp_v", digest="e" * 64)
    assert same(flow(approver="bob", policy=idp_policy, idp=other)) == {"evidence_mismatch"}
    alice = idp.token("bob", "prp_v")
    assert same(flow(approver="alice", policy=idp_policy, idp=alice)) == {"evidence_mismatch"}
    # One entry serves approvals and enrolments: the provider's subject_claim names the person.
    mapped = idp.token("u-7f3a", "prp_v", preferred_username="bob")
    assert same(flow(approver="bob", policy=idp_policy, idp=mapped)) == {"evidence_mismatch"}
    trust = dataclasses.replace(
        trust,
        identity_providers=tuple(
            {**p, "subject_claim": "preferred_username"} if p["issuer"] == idp.issuer else p
            for p in trust.identity_providers
        ),
    )
    assert same(flow(approver="bob", policy=idp_policy, idp=mapped)) == set()

"""The second independent verifier (TypeScript, `@signoff/client/verify`), written from
docs/PROOF-FORMAT.md alone, reaches the verdict `signoff.proof` reaches.

Like tests/proof/test_go_verifier.py: over bundles and signed receipts a real gate produced,
intact and tampered, and over hand-built logs (device assertions, witnesses, key windows,
policies, writes under a mandate), the TypeScript CLI `signoff-verify` and the reference
report the same codes. The verifier is compiled from clients/typescript with its pinned
`tsc` (`npm ci --prefix clients/typescript` first; `.ci/run` does).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from signoff.proof import (
    FileSignerState,
    KeySet,
    PublicKeys,
    Report,
    TrustRoot,
    build_bundle,
    evidence_for,
    parse_vkey,
    sign_receipt,
    verify_bundle,
    verify_receipt,
)
from signoff.proof._events import leaf_of
from signoff.proof._jws import sign_jws
from signoff.proof._merkle import inclusion_proof
from signoff.proof._note import Cosigner, cosign
from signoff.proof._receipt import RECEIPT_TYP
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
from tests.proof.test_mandate_bundle import _forge_write, _mandate, _write

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "typescript"


@pytest.fixture(scope="module")
def verifier() -> Iterator[Path]:
    """`signoff-verify`, compiled into a directory of its own inside the package (so `jose`
    resolves from the package's node_modules)."""
    node, tsc = shutil.which("node"), PACKAGE / "node_modules" / ".bin" / "tsc"
    if node is None or not tsc.exists():
        message = (
            "Node or clients/typescript/node_modules missing: npm ci --prefix clients/typescript"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    out = PACKAGE / "build" / f"pytest-{os.getpid()}"
    try:
        built = subprocess.run(
            [
                str(tsc),
                "-p",
                "tsconfig.json",
                "--outDir",
                str(out),
                "--declaration",
                "false",
                "--declarationMap",
                "false",
                "--sourceMap",
                "false",
            ],
            cwd=PACKAGE,
            check=False,
            capture_output=True,
            text=True,
        )
        if built.returncode != 0:
            pytest.fail(f"tsc failed:\n{built.stdout}{built.stderr}")
        yield out / "verify" / "cli.js"
    finally:
        shutil.rmtree(out, ignore_errors=True)


def ts_verify(
    verifier: Path,
    tmp_path: Path,
    trust: TrustRoot | None,
    *,
    bundle: Any = None,
    receipt: Any = None,
    flags: tuple[str, ...] = (),
) -> tuple[int, str]:
    args = [shutil.which("node") or "node", str(verifier)]
    if trust is not None:
        (tmp_path / "trust.json").write_text(json.dumps(trust.to_document()))
        args += ["--trust", str(tmp_path / "trust.json")]
    if bundle is not None:
        (tmp_path / "bundle.json").write_text(json.dumps(bundle))
        args += ["--bundle", str(tmp_path / "bundle.json")]
    if receipt is not None:
        text = receipt if isinstance(receipt, str) else json.dumps(receipt)
        (tmp_path / "receipt.json").write_text(text)
        args += ["--receipt", str(tmp_path / "receipt.json")]
    run = subprocess.run([*args, *flags], capture_output=True, text=True, check=False)
    return run.returncode, run.stdout + run.stderr


def codes(output: str) -> set[str]:
    return {
        line.split("]")[0][len("BROKEN [") :]
        for line in output.splitlines()
        if line.startswith("BROKEN [")
    }


def python_codes(report: Report) -> set[str]:
    return {f.code for f in report.findings}


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


def _trust(world: World) -> TrustRoot:
    proof = world.gate.proof
    assert proof is not None
    return TrustRoot(PublicKeys(proof.keys.public_jwks()), frozenset({proof.origin("acme")}))


def _flows(world: World) -> list[Any]:
    results = []
    for order, amount in (("ord_1001", 9900), ("ord_1002", 5000), ("ord_1001", 100)):
        proposal = world.propose(order_id=order, amount_minor=amount)
        token = world.approve(proposal, key=f"k-{order}-{amount}")
        results.append(world.gate.execute(AGENT, proposal.proposal_id, token))
    world.propose(order_id="ord_1002", amount_minor=1)
    world.gate.checkpoint_now()
    return results


def _export(world: World, **kw: Any) -> dict[str, Any]:
    return dict(json.loads(json.dumps(world.gate.export_bundle("acme", **kw))))


def test_the_ts_verifier_verifies_a_gate_bundle_and_its_since_range(
    verifier: Path, world: World, tmp_path: Path
) -> None:
    """MACs, several checkpoints, consistency proofs: both say verified, the TypeScript one
    prints what it proves as `signoff audit verify` does."""
    _flows(world)
    bundle, trust = _export(world), _trust(world)
    assert len(bundle["checkpoints"]) >= 3 and bundle["consistency"]
    assert verify_bundle(bundle, trust).ok
    status, output = ts_verify(verifier, tmp_path, trust, bundle=bundle)
    assert status == 0 and output.strip().endswith("verified"), output
    assert output.count("proves proposal ") == 3
    assert "approved by alice as role:refund_approver" in output
    since = _export(world, since=int(bundle["checkpoints"][1].split("\n")[1]))
    status, output = ts_verify(verifier, tmp_path, trust, bundle=since)
    assert status == 0 and verify_bundle(since, trust).ok, output


def test_the_ts_verifier_refuses_tampered_bundles_with_signoffs_codes(
    verifier: Path, world: World, tmp_path: Path
) -> None:
    """Rewritten history, an edited event, a cut tail, a replayed event, another tenant's
    event, checkpoints removed, an attacker's key, another origin: the same set of codes."""
    from signoff.proof._events import event_from_dict, event_to_dict
    from tests.proof.test_go_verifier import _rehash_keeping_macs

    _flows(world)
    bundle, trust = _export(world), _trust(world)

    def rewritten(b: dict[str, Any]) -> None:
        events = [event_from_dict(e) for e in b["events"]]
        events = [
            dataclasses.replace(e, actor="mallory") if e.actor == "alice" else e for e in events
        ]
        b["events"] = [event_to_dict(e) for e in _rehash_keeping_macs(events)]

    def edited(b: dict[str, Any]) -> None:
        b["events"][1]["actor"] = "mallory"

    def cut(b: dict[str, Any]) -> None:
        b["events"] = b["events"][:-4]

    def replayed(b: dict[str, Any]) -> None:
        b["events"][-1]["mac"] = b["events"][2]["mac"]

    def other_tenant(b: dict[str, Any]) -> None:
        b["events"][0]["tenant"] = "globex"

    def uncovered(b: dict[str, Any]) -> None:
        b["checkpoints"] = b["checkpoints"][:-1]
        b["consistency"] = b["consistency"][:-1]

    def no_checkpoints(b: dict[str, Any]) -> None:
        b["checkpoints"], b["consistency"] = [], []

    cases: dict[str, Callable[[dict[str, Any]], None]] = {
        "checkpoint_mismatch": rewritten,
        "event_edited": edited,
        "events_missing": cut,
        "event_replayed": replayed,
        "wrong_tenant": other_tenant,
        "events_uncovered": uncovered,
        "no_checkpoint": no_checkpoints,
    }
    for code, tamper in cases.items():
        forged = json.loads(json.dumps(bundle))
        tamper(forged)
        python = python_codes(verify_bundle(forged, trust))
        status, output = ts_verify(verifier, tmp_path, trust, bundle=forged)
        assert status == 1 and code in python and codes(output) == python, (code, output, python)
    status, output = ts_verify(
        verifier, tmp_path, trust, bundle=bundle, flags=("--allow-uncovered",)
    )
    assert status == 0, output
    attacker = TrustRoot(PublicKeys(KeySet.generate().public_jwks()))
    status, output = ts_verify(verifier, tmp_path, attacker, bundle=bundle)
    assert status == 1 and codes(output) == python_codes(verify_bundle(bundle, attacker))
    assert {"checkpoint_signature", "no_checkpoint"} <= codes(output)
    elsewhere = dataclasses.replace(trust, origins=frozenset({"other/acme"}))
    status, output = ts_verify(verifier, tmp_path, elsewhere, bundle=bundle)
    assert status == 1 and codes(output) == python_codes(verify_bundle(bundle, elsewhere))
    assert "origin_untrusted" in codes(output)
    status, output = ts_verify(verifier, tmp_path, None, bundle=bundle)
    assert status == 2 and output.startswith("error [no_trust_root]"), output


def test_the_ts_verifier_checks_a_gate_receipt_and_what_the_reader_expects(
    verifier: Path, world: World, tmp_path: Path
) -> None:
    """A signed receipt from the gate verifies alone; with --proposal, --digest and --args the
    proof must be of that write (the digest recomputed from the arguments)."""
    result = _flows(world)[1]
    signed, trust = result.signed_receipt, _trust(world)
    assert signed is not None and verify_receipt(signed, trust).ok
    status, output = ts_verify(verifier, tmp_path, trust, receipt=signed)
    assert status == 0 and "proves proposal " + result.execution.proposal_id in output, output
    args = {"order_id": "ord_1002", "amount_minor": 5000, "currency": "CNY", "reason": "damaged"}
    (tmp_path / "args.json").write_text(json.dumps(args))
    good = (
        "--proposal",
        result.execution.proposal_id,
        "--digest",
        result.receipt.args_digest,
        "--args",
        str(tmp_path / "args.json"),
    )
    status, output = ts_verify(verifier, tmp_path, trust, receipt=signed, flags=good)
    assert status == 0, output
    (tmp_path / "other.json").write_text(json.dumps({**args, "amount_minor": 5001}))
    for wrong in (
        ("--proposal", "prop_other"),
        ("--digest", "0" * 64),
        ("--args", str(tmp_path / "other.json")),
    ):
        status, output = ts_verify(verifier, tmp_path, trust, receipt=signed, flags=wrong)
        assert status == 1 and codes(output) == {"not_the_expected_proof"}, (wrong, output)


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def test_the_ts_verifier_refuses_forged_receipts_with_signoffs_codes(
    verifier: Path, world: World, tmp_path: Path
) -> None:
    """An edited claim, another key, an insider's re-signed receipt without an event or with
    a claim its events do not give, an untrusted origin, a cut proof: the same codes."""
    signed = _flows(world)[0].signed_receipt
    assert signed is not None
    trust, proof = _trust(world), world.gate.proof
    assert proof is not None
    claims = _claims(signed)

    def resigned(change: Callable[[dict[str, Any]], None], key: Any = None) -> str:
        forged = json.loads(json.dumps(claims))
        change(forged)
        return sign_jws(key or proof.keys.active_key, forged, typ=RECEIPT_TYP)

    head, _body, tail = signed.split(".")
    edited = json.dumps({**claims, "provider_reference": "re_forged"}).encode()
    forged_body = base64.urlsafe_b64encode(edited).decode().rstrip("=")

    def drop_approval(c: dict[str, Any]) -> None:
        keep = [
            i for i, e in enumerate(c["evidence"]["events"]) if e["kind"] != "decision.approved"
        ]
        c["evidence"]["events"] = [c["evidence"]["events"][i] for i in keep]
        c["evidence"]["proofs"] = [c["evidence"]["proofs"][i] for i in keep]

    def claim_succeeded_elsewhere(c: dict[str, Any]) -> None:
        c["approvers"][0]["subject"] = "bob"

    def cut_proof(c: dict[str, Any]) -> None:
        c["evidence"]["proofs"][0] = c["evidence"]["proofs"][0][:-1]

    cases = {
        "receipt_signature": f"{head}.{forged_body}.{tail}",
        "executed_without_approval": resigned(drop_approval),
        "receipt_mismatch": resigned(claim_succeeded_elsewhere),
        "not_included": resigned(cut_proof),
    }
    for code, token in cases.items():
        python = python_codes(verify_receipt(token, trust))
        status, output = ts_verify(verifier, tmp_path, trust, receipt=token)
        assert status == 1 and code in python and codes(output) == python, (code, output, python)
    attacker = KeySet.generate()
    theirs = resigned(lambda c: None, key=attacker.active_key)
    status, output = ts_verify(verifier, tmp_path, trust, receipt=theirs)
    assert codes(output) == {"receipt_signature"} == python_codes(verify_receipt(theirs, trust))
    carried = {"signed_receipt": theirs, "jwks": attacker.public_jwks()}
    status, output = ts_verify(verifier, tmp_path, trust, receipt=carried)
    assert status == 1 and codes(output) == {"receipt_signature"}, output
    elsewhere = dataclasses.replace(trust, origins=frozenset({"other/acme"}))
    status, output = ts_verify(verifier, tmp_path, elsewhere, receipt=signed)
    assert codes(output) == {"origin_untrusted"} == python_codes(verify_receipt(signed, elsewhere))


def test_the_ts_verifier_checks_devices_witnesses_windows_and_policies(
    verifier: Path, tmp_path: Path
) -> None:
    """Hand-built logs: a device-signed approval verifies; a forged assertion, an unenrolled
    key, a missing approval, the requester approving, a repeated or wrong-step approval, a
    missing witness cosignature, a retired key's late checkpoint and a flipped signature are
    each refused with the codes signoff gives."""
    keys = KeySet.generate()
    trust = trusting(PublicKeys(keys.public_jwks()), IDP)
    authenticator = SoftAuthenticator()
    device_policy = {**POLICY, "device": "required"}

    def bundle_of(events: list[Any], signer: KeySet = keys) -> dict[str, Any]:
        notes = signed_checkpoints(events, signer, [len(events)])
        return build_bundle(tenant=TENANT, origin=ORIGIN, events=events, checkpoints=notes, jwks={})

    def same(bundle: dict[str, Any], root: TrustRoot = trust) -> set[str]:
        python = python_codes(verify_bundle(bundle, root))
        status, output = ts_verify(verifier, tmp_path, root, bundle=bundle)
        assert codes(output) == python and status == (0 if not python else 1), (output, python)
        return python

    log = Log()
    log.enrol(authenticator)
    refund_flow(
        log, "prp_d", policy=device_policy, device=authenticator.approval("prp_d", "d" * 64)
    )
    good = bundle_of(log.events)
    assert same(good) == set()
    _status, output = ts_verify(verifier, tmp_path, trust, bundle=good)
    assert "1 device signatures verified" in output and ", device-signed" in output

    forged = Log()
    refund_flow(
        forged, "prp_d", policy=device_policy, device=authenticator.approval("prp_x", "d" * 64)
    )
    assert same(bundle_of(forged.events)) == {"device_signature_invalid"}
    other_key = Log()
    other_key.enrol(SoftAuthenticator())  # alice's credential id, another key
    refund_flow(
        other_key, "prp_d", policy=device_policy, device=authenticator.approval("prp_d", "d" * 64)
    )
    assert same(bundle_of(other_key.events)) == {"device_key_unknown"}
    missing = Log()
    refund_flow(missing, "prp_d", policy=device_policy)
    assert same(bundle_of(missing.events)) == {"device_signature_missing"}
    # Issue 22: only an enrolment a trusted identity provider vouched for counts.
    unvouched = Log()
    unvouched.add(
        "passkey.registered",
        {"credential_id": authenticator.credential_id, "public_key": authenticator.public_jwk()},
        actor="alice",
    )
    refund_flow(
        unvouched, "prp_d", policy=device_policy, device=authenticator.approval("prp_d", "d" * 64)
    )
    assert same(bundle_of(unvouched.events)) == {"device_enrolment_unvouched"}
    untrusted = Log()
    untrusted.enrol(authenticator, idp=SoftIdp())  # a provider key the trust file lacks
    refund_flow(
        untrusted, "prp_d", policy=device_policy, device=authenticator.approval("prp_d", "d" * 64)
    )
    assert same(bundle_of(untrusted.events)) == {"device_enrolment_unvouched"}
    for_bob = Log()
    for_bob.enrol(authenticator, actor="bob")  # vouched, but for bob, while alice approved
    refund_flow(
        for_bob, "prp_d", policy=device_policy, device=authenticator.approval("prp_d", "d" * 64)
    )
    assert same(bundle_of(for_bob.events)) == {"device_enrolment_missing"}
    no_idp = TrustRoot(PublicKeys(keys.public_jwks()))
    assert same(good, no_idp) == {"device_enrolment_unvouched"}
    # Secure Payment Confirmation: the dialog showed the preview's payee and amount, or not.
    for shown, expected in (
        (None, set()),
        ({"payeeName": REFUND_PREVIEW["title"], "total": {"currency": "CNY", "value": "100.00"}},
         {"device_signature_invalid"}),
    ):  # fmt: skip
        spc = Log()
        spc.enrol(authenticator)
        refund_flow(
            spc, "prp_s", policy=device_policy, preview=REFUND_PREVIEW,
            device=spc_approval(authenticator, "prp_s", "d" * 64, shown=shown),
        )  # fmt: skip
        assert same(bundle_of(spc.events)) == expected

    assert "executed_without_approval" in same(
        bundle_of(rehash([e for e in log.events if e.kind != "decision.approved"]))
    )
    by_requester = Log()
    refund_flow(by_requester, "prp_r", approver="u_42")
    assert same(bundle_of(by_requester.events)) == {"separation_of_duties"}
    wrong_step = Log()
    refund_flow(wrong_step, "prp_w", policy={**POLICY, "role": "admin"})
    assert "approval_role_mismatch" in same(bundle_of(wrong_step.events))
    twice = Log()
    refund_flow(twice, "prp_t", policy={**POLICY, "approvals": 2})
    assert "executed_without_approval" in same(bundle_of(twice.events))
    digest = Log()
    refund_flow(digest, "prp_e", executed="e" * 64)
    assert same(bundle_of(digest.events)) == {"executed_digest_mismatch"}

    witness_key = ed25519.Ed25519PrivateKey.generate()
    witness = Cosigner("witness.test/w1", witness_key.public_key())
    needs_witness = dataclasses.replace(
        trust, witnesses=(parse_vkey(witness.vkey()),), witness_quorum=1
    )
    assert same(good, needs_witness) == {"cosignatures_missing"}
    note = good["checkpoints"][0]
    text = note[: note.rindex("\n\n") + 1]
    cosigned = {**good, "checkpoints": [note + cosign(text, witness.name, witness_key, 100_001)]}
    assert same(cosigned, needs_witness) == set()
    _status, output = ts_verify(verifier, tmp_path, needs_witness, bundle=cosigned)
    assert "cosigned by witness.test/w1 at " in output
    backdated = {**good, "checkpoints": [note + cosign(text, witness.name, witness_key, 1)]}
    assert same(backdated, needs_witness) == {"checkpoint_time"}
    twice_cosigned = {
        **cosigned,
        "checkpoints": [
            cosigned["checkpoints"][0] + cosign(text, witness.name, witness_key, 100_002)
        ],
    }
    assert same(twice_cosigned, needs_witness) >= {"checkpoint_signature"}

    retired = trusting(PublicKeys(keys.rotated(now=50_000).public_jwks()), IDP)
    assert same(good, retired) >= {"checkpoint_signature", "no_checkpoint"}
    from tests.proof.test_go_verifier import _flip

    assert "checkpoint_signature" in same({**good, "checkpoints": [_flip(note)]})


def test_the_ts_verifier_checks_hand_built_receipts_with_devices(
    verifier: Path, tmp_path: Path
) -> None:
    """A receipt whose approval is device-signed (the assertion is a stated claim), proven by
    inclusion in a checkpoint of a longer log; its evidence edited by the key holder is named."""
    keys = KeySet.generate()
    trust = trusting(PublicKeys(keys.public_jwks()), IDP)
    authenticator = SoftAuthenticator()
    log = Log()
    refund_flow(log, "prp_0")
    log.enrol(authenticator)
    refund_flow(
        log,
        "prp_1",
        policy={**POLICY, "device": "required"},
        device=authenticator.approval("prp_1", "d" * 64),
    )
    refund_flow(log, "prp_2")
    [(size, note)] = signed_checkpoints(log.events, keys, [len(log.events)])
    leaves = [leaf_of(e) for e in log.events[:size]]

    def receipt(events: list[Any], evidence_events: list[Any] | None = None) -> str:
        shown = evidence_events if evidence_events is not None else events
        return sign_receipt(
            keys.active_key,
            issuer="https://signoff.test",
            issued_at=1,
            events=events,
            evidence=evidence_for(shown, lambda i: inclusion_proof(i, leaves), note),
        )

    mine = [e for e in log.events if e.proposal_id == "prp_1" or e.kind == "passkey.registered"]
    token = receipt(mine)
    assert verify_receipt(token, trust).ok
    status, output = ts_verify(verifier, tmp_path, trust, receipt=token)
    assert status == 0 and "1 device signatures verified" in output, output
    without_device = receipt(mine, [e for e in mine if e.kind != "decision.approved"])
    python = python_codes(verify_receipt(without_device, trust))
    status, output = ts_verify(verifier, tmp_path, trust, receipt=without_device)
    assert "receipt_mismatch" in python and codes(output) == python, (output, python)


def test_the_ts_verifier_checks_writes_under_a_mandate(
    verifier: Path, world: World, tmp_path: Path
) -> None:
    """Honest writes under a mandate verify in both; a forged write past the budget and the
    per-write maximum is refused with the same mandate codes; a write's receipt verifies."""
    mid = _mandate(world)
    receipt = _write(world, mid, "ord_1001", 15000).signed_receipt
    _write(world, mid, "ord_1002", 12000)
    world.gate.checkpoint_now()
    trust = _trust(world)
    honest = _export(world)
    assert verify_bundle(honest, trust).ok
    status, output = ts_verify(verifier, tmp_path, trust, bundle=honest)
    assert status == 0, output
    status, output = ts_verify(verifier, tmp_path, trust, receipt=receipt)
    assert status == 0 and verify_receipt(receipt, trust).ok, output
    _forge_write(world, mid, amount=25000)
    world.gate.checkpoint_now()
    forged = _export(world)
    python = python_codes(verify_bundle(forged, trust))
    status, output = ts_verify(verifier, tmp_path, trust, bundle=forged)
    assert {"mandate_exceeded", "mandate_overspent"} <= python and codes(output) == python, output


def test_the_ts_verifier_checks_who_vouched_for_each_approval(
    verifier: Path, tmp_path: Path
) -> None:
    """Issue 22's checks reach the same codes: a device approval without an enrolment before
    it, a re-typed approval by someone who had enrolled (`or_retype`) or under
    `evidence: device`, bob's approval without, with a foreign, or with a mismatched identity
    provider token under `evidence: idp`, and a valid token — every verdict as signoff's."""
    from tests.proof.test_vouched_consent import IdPSigner

    keys, idp = KeySet.generate(), IdPSigner()
    trust = TrustRoot(
        PublicKeys(keys.public_jwks()),
        identity_providers=(IDP.trust_entry(), {"issuer": idp.issuer, "jwks": idp.jwks()}),
    )
    device = SoftAuthenticator()
    registered = {"credential_id": device.credential_id, "public_key": device.public_jwk()}

    def same(log: Log) -> set[str]:
        notes = signed_checkpoints(log.events, keys, [len(log.events)])
        bundle = build_bundle(
            tenant=TENANT, origin=ORIGIN, events=log.events, checkpoints=notes, jwks={}
        )
        python = python_codes(verify_bundle(bundle, trust))
        status, output = ts_verify(verifier, tmp_path, trust, bundle=bundle)
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
    assert same(flow(policy={**POLICY, "device": "required"}, device=signed)) == {
        "device_enrolment_missing"
    }
    assert same(flow(enrol=True, policy={**POLICY, "device": "required"}, device=signed)) == set()
    assert same(flow(unvouched=True, policy={**POLICY, "device": "required"}, device=signed)) == {
        "device_enrolment_unvouched"
    }
    assert same(flow(enrol=True, policy={**POLICY, "device": "or_retype"})) == {"device_required"}
    assert same(flow(policy={**POLICY, "device": "or_retype"})) == set()
    assert same(flow(policy={**POLICY, "evidence": "device"})) == {"device_required"}
    idp_policy = {**POLICY, "evidence": "idp"}
    assert same(flow(approver="bob", policy=idp_policy)) == {"evidence_missing"}
    good = idp.token("bob", "prp_v")
    assert same(flow(approver="bob", policy=idp_policy, idp=good)) == set()
    rs256 = IdPSigner("https://rsa.test", algorithm="RS256")
    trust = dataclasses.replace(
        trust,
        identity_providers=(*trust.identity_providers,
                            {"issuer": rs256.issuer, "jwks": rs256.jwks()}),
    )  # fmt: skip
    assert same(flow(approver="bob", policy=idp_policy, idp=rs256.token("bob", "prp_v"))) == set()
    foreign = IdPSigner().token("bob", "prp_v")
    assert same(flow(approver="bob", policy=idp_policy, idp=foreign)) == {"evidence_invalid"}
    other = idp.token("bob", "prp_v", digest="e" * 64)
    assert same(flow(approver="bob", policy=idp_policy, idp=other)) == {"evidence_mismatch"}
    assert same(flow(approver="alice", policy=idp_policy, idp=good)) == {"evidence_mismatch"}
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

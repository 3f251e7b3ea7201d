"""`signoff keys`, `signoff token verify`, `signoff audit verify --bundle/--receipt`."""

from __future__ import annotations

import dataclasses
import json
import stat
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from signoff.cli._main import cli
from signoff.proof import (
    KeySet,
    build_bundle,
    evidence_for,
    load_keyset,
    sign_confirmation,
    sign_receipt,
)
from signoff.proof._events import leaf_of
from signoff.proof._merkle import inclusion_proof
from tests.proof.conftest import ORIGIN, TENANT, Log, refund_flow, rehash, signed_checkpoints
from tests.proof.test_keys_and_token import CLAIMS


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "signoff", *args], capture_output=True, text=True, check=False
    )


def one_error_line(result: subprocess.CompletedProcess[str], code: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error [{code}]: ") and " — " in lines[0], lines[0]


def test_keys_generate_rotate_export(tmp_path: Path) -> None:
    """generate writes a 0600 file; rotate retires what the new key replaces (its private part
    leaves the file); export-jwks keeps every public half with its window, never a secret."""
    keys = tmp_path / "keys.json"
    runner = CliRunner()
    assert runner.invoke(cli, ["keys", "generate", "--out", str(keys)]).exit_code == 0
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    first = json.loads(keys.read_text())["active"]
    rotated = runner.invoke(cli, ["keys", "rotate", "--keys", str(keys), "--alg", "ES256"])
    assert rotated.exit_code == 0 and "0 key(s) retired" in rotated.output  # Ed25519 kept: notes
    document = json.loads(keys.read_text())
    assert document["active"] != first and len(document["keys"]) == 2
    again = runner.invoke(cli, ["keys", "rotate", "--keys", str(keys)])
    assert again.exit_code == 0 and "2 key(s) retired" in again.output
    document = json.loads(keys.read_text())
    assert len(document["keys"]) == 1 and len(document["retired"]) == 2
    assert all("d" not in k and "not_after" in k for k in document["retired"])
    exported = runner.invoke(cli, ["keys", "export-jwks", "--keys", str(keys)])
    jwks = json.loads(exported.output)
    kids = [k["kid"] for k in document["keys"]] + [k["kid"] for k in document["retired"]]
    assert [k["kid"] for k in jwks["keys"]] == kids
    assert all("d" not in k for k in jwks["keys"])
    assert "mac_keys" not in exported.output and '"k"' not in exported.output


def test_keys_cli_failures_are_one_line(tmp_path: Path) -> None:
    """An existing file, a missing file: one error line with what to do, exit 2."""
    keys = tmp_path / "keys.json"
    KeySet.generate().save(keys)
    one_error_line(run("keys", "generate", "--out", str(keys)), "signing_key_error")
    one_error_line(
        run("keys", "export-jwks", "--keys", str(tmp_path / "none.json")), "signing_key_error"
    )


def test_token_verify(tmp_path: Path) -> None:
    """A valid token prints its claims; another audience is one error line."""
    keyset = KeySet.generate()
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(keyset.public_jwks()))
    live = dataclasses.replace(CLAIMS, iat=1_700_000_000, exp=4_000_000_000)
    token = sign_confirmation(keyset.active_key, live)
    ok = CliRunner().invoke(cli, ["token", "verify", token, "--jwks", str(jwks)])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["jti"] == "tok_1"
    one_error_line(
        run("token", "verify", token, "--jwks", str(jwks), "--audience", "other"),
        "audience_mismatch",
    )
    expired = sign_confirmation(keyset.active_key, CLAIMS)
    one_error_line(run("token", "verify", expired, "--jwks", str(jwks)), "token_expired")


def _bundle_file(tmp_path: Path, keyset: KeySet, *, forge: bool = False) -> Path:
    log = Log()
    for i in range(2):
        refund_flow(log, f"prp_{i}")
    checkpoints = signed_checkpoints(log.events, keyset, [5, 10])
    events = log.events
    if forge:
        events = rehash(
            [dataclasses.replace(e, actor="mallory") if e.seq == 2 else e for e in events]
        )
    document = build_bundle(
        tenant=TENANT, origin=ORIGIN, events=events, checkpoints=checkpoints,
        jwks=keyset.public_jwks(),
    )  # fmt: skip
    path = tmp_path / ("forged.json" if forge else "bundle.json")
    path.write_text(json.dumps(document))
    return path


def test_audit_verify_bundle(tmp_path: Path) -> None:
    """An intact bundle verifies (exit 0); a recomputed rewrite is named (exit 1)."""
    keyset = KeySet.generate()
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(keyset.public_jwks()))
    runner = CliRunner()
    good = runner.invoke(
        cli,
        ["audit", "verify", "--bundle", str(_bundle_file(tmp_path, keyset)), "--jwks", str(jwks)],
    )
    assert good.exit_code == 0, good.output
    assert "10 events, 2 signed checkpoints, 10 covered, 0 not covered" in good.output
    assert "proves proposal prp_1: refund_order v1, args digest " + "d" * 64 in good.output
    assert "approved by alice as role:refund_approver" in good.output
    forged_file = str(_bundle_file(tmp_path, keyset, forge=True))
    forged = runner.invoke(cli, ["audit", "verify", "--bundle", forged_file, "--jwks", str(jwks)])
    assert forged.exit_code == 1
    assert "BROKEN [checkpoint_mismatch]" in forged.output
    one_error_line(run("audit", "verify", "--bundle", forged_file), "no_trust_root")


def test_audit_verify_receipt(tmp_path: Path) -> None:
    """A receipt file with its JWKS verifies; a bare JWS without --jwks is one error line."""
    keyset = KeySet.generate()
    log = Log()
    refund_flow(log, "prp_0")
    [(_, note)] = signed_checkpoints(log.events, keyset, [5])
    receipt = sign_receipt(
        keyset.active_key,
        issuer="https://signoff.test",
        issued_at=1,
        events=log.events,
        evidence=evidence_for(
            log.events, lambda i: inclusion_proof(i, [leaf_of(e) for e in log.events]), note
        ),
    )
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(keyset.public_jwks()))
    with_keys = tmp_path / "receipt.json"
    with_keys.write_text(json.dumps({"signed_receipt": receipt, "jwks": keyset.public_jwks()}))
    ok = CliRunner().invoke(
        cli, ["audit", "verify", "--receipt", str(with_keys), "--jwks", str(jwks)]
    )
    assert ok.exit_code == 0, ok.output
    assert "verified" in ok.output
    bare = tmp_path / "receipt.jws"
    bare.write_text(receipt)
    one_error_line(run("audit", "verify", "--receipt", str(with_keys)), "no_trust_root")
    one_error_line(run("audit", "verify", "--receipt", str(bare)), "no_trust_root")
    one_error_line(
        run("audit", "verify", "--receipt", str(bare), "--bundle", str(bare), "--jwks", str(jwks)),
        "invalid_request",
    )


def test_keys_export_trust_and_vkey(tmp_path: Path) -> None:
    """export-trust writes the trust file a verifier loads (keys, origins, witnesses, quorum);
    vkey prints a log's origin and the signed-note vkey a witness is configured with."""
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from signoff.proof import TrustRoot
    from signoff.proof._note import Cosigner, note_vkey

    keys = tmp_path / "keys.json"
    KeySet.generate().save(keys)
    keyset = load_keyset(keys)
    witness = Cosigner("witness.test/w1", ed25519.Ed25519PrivateKey.generate().public_key())
    out = tmp_path / "trust.json"
    runner = CliRunner()
    written = runner.invoke(
        cli,
        ["keys", "export-trust", "--keys", str(keys), "--tenant", "acme", "--tenant", "globex",
         "--public-url", "https://signoff.example.com/", "--witness", witness.vkey(),
         "--out", str(out)],
    )  # fmt: skip
    assert written.exit_code == 0, written.output
    trust = TrustRoot.from_file(out)
    assert trust.origins == {"signoff.example.com/acme", "signoff.example.com/globex"}
    assert [w.name for w in trust.witnesses] == ["witness.test/w1"] and trust.witness_quorum == 1
    assert len(trust.keys) == 1 and "mac_keys" not in out.read_text()
    printed = runner.invoke(cli, ["keys", "vkey", "--keys", str(keys), "--tenant", "acme"])
    origin = f"{keyset.log_name}/acme"
    assert printed.output.split() == [
        origin,
        note_vkey(origin, keyset.note_key().public_bytes_raw()),
    ]
    bad = run("keys", "export-trust", "--keys", str(keys), "--witness", "nonsense")
    one_error_line(bad, "proof_format")

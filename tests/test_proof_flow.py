"""Checkpoints, signed receipts and bundles from real gate flows, verified without the database."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from signoff import Principal
from signoff.audit._chain import event_hash
from signoff.gate._proof import GateProof
from signoff.proof import (
    FileSignerState,
    PublicKeys,
    state_directory_for,
    verify_bundle,
    verify_receipt,
)
from signoff.proof._events import event_to_dict
from tests.conftest import AGENT, ISSUER, REFUND, World, make_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, token_form="signed")
    yield w
    w.store.close()
    w.shop.close()


def _proof(world: World) -> GateProof:
    assert world.gate._ctx.proof is not None
    return world.gate._ctx.proof


@contextmanager
def _cadence(tmp_path: Path, *, events: int, seconds: int) -> Iterator[tuple[World, GateProof]]:
    """A signing world whose checkpoints come every ``events`` events or ``seconds``."""
    world = make_world(tmp_path, token_form="signed")
    proof = dataclasses.replace(_proof(world), checkpoint_events=events, checkpoint_seconds=seconds)
    world.gate._ctx = dataclasses.replace(world.gate._ctx, proof=proof)
    try:
        yield world, proof
    finally:
        world.store.close()
        world.shop.close()


def _refund(world: World, order: str = "ord_1001", amount: int = 1000) -> str:
    proposal = world.propose(order_id=order, amount_minor=amount)
    token = world.approve(proposal, key=f"k-{order}-{amount}")
    result = world.gate.execute(AGENT, proposal.proposal_id, token)
    assert result.signed_receipt is not None
    return result.signed_receipt


def test_each_execution_ends_with_a_checkpoint_and_a_signed_receipt(world: World) -> None:
    """The receipt's checkpoint covers its outcome; it verifies with the JWKS alone."""
    receipt = _refund(world)
    with world.store.read() as tx:
        sizes = [c.size for c in tx.checkpoints("acme")]
        head = tx.audit_head_seq("acme")
    assert sizes == [1, head]  # the log's first event, then the end of the execution
    report = verify_receipt(receipt, PublicKeys(_proof(world).keys.public_jwks()))
    assert report.ok, report.findings
    assert report.executions == 1 and report.covered == report.events


def test_receipt_proofs_use_only_the_events_since_an_earlier_checkpoint(world: World) -> None:
    """Later receipts prove inclusion from the previous checkpoint's frontier, and verify."""
    keys = PublicKeys(_proof(world).keys.public_jwks())
    receipts = [_refund(world, amount=1000 + i) for i in range(4)]
    for receipt in receipts:
        assert verify_receipt(receipt, keys).ok
    with world.store.read() as tx:
        assert len(tx.checkpoints("acme")) == 1 + 4


def test_replayed_execution_returns_the_same_signed_receipt(world: World) -> None:
    """A duplicate answer carries the same JWS (Ed25519 is deterministic)."""
    proposal = world.propose()
    token = world.approve(proposal)
    first = world.gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="x1")
    again = world.gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="x1")
    assert again.duplicate and again.signed_receipt == first.signed_receipt
    assert world.gate.signed_receipt(AGENT, first.execution.execution_id) == first.signed_receipt


def test_bundle_and_receipt_verify_after_the_database_is_deleted(world: World) -> None:
    """Export, delete every database file, verify the bundle and a receipt offline."""
    receipts = [_refund(world, amount=500 + i) for i in range(3)]
    world.propose(amount_minor=777)  # a proposal after the last execution
    bundle = world.gate.export_bundle("acme")
    jwks = _proof(world).keys.public_jwks()
    out = world.path / "bundle.json"
    out.write_text(json.dumps(bundle))
    world.store.close()
    world.shop.close()
    for file in world.path.glob("*.db*"):
        file.unlink()
    assert not list(world.path.glob("signoff.db*"))
    report = verify_bundle(json.loads(out.read_text()), PublicKeys(jwks))
    assert report.ok, report.findings
    assert report.executions == 3 and report.uncovered == 0
    for receipt in receipts:
        assert verify_receipt(receipt, PublicKeys(jwks)).ok


def test_database_rewrite_with_recomputed_hashes_fails_the_bundle(world: World) -> None:
    """alice → mallory in the stored log, every hash and head recomputed: the export is caught."""
    _refund(world)
    _refund(world, amount=2000)
    with world.store.transaction() as tx:
        events = tx.audit_events(tenant="acme")
        prev = "0" * 64
        for e in events:
            actor = "mallory" if e.kind == "decision.approved" else e.actor
            fields = {**event_to_dict(e), "actor": actor, "prev_hash": prev}
            fields.pop("hash")
            digest = event_hash(**fields)
            tx.run(
                "UPDATE audit_events SET actor = ?, prev_hash = ?, hash = ? "
                "WHERE tenant = ? AND seq = ?",
                (actor, prev, digest, e.tenant, e.seq),
            )
            prev = digest
        tx.run("UPDATE audit_heads SET hash = ? WHERE tenant = ?", (prev, "acme"))
    assert world.gate.verify_audit().ok  # the database's own chain check is fooled
    report = verify_bundle(
        world.gate.export_bundle("acme"), PublicKeys(_proof(world).keys.public_jwks())
    )
    assert "checkpoint_mismatch" in {f.code for f in report.findings}


def test_checkpoints_every_n_events(tmp_path: Path) -> None:
    """With checkpoint_events=3, proposals alone are checkpointed every third event."""
    with _cadence(tmp_path, events=3, seconds=3600) as (world, _):
        for i in range(7):
            world.propose(amount_minor=100 + i)
        with world.store.read() as tx:
            sizes = [c.size for c in tx.checkpoints("acme")]
        assert sizes == [1, 4, 7]  # the first event (no checkpoint yet), then every 3


def test_a_quiet_log_is_checkpointed_by_the_age_pass(tmp_path: Path) -> None:
    """Events under the count limit, then no write: checkpoint_due() covers them once aged."""
    with _cadence(tmp_path, events=64, seconds=60) as (world, proof):
        world.propose(amount_minor=100)  # the log's first event: checkpointed at once
        world.propose(amount_minor=101)
        world.propose(amount_minor=102)
        world.clock.advance(timedelta(seconds=59))
        assert world.gate.checkpoint_due() == []  # neither 64 events nor 60 s yet
        with world.store.read() as tx:
            assert [c.size for c in tx.checkpoints("acme")] == [1]
            head = tx.audit_head_seq("acme")
        world.clock.advance(timedelta(seconds=1))
        made = world.gate.checkpoint_due()
        assert [(c.tenant, c.size) for c in made] == [("acme", head)]
        assert world.gate.checkpoint_due() == []  # nothing new: no second checkpoint
        with world.store.read() as tx:
            assert [c.size for c in tx.checkpoints("acme")] == [1, head]
        bundle = world.gate.export_bundle("acme")
        assert verify_bundle(bundle, PublicKeys(proof.keys.public_jwks())).ok


def test_checkpoint_now_covers_every_tenant_at_its_head(tmp_path: Path) -> None:
    """`checkpoint_now` signs each tenant's head regardless of the limits; idempotent."""
    with _cadence(tmp_path, events=64, seconds=3600) as (world, _):
        for i in range(3):
            world.propose(amount_minor=100 + i)
        globex_agent = Principal("u_77", "globex", actor="agent:support-bot")
        world.gate.propose(globex_agent, "refund_order", {**REFUND, "order_id": "ord_2001"})
        with world.store.read() as tx:
            heads = {t: tx.audit_head_seq(t) for t in ("acme", "globex")}
        first = world.gate.checkpoint_now()
        assert {(c.tenant, c.size) for c in first} == set(heads.items())
        assert world.gate.checkpoint_now() == first  # the same records, nothing new signed


def test_since_export_continues_a_checkpoint(world: World) -> None:
    """A bundle since checkpoint N verifies on its own and holds only later events."""
    _refund(world)
    with world.store.read() as tx:
        first = tx.checkpoints("acme")[-1].size
    _refund(world, amount=3000)
    bundle = world.gate.export_bundle("acme", since=first)
    assert bundle["events"][0]["seq"] == first + 1
    assert verify_bundle(bundle, PublicKeys(_proof(world).keys.public_jwks())).ok


def test_issuer_is_in_signed_receipts(world: World) -> None:
    """The receipt names this deployment as issuer."""
    import jwt

    claims = jwt.decode(_refund(world), options={"verify_signature": False})
    assert claims["iss"] == ISSUER
    assert claims["outcome"] == "succeeded" and claims["approvers"][0]["subject"] == "alice"


def test_cli_export_then_offline_verify_without_the_database(world: World) -> None:
    """`signoff audit export` then `signoff audit verify --bundle` after deleting the database."""
    import subprocess
    import sys

    keys, jwks, out = world.path / "keys.json", world.path / "jwks.json", world.path / "b.json"
    # The gate's signer keeps its state beside the key file, as `signoff serve` does.
    signer = FileSignerState(state_directory_for(keys))
    world.gate._ctx = dataclasses.replace(
        world.gate._ctx, proof=dataclasses.replace(_proof(world), signer=signer)
    )
    _refund(world)
    _proof(world).keys.save(keys)
    jwks.write_text(json.dumps(_proof(world).keys.public_jwks()))
    db = str(world.path / "signoff.db")

    def signoff(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "signoff", *args]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    world.propose(amount_minor=500)  # uncovered: after the execution's checkpoint
    with world.store.read() as tx:
        head = tx.audit_head_seq("acme")
    signed = signoff("audit", "checkpoint", "--db", db, "--keys", str(keys))
    assert signed.returncode == 0, signed.stderr
    assert signed.stdout.strip() == f"acme: checkpoint at size {head}"
    with world.store.read() as tx:
        assert tx.latest_checkpoint("acme").size == head  # type: ignore[union-attr]
    unsigned = signoff("audit", "checkpoint", "--db", db)
    assert unsigned.returncode == 2 and unsigned.stderr.startswith("error [")
    exported = signoff(
        "audit", "export", "--db", db, "--tenant", "acme", "--out", str(out), "--keys", str(keys)
    )
    assert exported.returncode == 0, exported.stderr
    stored = signoff("audit", "verify", "--db", db, "--jwks", str(jwks))
    assert stored.returncode == 0, stored.stdout + stored.stderr
    assert "signed checkpoints match the chain" in stored.stdout
    chain_only = signoff("audit", "verify", "--db", db)
    assert chain_only.returncode == 0 and "only the chain was checked" in chain_only.stdout
    world.store.close()
    for file in world.path.glob("signoff.db*"):
        file.unlink()
    verified = signoff("audit", "verify", "--bundle", str(out), "--jwks", str(jwks))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "1 executions checked" in verified.stdout and "verified" in verified.stdout
    no_keys = signoff("audit", "export", "--db", db, "--tenant", "acme", "--out", str(out))
    assert no_keys.returncode == 2 and no_keys.stderr.startswith("error [")

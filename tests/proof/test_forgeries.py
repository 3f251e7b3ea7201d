"""Every forgery the fail-closed issue lists, each refused by the verifier or by the signer.

Each of these printed ``verified`` and exited 0 before PROTOCOL rule 16: a bundle
or receipt re-signed with an attacker's key and checked with the keys it carried;
a rewritten history with its checkpoints removed; a tail cut by a database
writer; checkpoints deleted and history rewritten, then signed from scratch; a
fabricated refund appended by a database writer; a checkpoint signed by a
retired key; a receipt for one proposal shown as proof of another; two forks of
one log. The store-level cases run on SQLite and on PostgreSQL; the witness
refusing a fork is in tests/proof/test_witness.py.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from signoff import Gate
from signoff._canonical import canonical_json
from signoff.audit._chain import GENESIS, AuditEvent, event_hash
from signoff.exceptions import (
    CheckpointInconsistent,
    EventUnauthenticated,
    NoTrustRoot,
    SignerStateMissing,
)
from signoff.gate._audit_verify import verify_stored_checkpoints
from signoff.gate._proof import GateProof
from signoff.proof import (
    Checkpoint,
    CompactTree,
    Expectation,
    FileSignerState,
    KeySet,
    PublicKeys,
    Report,
    TrustRoot,
    build_bundle,
    leaf_hash,
    sign_checkpoint,
    verify_bundle,
    verify_receipt,
)
from signoff.proof._note import NoteRejected, cosign, sign_note
from signoff.store._sql import SqlTransaction
from tests.conftest import AGENT, ISSUER, REFUND, TOKEN_KEY
from tests.proof.conftest import ORIGIN, TENANT, Log, refund_flow, rehash, signed_checkpoints
from tests.test_store_contract import STORES, Backend, backend_for

MICROS = 1_000_000


def _codes(report: Report) -> set[str]:
    return {finding.code for finding in report.findings}


@dataclass
class Deployment:
    """A signing gate over one backend, its key file and its signer state on disk."""

    backend: Backend
    keys: KeySet
    state: Path
    gate: Gate
    refused: list[str] = dataclasses.field(default_factory=list)
    """The codes ``GateProof.on_refusal`` was told (the HTTP app counts them in a metric)."""

    @property
    def proof(self) -> GateProof:
        assert self.gate.proof is not None
        return self.gate.proof

    @property
    def trust(self) -> TrustRoot:
        origin = self.proof.origin("acme")
        return TrustRoot(PublicKeys(self.keys.public_jwks()), frozenset({origin}))

    def restart(self, keys: KeySet | None = None) -> None:
        """A new gate process with the same (or rotated) key file and the same state."""
        self.keys = keys or self.keys
        self.gate = _gate(self.backend, self.keys, self.state, self.refused)

    def refund(self, order: str = "ord_1001", amount: int = 19900) -> tuple[str, str]:
        """propose → approve → execute; the proposal id and its signed receipt."""
        pid, receipt = self.refund_unsigned(order, amount)
        assert receipt is not None
        return pid, receipt

    def refund_unsigned(self, order: str, amount: int) -> tuple[str, str | None]:
        b = self.backend
        proposal = self.gate.propose(
            AGENT, "refund_order", {**REFUND, "order_id": order, "amount_minor": amount}
        )
        token = b.approve(self.gate, proposal, key=f"k-{order}-{amount}")
        result = self.gate.execute(AGENT, proposal.proposal_id, token)
        return proposal.proposal_id, result.signed_receipt

    def write(self, *statements: tuple[str, tuple[Any, ...]]) -> None:
        """What a database writer does: statements straight into the store."""
        with self.backend.store.transaction() as tx:
            for sql, params in statements:
                tx.run(sql, params)

    def events(self) -> list[AuditEvent]:
        with self.backend.store.read() as tx:
            return tx.audit_events(tenant="acme")

    def replace_log(self, events: list[AuditEvent]) -> None:
        """Rewrite the tenant's whole log (hashes recomputed) and its head, as a writer can."""
        with self.backend.store.transaction() as tx:
            tx.run("DELETE FROM audit_events WHERE tenant = ?", ("acme",))
            for e in events:
                _insert(tx, e)
            last = events[-1]
            tx.run(
                "UPDATE audit_heads SET seq = ?, hash = ? WHERE tenant = ?",
                (last.seq, last.hash, "acme"),
            )

    def export(self) -> tuple[dict[str, Any], list[str]]:
        problems: list[str] = []
        bundle = self.gate.export_bundle("acme", problems=problems)
        return json.loads(json.dumps(bundle)), problems


def _insert(tx: SqlTransaction, e: AuditEvent) -> None:
    tx.run(
        "INSERT INTO audit_events (tenant, seq, at, kind, proposal_id, execution_id, actor, "
        "data, prev_hash, hash, mac) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (e.tenant, e.seq, e.at, e.kind, e.proposal_id, e.execution_id, e.actor, e.data,
         e.prev_hash, e.hash, e.mac),
    )  # fmt: skip


def _rechained(events: list[AuditEvent]) -> list[AuditEvent]:
    """Renumber, relink and rehash (keeping each MAC), as a database writer could."""
    out, prev = [], GENESIS
    for seq, e in enumerate(events, start=1):
        fields = {**dataclasses.asdict(e), "seq": seq, "prev_hash": prev}
        fields.pop("hash")
        digest = event_hash(**fields)
        out.append(AuditEvent(**fields, hash=digest))
        prev = digest
    return out


def _gate(backend: Backend, keys: KeySet, state: Path, refused: list[str]) -> Gate:
    from signoff.demo import demo_catalog

    proof = GateProof(
        keys, issuer=ISSUER, log_name="signoff.test", token_form="signed",
        signer=FileSignerState(state), on_refusal=lambda refusal: refused.append(refusal.code),
    )  # fmt: skip
    return Gate(
        demo_catalog(backend.shop, backend.provider),
        backend.store,
        token_key=TOKEN_KEY,
        clock=backend.clock,
        directory=backend.directory,
        proof=proof,
    )


@pytest.fixture(params=STORES)
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    with backend_for(request.param, tmp_path) as backend:
        now = int(backend.clock.now().timestamp())
        keys = KeySet.generate(now=now)
        state = tmp_path / "keys.json.state"
        refused: list[str] = []
        yield Deployment(backend, keys, state, _gate(backend, keys, state, refused), refused)


# 1. A bundle or receipt re-signed by an attacker, verified with the keys it carries --------


def test_a_bundle_re_signed_by_an_attacker_is_refused(tmp_path: Path) -> None:
    """The attacker's key travels in the bundle: without a trust root nothing verifies, and
    under the deployment's keys the attacker's checkpoints are not signatures at all."""
    real, attacker = KeySet.generate(), KeySet.generate()
    log = Log()
    refund_flow(log, "prp_1")
    forged = build_bundle(
        tenant=TENANT, origin=ORIGIN, events=log.events,
        checkpoints=signed_checkpoints(log.events, attacker, [5]), jwks=attacker.public_jwks(),
    )  # fmt: skip
    with pytest.raises(NoTrustRoot):
        verify_bundle(forged, None)
    report = verify_bundle(forged, PublicKeys(real.public_jwks()))
    assert _codes(report) == {"checkpoint_signature", "no_checkpoint"}
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    cli = subprocess.run(
        [sys.executable, "-m", "signoff", "audit", "verify", "--bundle", str(path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert cli.returncode == 2 and cli.stderr.startswith("error [no_trust_root]: ")
    assert "verified" not in cli.stdout


def test_a_receipt_re_signed_by_an_attacker_is_refused(deployment: Deployment) -> None:
    """A receipt signed with another key, its JWKS beside it: refused under the real keys."""
    _, receipt = deployment.refund()
    attacker = KeySet.generate()
    _, payload, _ = receipt.split(".")
    from signoff.proof._jws import sign_jws

    claims = json.loads(_unb64(payload))
    forged = sign_jws(attacker.active_key, claims, typ="signoff-receipt+jwt")
    with pytest.raises(NoTrustRoot):
        verify_receipt(forged, None)
    assert _codes(verify_receipt(forged, deployment.trust)) == {"receipt_signature"}
    assert verify_receipt(receipt, deployment.trust).ok


def _unb64(text: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# 2. Checkpoints removed, history rewritten: real keys pinned, still refused -----------------


def test_a_bundle_without_checkpoints_and_a_rewritten_history_is_refused(
    deployment: Deployment,
) -> None:
    """alice → mallory, the policy's role removed, every approval deleted, no checkpoint left:
    nothing signed vouches for it, so it never verifies, not even with --allow-uncovered."""
    deployment.refund()
    bundle, _ = deployment.export()
    assert verify_bundle(bundle, deployment.trust).ok
    events = [dict(e) for e in bundle["events"] if e["kind"] != "decision.approved"]
    for e in events:
        if e["kind"] == "proposal.created":
            data = json.loads(e["data"])
            data["policy"]["role"] = None
            e["data"] = canonical_json(data).decode()
        if e["actor"] == "alice":
            e["actor"] = "mallory"
    from signoff.proof._events import event_from_dict, event_to_dict

    rewritten = _rechained([event_from_dict(e) for e in events])
    bundle["events"] = [event_to_dict(e) for e in rewritten]
    bundle["checkpoints"], bundle["consistency"] = [], []
    for allow in (False, True):
        report = verify_bundle(bundle, deployment.trust, allow_uncovered=allow)
        assert "no_checkpoint" in _codes(report) and not report.ok


# 3. A tail cut by a database writer -----------------------------------------------------


def test_a_cut_tail_is_reported_by_the_exporter_the_signer_and_audit_verify(
    deployment: Deployment,
) -> None:
    """The last events deleted and the head moved back: the exporter keeps the larger signed
    checkpoint (events_missing), the signer refuses to sign the shorter log, and
    `audit verify --db` with the keys names the cut; without the keys it looks intact."""
    deployment.refund("ord_1001")
    deployment.refund("ord_1002", 5000)
    events = deployment.events()
    keep = events[: len(events) - 3]
    deployment.write(
        ("DELETE FROM audit_events WHERE tenant = ? AND seq > ?", ("acme", keep[-1].seq)),
        ("UPDATE audit_heads SET seq = ?, hash = ? WHERE tenant = ?",
         (keep[-1].seq, keep[-1].hash, "acme")),
    )  # fmt: skip
    bundle, problems = deployment.export()
    assert any("checkpoint_inconsistent" in p for p in problems)
    assert any("events_missing" in p for p in problems)
    assert "events_missing" in _codes(verify_bundle(bundle, deployment.trust))
    with pytest.raises(CheckpointInconsistent, match="events were deleted"):
        _checkpoint(deployment)
    assert deployment.gate.verify_audit().ok  # the chain alone cannot tell
    stored = verify_stored_checkpoints(deployment.backend.store, deployment.trust)
    assert "events_missing" in _codes(stored)


def test_a_tail_cut_together_with_its_checkpoint_rows_is_still_reported(
    deployment: Deployment,
) -> None:
    """The writer also deletes the checkpoints that covered the cut events: the exporter signs
    the signer's own last view again, so the bundle still shows what was cut."""
    deployment.refund("ord_1001")
    deployment.refund("ord_1002", 5000)
    events = deployment.events()
    keep = events[:-3]
    deployment.write(
        ("DELETE FROM audit_events WHERE tenant = ? AND seq > ?", ("acme", keep[-1].seq)),
        ("UPDATE audit_heads SET seq = ?, hash = ? WHERE tenant = ?",
         (keep[-1].seq, keep[-1].hash, "acme")),
        ("DELETE FROM checkpoints WHERE tenant = ? AND size > ?", ("acme", keep[-1].seq)),
    )  # fmt: skip
    bundle, problems = deployment.export()
    assert any("events_missing" in p for p in problems)
    assert "events_missing" in _codes(verify_bundle(bundle, deployment.trust))


def _checkpoint(deployment: Deployment) -> Any:
    from signoff.gate._checkpoints import checkpoint

    return checkpoint(deployment.gate._ctx, "acme")


# 4. Checkpoints deleted, history rewritten, the honest signer asked to sign it -------------


def test_the_signer_never_signs_a_rewritten_history_from_scratch(deployment: Deployment) -> None:
    """alice → mallory with every hash recomputed and every checkpoint row deleted: the signer
    remembers what it signed (outside the store) and refuses; the export still fails."""
    deployment.refund()
    events = [
        dataclasses.replace(e, actor="mallory") if e.actor == "alice" else e
        for e in deployment.events()
    ]
    deployment.replace_log(_rechained(events))
    deployment.write(("DELETE FROM checkpoints WHERE tenant = ?", ("acme",)))
    with pytest.raises(CheckpointInconsistent, match="rewritten"):
        _checkpoint(deployment)
    made = deployment.gate.checkpoint_now()
    assert made == [] and deployment.refused == ["checkpoint_inconsistent"]
    bundle, problems = deployment.export()
    assert problems and "checkpoint_mismatch" in _codes(verify_bundle(bundle, deployment.trust))
    with deployment.backend.store.read() as tx:
        refused = [e for e in tx.audit_events(tenant="acme") if e.kind == "checkpoint.refused"]
    assert refused and json.loads(refused[0].data)["code"] == "checkpoint_inconsistent"


def test_a_signer_whose_state_is_gone_refuses_until_an_operator_re_initialises(
    deployment: Deployment,
) -> None:
    """No record of a log the store holds checkpoints of: refused (not trusted on first use);
    `init-signer` restores the view from the verified checkpoints, audited."""
    deployment.refund()
    for file in deployment.state.iterdir():
        file.unlink()
    deployment.restart()
    deployment.backend.clock.advance(timedelta(seconds=1))
    with pytest.raises(SignerStateMissing):
        deployment.gate.checkpoint_now(on_refusal=_raise)
    deployment.gate.init_signer("acme")
    deployment.refund("ord_1002", 5000)
    kinds = [e.kind for e in deployment.events()]
    assert "signer.initialised" in kinds
    bundle, problems = deployment.export()
    assert problems == [] and verify_bundle(bundle, deployment.trust).ok


def _raise(tenant: str, refusal: Exception) -> None:
    raise refusal


# 5. A fabricated refund appended by a database writer ------------------------------------


def test_a_fabricated_refund_appended_by_a_database_writer_is_never_signed(
    deployment: Deployment,
) -> None:
    """A ¥1,000 refund "approved by alice", well hashed and linked: no gate MAC, so the signer
    covers the events before it only, refuses it and everything after it, and no receipt
    or bundle ever vouches for it."""
    deployment.refund()
    head = deployment.events()[-1]
    fake_at = head.at + MICROS
    fabricated = [
        ("proposal.created", "agent:bot for u_42",
         {"tool": "refund_order", "tool_version": "1", "args_digest": "f" * 64,
          "resource_id": "ord_1003", "state_version": "v1", "policy": {"role": "refund_approver"}}),
        ("decision.approved", "alice", {"step": "role:refund_approver", "args_digest": "f" * 64}),
        ("execution.succeeded", None, {"executed_digest": "f" * 64, "provider_reference": "re_x"}),
    ]  # fmt: skip
    prev, events = head, []
    for offset, (kind, actor, data) in enumerate(fabricated, start=1):
        fields = {
            "tenant": "acme", "seq": head.seq + offset, "at": fake_at, "kind": kind,
            "proposal_id": "prp_fake", "execution_id": None, "actor": actor,
            "data": canonical_json(data).decode(), "prev_hash": prev.hash,
        }  # fmt: skip
        prev = AuditEvent(**fields, hash=event_hash(**fields))  # type: ignore[arg-type]
        events.append(prev)
    with deployment.backend.store.transaction() as tx:
        for e in events:
            _insert(tx, e)
        tx.run(
            "UPDATE audit_heads SET seq = ?, hash = ? WHERE tenant = ?",
            (prev.seq, prev.hash, "acme"),
        )
    with pytest.raises(EventUnauthenticated, match=f"#{head.seq + 1}"):
        _checkpoint(deployment)
    deployment.backend.clock.advance(timedelta(minutes=5))
    # The gate goes on (the refund is made), but nothing after the fake is ever signed.
    _, receipt = deployment.refund_unsigned("ord_1002", 5000)
    assert receipt is None and deployment.backend.refunded("ord_1002") == 5000
    with deployment.backend.store.read() as tx:
        assert tx.latest_checkpoint("acme").size == head.seq  # type: ignore[union-attr]
    bundle, problems = deployment.export()
    assert any("event_unauthenticated" in p for p in problems)
    report = verify_bundle(bundle, deployment.trust)
    assert "events_uncovered" in _codes(report)
    assert not any(p["proposal_id"] == "prp_fake" for p in _covered_proofs(bundle, deployment))


def _covered_proofs(bundle: dict[str, Any], deployment: Deployment) -> list[dict[str, Any]]:
    report = verify_bundle(bundle, deployment.trust, allow_uncovered=True)
    covered = report.covered
    trimmed = {**bundle, "events": bundle["events"][:covered]}
    return verify_bundle(trimmed, deployment.trust).proven


def test_a_replayed_gate_event_is_never_signed(deployment: Deployment) -> None:
    """Copying alice's genuine approval (its MAC too) to the end of the log: a replay."""
    deployment.refund()
    events = deployment.events()
    approval = next(e for e in events if e.kind == "decision.approved")
    head = events[-1]
    fields = {**dataclasses.asdict(approval), "seq": head.seq + 1, "prev_hash": head.hash}
    fields.pop("hash")
    replayed = AuditEvent(**fields, hash=event_hash(**fields))
    with deployment.backend.store.transaction() as tx:
        _insert(tx, replayed)
        tx.run(
            "UPDATE audit_heads SET seq = ?, hash = ? WHERE tenant = ?",
            (replayed.seq, replayed.hash, "acme"),
        )
    with pytest.raises(EventUnauthenticated, match="replay"):
        _checkpoint(deployment)


# 6. A checkpoint signed by a retired key -----------------------------------------------


def test_a_retired_key_can_never_sign_and_its_late_signatures_are_refused(
    deployment: Deployment,
) -> None:
    """`keys rotate` keeping the private part: the key set will not sign with it; a checkpoint
    made with it anyway (by whoever kept it) is outside its window, and back-dating the
    signature leaves it older than the events it covers."""
    deployment.refund()
    clock = deployment.backend.clock
    clock.advance(timedelta(hours=1))
    rotated = deployment.keys.rotated(now=int(clock.now().timestamp()), keep_private=True)
    old = next(k for k in rotated.keys if k.retired)
    with pytest.raises(NoteRejected, match="may not sign"):
        sign_checkpoint(old, Checkpoint("x/acme", 1, bytes(32)), timestamp=0)
    deployment.restart(rotated)
    clock.advance(timedelta(hours=1))
    deployment.refund("ord_1002", 5000)
    events = deployment.events()
    tree = CompactTree()
    for e in events:
        tree.append(leaf_hash(bytes.fromhex(e.hash)))
    body = Checkpoint(deployment.proof.origin("acme"), tree.size, tree.root()).body()
    private = old.private_key
    for when, code in (
        (int(clock.now().timestamp()), "checkpoint_signature"),  # after retirement
        (int(clock.now().timestamp()) - 7200, "checkpoint_time"),  # back-dated
    ):
        note = sign_note(body, body.split("\n")[0], private)  # type: ignore[arg-type]
        note += cosign(body, body.split("\n")[0], private, when)  # type: ignore[arg-type]
        deployment.write(
            ("DELETE FROM checkpoints WHERE tenant = ? AND size = ?", ("acme", tree.size)),
            ("INSERT INTO checkpoints (tenant, size, root, frontier, note, created_at) "
             "VALUES (?,?,?,?,?,?)", ("acme", tree.size, "", "[]", note, 0)),
        )  # fmt: skip
        bundle, _ = deployment.export()
        trust = TrustRoot(PublicKeys(rotated.public_jwks()))
        assert code in _codes(verify_bundle(bundle, trust)), code


# 7. A receipt for proposal A presented as proof of proposal B -----------------------------


def test_a_receipt_for_another_proposal_is_not_the_expected_proof(
    deployment: Deployment,
) -> None:
    """The reader names what they expect (--proposal, --digest, --args): A's receipt is
    refused as B's, and the verifier says what it proves."""
    a, receipt_a = deployment.refund("ord_1001")
    b, _ = deployment.refund("ord_1002", 5000)
    trust = deployment.trust
    report = verify_receipt(receipt_a, trust)
    assert report.ok
    [proven] = report.proven
    assert proven["proposal_id"] == a and proven["approvers"][0]["subject"] == "alice"
    assert proven["outcome"] == "succeeded" and proven["provider_reference"]
    args_a = {**REFUND, "order_id": "ord_1001"}
    assert verify_receipt(receipt_a, trust, expect=Expectation(proposal_id=a)).ok
    assert verify_receipt(receipt_a, trust, expect=Expectation(arguments=args_a)).ok
    for expect in (
        Expectation(proposal_id=b),
        Expectation(args_digest="0" * 64),
        Expectation(arguments={**args_a, "amount_minor": 5000}),
    ):
        assert _codes(verify_receipt(receipt_a, trust, expect=expect)) == {"not_the_expected_proof"}


# 8. Two forks of one tenant's log, each with a valid checkpoint at the same size -----------


def test_a_fork_is_refused_against_a_checkpoint_the_reader_holds() -> None:
    """Both forks are signed with the deployment's own key; the checkpoint the reader kept
    from fork A (a receipt, an earlier export, a witness) makes fork B fail."""
    keys = KeySet.generate()
    fork_a = Log()
    refund_flow(fork_a, "prp_1")
    refund_flow(fork_a, "prp_2")
    fork_b = Log(events=list(fork_a.events[:5]))
    refund_flow(fork_b, "prp_2", approver="mallory")
    fork_b.events = rehash(fork_b.events)
    [(_, held)] = signed_checkpoints(fork_a.events, keys, [10])
    bundle_b = build_bundle(
        tenant=TENANT, origin=ORIGIN, events=fork_b.events,
        checkpoints=signed_checkpoints(fork_b.events, keys, [5, 10]), jwks={},
    )  # fmt: skip
    trust = PublicKeys(keys.public_jwks())
    assert verify_bundle(bundle_b, trust).ok  # each fork alone looks fine
    assert _codes(verify_bundle(bundle_b, trust, held=[held])) == {"fork_detected"}
    bundle_a = build_bundle(
        tenant=TENANT, origin=ORIGIN, events=fork_a.events[:8],
        checkpoints=signed_checkpoints(fork_a.events[:8], keys, [5, 8]), jwks={},
    )  # fmt: skip
    assert "events_missing" in _codes(verify_bundle(bundle_a, trust, held=[held]))

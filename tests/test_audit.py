"""The audit chain: complete, tamper-evident, and free of secrets."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from signoff import verify_audit
from signoff.exceptions import NotEntitled
from tests.conftest import AGENT, APPROVER, World


def _full_flow(world: World) -> tuple[str, str]:
    proposal = world.propose()
    token = world.approve(proposal)
    world.gate.execute(AGENT, proposal.proposal_id, token)
    return proposal.proposal_id, token


def test_every_transition_is_audited_in_order(world: World) -> None:
    """Proposal, decision, token issue/consume, attempt and answer, linked by ids."""
    proposal_id, _ = _full_flow(world)
    events = world.gate.audit_events(APPROVER, proposal_id=proposal_id)
    assert [e.kind for e in events] == [
        "proposal.created",
        "decision.approved",
        "token.issued",
        "token.consumed",
        "execution.started",
        "execution.succeeded",
    ]
    digests = {e.payload().get("args_digest") or e.payload().get("executed_digest") for e in events}
    digests.discard(None)
    assert len(digests) == 1, "requested = approved = executed digest"
    assert events[1].actor == "alice"
    assert world.gate.verify_audit().ok


def test_no_token_secret_in_audit_or_logs(world: World, caplog: pytest.LogCaptureFixture) -> None:
    """Neither the audit rows nor the logs contain the token or its hash."""
    import hashlib

    caplog.set_level(logging.DEBUG, logger="signoff")
    _, token = _full_flow(world)
    with world.store.read() as tx:
        rows = str(tx.run("SELECT * FROM audit_events").fetchall())
    hashed = hashlib.sha256(token.encode()).hexdigest()
    for secret in (token, hashed):
        assert secret not in rows
        assert secret not in caplog.text


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        ("UPDATE audit_events SET data = REPLACE(data, 'alice', 'mallory') WHERE seq = 2", "#2"),
        ("DELETE FROM audit_events WHERE seq = 3", "#4"),
        ("UPDATE audit_events SET seq = seq + 100 WHERE seq = 2", "#3"),
        ("DELETE FROM audit_events WHERE seq = 6", "head is #6"),
        ("UPDATE audit_events SET kind = 'token.revoked' WHERE seq = 4", "#4"),
    ],
    ids=["edited", "deleted", "reordered", "truncated", "kind-changed"],
)
def test_tampering_is_detected_and_located(world: World, tamper: str, expected: str) -> None:
    """Editing, deleting, reordering or truncating rows names the first bad event."""
    _full_flow(world)
    with world.store.transaction() as tx:
        tx.run(tamper)
    report = verify_audit(world.store)
    assert not report.ok
    assert report.first_bad is not None and expected in report.first_bad


def test_cli_audit_verify_exit_codes(world: World) -> None:
    """`signoff audit verify` exits 0 on an intact chain and 1 naming the bad event."""
    _full_flow(world)
    db = str(world.path / "signoff.db")
    command = [sys.executable, "-m", "signoff", "audit", "verify", "--db", db]
    intact = subprocess.run(command, capture_output=True, text=True, check=False)
    assert intact.returncode == 0, intact.stderr
    assert "intact" in intact.stdout
    with world.store.transaction() as tx:
        tx.run("UPDATE audit_events SET at = at + 1 WHERE seq = 5")
    broken = subprocess.run(command, capture_output=True, text=True, check=False)
    assert broken.returncode == 1
    assert "#5" in broken.stderr


def test_chains_are_per_tenant(world: World) -> None:
    """Each tenant has its own chain; an auditor reads only their tenant's events."""
    from signoff import Principal

    _full_flow(world)
    globex = Principal("u_77", "globex", actor="agent:support-bot")
    world.gate.propose(
        globex,
        "refund_order",
        {"order_id": "ord_2001", "amount_minor": 100, "currency": "CNY", "reason": None},
    )
    report = world.gate.verify_audit()
    assert report.ok and report.tenants == 2
    gus = Principal("gus", "globex", frozenset({"auditor"}))
    events = world.gate.audit_events(gus)
    assert events and all(e.tenant == "globex" for e in events)
    with pytest.raises(NotEntitled):
        world.gate.audit_events(globex)


def test_the_execution_events_carry_the_evidence_a_reader_needs(world: World) -> None:
    """Who consumed which token over which digest, each attempt and its key, and the
    outcome with the executed digest and the provider's reference — named by execution."""
    proposal = world.propose()
    result = world.gate.execute(AGENT, proposal.proposal_id, world.approve(proposal))
    execution = result.execution
    events = {
        e.kind: e
        for e in world.gate.audit_events(AGENT, proposal_id=proposal.proposal_id)
        if e.kind.startswith(("token.consumed", "execution."))
    }
    assert set(events) == {"token.consumed", "execution.started", "execution.succeeded"}
    assert {e.execution_id for e in events.values()} == {execution.execution_id}
    assert events["token.consumed"].actor == "agent:support-bot for u_42"
    [issued] = [
        e
        for e in world.gate.audit_events(AGENT, proposal_id=proposal.proposal_id)
        if e.kind == "token.issued"
    ]
    token_id = issued.payload()["token_id"]

    def payload(kind: str) -> dict[str, object]:
        return {k: v for k, v in events[kind].payload().items() if k != "request_id"}

    assert payload("token.consumed") == {
        "token_id": token_id,
        "args_digest": proposal.args_digest,
        "request_key": proposal.request_key,
    }
    assert payload("execution.started") == {"attempt": 1, "request_key": proposal.request_key}
    assert payload("execution.succeeded") == {
        "attempt": 1,
        "request_key": proposal.request_key,
        "executed_digest": proposal.args_digest,
        "provider_reference": world.provider.ledger()[0].reference,
        "error_code": None,
    }
    assert execution.execution_id.startswith("exe_")

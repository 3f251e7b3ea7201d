"""A policy change is recorded and audited, shown first by `signoff policy diff`, and never
alters a proposal already made: decided ones run as decided, pending ones keep their version."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from signoff import Decision, DecisionKind, Gate, ProposalStatus
from signoff.cli._main import cli
from signoff.gate._policy_apply import current_policy_version
from signoff.policy import PolicySource
from tests.conftest import AGENT, APPROVER, REFUND, TOKEN_KEY, World

V1 = "[tools.refund_order]\napprovals = 1\n"
V2 = "[tools.refund_order]\napprovals = 2\n"


def _policy_gate(world: World, source: PolicySource) -> Gate:
    return Gate(
        world.gate.catalog,
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        policy=source,
    )


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["policy", *args, "--demo"])
    return result.exit_code, result.output + result.stderr


def test_a_policy_change_leaves_decided_proposals_untouched_and_is_audited(
    world: World, tmp_path: Path
) -> None:
    db = str(world.path / "signoff.db")
    path = tmp_path / "policy.toml"
    path.write_text(V1)
    world.propose(order_id="ord_1050")  # the tenant's chain exists: it hears of every version
    assert _cli("apply", str(path), "--db", db, "--by", "ops:ana")[0] == 0
    source = PolicySource(world.gate.catalog, path)
    gate = _policy_gate(world, source)
    decided = gate.propose(AGENT, "refund_order", REFUND)
    token = gate.decide(
        APPROVER, decided.proposal_id, Decision(DecisionKind.APPROVE, 1), idempotency_key="a"
    ).confirmation_token
    assert token is not None
    pending = gate.propose(AGENT, "refund_order", {**REFUND, "order_id": "ord_1002"})

    path.write_text(V2)
    code, shown = _cli("diff", str(path), "--db", db)
    assert code == 0
    assert "~ tools.refund_order.approvals: 1 → 2" in shown
    assert f"{pending.proposal_id} (acme, refund_order): approvals: 1 → 2" in shown
    assert decided.proposal_id not in shown  # decided: not pending, not affected
    assert _cli("apply", str(path), "--db", db, "--by", "ops:ana")[0] == 0
    source.reload()

    # the decided proposal runs exactly as decided, under the version it was decided under
    result = gate.execute(AGENT, decided.proposal_id, token)
    assert result.execution.status.value == "succeeded"
    assert gate.proposal(AGENT, decided.proposal_id).policy == decided.policy
    # the pending one keeps its version: one approval still confirms it
    kept = gate.decide(
        APPROVER, pending.proposal_id, Decision(DecisionKind.APPROVE, 1), idempotency_key="b"
    )
    assert kept.proposal.status is ProposalStatus.CONFIRMED
    assert kept.proposal.policy_version == pending.policy_version
    # a new proposal is made under the new version
    fresh = gate.propose(AGENT, "refund_order", {**REFUND, "order_id": "ord_1003"})
    assert fresh.policy["approvals"] == 2 and fresh.policy_version != pending.policy_version

    with world.store.read() as tx:
        applied = [e for e in tx.audit_events(tenant="acme") if e.kind == "policy.applied"]
    assert [e.actor for e in applied] == ["ops:ana", "ops:ana"]
    second = applied[1].payload()
    current = current_policy_version(world.store)
    assert current is not None and second["digest"] == current.digest
    assert second["previous"] == applied[0].payload()["digest"]
    assert second["changes"] == ["~ tools.refund_order.approvals: 1 → 2"]
    assert world.gate.verify_audit().ok


def test_applying_the_version_in_force_again_records_nothing(world: World, tmp_path: Path) -> None:
    db = str(world.path / "signoff.db")
    path = tmp_path / "policy.toml"
    path.write_text(V1)
    world.propose()  # the tenant has a chain
    assert _cli("apply", str(path), "--db", db)[0] == 0
    code, shown = _cli("apply", str(path), "--db", db)
    assert code == 0 and "already in force" in shown
    with world.store.read() as tx:
        kinds = [e.kind for e in tx.audit_events(tenant="acme")]
    assert kinds.count("policy.applied") == 1


def test_apply_refuses_a_file_with_problems_and_records_nothing(
    world: World, tmp_path: Path
) -> None:
    db = str(world.path / "signoff.db")
    path = tmp_path / "policy.toml"
    path.write_text("[tools.refund_order]\napprovals = 0\n")
    code, shown = _cli("apply", str(path), "--db", db)
    assert code == 2 and "error [invalid_value]" in shown
    assert current_policy_version(world.store) is None

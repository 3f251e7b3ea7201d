"""The role directory in signoff's own store: grants, revocations, the CLI, the audit."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from signoff import (
    Decision,
    DecisionKind,
    ExecutionStatus,
    ManualClock,
    Principal,
    ProposalStatus,
    SQLiteStore,
)
from signoff._clock import to_micros
from signoff.cli._main import cli
from signoff.demo import FaultMode
from signoff.exceptions import ApproverRevoked, InvalidRequest, NotEntitled
from signoff.http import Settings, SettingsError
from signoff.http._settings import load_settings
from signoff.identity import StoreRoleDirectory
from signoff.store._q_roles import RoleGrant
from tests.conftest import AGENT, APPROVER, REFUND, World, store_directory_gate


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "s.db")
    store.migrate()
    return store


def test_grants_mode_needs_a_grant_and_revocations_mode_needs_no_revocation(
    store: SQLiteStore,
) -> None:
    strict = StoreRoleDirectory(store, mode="grants")
    lenient = StoreRoleDirectory(store, mode="revocations")
    assert not strict.holds_role("acme", "alice", "refund_approver")
    assert lenient.holds_role("acme", "alice", "refund_approver")
    assert strict.grant("acme", "alice", "refund_approver", by="ops") is True
    assert strict.grant("acme", "alice", "refund_approver", by="ops") is False
    assert strict.holds_role("acme", "alice", "refund_approver")
    assert strict.revoke("acme", "alice", "refund_approver", by="ops") is True
    for directory in (strict, lenient):
        assert not directory.holds_role("acme", "alice", "refund_approver")
    assert strict.holds_role("globex", "alice", "refund_approver") is not True


def test_every_change_is_an_audit_event_and_the_chain_holds(store: SQLiteStore) -> None:
    directory = StoreRoleDirectory(store)
    directory.grant("acme", "alice", "refund_approver", by="ops:root")
    directory.revoke("acme", "alice", "refund_approver", by="olga")
    with store.read() as tx:
        events = tx.audit_events(tenant="acme")
    assert [(e.kind, e.actor, e.payload()) for e in events] == [
        ("role.granted", "ops:root", {"subject": "alice", "role": "refund_approver"}),
        ("role.revoked", "olga", {"subject": "alice", "role": "refund_approver"}),
    ]
    [entry] = directory.grants("acme")
    assert (entry.subject, entry.revoked, entry.changed_by) == ("alice", True, "olga")


def test_names_are_checked(store: SQLiteStore) -> None:
    with pytest.raises(InvalidRequest):
        StoreRoleDirectory(store).grant("acme", "alice\n", "refund_approver", by="ops")
    with pytest.raises(ValueError, match="mode"):
        StoreRoleDirectory(store, mode="everyone")  # type: ignore[arg-type]


def test_the_gate_asks_it_inside_its_own_transaction(world: World) -> None:
    """A directory in the gate's store: a revocation stops the execution at once."""
    gate, directory = store_directory_gate(world, mode="grants")
    directory.grant("acme", "alice", "refund_approver", by="ops")
    world.gate = gate
    proposal = world.propose()
    token = world.approve(proposal)
    directory.revoke("acme", "alice", "refund_approver", by="ops")
    with pytest.raises(ApproverRevoked):
        gate.execute(AGENT, proposal.proposal_id, token)
    assert world.ledger_amounts() == []
    with pytest.raises(ApproverRevoked):
        world.approve(world.propose(order_id="ord_1002"), by=APPROVER, key="k2")


def test_the_cli_grants_revokes_and_lists(store: SQLiteStore) -> None:
    db = store.path
    runner = CliRunner()
    base = ["--db", db, "--tenant", "acme", "--sub", "alice", "--role", "refund_approver"]
    granted = runner.invoke(cli, ["roles", "grant", *base, "--by", "ops"])
    assert granted.exit_code == 0 and "granted: alice refund_approver in acme" in granted.output
    assert "already granted" in runner.invoke(cli, ["roles", "grant", *base]).output
    assert "revoked:" in runner.invoke(cli, ["roles", "revoke", *base]).output
    listed = runner.invoke(cli, ["roles", "list", "--db", db, "--tenant", "acme"])
    assert listed.exit_code == 0
    assert listed.output.startswith("alice\trefund_approver\trevoked\tby operator")


def test_the_cli_never_creates_a_database(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.db")
    result = CliRunner().invoke(
        cli, ["roles", "list", "--db", missing, "--tenant", "acme"], standalone_mode=True
    )
    assert result.exit_code != 0
    assert not Path(missing).exists()


def test_settings_choose_the_directory_and_the_surfaces() -> None:
    assert Settings(demo=True).effective_role_directory() == "revocations"
    assert Settings().effective_role_directory() == "grants"
    assert Settings().effective_surfaces() == ()
    assert "jdk8-crm" in Settings(demo=True).effective_surfaces()
    env = {"SIGNOFF_ROLE_DIRECTORY": "off", "SIGNOFF_APPROVAL_SURFACES": "page, jdk8-crm"}
    loaded = load_settings(env=env)
    assert loaded.effective_role_directory() == "off"
    assert loaded.effective_surfaces() == ("page", "jdk8-crm")
    with pytest.raises(SettingsError):
        load_settings(env={"SIGNOFF_ROLE_DIRECTORY": "everyone"})


def test_grants_mode_tells_never_granted_from_revoked(world: World) -> None:
    """Never granted: not_entitled, naming the command; granted then revoked: approver_revoked."""
    world.gate, directory = store_directory_gate(world, mode="grants")
    with pytest.raises(NotEntitled, match="signoff roles grant"):
        world.approve(world.propose())
    directory.grant("acme", "alice", "refund_approver", by="ops")
    directory.revoke("acme", "alice", "refund_approver", by="ops")
    with pytest.raises(ApproverRevoked):
        world.approve(world.propose(order_id="ord_1002"), key="k2")


def test_development_mode_trusts_token_roles_until_revoked() -> None:
    assert Settings(environment="development").effective_role_directory() == "revocations"


def test_the_listing_is_one_tenant_or_one_person_with_who_and_when(store: SQLiteStore) -> None:
    """`signoff roles list` reads every field back as written, filtered as asked."""
    clock = ManualClock()
    directory = StoreRoleDirectory(store, clock=clock)
    directory.grant("acme", "alice", "refund_approver", by="ops")
    clock.advance(timedelta(seconds=5))
    directory.grant("acme", "bob", "auditor", by="olga")
    directory.revoke("acme", "bob", "auditor", by="olga")
    directory.grant("globex", "alice", "refund_approver", by="ops")
    at = to_micros(clock.now())
    assert directory.grants("acme", subject="bob") == [
        RoleGrant("acme", "bob", "auditor", "olga", at, revoked=True)
    ]
    assert [(g.tenant, g.subject, g.role, g.revoked) for g in directory.grants("acme")] == [
        ("acme", "alice", "refund_approver", False),
        ("acme", "bob", "auditor", True),
    ]
    assert directory.grants("acme", subject="alice")[0].changed_at == at - 5_000_000
    assert directory.grants("acme", subject="carol") == []


def test_every_step_asks_the_store_directory_inside_its_transaction(world: World) -> None:
    """With the directory in the store (as `serve` runs it) each step that consults it —
    decide and its replay, execute and its replay, revoke, cancel, stop, resolve — works,
    and a revocation made meanwhile is seen by the next step."""
    gate, directory = store_directory_gate(world)
    admin = Principal("olga", "acme", frozenset({"signoff_admin"}))

    def approved(order: str) -> tuple[str, str]:
        proposal = gate.propose(AGENT, "refund_order", {**REFUND, "order_id": order})
        decision = Decision(DecisionKind.APPROVE, proposal.version)
        first = gate.decide(APPROVER, proposal.proposal_id, decision, idempotency_key=order)
        again = gate.decide(APPROVER, proposal.proposal_id, decision, idempotency_key=order)
        assert again.proposal.version == first.proposal.version
        return proposal.proposal_id, gate.confirmation_token(AGENT, proposal.proposal_id)

    pid, token = approved("ord_1001")
    done = gate.execute(AGENT, pid, token, idempotency_key="x1")
    assert gate.execute(AGENT, pid, token, idempotency_key="x1").duplicate
    assert done.execution.status is ExecutionStatus.SUCCEEDED

    revoked, _ = approved("ord_1002")
    assert gate.revoke(APPROVER, revoked, reason="customer called").status is (
        ProposalStatus.REVOKED
    )
    cancelled = gate.propose(AGENT, "refund_order", {**REFUND, "order_id": "ord_1003"})
    assert gate.cancel(AGENT, cancelled.proposal_id).status is ProposalStatus.CANCELLED

    stopped, stop_token = approved("ord_1004")
    world.provider.fail_next(FaultMode.RETRYABLE)
    failing = gate.execute(AGENT, stopped, stop_token).execution
    assert gate.stop(APPROVER, failing.execution_id, reason="no").execution.status is (
        ExecutionStatus.FAILED_TERMINAL
    )
    lost, lost_token = approved("ord_1005")
    world.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    unknown = gate.execute(AGENT, lost, lost_token).execution
    resolved = gate.resolve(admin, unknown.execution_id, outcome="failed_terminal", reason="none")
    assert resolved.execution.status is ExecutionStatus.FAILED_TERMINAL

    directory.revoke("acme", "alice", "refund_approver", by="olga")
    late = gate.propose(AGENT, "refund_order", {**REFUND, "order_id": "ord_1006"})
    with pytest.raises(ApproverRevoked):
        gate.decide(
            APPROVER, late.proposal_id, Decision(DecisionKind.APPROVE, 1), idempotency_key="z"
        )
    assert world.ledger_amounts() == [("ord_1001", 19900)]

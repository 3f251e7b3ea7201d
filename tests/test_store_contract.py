"""One contract, every store: the same protocol guarantees on SQLite and on PostgreSQL."""

from __future__ import annotations

import multiprocessing
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from signoff import (
    Decision,
    DecisionKind,
    ExecutionStatus,
    Gate,
    HookPoint,
    ManualClock,
    Proposal,
    ProposalStatus,
    ReasonCode,
    SQLiteStore,
    StaticRoleDirectory,
    Store,
)
from signoff._model import Execution
from signoff.cli._main import cli, main
from signoff.demo import DemoShop, RefundProvider, demo_catalog, seed_demo_orders
from signoff.exceptions import (
    AlreadyConsumed,
    IdempotencyKeyReused,
    InvalidState,
    NotFound,
    SchemaTooNew,
    StoreUnavailable,
    VersionConflict,
)
from signoff.store import open_store
from signoff.store._migrations import SCHEMA_VERSION
from signoff.store._sql import IdempotencyRecord
from tests.conftest import AGENT, APPROVER, APPROVER_2, OTHER_TENANT, REFUND, TOKEN_KEY
from tests.pg import fresh_schema

STORES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


class Crash(Exception):
    """A worker dying at a hook point."""


@dataclass
class Backend:
    """A gate, its store and the demo shop, all on one kind of database."""

    kind: str
    url: str
    store: Store
    shop: DemoShop
    provider: RefundProvider
    clock: ManualClock
    directory: StaticRoleDirectory

    def gate(self, *, crash_at: HookPoint | None = None) -> Gate:
        def hooks(point: HookPoint, execution: Execution) -> None:
            if point is crash_at:
                raise Crash(point.value)

        catalog = demo_catalog(self.shop, self.provider)
        return Gate(
            catalog,
            self.store,
            token_key=TOKEN_KEY,
            clock=self.clock,
            directory=self.directory,
            hooks=hooks,
        )

    def propose(self, gate: Gate, order: str = "ord_1001") -> Proposal:
        return gate.propose(AGENT, "refund_order", {**REFUND, "order_id": order})

    def approve(self, gate: Gate, proposal: Proposal, *, key: str = "k1") -> str:
        result = gate.decide(
            APPROVER,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key=key,
        )
        assert result.confirmation_token is not None
        return result.confirmation_token

    def refunded(self, order: str = "ord_1001") -> int:
        found = self.shop.order("acme", order)
        assert found is not None
        return found.refunded


@contextmanager
def backend_for(kind: str, path: Path) -> Iterator[Backend]:
    """A migrated, seeded backend of ``kind``; PostgreSQL gets a schema of its own."""
    with _locations(kind, path) as (url, shop_location):
        store = open_store(url)
        shop = DemoShop(shop_location)
        seed_demo_orders(shop)
        directory = StaticRoleDirectory(
            [("acme", "alice", "refund_approver"), ("acme", "bob", "refund_approver")]
        )
        try:
            yield Backend(kind, url, store, shop, RefundProvider(shop), ManualClock(), directory)
        finally:
            store.close()
            shop.close()


@contextmanager
def _locations(kind: str, path: Path) -> Iterator[tuple[str, str]]:
    if kind == "sqlite":
        yield f"sqlite:///{path / 'signoff.db'}", str(path / "shop.db")
        return
    with fresh_schema("contract") as url:
        yield url, url  # the shop's tables live beside signoff's, in the same schema


@pytest.fixture(params=STORES)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with backend_for(request.param, tmp_path) as b:
        yield b


# propose → decide → execute ------------------------------------------------------------


def test_flow_refunds_once_with_a_receipt(backend: Backend) -> None:
    """propose → approve → execute: one ledger entry, the order refunded, a receipt."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    result = gate.execute(AGENT, proposal.proposal_id, backend.approve(gate, proposal))
    assert result.receipt is not None
    assert result.receipt.status is ExecutionStatus.SUCCEEDED
    [entry] = backend.provider.ledger()
    assert (entry.request_key, entry.reference) == (
        proposal.request_key,
        result.receipt.provider_reference,
    )
    assert backend.refunded() == 19900
    stored = gate.proposal(AGENT, proposal.proposal_id)
    assert stored.status is ProposalStatus.SUCCEEDED
    assert [a.approver for a in stored.approvals] == ["alice"]


def test_second_execute_is_already_consumed(backend: Backend) -> None:
    """The token moves issued → consumed once; the second caller is refused, nothing re-runs."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    token = backend.approve(gate, proposal)
    first = gate.execute(AGENT, proposal.proposal_id, token)
    with pytest.raises(AlreadyConsumed) as refused:
        gate.execute(AGENT, proposal.proposal_id, token)
    assert refused.value.details["execution_id"] == first.execution.execution_id
    assert len(backend.provider.ledger()) == 1
    assert backend.refunded() == 19900


def test_proposal_is_invisible_to_another_tenant(backend: Backend) -> None:
    """An id from another tenant is 404, as if it did not exist."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    with pytest.raises(NotFound):
        gate.proposal(OTHER_TENANT, proposal.proposal_id)


def test_proposal_without_decisions_reads_back_whole(backend: Backend) -> None:
    """A stored proposal reads back equal to what propose returned."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    assert gate.proposal(AGENT, proposal.proposal_id) == proposal


# conditional transitions ----------------------------------------------------------------


def test_proposal_transition_checks_status(backend: Backend) -> None:
    """A wrong source status changes nothing (the version premise of a decision, consuming a
    token once: tests/test_step_premises.py)."""
    gate = backend.gate()
    pid = backend.propose(gate).proposal_id
    awaiting = (ProposalStatus.AWAITING_CONFIRMATION,)
    with backend.store.transaction() as tx:
        assert not tx.transition_proposal(
            pid, from_statuses=(ProposalStatus.CONFIRMED,), to=ProposalStatus.CANCELLED, now=1
        )
        moved = tx.transition_proposal(
            pid, from_statuses=awaiting, to=ProposalStatus.CANCELLED, now=1
        )
    assert moved
    stored = gate.proposal(AGENT, pid)
    assert (stored.status, stored.version) == (ProposalStatus.CANCELLED, 2)


def test_execution_transition_only_from_named_statuses(backend: Backend) -> None:
    """A finished execution cannot be moved back to running."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    done = gate.execute(AGENT, proposal.proposal_id, backend.approve(gate, proposal)).execution
    with backend.store.transaction() as tx:
        assert not tx.transition_execution(
            done.execution_id,
            from_statuses=(ExecutionStatus.PREPARED, ExecutionStatus.RUNNING),
            to=ExecutionStatus.RUNNING,
            now=1,
        )
    assert gate.execution(AGENT, done.execution_id).status is ExecutionStatus.SUCCEEDED


def test_stale_decision_is_a_version_conflict(backend: Backend) -> None:
    """expected_version must equal the current version; a decided proposal takes no more."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    with pytest.raises(VersionConflict):
        gate.decide(
            APPROVER,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version + 1),
            idempotency_key="stale",
        )
    backend.approve(gate, proposal)
    with pytest.raises(InvalidState):
        gate.decide(
            APPROVER_2,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key="late",
        )
    assert len(gate.proposal(AGENT, proposal.proposal_id).approvals) == 1


# unique constraints -------------------------------------------------------------------


def test_duplicate_request_key_is_an_integrity_error(backend: Backend) -> None:
    """request_key is UNIQUE: a second proposal with it is refused and nothing is written."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    twin = replace(proposal, proposal_id="prop_twin", action_id="act_twin")
    with pytest.raises(backend.store.integrity_errors), backend.store.transaction() as tx:
        tx.insert_proposal(twin)
    with backend.store.read() as tx:
        assert tx.proposal("acme", "prop_twin") is None


def _second_confirmed(backend: Backend, gate: Gate) -> tuple[Proposal, str]:
    other = backend.propose(gate, "ord_1002")
    backend.approve(gate, other, key="k2")
    with backend.store.read() as tx:
        token_id = tx.token_id_for(other.proposal_id)
    assert token_id is not None
    return other, token_id


def test_one_execution_per_token(backend: Backend) -> None:
    """executions.token_id is UNIQUE: a second execution of another proposal with the same
    token (and its own request key) is refused and nothing is written."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    done = gate.execute(AGENT, proposal.proposal_id, backend.approve(gate, proposal)).execution
    other, _ = _second_confirmed(backend, gate)
    twin = replace(
        done, execution_id="exe_twin", proposal_id=other.proposal_id, request_key=other.request_key
    )
    with pytest.raises(backend.store.integrity_errors), backend.store.transaction() as tx:
        tx.insert_execution(twin)
    with backend.store.read() as tx:
        assert tx.execution("acme", "exe_twin") is None


def test_one_execution_per_request_key(backend: Backend) -> None:
    """executions.request_key is UNIQUE: another proposal and token with the same key refused."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    done = gate.execute(AGENT, proposal.proposal_id, backend.approve(gate, proposal)).execution
    other, other_token = _second_confirmed(backend, gate)
    twin = replace(
        done, execution_id="exe_twin", proposal_id=other.proposal_id, token_id=other_token
    )
    with pytest.raises(backend.store.integrity_errors), backend.store.transaction() as tx:
        tx.insert_execution(twin)
    with backend.store.read() as tx:
        assert tx.execution("acme", "exe_twin") is None


# idempotency keys -----------------------------------------------------------------------


def test_one_idempotency_record_per_tenant_scope_and_key(backend: Backend) -> None:
    """(tenant, scope, key) is the primary key: two requests racing with one key cannot both
    store an answer (the loser retries, finds the winner's and replays or refuses)."""
    record = IdempotencyRecord("decide", "f" * 64, "done", None, None, None)
    with backend.store.transaction() as tx:
        tx.insert_idempotency("acme", "scope", "k", record, 1)
    with pytest.raises(backend.store.integrity_errors), backend.store.transaction() as tx:
        tx.insert_idempotency("acme", "scope", "k", replace(record, fingerprint="0" * 64), 2)
    with backend.store.read() as tx:
        stored = tx.idempotency("acme", "scope", "k")
        elsewhere = tx.idempotency("globex", "scope", "k")
    assert stored is not None and stored.fingerprint == "f" * 64
    assert elsewhere is None  # the tenant is part of the key, in the plain read too


def test_one_key_in_two_tenants_is_two_requests(backend: Backend) -> None:
    """The same person, agent and Idempotency-Key in acme and globex: each tenant's decision
    and execution is a first request, and each tenant's order is refunded once."""
    gate = backend.gate()
    backend.directory.grant("globex", "alice", "refund_approver")
    backend.directory.grant("globex", "u_42", "support")  # the role u_42 asks with there
    orders = {"acme": "ord_1001", "globex": "ord_2001"}
    for tenant, order in orders.items():
        # u_42 owns no globex order: there the agent asks with the support role.
        roles = frozenset() if tenant == "acme" else frozenset({"support"})
        agent = replace(AGENT, tenant=tenant, roles=roles)
        proposal = gate.propose(agent, "refund_order", {**REFUND, "order_id": order})
        decided = gate.decide(
            replace(APPROVER, tenant=tenant),
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key="same",
        )
        assert not decided.duplicate and decided.confirmation_token is not None
        ran = gate.execute(
            agent, proposal.proposal_id, decided.confirmation_token, idempotency_key="same"
        )
        assert not ran.duplicate and ran.execution.status is ExecutionStatus.SUCCEEDED
    assert sorted((e.tenant, e.order_id) for e in backend.provider.ledger()) == [
        ("acme", "ord_1001"),
        ("globex", "ord_2001"),
    ]


def test_one_decision_per_person_and_proposal(backend: Backend) -> None:
    """(proposal, approver) is the primary key: N approvals need N different people."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    gate.decide(
        APPROVER,
        proposal.proposal_id,
        Decision(DecisionKind.REJECT, proposal.version, ReasonCode.OTHER),
        idempotency_key="r1",
    )
    [approval] = gate.proposal(AGENT, proposal.proposal_id).approvals
    later = approval.decided_at + timedelta(seconds=1)
    again = replace(approval, reason="again", decided_at=later)
    with pytest.raises(backend.store.integrity_errors), backend.store.transaction() as tx:
        tx.insert_decision(proposal.proposal_id, again)
    assert len(gate.proposal(AGENT, proposal.proposal_id).approvals) == 1


def test_decision_replay_returns_the_first_answer(backend: Backend) -> None:
    """Same key + same decision → the first result, duplicate; another payload → refused."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    decision = Decision(DecisionKind.APPROVE, proposal.version)
    first = gate.decide(APPROVER, proposal.proposal_id, decision, idempotency_key="d1")
    again = gate.decide(APPROVER, proposal.proposal_id, decision, idempotency_key="d1")
    assert (first.duplicate, again.duplicate) == (False, True)
    assert again.confirmation_token == first.confirmation_token
    with pytest.raises(IdempotencyKeyReused):
        gate.decide(
            APPROVER,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version, reason="other"),
            idempotency_key="d1",
        )
    assert len(gate.proposal(AGENT, proposal.proposal_id).approvals) == 1


def test_execute_replay_returns_the_receipt_without_a_second_refund(backend: Backend) -> None:
    """A redelivered execute with its Idempotency-Key gets the first receipt, marked duplicate."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    token = backend.approve(gate, proposal)
    first = gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="e1")
    again = gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="e1")
    assert (first.duplicate, again.duplicate) == (False, True)
    assert again.receipt == first.receipt
    assert len(backend.provider.ledger()) == 1
    assert backend.refunded() == 19900


# audit ------------------------------------------------------------------------------------


def test_audit_chain_verifies_and_an_edit_is_located(backend: Backend) -> None:
    """After a flow the chain verifies; editing one event names that event."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    gate.execute(AGENT, proposal.proposal_id, backend.approve(gate, proposal))
    report = gate.verify_audit()
    assert (report.ok, report.events, report.tenants) == (True, 6, 1)
    with backend.store.transaction() as tx:
        tx.run("UPDATE audit_events SET data = REPLACE(data, 'alice', 'mallory') WHERE seq = 2")
    broken = gate.verify_audit()
    assert not broken.ok
    assert broken.first_bad is not None and "#2" in broken.first_bad


def test_cli_audit_verify_reads_the_store_url(backend: Backend) -> None:
    """`signoff audit verify --db URL` works on either store and exits 1 on a broken chain."""
    gate = backend.gate()
    gate.propose(AGENT, "refund_order", REFUND)
    runner = CliRunner()
    intact = runner.invoke(cli, ["audit", "verify", "--db", backend.url])
    assert intact.exit_code == 0, intact.output
    assert "intact: 1 events in 1 tenant chains" in intact.output
    with backend.store.transaction() as tx:
        tx.run("UPDATE audit_events SET at = at + 1 WHERE seq = 1")
    broken = runner.invoke(cli, ["audit", "verify", "--db", backend.url])
    assert broken.exit_code == 1


# migrations ---------------------------------------------------------------------------------


def test_migrate_is_idempotent_and_keeps_rows(backend: Backend) -> None:
    """Migrating an up-to-date store changes nothing and loses nothing."""
    gate = backend.gate()
    proposal = backend.propose(gate)
    assert backend.store.migrate() == SCHEMA_VERSION
    assert backend.store.migrate() == SCHEMA_VERSION
    assert backend.store.schema_version() == SCHEMA_VERSION
    assert gate.proposal(AGENT, proposal.proposal_id) == proposal


def test_cli_db_upgrade_from_empty_then_again(tmp_path: Path, kind: str) -> None:
    """`signoff db upgrade --db URL` creates the schema once, then reports nothing to do."""
    with _locations(kind, tmp_path) as (url, _):
        runner = CliRunner()
        first = runner.invoke(cli, ["db", "upgrade", "--db", url])
        assert first.exit_code == 0, first.output
        assert f"0 -> {SCHEMA_VERSION}" in first.output
        second = runner.invoke(cli, ["db", "upgrade", "--db", url])
        assert f"{SCHEMA_VERSION} -> {SCHEMA_VERSION}" in second.output


def test_newer_schema_is_refused(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database written by a newer signoff is refused, by the API and by `db upgrade`."""
    with backend.store.transaction() as tx:
        tx.run(
            "UPDATE signoff_meta SET value = ? WHERE key = 'schema_version'",
            (str(SCHEMA_VERSION + 1),),
        )
    with pytest.raises(SchemaTooNew):
        backend.store.migrate()
    with pytest.raises(SchemaTooNew):
        open_store(backend.url).close()
    monkeypatch.setattr(sys, "argv", ["signoff", "db", "upgrade", "--db", backend.url])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    assert "schema_too_new" in capsys.readouterr().err
    assert backend.store.schema_version() == SCHEMA_VERSION + 1


@pytest.fixture(params=STORES)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# reconciliation claims (PostgreSQL: several reconcilers at once) -----------------------------


@pytest.mark.postgres
def test_reconcilers_skip_rows_another_has_locked(tmp_path: Path) -> None:
    """FOR UPDATE SKIP LOCKED: a second reconciler does not see what the first is claiming."""
    with backend_for("postgresql", tmp_path) as b:
        crashing = b.gate(crash_at=HookPoint.AFTER_CONSUME)
        for order in ("ord_1001", "ord_1002"):
            proposal = b.propose(crashing, order)
            token = b.approve(crashing, proposal, key=order)
            with pytest.raises(Crash):
                crashing.execute(AGENT, proposal.proposal_id, token)
        now = 10**18
        with b.store.transaction() as first:
            claimed = first.stuck_executions(now, older_than=now, limit=1)
            with b.store.transaction() as second:
                others = second.stuck_executions(now, older_than=now, limit=10)
        assert len(claimed) == 1
        assert [e.execution_id for e in others] != [claimed[0].execution_id]
        assert len(others) == 1
        assert {e.status for e in (*claimed, *others)} == {ExecutionStatus.RUNNING}
        assert b.provider.ledger() == []


def test_sqlite_store_is_the_default_for_paths(tmp_path: Path) -> None:
    """A plain path (or sqlite:///) opens the SQLite store."""
    store = open_store(str(tmp_path / "plain.db"))
    try:
        assert isinstance(store, SQLiteStore)
    finally:
        store.close()


# PostgreSQL: migrations at once, forked workers ------------------------------------------------


@pytest.mark.postgres
def test_concurrent_migrations_apply_once() -> None:
    """Four stores' first migrate() at once: the advisory lock lets one create the schema."""
    from signoff.store._postgres import PostgresStore

    with fresh_schema("migrate") as url:
        stores = [PostgresStore(url) for _ in range(4)]
        barrier = threading.Barrier(len(stores))
        errors: list[BaseException] = []

        def migrate(store: Store) -> None:
            barrier.wait()
            try:
                store.migrate()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=migrate, args=(s,)) for s in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        try:
            assert errors == []
            assert {s.schema_version() for s in stores} == {SCHEMA_VERSION}
        finally:
            for store in stores:
                store.close()


def _version_in_child(store: Store, out: Queue[Any]) -> None:
    out.put(store.schema_version())
    store.close()


@pytest.mark.postgres
def test_forked_worker_opens_its_own_pool(tmp_path: Path) -> None:
    """A store used before fork() works in the child (own pool) and still in the parent."""
    with backend_for("postgresql", tmp_path) as b:
        assert b.store.schema_version() == SCHEMA_VERSION
        context = multiprocessing.get_context("fork")
        out: Queue[Any] = context.Queue()
        child = context.Process(target=_version_in_child, args=(b.store, out))
        child.start()
        assert out.get(timeout=60) == SCHEMA_VERSION
        child.join(timeout=60)
        assert child.exitcode == 0
        gate = b.gate()
        proposal = b.propose(gate)
        assert gate.proposal(AGENT, proposal.proposal_id) == proposal


def test_unreachable_postgresql_is_store_unavailable() -> None:
    """No server: a typed StoreUnavailable (503), not a driver exception."""
    from signoff.store._postgres import PostgresStore

    store = PostgresStore("postgresql://postgres@127.0.0.1:1/none", timeout=0.5)
    try:
        with pytest.raises(StoreUnavailable):
            store.ping()
    finally:
        store.close()


def test_schema_name_must_be_a_plain_identifier() -> None:
    """A schema name that would need quoting is refused before anything connects."""
    from signoff.store._postgres import PostgresStore

    with pytest.raises(ValueError, match="plain lower-case identifier"):
        PostgresStore('postgresql://h/db?schema=x";drop')

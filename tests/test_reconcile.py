"""Reconciliation: stuck executions settled by lookup, never re-run blindly (SQLite, PostgreSQL)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from signoff import (
    ExecutionStatus,
    HookPoint,
    Pending,
    ProposalStatus,
    ProviderTimeout,
    ReconcileAction,
    Reconciled,
    ReconcileLoop,
)
from signoff._clock import to_micros
from signoff.cli._main import cli
from signoff.cli._reconcile import demo_shop_location
from signoff.demo import FaultMode
from signoff.exceptions import ApproverRevoked, ExecutionInProgress, StateChanged
from signoff.testing import Crashed
from tests.conftest import AGENT
from tests.faultworld import STORES, FaultWorld, fault_world


@pytest.fixture(params=STORES)
def fw(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FaultWorld]:
    with fault_world(request.param, tmp_path) as world:
        yield world


def _crash(fw: FaultWorld, point: HookPoint, order_id: str = "ord_1001") -> str:
    """Confirm a refund, run it, and crash the worker at ``point``; return the execution id."""
    proposal, token = fw.confirmed(order_id)
    fw.harness.crash_at(point)
    outcome = fw.harness.run(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    assert isinstance(outcome, Crashed) and outcome.point is point
    return outcome.execution.execution_id


def _actions(done: list[Reconciled]) -> list[tuple[str, str]]:
    return [(r.action.value, r.status.value) for r in done]


def test_live_lease_is_left_alone(fw: FaultWorld) -> None:
    """A prepared or running execution whose lease is live belongs to its worker: not claimed."""
    _crash(fw, HookPoint.AFTER_CONSUME)
    _crash(fw, HookPoint.BEFORE_PROVIDER_CALL, "ord_1002")
    assert fw.gate.reconcile() == []
    assert fw.provider.ledger() == []


def test_crash_right_after_consume_is_retried_with_the_same_key(fw: FaultWorld) -> None:
    """Crash after consume-and-start, before the call: after the lease the lookup finds
    nothing, so the same request key is attempted once more; one refund."""
    execution_id = _crash(fw, HookPoint.AFTER_CONSUME)
    assert fw.gate.execution(AGENT, execution_id).status is ExecutionStatus.RUNNING
    fw.lapse()
    assert _actions(fw.gate.reconcile()) == [("retried", "succeeded")]
    execution = fw.gate.execution(AGENT, execution_id)
    assert execution.attempts == 2
    [entry] = fw.provider.ledger()
    assert entry.reference == execution.provider_reference
    assert entry.request_key == execution.request_key
    assert fw.refunded() == 19900


def test_prepared_left_by_an_earlier_version_gets_its_first_attempt(fw: FaultWorld) -> None:
    """A ``prepared`` execution (consumed, never started: what versions before the single
    consume-and-start write could leave) gets its first attempt, without a lookup."""
    execution_id = _crash(fw, HookPoint.AFTER_CONSUME)
    with fw.gate.store.transaction() as tx:
        tx.run(
            "UPDATE executions SET status = 'prepared', attempts = 0 WHERE execution_id = ?",
            (execution_id,),
        )
    fw.lapse()
    assert _actions(fw.gate.reconcile()) == [("attempted", "succeeded")]
    execution = fw.gate.execution(AGENT, execution_id)
    assert execution.attempts == 1
    [entry] = fw.provider.ledger()
    assert entry.reference == execution.provider_reference
    assert fw.refunded() == 19900


def test_lapsed_running_never_called_is_retried_with_the_same_key(fw: FaultWorld) -> None:
    """Lease lapsed before the call: lookup says not found, so the same key is tried again."""
    proposal, token = fw.confirmed()
    fw.harness.crash_at(HookPoint.BEFORE_PROVIDER_CALL)
    fw.harness.run(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    fw.lapse()
    assert _actions(fw.gate.reconcile()) == [("retried", "succeeded")]
    assert fw.execution_of(proposal).attempts == 2
    assert [e.request_key for e in fw.provider.ledger()] == [proposal.request_key]


def test_lapsed_running_that_succeeded_is_settled_without_a_second_call(fw: FaultWorld) -> None:
    """Crash after the provider's success: lookup finds the refund; the provider is not called."""
    proposal, token = fw.confirmed()
    fw.harness.crash_at(HookPoint.AFTER_PROVIDER_SUCCESS)
    fw.harness.run(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    fw.lapse()
    assert _actions(fw.gate.reconcile()) == [("settled", "succeeded")]
    execution = fw.execution_of(proposal)
    assert execution.attempts == 1
    [entry] = fw.provider.ledger()
    assert execution.provider_reference == entry.reference
    assert fw.gate.proposal(AGENT, proposal.proposal_id).status is ProposalStatus.SUCCEEDED


def test_timeout_that_succeeded_ends_succeeded_with_the_providers_reference(
    fw: FaultWorld,
) -> None:
    """The answer was lost after the refund: unknown, then succeeded with the ledger reference."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    assert fw.gate.execute(AGENT, proposal.proposal_id, token).execution.status.value == "unknown"
    assert _actions(fw.gate.reconcile()) == [("settled", "succeeded")]
    [entry] = fw.provider.ledger()
    assert fw.execution_of(proposal).provider_reference == entry.reference
    assert fw.refunded() == 19900


def test_timeout_that_never_arrived_is_retried_with_the_same_key(fw: FaultWorld) -> None:
    """The request never reached the provider: one more attempt under the same request key."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    fw.gate.execute(AGENT, proposal.proposal_id, token)
    assert fw.provider.ledger() == []
    assert _actions(fw.gate.reconcile()) == [("retried", "succeeded")]
    assert [e.request_key for e in fw.provider.ledger()] == [proposal.request_key]
    assert fw.refunded() == 19900


def test_recent_unknown_waits_for_older_than(fw: FaultWorld) -> None:
    """older_than gives the provider time before anyone asks."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    fw.gate.execute(AGENT, proposal.proposal_id, token)
    assert fw.gate.reconcile(older_than=timedelta(minutes=1)) == []
    fw.clock.advance(timedelta(minutes=1))
    assert _actions(fw.gate.reconcile(older_than=timedelta(minutes=1))) == [
        ("settled", "succeeded")
    ]


def test_pending_keeps_it_running_then_escalates(
    fw: FaultWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pending is in progress, not unknown: running, new lease; after max_lookups, a person."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    execution = fw.gate.execute(AGENT, proposal.proposal_id, token).execution
    tool = fw.gate.catalog.get("refund_order")
    monkeypatch.setattr(tool, "lookup", lambda key: Pending())
    monkeypatch.setattr(tool, "max_lookups", 3)
    assert _actions(fw.gate.reconcile()) == [("pending", "running")]
    pending = fw.execution_of(proposal)  # a new lease, the same attempt, no error any more
    assert (pending.attempts, pending.error_code, pending.error_message) == (1, None, None)
    assert pending.lease_until is not None and pending.lease_until > pending.updated_at
    with pytest.raises(ExecutionInProgress):
        fw.gate.retry(AGENT, execution.execution_id)
    assert fw.gate.reconcile() == []  # its new lease is live
    fw.lapse()
    assert _actions(fw.gate.reconcile()) == [("pending", "running")]
    fw.lapse()
    assert _actions(fw.gate.reconcile()) == [("escalated", "needs_attention")]
    assert fw.gate.proposal(AGENT, proposal.proposal_id).status is ProposalStatus.NEEDS_ATTENTION
    assert fw.provider.ledger() == []
    assert fw.gate.reconcile() == []  # needs_attention is for a person, not for the loop


def test_failed_lookups_leave_it_unknown_then_escalate(
    fw: FaultWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lookup that gets no answer never counts as not-found: unknown, then needs_attention."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    fw.gate.execute(AGENT, proposal.proposal_id, token)
    tool = fw.gate.catalog.get("refund_order")

    def no_answer(request_key: str) -> Pending:
        raise ProviderTimeout("lookup timed out")

    monkeypatch.setattr(tool, "lookup", no_answer)
    monkeypatch.setattr(tool, "max_lookups", 2)
    assert _actions(fw.gate.reconcile()) == [("lookup_failed", "unknown")]
    unknown = fw.execution_of(proposal)
    assert (unknown.error_code, unknown.error_message) == (
        "outcome_unknown",
        "the lookup by request key got no answer",
    )
    assert _actions(fw.gate.reconcile()) == [("escalated", "needs_attention")]
    assert fw.provider.ledger() == []
    kinds = [e.kind for e in fw.gate.audit_events(AGENT, proposal_id=proposal.proposal_id)]
    assert kinds.count("execution.lookup_inconclusive") == 1
    assert kinds[-1] == "execution.needs_attention"
    assert fw.gate.verify_audit().ok


def test_no_auto_retry_escalates_instead_of_calling(
    fw: FaultWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool that forbids automatic retries goes to needs_attention; the provider is not called."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    fw.gate.execute(AGENT, proposal.proposal_id, token)
    monkeypatch.setattr(fw.gate.catalog.get("refund_order"), "auto_retry", False)
    assert _actions(fw.gate.reconcile()) == [("escalated", "needs_attention")]
    assert fw.provider.ledger() == []
    assert fw.execution_of(proposal).attempts == 1


def test_attempts_are_bounded(fw: FaultWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    """A provider that never receives the request: max_attempts attempts, then needs_attention."""
    proposal, token = fw.confirmed()
    monkeypatch.setattr(fw.gate.catalog.get("refund_order"), "max_attempts", 3)
    fw.provider.fail_next(FaultMode.TIMEOUT_BEFORE, times=10)
    fw.gate.execute(AGENT, proposal.proposal_id, token)
    assert _actions(fw.gate.reconcile()) == [("retried", "unknown")]
    assert _actions(fw.gate.reconcile()) == [("retried", "unknown")]
    assert _actions(fw.gate.reconcile()) == [("escalated", "needs_attention")]
    assert fw.execution_of(proposal).attempts == 3
    assert fw.provider.ledger() == []


def test_needs_attention_retry_only_looks(fw: FaultWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    """retry() of needs_attention never calls the provider; a final lookup answer settles it."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    execution = fw.gate.execute(AGENT, proposal.proposal_id, token).execution
    tool = fw.gate.catalog.get("refund_order")
    monkeypatch.setattr(tool, "auto_retry", False)
    fw.gate.reconcile()
    again = fw.gate.retry(AGENT, execution.execution_id)
    assert again.execution.status is ExecutionStatus.NEEDS_ATTENTION
    assert fw.provider.ledger() == []
    # A person refunds by hand under the same key; the next lookup settles the record.
    fw.provider.refund(
        tenant="acme",
        order_id="ord_1001",
        amount_minor=19900,
        currency="CNY",
        request_key=proposal.request_key,
        expected_version=1,
    )
    settled = fw.gate.retry(AGENT, execution.execution_id)
    [entry] = fw.provider.ledger()
    assert settled.execution.status is ExecutionStatus.SUCCEEDED
    assert settled.execution.provider_reference == entry.reference


def test_revoked_approver_is_refused_on_recovery(fw: FaultWorld) -> None:
    """The approver lost the role before the recovered attempt: failed_terminal, no refund."""
    execution_id = _crash(fw, HookPoint.AFTER_CONSUME)
    fw.directory.revoke("acme", "alice", "refund_approver")
    fw.lapse()
    assert _actions(fw.gate.reconcile()) == [("refused", "failed_terminal")]
    execution = fw.gate.execution(AGENT, execution_id)
    assert execution.error_code == "approver_revoked"
    assert fw.provider.ledger() == [] and fw.refunded() == 0


def test_revoked_approver_refuses_the_requesters_retry(fw: FaultWorld) -> None:
    """retry() of a failed_retryable after the approver lost the role raises approver_revoked."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.RETRYABLE)
    execution = fw.gate.execute(AGENT, proposal.proposal_id, token).execution
    fw.directory.revoke("acme", "alice", "refund_approver")
    with pytest.raises(ApproverRevoked):
        fw.gate.retry(AGENT, execution.execution_id)
    assert fw.execution_of(proposal).status is ExecutionStatus.FAILED_TERMINAL
    assert fw.provider.ledger() == []


def test_state_changed_before_recovery_is_refused_by_the_write(fw: FaultWorld) -> None:
    """The order moved while the worker was down: the retry sends the approved version."""
    proposal, token = fw.confirmed()
    fw.harness.crash_at(HookPoint.BEFORE_PROVIDER_CALL)
    fw.harness.run(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    fw.shop.touch_order("acme", "ord_1001")
    fw.lapse()
    assert _actions(fw.gate.reconcile()) == [("retried", "failed_terminal")]
    assert fw.execution_of(proposal).error_code == "state_changed"
    assert fw.provider.ledger() == [] and fw.refunded() == 0


def test_state_changed_on_the_requesters_retry_raises(fw: FaultWorld) -> None:
    """retry() of a failed_retryable whose order moved: StateChanged, no refund."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.RETRYABLE)
    execution = fw.gate.execute(AGENT, proposal.proposal_id, token).execution
    fw.shop.touch_order("acme", "ord_1001")
    with pytest.raises(StateChanged):
        fw.gate.retry(AGENT, execution.execution_id)
    assert fw.provider.ledger() == []


def test_two_reconcilers_racing_handle_each_execution_once(fw: FaultWorld) -> None:
    """Two gates reconcile at once: every stuck execution is handled by exactly one of them."""
    ids = [_crash(fw, HookPoint.BEFORE_PROVIDER_CALL, f"ord_{1001 + n}") for n in range(12)]
    fw.lapse()
    gates = [fw.gate, fw.second_gate()]
    barrier = threading.Barrier(len(gates))
    handled: list[Reconciled] = []
    lock = threading.Lock()

    errors: list[BaseException] = []

    def reconcile(index: int) -> None:
        barrier.wait()
        try:
            done = gates[index].reconcile(limit=4)
            while done:
                with lock:
                    handled.extend(done)
                done = gates[index].reconcile(limit=4)
        except Exception as exc:  # reported below, in the test's own thread
            errors.append(exc)

    threads = [threading.Thread(target=reconcile, args=(i,)) for i in range(len(gates))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert Counter(r.execution_id for r in handled) == Counter(ids)
    assert {r.action for r in handled} == {ReconcileAction.RETRIED}
    ledger = fw.provider.ledger()
    assert len(ledger) == 12 and len({e.order_id for e in ledger}) == 12
    assert fw.gate.verify_audit().ok


def test_same_tick_claims_have_one_winner(fw: FaultWorld) -> None:
    """Two claims at the very same clock instant: the lease check lets only the first through."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    execution = fw.gate.execute(AGENT, proposal.proposal_id, token).execution
    now = to_micros(execution.updated_at)
    wins = []
    for _ in range(2):
        with fw.store.transaction() as tx:
            wins.append(tx.claim_execution(execution, lease_until=now + 1_000_000, now=now))
    assert wins == [True, False]


def _cli(fw: FaultWorld, *args: str) -> Result:
    return CliRunner().invoke(
        cli, ["reconcile", "--db", fw.url, "--once", "--older-than", "0", *args]
    )


def test_cli_reconcile_once_with_the_demo_catalog(fw: FaultWorld) -> None:
    """`signoff reconcile --once --demo` settles a crashed execution; one refund."""
    proposal, token = fw.confirmed()
    fw.harness.crash_at(HookPoint.BEFORE_PROVIDER_CALL)
    fw.harness.run(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    # The CLI runs on the system clock, two minutes past the manual one: the dead lease
    # has lapsed, the confirmation has not.
    result = _cli(fw, "--json", "--demo", "--demo-shop", fw.shop.path)
    assert result.exit_code == 0, result.output
    [line] = [json.loads(x) for x in result.stdout.splitlines()]
    assert (line["action"], line["status"]) == ("retried", "succeeded")
    assert [e.request_key for e in fw.provider.ledger()] == [proposal.request_key]
    assert _cli(fw, "--json", "--demo", "--demo-shop", fw.shop.path).stdout == ""


def test_cli_reconcile_with_a_catalog_reference(
    fw: FaultWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--catalog MODULE:ATTR loads the user's own catalog (here a factory)."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    fw.gate.execute(AGENT, proposal.proposal_id, token)
    monkeypatch.setenv("SIGNOFF_TEST_SHOP", fw.shop.path)
    result = _cli(
        fw,
        "--catalog",
        "tests.faultworld:catalog_from_env",
        "--directory",
        "signoff.chaos._world:chaos_directory",
    )
    assert result.exit_code == 0, result.output
    assert "settled" in result.stdout and "succeeded" in result.stdout
    [entry] = fw.provider.ledger()
    assert fw.execution_of(proposal).provider_reference == entry.reference


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "--demo or --catalog"),
        (("--demo", "--catalog", "x:y"), "--demo or --catalog"),
        (("--catalog", "nomodule"), "MODULE:ATTR"),
        (("--catalog", "signoff:nothing_here"), "has no"),
        (("--catalog", "signoff:__version__"), "signoff.Catalog"),
        (("--catalog", "signoff:Principal.label"), "cannot be called without arguments"),
        (("--catalog", "signoff:Catalog"), "is a class"),
        (("--catalog", "no_such_module_x:y"), "cannot import"),
    ],
)
def test_cli_reconcile_refuses_a_missing_or_wrong_catalog(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    """Without a usable catalog the command stops with a usage error, never a traceback."""
    db = str(tmp_path / "x.db")
    result = CliRunner().invoke(cli, ["reconcile", "--db", db, "--once", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_cli_demo_shop_sits_where_serve_demo_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Next to a SQLite file; in the data directory with PostgreSQL (as `serve --demo`)."""
    monkeypatch.setenv("SIGNOFF_DATA_DIR", str(tmp_path))
    assert demo_shop_location("postgresql://h/db", None) == str(tmp_path / "demo.shop.sqlite")
    assert demo_shop_location("sqlite:////tmp/a.db", None) == "/tmp/a.db.shop.sqlite"
    assert demo_shop_location("postgresql://h/db", "x.sqlite") == "x.sqlite"


def test_reconcile_loop_runs_in_the_background(fw: FaultWorld) -> None:
    """ReconcileLoop.start() settles what gets stuck while it runs, then stops cleanly."""
    passes: list[list[Reconciled]] = []
    settled = threading.Event()

    def on_pass(done: list[Reconciled]) -> None:
        passes.append(done)
        if done:
            settled.set()

    loop = ReconcileLoop(
        fw.gate,
        interval=timedelta(milliseconds=20),
        older_than=timedelta(0),
        on_pass=on_pass,
    )
    loop.start()
    try:
        proposal, token = fw.confirmed()
        fw.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
        fw.gate.execute(AGENT, proposal.proposal_id, token)
        assert settled.wait(10)
    finally:
        loop.stop()
    assert fw.execution_of(proposal).status is ExecutionStatus.SUCCEEDED
    assert len(fw.provider.ledger()) == 1
    with pytest.raises(ValueError, match="limit"):
        ReconcileLoop(fw.gate, limit=0)


def test_reconcile_loop_outlives_a_failed_pass(
    fw: FaultWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass that raises is logged; the loop goes on and settles the execution next time."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    fw.gate.execute(AGENT, proposal.proposal_id, token)
    real = fw.gate.reconcile
    calls: list[int] = []
    settled = threading.Event()

    def flaky(**options: object) -> list[Reconciled]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("deadlock victim")
        done = real(**options)  # type: ignore[arg-type]
        if done:
            settled.set()
        return done

    monkeypatch.setattr(fw.gate, "reconcile", flaky)
    loop = ReconcileLoop(fw.gate, interval=timedelta(milliseconds=20), older_than=timedelta(0))
    loop.start()
    try:
        assert settled.wait(10)
    finally:
        loop.stop()
    assert fw.execution_of(proposal).status is ExecutionStatus.SUCCEEDED


def test_cli_reconcile_worker_settles_then_stops_on_sigterm(fw: FaultWorld) -> None:
    """`signoff reconcile` without --once keeps passing until SIGTERM, then exits 0."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    fw.gate.execute(AGENT, proposal.proposal_id, token)
    command = [
        sys.executable, "-m", "signoff", "reconcile", "--db", fw.url, "--json",
        "--older-than", "0", "--interval", "0.1", "--demo", "--demo-shop", fw.shop.path,
    ]  # fmt: skip
    worker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None
        line = json.loads(worker.stdout.readline())
        assert (line["action"], line["status"]) == ("settled", "succeeded")
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    [entry] = fw.provider.ledger()
    assert fw.execution_of(proposal).provider_reference == entry.reference


def test_cli_reconcile_consults_the_stores_role_directory(fw: FaultWorld) -> None:
    """`signoff reconcile` asks the directory `serve` asks: a revoked approver, no attempt."""
    from signoff.identity import StoreRoleDirectory

    proposal, token = fw.confirmed()
    fw.harness.crash_at(HookPoint.BEFORE_PROVIDER_CALL)
    fw.harness.run(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    StoreRoleDirectory(fw.store).revoke("acme", "alice", "refund_approver", by="ops")
    result = _cli(fw, "--json", "--demo", "--demo-shop", fw.shop.path)
    assert result.exit_code == 0, result.output
    [line] = [json.loads(x) for x in result.stdout.splitlines()]
    assert (line["action"], line["status"]) == ("refused", "failed_terminal")
    assert fw.provider.ledger() == []

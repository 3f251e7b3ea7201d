"""The fault harness at each named point: crash, pause, mutate, race (SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest

from signoff import Execution, ExecutionStatus, HookPoint
from signoff.demo import FaultMode
from signoff.exceptions import (
    AlreadyConsumed,
    ApproverRevoked,
    ExecutionInProgress,
    StateChanged,
    TokenExpired,
)
from signoff.testing import (
    Crashed,
    Effect,
    Raised,
    Returned,
    Then,
    check_exactly_once,
    effects_added,
)
from tests.conftest import AGENT
from tests.faultworld import STORES, FaultWorld, fault_world


@pytest.fixture(params=STORES)
def fw(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FaultWorld]:
    with fault_world(request.param, tmp_path) as world:
        yield world


@pytest.mark.parametrize("point", list(HookPoint))
def test_crash_at_each_point_then_reconcile_is_exactly_once(
    fw: FaultWorld, point: HookPoint
) -> None:
    """Crash at the point, reconcile after the lease: one refund, recorded with its reference."""
    proposal, token = fw.confirmed()
    fw.harness.crash_at(point)
    outcome = fw.harness.run(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    assert isinstance(outcome, Crashed) and outcome.point is point
    fw.lapse()
    fw.gate.reconcile()
    execution = fw.execution_of(proposal)
    assert execution.status is ExecutionStatus.SUCCEEDED
    verdict = fw.verdict(proposal)
    assert verdict.ok and verdict.effects == 1, verdict.summary()
    assert fw.refunded() == 19900
    assert fw.harness.effects().for_key(proposal.request_key)[0].reference == (
        execution.provider_reference
    )


@pytest.mark.parametrize("point", list(HookPoint))
def test_crash_of_the_reconciler_itself_is_recovered(fw: FaultWorld, point: HookPoint) -> None:
    """The worker dies, then the reconciler dies at the same point: a third pass still ends once."""
    proposal, token = fw.confirmed()
    fw.harness.crash_at(HookPoint.AFTER_CONSUME)
    fw.harness.run(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    fw.lapse()
    fw.harness.crash_at(point)
    fw.harness.run(fw.gate.reconcile)
    fw.lapse()
    fw.gate.reconcile()
    assert fw.execution_of(proposal).status is ExecutionStatus.SUCCEEDED
    assert fw.verdict(proposal).ok and len(fw.provider.ledger()) == 1


def test_state_changed_between_approval_and_execution(fw: FaultWorld) -> None:
    """The order moves while the worker is paused after consume: state_changed, no refund."""
    proposal, token = fw.confirmed()
    fw.harness.on(HookPoint.AFTER_CONSUME, lambda _: fw.shop.touch_order("acme", "ord_1001"))
    outcome = fw.harness.run(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    assert isinstance(outcome, Raised) and isinstance(outcome.error, StateChanged)
    execution = fw.execution_of(proposal)
    assert (execution.status, execution.error_code) == (
        ExecutionStatus.FAILED_TERMINAL,
        "state_changed",
    )
    assert fw.provider.ledger() == [] and fw.refunded() == 0
    assert fw.verdict(proposal).failed == (execution.execution_id,)


def test_state_changed_before_execution_refuses_without_consuming(fw: FaultWorld) -> None:
    """The order moves after approval, before execute: refused, token unused, no refund."""
    proposal, token = fw.confirmed()
    fw.shop.touch_order("acme", "ord_1001")
    with pytest.raises(StateChanged):
        fw.gate.execute(AGENT, proposal.proposal_id, token)
    assert fw.gate.execution_for(AGENT, proposal.proposal_id) is None
    assert fw.provider.ledger() == []


def test_revoked_approver_before_execution_is_refused(fw: FaultWorld) -> None:
    """The approver loses the role after approving: execute is refused and nothing happens."""
    proposal, token = fw.confirmed()
    fw.directory.revoke("acme", "alice", "refund_approver")
    with pytest.raises(ApproverRevoked):
        fw.gate.execute(AGENT, proposal.proposal_id, token)
    assert fw.gate.execution_for(AGENT, proposal.proposal_id) is None
    assert fw.provider.ledger() == [] and fw.refunded() == 0


def test_revoked_approver_while_paused_then_crash(fw: FaultWorld) -> None:
    """Role revoked at the pause, worker killed: the recovery refuses; no refund."""
    proposal, token = fw.confirmed()
    pause = fw.harness.pause_at(HookPoint.AFTER_CONSUME)
    run = fw.harness.start(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    pause.wait()
    fw.directory.revoke("acme", "alice", "refund_approver")
    pause.crash()
    assert isinstance(run.outcome(), Crashed)
    fw.lapse()
    fw.gate.reconcile()
    execution = fw.execution_of(proposal)
    assert (execution.status, execution.error_code) == (
        ExecutionStatus.FAILED_TERMINAL,
        "approver_revoked",
    )
    assert fw.provider.ledger() == []


def test_second_worker_racing_a_paused_one(fw: FaultWorld) -> None:
    """While the first worker waits before the call, a second one gets nowhere; one refund."""
    proposal, token = fw.confirmed()
    pause = fw.harness.pause_at(HookPoint.BEFORE_PROVIDER_CALL)
    run = fw.harness.start(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    paused = pause.wait()
    other = fw.second_gate()
    with pytest.raises(AlreadyConsumed):
        other.execute(AGENT, proposal.proposal_id, token)
    with pytest.raises(ExecutionInProgress):
        other.retry(AGENT, paused.execution_id)
    assert other.reconcile() == []
    pause.resume()
    outcome = run.outcome()
    assert isinstance(outcome, Returned)
    assert outcome.value.execution.status is ExecutionStatus.SUCCEEDED
    assert fw.verdict(proposal).ok and len(fw.provider.ledger()) == 1


def test_reconciler_racing_a_slow_worker_after_success(fw: FaultWorld) -> None:
    """The worker stalls past its lease after the provider's success; the reconciler settles it
    by lookup, the worker's late record loses the race, and both report one reference."""
    proposal, token = fw.confirmed()
    pause = fw.harness.pause_at(HookPoint.AFTER_PROVIDER_SUCCESS)
    run = fw.harness.start(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    pause.wait()
    fw.lapse()
    assert [r.action.value for r in fw.second_gate().reconcile()] == ["settled"]
    pause.resume()
    outcome = run.outcome()
    assert isinstance(outcome, Returned)
    [entry] = fw.provider.ledger()
    assert outcome.value.execution.provider_reference == entry.reference
    assert fw.verdict(proposal).ok


def test_expiry_between_the_check_and_the_consume_consumes_nothing(
    fw: FaultWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Consent must hold as the attempt starts (rule 11): the confirmation expires after
    execute checked it, before its write → token_expired; nothing consumed, no call."""
    proposal, token = fw.confirmed()
    ttl = proposal.expires_at - proposal.created_at
    tool = fw.gate.catalog.get("refund_order")
    read_state = tool.read_state

    def read_then_expire(*args: object) -> object:
        state = read_state(*args)  # type: ignore[arg-type]
        fw.clock.advance(ttl)  # the freshness read is the last thing before the write
        return state

    monkeypatch.setattr(tool, "read_state", read_then_expire)
    with pytest.raises(TokenExpired):
        fw.gate.execute(AGENT, proposal.proposal_id, token)
    assert fw.gate.execution_for(AGENT, proposal.proposal_id) is None
    assert fw.gate.expire_due() == 1
    assert fw.provider.ledger() == [] and fw.refunded() == 0


def test_timeout_after_success_with_a_crash_after_record(fw: FaultWorld) -> None:
    """Lost answer, then the worker dies after recording unknown: lookup settles succeeded."""
    proposal, token = fw.confirmed()
    fw.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    fw.harness.crash_at(HookPoint.AFTER_RECORD)
    outcome = fw.harness.run(lambda: fw.gate.execute(AGENT, proposal.proposal_id, token))
    assert isinstance(outcome, Crashed)
    assert outcome.execution.status is ExecutionStatus.UNKNOWN
    fw.gate.reconcile()
    [entry] = fw.provider.ledger()
    assert fw.execution_of(proposal).provider_reference == entry.reference


def test_rules_fire_in_order_for_their_count(fw: FaultWorld) -> None:
    """on(..., times=2) fires twice, then the next rule for the same point takes over."""
    seen: list[str] = []
    fw.harness.on(HookPoint.AFTER_RECORD, lambda e: seen.append("a"), times=2)
    fw.harness.on(HookPoint.AFTER_RECORD, lambda e: seen.append("b"), then=Then.CRASH)
    results = []
    for n in range(4):
        proposal, token = fw.confirmed(f"ord_{1001 + n}")
        results.append(fw.harness.run(partial(fw.gate.execute, AGENT, proposal.proposal_id, token)))
    assert seen == ["a", "a", "b"]
    assert [type(r).__name__ for r in results] == ["Returned", "Returned", "Crashed", "Returned"]
    assert len(fw.harness.effects().added) == 4
    assert fw.harness.points().count(HookPoint.AFTER_CONSUME) == 4


def test_check_exactly_once_names_every_kind_of_mismatch() -> None:
    """Duplicates, lost, unrecorded, open and orphan effects are each reported."""

    def execution(key: str, status: ExecutionStatus, reference: str | None = None) -> Execution:
        moment = datetime(2026, 1, 1, tzinfo=UTC)
        return Execution(
            f"exe_{key}", f"prop_{key}", "acme", f"tok_{key}", key, status, 1, reference,
            None, None, moment, moment,
        )  # fmt: skip

    records = [
        execution("ok", ExecutionStatus.SUCCEEDED, "r1"),
        execution("dup", ExecutionStatus.SUCCEEDED, "r2"),
        execution("lost", ExecutionStatus.SUCCEEDED, "r4"),
        execution("unrec", ExecutionStatus.FAILED_TERMINAL),
        execution("open", ExecutionStatus.UNKNOWN),
        execution("failed", ExecutionStatus.FAILED_TERMINAL),
    ]
    effects = [
        Effect("ok", "r1"),
        Effect("dup", "r2"),
        Effect("dup", "r3"),
        Effect("unrec", "r5"),
        Effect("stray", "r6"),
    ]
    verdict = check_exactly_once(records, effects)
    assert verdict.duplicates == ("exe_dup",)
    assert verdict.lost == ("exe_lost",)
    assert verdict.unrecorded == ("exe_unrec",)
    assert verdict.open == ("exe_open",)
    assert verdict.orphans == (Effect("stray", "r6"),)
    assert verdict.failed == ("exe_failed",)
    assert not verdict.ok
    assert effects_added(effects[:2], effects).added == tuple(effects[2:])


def _succeeded(key: str, reference: str) -> Execution:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    return Execution(
        f"exe_{key}", f"prop_{key}", "acme", f"tok_{key}", key, ExecutionStatus.SUCCEEDED, 1,
        reference, None, None, moment, moment,
    )  # fmt: skip


def test_a_tool_that_sent_two_emails_is_never_summed_up_as_zero_duplicates() -> None:
    """A second e-mail under a key of the tool's own, or the one e-mail under a key that is
    not the request key: NOT exactly once, and the summary counts the extra effect."""
    record = _succeeded("send_email:acme:act_1", "msg_1")
    second = check_exactly_once(
        [record], [Effect(record.request_key, "msg_1"), Effect("send_email:acme:act_1-cc", "msg_2")]
    )
    assert not second.ok and second.extra_effects == 1
    assert second.orphans == (Effect("send_email:acme:act_1-cc", "msg_2"),)
    assert second.summary().startswith(
        "NOT exactly once: 1 executions, 2 effects (1 beyond one per execution); "
    )
    retried = check_exactly_once(
        [record], [Effect("uuid-1", "msg_0"), Effect("uuid-2", "msg_1")]
    )  # the tool used its own key per attempt: two e-mails, the second one recorded
    assert retried.lost == () and retried.foreign_key == (Effect("uuid-2", "msg_1"),)
    assert retried.orphans == (Effect("uuid-1", "msg_0"),)
    assert not retried.ok and retried.extra_effects == 1
    same_key_twice = check_exactly_once(
        [record], [Effect(record.request_key, "msg_1"), Effect(record.request_key, "msg_2")]
    )
    assert same_key_twice.duplicates == (record.execution_id,)
    assert "1 executions with several effects" in same_key_twice.summary()


def test_adapters_doc_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    """The ```python examples in docs/ADAPTERS.md run as written, in order."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "ADAPTERS.md").read_text()
    blocks = [part.split("```", 1)[0] for part in text.split("```python\n")[1:]]
    assert len(blocks) == 2
    namespace: dict[str, object] = {"__name__": "adapters_doc"}
    for block in blocks:
        exec(compile(block, "docs/ADAPTERS.md", "exec"), namespace)
    assert "exactly once: 4 executions, 4 effects (0 beyond one per execution)" in (
        capsys.readouterr().out
    )
    namespace["store"].close()  # type: ignore[attr-defined]
    namespace["shop"].close()  # type: ignore[attr-defined]

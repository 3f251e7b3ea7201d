"""Real concurrency on a SQLite file: threads and processes racing one token."""

from __future__ import annotations

import multiprocessing
import threading
from collections import Counter
from pathlib import Path

import pytest

from signoff import Decision, DecisionKind
from signoff.exceptions import AlreadyConsumed, SignoffError
from tests.conftest import AGENT, APPROVER, APPROVER_2, World, make_world

THREADS = 32
REPETITIONS = 50
PROCESSES = 4


def _race(world: World, proposal_id: str, token: str, racers: int) -> Counter[str]:
    barrier = threading.Barrier(racers)
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()

    def run() -> None:
        barrier.wait()
        try:
            result = world.gate.execute(AGENT, proposal_id, token)
            outcome = result.execution.status.value
        except SignoffError as exc:
            outcome = exc.code
        with lock:
            outcomes[outcome] += 1

    threads = [threading.Thread(target=run) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


@pytest.mark.slow
def test_32_threads_one_token_one_refund(world: World) -> None:
    """32 threads × 50 tokens: one refund per token, every loser already_consumed."""
    total: Counter[str] = Counter()
    for n in range(REPETITIONS):
        proposal = world.propose(order_id=f"ord_{1001 + n}")
        token = world.approve(proposal, key=f"k{n}")
        outcomes = _race(world, proposal.proposal_id, token, THREADS)
        assert outcomes == Counter({"succeeded": 1, "already_consumed": THREADS - 1}), outcomes
        total += outcomes
    ledger = world.provider.ledger()
    assert len(ledger) == REPETITIONS
    assert len({e.request_key for e in ledger}) == REPETITIONS
    assert all(world.refunded(f"ord_{1001 + n}") == 19900 for n in range(REPETITIONS))
    assert world.gate.verify_audit().ok
    print(f"thread race: {dict(total)}")


def _process_worker(path: str, jobs: list[tuple[str, str]], start: object, out: object) -> None:
    world = make_world(Path(path), seed=False)
    start.wait()  # type: ignore[attr-defined]
    results = []
    for proposal_id, token in jobs:
        try:
            results.append(world.gate.execute(AGENT, proposal_id, token).execution.status.value)
        except SignoffError as exc:
            results.append(exc.code)
    out.put(results)  # type: ignore[attr-defined]


@pytest.mark.slow
def test_processes_race_every_token(tmp_path: Path) -> None:
    """4 processes each try all 40 tokens: 40 refunds, every other attempt already_consumed."""
    world = make_world(tmp_path)
    jobs = []
    for n in range(40):
        proposal = world.propose(order_id=f"ord_{1001 + n}")
        jobs.append((proposal.proposal_id, world.approve(proposal, key=f"k{n}")))
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    workers = [
        ctx.Process(target=_process_worker, args=(str(tmp_path), jobs, start, out))
        for _ in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    start.set()
    outcomes: Counter[str] = Counter()
    for _ in workers:
        outcomes.update(out.get(timeout=120))
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    assert outcomes == Counter({"succeeded": 40, "already_consumed": 40 * (PROCESSES - 1)})
    assert len(world.provider.ledger()) == 40
    assert world.gate.verify_audit().ok


def test_double_approve_same_key_concurrently_is_one_decision(world: World) -> None:
    """Two racing submissions with one key: one decision, the other a duplicate."""
    proposal = world.propose()
    results = _decide_concurrently(world, proposal.proposal_id, [(APPROVER, "k"), (APPROVER, "k")])
    assert sorted(str(r) for r in results) == ["duplicate", "first"]
    assert len(world.gate.proposal(APPROVER, proposal.proposal_id).approvals) == 1


def test_double_approve_different_keys_is_one_decision(world: World) -> None:
    """Two approvers racing with different keys: exactly one decision wins."""
    proposal = world.propose()
    results = _decide_concurrently(
        world, proposal.proposal_id, [(APPROVER, "a"), (APPROVER_2, "b")]
    )
    assert sorted(str(r) for r in results) == ["first", "invalid_state"]
    assert len(world.gate.proposal(APPROVER, proposal.proposal_id).approvals) == 1


def _decide_concurrently(
    world: World, proposal_id: str, calls: list[tuple[object, str]]
) -> list[str]:
    barrier = threading.Barrier(len(calls))
    results: list[str] = []

    def run(who: object, key: str) -> None:
        barrier.wait()
        try:
            result = world.gate.decide(
                who,  # type: ignore[arg-type]
                proposal_id,
                Decision(DecisionKind.APPROVE, 1),
                idempotency_key=key,
            )
            results.append("duplicate" if result.duplicate else "first")
        except SignoffError as exc:
            results.append(exc.code)

    threads = [threading.Thread(target=run, args=call) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_loser_sees_already_consumed_not_a_state_refusal(world: World) -> None:
    """After the winner refunded, a late racer is told already_consumed."""
    proposal = world.propose()
    token = world.approve(proposal)
    world.gate.execute(AGENT, proposal.proposal_id, token)
    with pytest.raises(AlreadyConsumed):
        world.gate.execute(AGENT, proposal.proposal_id, token)

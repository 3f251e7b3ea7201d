"""32 agents racing to spend one mandate, in real processes, on both stores.

Eight spawned processes, each with its own store connections and four agent threads (32
agents, each a distinct ``act`` for the same person), wait on one barrier, then each
proposes a refund under the mandate and executes it when confirmed. The provider's ledger —
the external side effect — never exceeds the mandate's budget or its count, and every agent
that lost is told which bound it hit.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
from collections import Counter
from collections.abc import Iterator
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest

from signoff import Decision, DecisionKind, Gate, ManualClock, Principal, StaticRoleDirectory
from signoff.demo import DemoShop, RefundProvider, demo_catalog
from signoff.exceptions import SignoffError
from signoff.store import open_store
from tests.conftest import APPROVER, TOKEN_KEY
from tests.test_store_contract import STORES, Backend, backend_for

pytestmark = pytest.mark.slow

PROCESSES = 8
AGENTS_PER_PROCESS = 4
AMOUNT = 7000
WAIT_S = 300
BOUNDS = {
    # the count binds first: 3 writes (21,000 of 30,000)
    "count": ({"currency": "CNY", "total_amount_minor": 30000, "max_count": 3}, 3),
    # the budget binds first: 4 writes of 7,000 (28,000); a fifth would be 35,000
    "budget": ({"currency": "CNY", "total_amount_minor": 30000, "max_count": 32}, 4),
}


def _agent(number: int) -> Principal:
    return Principal("u_42", "acme", actor=f"agent:racer-{number}")


def _race(
    url: str,
    shop_location: str,
    mandate_id: str,
    first_agent: int,
    barrier: Barrier,
    results: Queue[Any],
) -> None:
    """One process: four agent threads, each proposing once under the mandate and executing."""
    store = open_store(url, migrate=False)
    shop = DemoShop(shop_location)
    gate = Gate(
        demo_catalog(shop, RefundProvider(shop)),
        store,
        token_key=TOKEN_KEY,
        clock=ManualClock(),  # every process starts at the same instant as the parent's
        directory=StaticRoleDirectory([("acme", "alice", "refund_approver")]),
    )
    outcomes: list[str] = []
    lock = threading.Lock()

    def agent(number: int) -> None:
        principal = _agent(number)
        order = f"ord_{1001 + number}"
        arguments = {"order_id": order, "amount_minor": AMOUNT, "currency": "CNY", "reason": None}
        try:
            proposal = gate.propose(principal, "refund_order", arguments, mandate_id=mandate_id)
            token = gate.confirmation_token(principal, proposal.proposal_id)
            outcome = gate.execute(principal, proposal.proposal_id, token).execution.status.value
        except SignoffError as exc:
            outcome = exc.code
        with lock:
            outcomes.append(outcome)

    threads = [
        threading.Thread(target=agent, args=(first_agent + i,)) for i in range(AGENTS_PER_PROCESS)
    ]
    try:
        barrier.wait()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        store.close()
        shop.close()
    results.put(outcomes)


def _spawn(args: list[tuple[Any, ...]]) -> list[str]:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(args))
    results: Queue[Any] = context.Queue()
    processes = [context.Process(target=_race, args=(*a, barrier, results)) for a in args]
    for process in processes:
        process.start()
    gathered: list[str] = []
    deadline = time.monotonic() + WAIT_S
    try:
        for _ in processes:
            while True:
                try:
                    gathered += results.get(timeout=1)
                    break
                except queue.Empty:
                    dead = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
                    assert not dead, f"a racing process died with exit codes {dead}"
                    assert time.monotonic() < deadline, "the race did not finish in time"
    finally:
        for process in processes:
            process.join(timeout=60)
            if process.is_alive():
                process.terminate()
    return gathered


@pytest.fixture(params=STORES)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Backend, str]]:
    with backend_for(request.param, tmp_path) as b:
        shop_location = b.url if request.param == "postgresql" else str(tmp_path / "shop.db")
        yield b, shop_location


@pytest.mark.parametrize("bound", sorted(BOUNDS))
def test_32_agents_never_overspend_one_mandate(backend: tuple[Backend, str], bound: str) -> None:
    """The ledger holds exactly what the mandate allows; each loser is told which bound."""
    b, shop_location = backend
    constraints, winners = BOUNDS[bound]
    gate = b.gate()
    state = gate.propose_mandate(_agent(0), "refund_order", constraints, expires_in_seconds=3600)
    gate.decide_mandate(
        APPROVER,
        state.record.mandate_id,
        Decision(DecisionKind.APPROVE, state.record.version),
        idempotency_key="approve",
    )
    # The mandate was asked for by racer 0; every racer acts for the same person u_42.
    args = [
        (b.url, shop_location, state.record.mandate_id, p * AGENTS_PER_PROCESS)
        for p in range(PROCESSES)
    ]
    outcomes = Counter(_spawn(args))

    ledger = b.provider.ledger("acme")
    assert len(ledger) == winners
    assert sum(entry.amount_minor for entry in ledger) == winners * AMOUNT <= 30000
    assert len({entry.request_key for entry in ledger}) == winners
    losers = PROCESSES * AGENTS_PER_PROCESS - winners
    refusal = "mandate_exhausted" if bound == "count" else "mandate_exceeded"
    assert outcomes == Counter({"succeeded": winners, refusal: losers}), outcomes
    final = gate.mandate(_agent(0), state.record.mandate_id)
    assert (final.record.used, final.record.spent_minor) == (winners, winners * AMOUNT)
    assert len(final.writes) == winners
    assert gate.verify_audit().ok
    print(f"\n{b.kind} mandate race ({bound}): {dict(outcomes)}")

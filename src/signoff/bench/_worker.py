"""One bench worker process: it opens its own store and shop, then runs what it is told.

Commands arrive on the worker's queue; all workers start each phase together
at a barrier and report their own timings (``time.monotonic`` is one clock
for every process on Linux).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

from signoff import Decision, DecisionKind, ExecutionStatus, Gate, Principal
from signoff.bench import _roundtrips
from signoff.bench._counting import CountingShopDatabase, CountingStore, Counts
from signoff.bench._target import (
    APPROVER,
    APPROVER_ROLE,
    FLOW_AMOUNT,
    OWNER,
    TENANT,
    Target,
    bare_order,
    flow_order,
)
from signoff.demo import RefundProvider, demo_catalog
from signoff.demo._provider import REFUND_UPDATE
from signoff.identity import StoreRoleDirectory

TOKEN_KEY = b"signoff-bench-token-key-32-bytes"


@dataclass
class PhaseResult:
    """What one worker measured in one phase (latencies in seconds)."""

    worker: int
    started: float
    finished: float
    latencies: dict[str, list[float]] = field(default_factory=dict)
    counts: Counts = field(default_factory=Counts)
    error: str | None = None


class _Worker:
    def __init__(self, target: Target, index: int) -> None:
        self.index = index
        self.target = target
        self.counts = Counts()
        _roundtrips.install(self.counts.trip)  # this process runs nothing else
        self.store = CountingStore(target.open_store(), self.counts)
        self.shop = target.open_shop()
        self.shop.db = CountingShopDatabase(self.shop.db, self.counts)
        self.gate = Gate(
            demo_catalog(self.shop, RefundProvider(self.shop)),
            self.store,
            token_key=TOKEN_KEY,
            # As `signoff serve` runs by default: roles checked now, in signoff's store.
            directory=StoreRoleDirectory(self.store, mode="grants"),
        )
        self.bare_version = 1
        # Open the connections before the clock starts.
        self.store.ping()
        self.shop.order(TENANT, bare_order(index))

    def flows(self, ks: list[int]) -> dict[str, list[float]]:
        phases: dict[str, list[float]] = {"propose": [], "approve": [], "execute": [], "flow": []}
        for k in ks:
            tenant = self.target.tenant(k)
            agent = Principal(OWNER, tenant, actor="agent:bench")
            approver = Principal(APPROVER, tenant, roles=frozenset({APPROVER_ROLE}))
            t0 = time.monotonic()
            proposal = self.gate.propose(
                agent,
                "refund_order",
                {
                    "order_id": flow_order(k),
                    "amount_minor": FLOW_AMOUNT,
                    "currency": "CNY",
                    "reason": "bench",
                },
            )
            t1 = time.monotonic()
            decided = self.gate.decide(
                approver,
                proposal.proposal_id,
                Decision(DecisionKind.APPROVE, proposal.version),
                idempotency_key=f"bench-{k}",
            )
            t2 = time.monotonic()
            assert decided.confirmation_token is not None
            result = self.gate.execute(agent, proposal.proposal_id, decided.confirmation_token)
            t3 = time.monotonic()
            if result.execution.status is not ExecutionStatus.SUCCEEDED:
                raise RuntimeError(f"flow {k} ended {result.execution.status.value}")
            phases["propose"].append(t1 - t0)
            phases["approve"].append(t2 - t1)
            phases["execute"].append(t3 - t2)
            phases["flow"].append(t3 - t0)
        return phases

    def bare(self, commits: int) -> dict[str, list[float]]:
        """The provider's conditional UPDATE alone, one per commit, nothing around it.

        It runs as a statement that commits by itself (PostgreSQL autocommit: one
        round trip), the cheapest form of this write, so the ratio flatters nothing.
        """
        order_id = bare_order(self.index)
        latencies = []
        for _ in range(commits):
            t0 = time.monotonic()
            with self.shop.db.autocommit() as conn:
                changed = conn.execute(
                    REFUND_UPDATE, (1, TENANT, order_id, self.bare_version, "CNY", 1)
                ).rowcount
            latencies.append(time.monotonic() - t0)
            if changed != 1:
                raise RuntimeError(f"bare write on {order_id} changed {changed} rows")
            self.bare_version += 1
        return {"bare": latencies}

    def close(self) -> None:
        self.store.close()
        self.shop.close()


def serve(
    target: Target, index: int, barrier: Barrier, commands: Queue[Any], results: Queue[Any]
) -> None:
    """The worker's main loop: ("flows", [k…]) | ("bare", n) | ("stop", None)."""
    worker = _Worker(target, index)
    try:
        while True:
            command, argument = commands.get()
            if command == "stop":
                return
            barrier.wait()
            worker.counts.reset()
            started = time.monotonic()
            try:
                latencies = worker.flows(argument) if command == "flows" else worker.bare(argument)
                error = None
            except Exception as exc:  # reported to the parent, which fails the run
                latencies, error = {}, f"{type(exc).__name__}: {exc}"
            finished = time.monotonic()
            counts = dataclasses.replace(worker.counts)
            results.put(PhaseResult(index, started, finished, latencies, counts, error))
    finally:
        worker.close()

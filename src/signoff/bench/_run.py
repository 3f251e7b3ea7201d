"""Run the benchmark: bare writes, full flows, bare writes again, on one store."""

from __future__ import annotations

import multiprocessing
import queue
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any

from signoff.bench._counting import Counts
from signoff.bench._stats import Phase, summarize
from signoff.bench._target import Target, flow_order, prepared, seed
from signoff.bench._worker import PhaseResult, serve
from signoff.demo import RefundProvider
from signoff.gate._gate import verify_audit

RESULT_TIMEOUT_S = 3600
DURABLE_COMMITS = 4


@dataclass
class BenchReport:
    target: str
    workers: int
    flows: int
    tenants: int
    phases: dict[str, Phase]
    flow_seconds: float
    flows_per_second: float
    bare_commits: int
    bare_seconds: float
    bare_commits_per_second: float
    counts: Counts
    checks: list[str] = field(default_factory=list)

    @property
    def commits_per_flow(self) -> float:
        return (self.counts.signoff_writes + self.counts.shop_writes) / self.flows

    @property
    def reads_per_flow(self) -> float:
        return (self.counts.signoff_reads + self.counts.shop_reads) / self.flows

    @property
    def trips_per_flow(self) -> float:
        """Round trips (statements, BEGIN, COMMIT) per flow, signoff's and the provider's."""
        return (self.counts.signoff_trips + self.counts.shop_trips) / self.flows

    @property
    def durable_ratio(self) -> float:
        """flows/s ÷ (bare commits/s ÷ 4): against the four commits a durable flow needs
        (propose; decide and issue; consume and start; finish)."""
        return self.flows_per_second / (self.bare_commits_per_second / DURABLE_COMMITS)

    @property
    def ratio(self) -> float:
        """flows/s ÷ (bare commits/s ÷ commits per flow): 1.0 means the protocol costs no more
        than its commits do."""
        return self.flows_per_second / (self.bare_commits_per_second / self.commits_per_flow)


def run_bench(
    db: str | None,
    *,
    flows: int,
    workers: int,
    synchronous: str = "FULL",
    keep: bool = False,
    tenants: int = 1,
    progress: Callable[[str], None] = lambda _: None,
) -> BenchReport:
    if flows < workers or workers < 1:
        raise ValueError("need at least one worker and at least one flow per worker")
    with prepared(db, synchronous=synchronous, keep=keep, tenants=tenants) as target:
        seed(target, flows=flows, workers=workers)
        with _Workers(target, workers) as pool:
            # Bare writes before and after the flows, so drift on a shared machine evens out.
            bare_half = max(flows * 3 // workers, 50)
            progress(f"bare writes: {bare_half * workers} commits")
            before = pool.run("bare", [bare_half] * workers)
            progress(f"full flows: {flows} with {workers} workers")
            flow_results = pool.run(
                "flows", [list(range(w, flows, workers)) for w in range(workers)]
            )
            progress(f"bare writes again: {bare_half * workers} commits")
            after = pool.run("bare", [bare_half] * workers)
        return _report(target, workers, flows, before, flow_results, after)


def _report(
    target: Target,
    workers: int,
    flows: int,
    before: list[PhaseResult],
    flow_results: list[PhaseResult],
    after: list[PhaseResult],
) -> BenchReport:
    flow_seconds = _wall(flow_results)
    bare_seconds = _wall(before) + _wall(after)
    bare_commits = sum(len(r.latencies["bare"]) for r in (*before, *after))
    counts = Counts()
    for result in flow_results:
        counts.add(result.counts)
    phases = summarize(
        [r.latencies for r in flow_results], ("propose", "approve", "execute", "flow")
    )
    phases.update(summarize([r.latencies for r in (*before, *after)], ("bare",)))
    return BenchReport(
        target=target.label,
        workers=workers,
        flows=flows,
        tenants=target.tenants,
        phases=phases,
        flow_seconds=flow_seconds,
        flows_per_second=flows / flow_seconds,
        bare_commits=bare_commits,
        bare_seconds=bare_seconds,
        bare_commits_per_second=bare_commits / bare_seconds,
        counts=counts,
        checks=_check(target, flows),
    )


def _check(target: Target, flows: int) -> list[str]:
    """The run counts only if every flow refunded once and the audit chain holds."""
    shop = target.open_shop()
    store = target.open_store()
    try:
        refunded = {
            e.order_id for e in RefundProvider(shop).ledger() if e.order_id.startswith("ord_1")
        }
        missing = [flow_order(k) for k in range(flows) if flow_order(k) not in refunded]
        if missing or len(refunded) != flows:
            raise AssertionError(f"ledger has {len(refunded)} refunds for {flows} flows")
        report = verify_audit(store)
        if not report.ok:
            raise AssertionError(f"audit chain broken: {report.first_bad}")
    finally:
        shop.close()
        store.close()
    return [
        f"ledger: {flows} refunds for {flows} flows",
        f"audit chain intact: {report.events} events",
    ]


def _wall(results: list[PhaseResult]) -> float:
    return max(r.finished for r in results) - min(r.started for r in results)


class _Workers:
    """W long-lived worker processes (spawned: no inherited connections or threads)."""

    def __init__(self, target: Target, workers: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._barrier = context.Barrier(workers)
        self._results: Any = context.Queue()
        self._commands: list[Any] = [context.Queue() for _ in range(workers)]
        self._processes: list[BaseProcess] = [
            context.Process(
                target=serve,
                args=(target, index, self._barrier, self._commands[index], self._results),
                name=f"signoff-bench-{index}",
            )
            for index in range(workers)
        ]

    def __enter__(self) -> _Workers:
        for process in self._processes:
            process.start()
        return self

    def run(self, command: str, arguments: list[Any]) -> list[PhaseResult]:
        for commands, argument in zip(self._commands, arguments, strict=True):
            commands.put((command, argument))
        results: list[PhaseResult] = []
        while len(results) < len(self._processes):
            try:
                results.append(self._results.get(timeout=5))
            except queue.Empty:
                dead = [p.name for p in self._processes if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"bench worker(s) died: {', '.join(dead)}") from None
        errors = [f"worker {r.worker}: {r.error}" for r in results if r.error]
        if errors:
            raise RuntimeError("; ".join(errors))
        return results

    def __exit__(self, *exc: object) -> None:
        for commands in self._commands:
            commands.put(("stop", None))
        for process in self._processes:
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()
                process.join()

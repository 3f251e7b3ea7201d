"""What traces cost per flow: tracing off, and on with an SDK provider, interleaved.

    .venv/bin/python benchmarks/bench_tracing.py [--flows 300] [--rounds 3]

One process, SQLite (synchronous=FULL), the demo refund tool, no signing. Each round runs
``--flows`` propose → approve → execute flows with tracing off, then as many with the
OpenTelemetry SDK's provider and an in-memory exporter (each span processed as it ends, so
the figure includes making and finishing every span). It prints the median wall and CPU
time per flow of each mode and their difference; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from signoff import Decision, DecisionKind, Gate, Principal, SQLiteStore
from signoff._telemetry import disable_tracing, enable_tracing
from signoff.demo import DemoShop, RefundProvider, demo_catalog, seed_demo_orders

AGENT = Principal("u_42", "acme", actor="agent:bench")
APPROVER = Principal("alice", "acme", roles=frozenset({"refund_approver"}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flows", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    results: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
    spans = 0
    for _ in range(options.rounds):
        for mode in ("off", "on"):
            if mode == "on":
                enable_tracing(provider)
            try:
                results[mode].append(_run(options.flows))
            finally:
                disable_tracing()
            spans += len(exporter.get_finished_spans())
            exporter.clear()
    off_wall, off_cpu = (statistics.median(c) for c in zip(*results["off"], strict=True))
    on_wall, on_cpu = (statistics.median(c) for c in zip(*results["on"], strict=True))
    per_flow = spans / (options.rounds * options.flows)
    print(f"tracing off: wall {off_wall:.3f} ms, CPU {off_cpu:.3f} ms per flow")
    print(f"tracing on:  wall {on_wall:.3f} ms, CPU {on_cpu:.3f} ms per flow "
          f"({per_flow:.1f} spans per flow)")  # fmt: skip
    print(f"difference: CPU {on_cpu - off_cpu:+.3f} ms per flow ({on_cpu / off_cpu:.2f}×)")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _run(flows: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as folder:
        shop = DemoShop(str(Path(folder) / "shop.db"))
        seed_demo_orders(shop)
        store = SQLiteStore(Path(folder) / "signoff.db")
        store.migrate()
        gate = Gate(demo_catalog(shop, RefundProvider(shop)), store)
        try:
            for i in range(10):
                _flow(gate, f"warm-{i}")
            wall, cpu = time.perf_counter(), time.process_time()
            for i in range(flows):
                _flow(gate, f"k{i}")
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        finally:
            store.close()
            shop.close()
    return wall * 1e3 / flows, cpu * 1e3 / flows


def _flow(gate: Gate, key: str) -> None:
    arguments = {"order_id": "ord_1001", "amount_minor": 1, "currency": "CNY", "reason": None}
    proposal = gate.propose(AGENT, "refund_order", arguments)
    token = gate.decide(
        APPROVER, proposal.proposal_id, Decision(DecisionKind.APPROVE, 1), idempotency_key=key
    ).confirmation_token
    assert token is not None
    gate.execute(AGENT, proposal.proposal_id, token)


if __name__ == "__main__":
    main()

"""How cost grows with the work: a long audit log, many pending proposals, big bundles.

    .venv/bin/python benchmarks/bench_scale.py [--events 0 100000 1000000] [--pending 100000]
    .venv/bin/python benchmarks/bench_scale.py --quick     # 0, 10k, 50k events; 10k pending

One process, SQLite (synchronous=FULL), the demo refund tool, signing on (checkpoints every
64 events and after each execution, a signed receipt per execution). For each log size a
fresh store gets that many events appended to tenant acme's chain through the store (hashed,
authenticated and chained as any event), one checkpoint over them, then ``--flows``
propose → approve → execute flows. Then, on the same store:

- the inbox's first page for an approver (50 of the 60 proposals every store has
  waiting, or of the ``--pending`` ones), median of 50;
- a checkpoint over one new event, a signed receipt, and the passkey lookup a
  device-approved receipt makes (``_enrolments``), each median of 20;
- the bundle export and its offline verification: events/s and the peak of Python's
  allocations while each runs (tracemalloc, on a second run, so the timings are not slowed).

``--pending N`` adds a store with N proposals awaiting a decision (seeded in batches through
the store) and measures the flows and the inbox there. Every figure is printed beside the
same figure on the empty store of the same run, as a ratio; nothing is asserted about time.
The machine's load changes the figures: quote them with the load average printed first.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from signoff import Decision, DecisionKind, Gate, Principal, SQLiteStore
from signoff._clock import to_micros
from signoff.audit._chain import AuditEvent
from signoff.demo import DemoShop, RefundProvider, demo_catalog, seed_demo_orders
from signoff.gate._proof import GateProof
from signoff.gate._propose import created_event
from signoff.gate._signed_receipt import _enrolments, signed_receipt
from signoff.proof import FileSignerState, KeySet, PublicKeys, verify_bundle
from signoff.store._sql import audit_entry

AGENT = Principal("u_42", "acme", actor="agent:bench")
APPROVER = Principal("alice", "acme", roles=frozenset({"refund_approver"}))
TENANT = "acme"
BATCH = 20_000
PAGE_FULL = 60
FILLER = "x" * 240  # an event's data is a few hundred bytes, as a proposal.created is


@dataclass
class World:
    gate: Gate
    store: SQLiteStore
    shop: DemoShop
    keys: KeySet


@dataclass
class Figures:
    label: str
    flow_ms: float
    flows_per_s: float
    inbox_ms: float
    checkpoint_ms: float
    receipt_ms: float
    enrolments_ms: float
    export_per_s: float = 0.0
    verify_per_s: float = 0.0
    export_peak_mib: float = 0.0
    verify_peak_mib: float = 0.0
    events: int = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[0, 100_000, 1_000_000])
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--flows", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="0, 10k, 50k events; 10k pending")
    parser.add_argument("--no-bundle", action="store_true", help="skip export and verify")
    options = parser.parse_args()
    if options.quick:
        options.events, options.pending, options.flows = [0, 10_000, 50_000], 10_000, 100
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"flows per store: {options.flows}; sizes: {options.events}; pending: {options.pending}")
    keys = KeySet.generate()
    results = [
        _log_of(size, options.flows, keys, bundle=not options.no_bundle) for size in options.events
    ]
    if options.pending:
        results.append(_pending(options.pending, options.flows, keys))
    _report(results)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


@contextmanager
def _world(keys: KeySet) -> Iterator[World]:
    with tempfile.TemporaryDirectory() as folder:
        shop = DemoShop(str(Path(folder) / "shop.db"))
        seed_demo_orders(shop)
        store = SQLiteStore(Path(folder) / "signoff.db")
        store.migrate()
        proof = GateProof(
            keys, issuer="bench", checkpoint_events=64, checkpoint_seconds=3600,
            signer=FileSignerState(Path(folder) / "signer-state"),
        )  # fmt: skip
        gate = Gate(demo_catalog(shop, RefundProvider(shop)), store, proof=proof)
        try:
            yield World(gate, store, shop, keys)
        finally:
            store.close()
            shop.close()


def _log_of(size: int, flows: int, keys: KeySet, *, bundle: bool) -> Figures:
    with _world(keys) as world:
        if size:
            seeded = _timed(lambda: _seed_events(world, size))
            print(f"[{size:,} events] seeded in {seeded:.1f} s ({size / seeded:,.0f} events/s)")
            first = _timed(world.gate.checkpoint_now)
            print(f"[{size:,} events] first checkpoint over them: {first:.2f} s")
        _seed_pending(world, PAGE_FULL)  # the inbox's first page is full on every store
        figures = _measure(world, f"{size:,} events", flows)
        if bundle:
            _bundle(world, figures)
        return figures


def _pending(count: int, flows: int, keys: KeySet) -> Figures:
    with _world(keys) as world:
        seeded = _timed(lambda: _seed_pending(world, count))
        print(f"[{count:,} pending] seeded in {seeded:.1f} s")
        world.gate.checkpoint_now()
        return _measure(world, f"{count:,} pending", flows)


def _seed_events(world: World, size: int) -> None:
    """``size`` events appended to the tenant's chain in batches (sealed and hashed)."""
    at = to_micros(world.gate.clock.now())
    done = 0
    while done < size:
        with world.store.transaction() as tx:
            for n in range(done, min(size, done + BATCH)):
                tx.append(
                    audit_entry(
                        tenant=TENANT,
                        at=at,
                        kind="bench.filler",
                        actor="bench",
                        data={"n": n, "filler": FILLER},
                    )
                )
        done += BATCH


def _seed_pending(world: World, count: int) -> None:
    """``count`` proposals awaiting a refund approver, copies of one real proposal."""
    model = world.gate.propose(AGENT, "refund_order", _refund())
    at = to_micros(model.created_at)
    done = 0
    while done < count:
        with world.store.transaction() as tx:
            for n in range(done, min(count, done + BATCH)):
                proposal = dataclasses.replace(
                    model,
                    # Deadlines apart by a millisecond each, as proposals made over time are.
                    created_at=model.created_at + timedelta(milliseconds=n),
                    expires_at=model.expires_at + timedelta(milliseconds=n),
                    proposal_id=f"prop_seed{n}",
                    action_id=f"act_seed{n}",
                    request_key=f"refund_order:{TENANT}:act_seed{n}",
                )
                tx.record_proposal(proposal, created_event(AGENT, proposal, at + n * 1000))
        done += BATCH


def _refund() -> dict[str, Any]:
    return {"order_id": "ord_1001", "amount_minor": 1, "currency": "CNY", "reason": None}


def _flow(gate: Gate, key: str) -> tuple[str, str]:
    proposal = gate.propose(AGENT, "refund_order", _refund())
    token = gate.decide(
        APPROVER, proposal.proposal_id, Decision(DecisionKind.APPROVE, 1), idempotency_key=key
    ).confirmation_token
    assert token is not None
    result = gate.execute(AGENT, proposal.proposal_id, token)
    assert result.signed_receipt is not None, "no signed receipt"
    return proposal.proposal_id, result.execution.execution_id


def _measure(world: World, label: str, flows: int) -> Figures:
    gate = world.gate
    for i in range(10):
        _flow(gate, f"warm-{i}")
    times = []
    started = time.perf_counter()
    for i in range(flows):
        begin = time.perf_counter()
        last = _flow(gate, f"k{i}")
        times.append(time.perf_counter() - begin)
    wall = time.perf_counter() - started
    inbox = _median(lambda: gate.inbox(APPROVER, limit=50), 50)
    checkpoint = _median_after(lambda: _seed_events(world, 1), gate.checkpoint_now, 20)
    receipt = _median(lambda: signed_receipt(gate._ctx, TENANT, *last), 20)
    device = _device_decision(last[0])
    with world.store.read() as tx:
        upto = tx.audit_head_seq(TENANT)
        enrolments = _median(lambda: _enrolments(tx, TENANT, [device], upto), 20)
    figures = Figures(
        label, statistics.median(times) * 1e3, flows / wall, inbox, checkpoint, receipt,
        enrolments,
    )  # fmt: skip
    print(
        f"[{label}] flow p50 {figures.flow_ms:.2f} ms, {figures.flows_per_s:.1f} flows/s; "
        f"inbox {inbox:.2f} ms; checkpoint {checkpoint:.2f} ms; receipt {receipt:.2f} ms; "
        f"passkey lookup {enrolments:.3f} ms"
    )
    return figures


def _device_decision(proposal_id: str) -> AuditEvent:
    """A device-approved decision event, as the receipt's passkey lookup sees one."""
    return AuditEvent(TENANT, 0, 0, "decision.approved", proposal_id, None, "alice",
                      '{"device":{"credential_id":"c"}}', "", "", None)  # fmt: skip


def _bundle(world: World, figures: Figures) -> None:
    gate = world.gate
    trust = PublicKeys(world.keys.public_jwks())
    start = time.perf_counter()
    document = gate.export_bundle(TENANT)
    export = time.perf_counter() - start
    events = len(document["events"])
    start = time.perf_counter()
    report = verify_bundle(document, trust)
    verify = time.perf_counter() - start
    assert report.ok, report
    verify_peak = _peak(lambda: verify_bundle(document, trust))
    export_peak = _peak(lambda: gate.export_bundle(TENANT))
    figures.events = events
    figures.export_per_s, figures.verify_per_s = events / export, events / verify
    figures.export_peak_mib, figures.verify_peak_mib = export_peak, verify_peak
    print(
        f"[{figures.label}] bundle of {events:,} events: export {events / export:,.0f} events/s "
        f"(peak {export_peak:.1f} MiB), verify {events / verify:,.0f} events/s "
        f"(peak {verify_peak:.1f} MiB)"
    )


def _report(results: list[Figures]) -> None:
    base = results[0]
    print()
    print("ratios to the first store of this run (" + base.label + "):")
    header = (
        f"{'store':<18} {'flows/s':>9} {'×':>6} {'inbox ms':>9} {'×':>6} {'ckpt ms':>8} "
        f"{'×':>6} {'receipt':>8} {'×':>6} {'passkey':>8} {'×':>7}"
    )
    print(header)
    for r in results:
        print(
            f"{r.label:<18} {r.flows_per_s:>9.1f} {r.flows_per_s / base.flows_per_s:>6.2f} "
            f"{r.inbox_ms:>9.2f} {_ratio(r.inbox_ms, base.inbox_ms):>6} "
            f"{r.checkpoint_ms:>8.2f} {_ratio(r.checkpoint_ms, base.checkpoint_ms):>6} "
            f"{r.receipt_ms:>8.2f} {_ratio(r.receipt_ms, base.receipt_ms):>6} "
            f"{r.enrolments_ms:>8.3f} {_ratio(r.enrolments_ms, base.enrolments_ms):>7}"
        )
    bundles = [r for r in results if r.events]
    if bundles:
        print()
        print(f"{'bundle':<18} {'events':>10} {'export/s':>10} {'MiB':>7} {'verify/s':>10} "
              f"{'MiB':>7} {'B/event':>8}")  # fmt: skip
        for r in bundles:
            per_event = (r.export_peak_mib * 2**20) / r.events
            print(
                f"{r.label:<18} {r.events:>10,} {r.export_per_s:>10,.0f} "
                f"{r.export_peak_mib:>7.1f} {r.verify_per_s:>10,.0f} {r.verify_peak_mib:>7.1f} "
                f"{per_event:>8,.0f}"
            )


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}" if base > 0 else "-"


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _median(call: Callable[[], object], times: int) -> float:
    return statistics.median(_timed(call) * 1e3 for _ in range(times))


def _median_after(before: Callable[[], object], call: Callable[[], object], times: int) -> float:
    samples = []
    for _ in range(times):
        before()
        samples.append(_timed(call) * 1e3)
    return statistics.median(samples)


def _peak(call: Callable[[], object]) -> float:
    """The peak of Python's allocations while ``call`` runs, in MiB (tracemalloc)."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


if __name__ == "__main__":
    main()

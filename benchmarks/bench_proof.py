"""What signing costs per flow: opaque vs signed tokens, checkpoints and signed receipts.

    .venv/bin/python benchmarks/bench_proof.py [--flows 300] [--checkpoint-events 64]

One process, one thread, a fresh SQLite file per mode (synchronous=FULL), the
demo refund tool. Each mode runs the same propose → approve → execute flows:

- ``opaque``: no signing at all (the gate without ``proof``);
- ``opaque+proof``: opaque tokens, checkpoints (every N events, and at the end
  of each execution) and a signed receipt per execution;
- ``signed``: the signed token form on top of that.

It prints, per flow, the median wall time and the mean CPU time of this
process (signing is CPU; the wall time also holds the disk's fsyncs, which
vary more than signing costs), with the modes interleaved over ``--rounds``,
and the cost of the single signing operations. Use the differences between
modes, not the absolute figures, which depend on the machine and its disk.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from signoff import Decision, DecisionKind, Gate, Principal, SQLiteStore
from signoff.demo import DemoShop, RefundProvider, demo_catalog, seed_demo_orders
from signoff.gate._proof import GateProof, TokenForm
from signoff.proof import (
    Checkpoint,
    ConfirmationClaims,
    FileSignerState,
    KeySet,
    PublicKeys,
    sign_checkpoint,
    sign_confirmation,
    verify_confirmation,
)

AGENT = Principal("u_42", "acme", actor="agent:bench")
APPROVER = Principal("alice", "acme", roles=frozenset({"refund_approver"}))
MODES = ("opaque", "opaque+proof", "signed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flows", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--checkpoint-events", type=int, default=64)
    options = parser.parse_args()
    keys = KeySet.generate()
    print(
        f"flows per mode and round: {options.flows}; rounds: {options.rounds}; "
        f"checkpoint every {options.checkpoint_events} events and after each execution"
    )
    results: dict[str, list[tuple[float, float, float, float]]] = {m: [] for m in MODES}
    for _ in range(options.rounds):
        for mode in MODES:
            results[mode].append(_run(mode, options.flows, keys, options.checkpoint_events))
    print(f"{'mode':<14} {'wall ms':>8} {'CPU ms':>7} {'decide ms':>10} {'execute ms':>11}")
    base_cpu = None
    for mode in MODES:
        columns = zip(*results[mode], strict=True)
        wall, cpu, decide, execute = (statistics.median(c) for c in columns)
        extra = "" if base_cpu is None else f"  (CPU +{cpu - base_cpu:.3f} ms vs opaque)"
        base_cpu = cpu if base_cpu is None else base_cpu
        print(f"{mode:<14} {wall:>8.3f} {cpu:>7.3f} {decide:>10.3f} {execute:>11.3f}{extra}")
    _single_operations(keys)


def _run(mode: str, flows: int, keys: KeySet, every: int) -> tuple[float, float, float, float]:
    with tempfile.TemporaryDirectory() as folder:
        shop = DemoShop(str(Path(folder) / "shop.db"))
        seed_demo_orders(shop)
        store = SQLiteStore(Path(folder) / "signoff.db")
        store.migrate()
        proof = None
        if mode != "opaque":
            form: TokenForm = "signed" if mode == "signed" else "opaque"
            proof = GateProof(
                keys, issuer="bench", token_form=form, checkpoint_events=every,
                checkpoint_seconds=3600, signer=FileSignerState(Path(folder) / "signer-state"),
            )  # fmt: skip
        gate = Gate(demo_catalog(shop, RefundProvider(shop)), store, proof=proof)
        try:
            for i in range(10):  # warm up (and the first checkpoint of the log)
                _flow(gate, f"warm-{i}")
            cpu = time.process_time()
            rows = [_flow(gate, f"k{i}") for i in range(flows)]
            cpu_ms = (time.process_time() - cpu) * 1e3 / flows
        finally:
            store.close()
            shop.close()
    total, decide, execute = (statistics.median(column) for column in zip(*rows, strict=True))
    return total, cpu_ms, decide, execute


def _flow(gate: Gate, key: str) -> tuple[float, float, float]:
    start = time.perf_counter()
    proposal = gate.propose(
        AGENT, "refund_order", {"order_id": "ord_1001", "amount_minor": 1, "currency": "CNY",
                                "reason": None},
    )  # fmt: skip
    decided = time.perf_counter()
    token = gate.decide(
        APPROVER, proposal.proposal_id, Decision(DecisionKind.APPROVE, 1), idempotency_key=key
    ).confirmation_token
    assert token is not None
    executing = time.perf_counter()
    result = gate.execute(AGENT, proposal.proposal_id, token)
    end = time.perf_counter()
    assert result.receipt is not None
    return (end - start) * 1e3, (executing - decided) * 1e3, (end - executing) * 1e3


def _single_operations(keys: KeySet) -> None:
    claims = ConfirmationClaims(
        iss="bench", aud="signoff", sub="u_42", act="agent:bench", tenant="acme", jti="tok_1",
        tool="refund_order", tool_version="1", resource="order:ord_1001", args_digest="a" * 64,
        policy_version="1", request_key="refund_order:acme:order:ord_1001:act_1", iat=0,
        exp=2**40,
    )  # fmt: skip
    token = sign_confirmation(keys.active_key, claims)
    public = PublicKeys(keys.public_jwks())
    checkpoint = Checkpoint("signoff/acme", 1000, bytes(32))
    print("single operations (µs, median of 500):")
    for label, call in (
        ("sign a confirmation token (EdDSA)", lambda: sign_confirmation(keys.active_key, claims)),
        ("verify a confirmation token", lambda: verify_confirmation(
            token, public, audience="signoff", now=1)),
        ("sign a checkpoint note", lambda: sign_checkpoint(
            keys.note_key(), checkpoint, timestamp=1)),
    ):  # fmt: skip
        print(f"  {label:<36} {_micros(call):>8.1f}")
    print(f"  signed token length: {len(token)} characters (opaque: 47)")


def _micros(call: Callable[[], object]) -> float:
    times = []
    for _ in range(500):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


if __name__ == "__main__":
    main()

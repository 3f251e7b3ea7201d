"""Full flows over HTTP per second, against the same server's no-op `GET /v1/whoami`.

A full flow is four requests: propose (the agent), approve (the approver), pick up
the confirmation token (the agent: a person never receives it) and execute (the
agent). The target (issue 13): one flow costs at most 5× one no-op request.

    .venv/bin/python benchmarks/bench_http.py [--flows 200] [--noops 1000] [--db DIR]

It starts `signoff serve --demo` (one worker, SQLite with synchronous=FULL,
the demo shop in its own file) on a free port and drives it sequentially over
one keep-alive connection per caller, so each figure is a latency.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from signoff.http import Settings, mint_dev_token

ORDERS = [f"ord_{n}" for n in range(1001, 1101)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flows", type=int, default=200)
    parser.add_argument("--noops", type=int, default=1000)
    parser.add_argument("--db", type=Path, default=None, help="directory for the database files")
    parser.add_argument("--concurrency", type=int, default=8, help="clients in the throughput run")
    args = parser.parse_args()
    workdir = args.db or Path(tempfile.mkdtemp(prefix="signoff-bench-"))
    port = _free_port()
    server = _start(workdir / "bench.db", port)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_ready(base, server)
        _run(base, args.flows, args.noops)
        _run_concurrent(base, args.flows, args.noops, args.concurrency)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(20)
    _gate_alone(workdir, args.flows)


def _run(base: str, flows: int, noops: int) -> None:
    agent, approver = _tokens()
    with (
        httpx.Client(base_url=base, timeout=30) as agent_http,
        httpx.Client(base_url=base, timeout=30) as approver_http,
    ):
        agent_http.headers["Authorization"] = f"Bearer {agent}"
        approver_http.headers["Authorization"] = f"Bearer {approver}"
        for _ in range(50):  # warm up both paths
            agent_http.get("/v1/whoami").raise_for_status()
        _flow(agent_http, approver_http, 0)
        noop = _time_noops(agent_http, noops)
        flow = _time_flows(agent_http, approver_http, flows)
        noop_after = _time_noops(agent_http, noops)
    noop_mean = statistics.fmean([noop, noop_after])
    ratio = flow / noop_mean
    print(f"GET /v1/whoami   : {1 / noop_mean:8.1f} req/s   {noop_mean * 1e3:7.3f} ms/request")
    print(f"full flow (4 req): {1 / flow:8.1f} flows/s {flow * 1e3:7.3f} ms/flow")
    print(
        f"flow / no-op     : {ratio:8.2f}x   (target <= 5.00x: {'met' if ratio <= 5 else 'MISSED'})"
    )


def _run_concurrent(base: str, flows: int, noops: int, clients: int) -> None:
    """Throughput: ``clients`` callers at once, whoami/s and flows/s."""
    agent, approver = _tokens()

    def noop_worker(n: int) -> None:
        with httpx.Client(base_url=base, timeout=30) as http:
            http.headers["Authorization"] = f"Bearer {agent}"
            _time_noops(http, n)

    def flow_worker(client: int, n: int) -> None:
        # Each client refunds its own orders: two open proposals on one order would
        # rightly end in state_changed for the second.
        orders = ORDERS[client::clients]
        with (
            httpx.Client(base_url=base, timeout=30) as a,
            httpx.Client(base_url=base, timeout=30) as b,
        ):
            a.headers["Authorization"] = f"Bearer {agent}"
            b.headers["Authorization"] = f"Bearer {approver}"
            for i in range(n):
                _flow(a, b, i, orders[i % len(orders)])

    per = max(1, noops // clients)
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(noop_worker, [per] * clients))
    noop_rate = per * clients / (time.perf_counter() - started)
    per_flows = max(1, flows // clients)
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(flow_worker, range(clients), [per_flows] * clients))
    flow_rate = per_flows * clients / (time.perf_counter() - started)
    print(
        f"{clients} clients at once: {noop_rate:8.1f} whoami/s  {flow_rate:7.1f} flows/s  "
        f"ratio {noop_rate / flow_rate:5.2f}x"
    )


def _gate_alone(workdir: Path, flows: int) -> None:
    """The protocol's own work per flow, in-process on the same kind of store (no HTTP)."""
    from signoff import Decision, DecisionKind, Gate, Principal, SQLiteStore
    from signoff.demo import DemoShop, demo_catalog, seed_demo_orders

    store = SQLiteStore(workdir / "gate-alone.db")
    store.migrate()
    shop = DemoShop(str(workdir / "gate-alone.shop.sqlite"))
    seed_demo_orders(shop)
    gate = Gate(demo_catalog(shop), store, token_key=b"b" * 32)
    agent = Principal("u_42", "acme", actor="agent:support-bot")
    approver = Principal("alice", "acme", roles=frozenset({"refund_approver"}))
    started = time.perf_counter()
    for n in range(flows):
        arguments = {
            "order_id": ORDERS[n % len(ORDERS)],
            "amount_minor": 1,
            "currency": "CNY",
            "reason": None,
        }
        proposal = gate.propose(agent, "refund_order", arguments)
        decision = Decision(DecisionKind.APPROVE, proposal.version)
        token = gate.decide(approver, proposal.proposal_id, decision, idempotency_key=f"a{n}")
        assert token.confirmation_token is not None
        gate.execute(agent, proposal.proposal_id, token.confirmation_token, idempotency_key=f"e{n}")
    per_flow = (time.perf_counter() - started) / flows
    print(f"gate alone        : {per_flow * 1e3:7.3f} ms/flow (propose+decide+execute, no HTTP)")
    store.close()
    shop.close()


def _time_noops(http: httpx.Client, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        http.get("/v1/whoami").raise_for_status()
    return (time.perf_counter() - started) / count


def _time_flows(agent: httpx.Client, approver: httpx.Client, count: int) -> float:
    started = time.perf_counter()
    for n in range(1, count + 1):
        _flow(agent, approver, n)
    return (time.perf_counter() - started) / count


def _flow(agent: httpx.Client, approver: httpx.Client, n: int, order: str | None = None) -> None:
    arguments = {
        "order_id": order or ORDERS[n % len(ORDERS)],
        "amount_minor": 1,
        "currency": "CNY",
        "reason": None,
    }
    proposal = agent.post("/v1/proposals", json={"tool": "refund_order", "arguments": arguments})
    proposal.raise_for_status()
    view = proposal.json()
    decision = approver.post(
        f"/v1/proposals/{view['proposal_id']}/decision",
        json={"decision": "approve", "expected_version": view["version"]},
        headers={"Idempotency-Key": f"approve-{view['proposal_id']}"},
    )
    decision.raise_for_status()
    # A person never receives the token (PROTOCOL rule 12): the agent picks it up.
    token = agent.get(f"/v1/proposals/{view['proposal_id']}/confirmation-token")
    token.raise_for_status()
    executed = agent.post(
        "/v1/executions",
        json={
            "proposal_id": view["proposal_id"],
            "confirmation_token": token.json()["confirmation_token"],
        },
        headers={"Idempotency-Key": f"execute-{view['proposal_id']}"},
    )
    executed.raise_for_status()
    assert executed.json()["execution"]["status"] == "succeeded"


def _tokens() -> tuple[str, str]:
    settings = Settings(demo=True)
    now = __import__("datetime").datetime.now(__import__("datetime").UTC)
    agent = mint_dev_token(
        settings, subject="u_42", tenant="acme", actor="agent:support-bot", now=now
    )
    approver = mint_dev_token(
        settings, subject="alice", tenant="acme", roles=["refund_approver"], now=now
    )
    return agent, approver


def _start(db: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNOFF_")}
    command = [sys.executable, "-m", "signoff", "serve", "--demo", "--db", str(db)]
    command += ["--port", str(port), "--log-level", "warning"]
    return subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)


def _wait_ready(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("signoff serve exited")
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit("signoff serve did not become ready")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


if __name__ == "__main__":
    main()

"""The same refund as a LangGraph human-in-the-loop graph, beside signoff, in one run.

    pip install -e '.[bench]'
    .venv/bin/python benchmarks/peer_langgraph.py [--flows 600] [--repeat 3]
        [--postgres postgresql://postgres@127.0.0.1:5432/test] [--workers 1 8]

The peer: a `StateGraph` whose first node reads the order (its version), whose
second calls `interrupt()` with what a person would confirm, and whose third,
after `Command(resume="approve")`, runs the demo shop's conditional
`UPDATE orders … WHERE version = ? AND refunded + ? <= payable` in a commit of
its own. Checkpointed by `SqliteSaver` on a file in WAL mode with
`synchronous=FULL` (the shop's file too), or by `PostgresSaver` in a schema of
its own (dropped afterwards). Each flow is one thread: invoke → interrupt →
resume → done.

signoff: `signoff bench`'s flows (propose → approve → execute with the demo
refund provider, the role directory in the store) on the same kind of store,
the same setting. Both sides run in W worker processes (SQLite: 1 only, as
`SqliteSaver` is one connection), interleaved, `--repeat` times; the medians
and the ratio signoff ÷ LangGraph are printed with the load average.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import secrets
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

from signoff.bench import run_bench
from signoff.bench._target import FLOW_AMOUNT, OWNER, TENANT, flow_order
from signoff.demo import DemoShop
from signoff.demo._provider import REFUND_UPDATE

DEFAULT_POSTGRES = os.environ.get(
    "SIGNOFF_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


class Refund(TypedDict):
    order_id: str
    amount_minor: int
    version: int | None
    outcome: str | None


def build_graph(shop: DemoShop, checkpointer: Any) -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def read(state: Refund) -> dict[str, Any]:
        order = shop.order(TENANT, state["order_id"])
        assert order is not None and order.refunded + state["amount_minor"] <= order.payable
        return {"version": order.version}

    def confirm(state: Refund) -> dict[str, Any]:
        shown = {"order_id": state["order_id"], "amount_minor": state["amount_minor"]}
        answer = interrupt({**shown, "currency": "CNY"})
        return {"outcome": "approved" if answer == "approve" else "declined"}

    def execute(state: Refund) -> dict[str, Any]:
        if state["outcome"] != "approved":
            return {}
        with shop.db.write() as conn:
            amount = state["amount_minor"]
            params = (amount, TENANT, state["order_id"], state["version"], "CNY", amount)
            changed = conn.execute(REFUND_UPDATE, params).rowcount
        return {"outcome": "refunded" if changed == 1 else "state_changed"}

    graph = StateGraph(Refund)
    graph.add_node("read", read)
    graph.add_node("confirm", confirm)
    graph.add_node("execute", execute)
    graph.add_edge(START, "read")
    graph.add_edge("read", "confirm")
    graph.add_edge("confirm", "execute")
    graph.add_edge("execute", END)
    return graph.compile(checkpointer=checkpointer)


def run_flows(graph: Any, ks: list[int]) -> None:
    from langgraph.types import Command

    for k in ks:
        config = {"configurable": {"thread_id": f"refund-{k}"}}
        start = {"order_id": flow_order(k), "amount_minor": FLOW_AMOUNT}
        first = graph.invoke({**start, "version": None, "outcome": None}, config)
        assert "__interrupt__" in first
        done = graph.invoke(Command(resume="approve"), config)
        if done["outcome"] != "refunded":
            raise RuntimeError(f"flow {k}: {done['outcome']}")


@contextmanager
def checkpointer(kind: str, where: str) -> Iterator[Any]:
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(where, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
        return
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(where) as saver:
        yield saver


def _worker(
    kind: str, saver_at: str, shop_at: str, ks: list[int], barrier: Any, results: Any
) -> None:
    shop = DemoShop(shop_at, synchronous="FULL")
    with checkpointer(kind, saver_at) as saver:
        graph = build_graph(shop, saver)
        shop.order(TENANT, flow_order(ks[0]))  # connections open before the clock starts
        barrier.wait()
        started = time.monotonic()
        run_flows(graph, ks)
        results.put((started, time.monotonic()))
    shop.close()


def langgraph_flows_per_second(
    kind: str, saver_at: str, shop_at: str, flows: int, workers: int
) -> float:
    """Seed ``flows`` orders, run them in ``workers`` processes; flows per second of wall time."""
    shop = DemoShop(shop_at, synchronous="FULL")
    with shop.db.write() as conn:
        conn.executemany(
            "INSERT INTO orders (tenant, order_id, owner, currency, payable) VALUES (?,?,?,?,?)",
            [(TENANT, flow_order(k), OWNER, "CNY", FLOW_AMOUNT) for k in range(flows)],
        )
    shop.close()
    with checkpointer(kind, saver_at) as saver:
        saver.setup()
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(workers), context.Queue()
    processes = [
        context.Process(
            target=_worker,
            args=(kind, saver_at, shop_at, list(range(w, flows, workers)), barrier, results),
        )
        for w in range(workers)
    ]
    for process in processes:
        process.start()
    spans: list[tuple[float, float]] = [results.get(timeout=3600) for _ in processes]
    for process in processes:
        process.join()
        if process.exitcode != 0:
            raise RuntimeError("a LangGraph worker failed")
    return flows / (max(end for _, end in spans) - min(start for start, _ in spans))


def sqlite_round(flows: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="signoff-peer-") as tmp:
        peer = langgraph_flows_per_second(
            "sqlite", str(Path(tmp) / "checkpoints.db"), str(Path(tmp) / "shop.db"), flows, 1
        )
    ours = run_bench(None, flows=flows, workers=1, synchronous="FULL").flows_per_second
    return peer, ours


def postgres_round(url: str, flows: int, workers: int) -> tuple[float, float]:
    import psycopg
    from psycopg import sql

    from signoff.bench._target import _with_schema
    from signoff.store._pgconn import split_schema

    schema = "signoff_peer_" + secrets.token_hex(4)
    conninfo, _ = split_schema(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        saver_at = psycopg.conninfo.make_conninfo(conninfo, options=f"-c search_path={schema}")
        peer = langgraph_flows_per_second(
            "postgresql", saver_at, _with_schema(url, schema), flows, workers
        )
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            drop = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE")
            conn.execute(drop.format(sql.Identifier(schema)))
    ours = run_bench(url, flows=flows, workers=workers).flows_per_second
    return peer, ours


def _report(label: str, rounds: list[tuple[float, float]]) -> None:
    peer = statistics.median(r[0] for r in rounds)
    ours = statistics.median(r[1] for r in rounds)
    ratios = [r[1] / r[0] for r in rounds]
    print(
        f"{label}: LangGraph {peer:.1f} flows/s ({1e3 / peer:.2f} ms), signoff {ours:.1f} flows/s "
        f"({1e3 / ours:.2f} ms); signoff ÷ LangGraph {statistics.median(ratios):.2f}× "
        f"(range {min(ratios):.2f}–{max(ratios):.2f}; target ≥ 5: "
        f"{'met' if statistics.median(ratios) >= 5 else 'not met'}); "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flows", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES, help="empty to skip PostgreSQL")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 8], help="PostgreSQL")
    options = parser.parse_args()
    _report(
        "SQLite FULL, 1 worker",
        [sqlite_round(options.flows) for _ in range(options.repeat)],
    )
    if options.postgres:
        for workers in options.workers:
            rounds = [
                postgres_round(options.postgres, options.flows, workers)
                for _ in range(options.repeat)
            ]
            _report(f"PostgreSQL, {workers} worker{'s' if workers > 1 else ''}", rounds)


if __name__ == "__main__":
    main()

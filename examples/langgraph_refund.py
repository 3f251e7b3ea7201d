"""A LangGraph workflow whose refund step waits for a person in signoff — durable, offline.

    python examples/langgraph_refund.py

The graph freezes the refund into a signoff proposal and stops at
``interrupt()`` with the proposal as payload; its checkpoint is in a SQLite
file. Resuming without a person's confirmation stops again; after a person
approves in signoff, resuming refunds once. Swap ``SqliteSaver`` for
``PostgresSaver`` and nothing else changes.
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from signoff import Decision, DecisionKind, Gate, Principal, SQLiteStore
from signoff.demo import DemoShop, RefundProvider, demo_catalog, seed_demo_orders
from signoff.integrations.langgraph import SignoffWrite

AGENT = Principal("u_42", "acme", actor="agent:refund-flow")
APPROVER = Principal("alice", "acme", roles=frozenset({"refund_approver"}))
THREAD: Any = {"configurable": {"thread_id": "refund-ord_1001"}}


class RefundState(TypedDict, total=False):
    request: dict[str, Any]
    proposal_id: str
    signoff_result: dict[str, Any]


def build(gate: Gate, checkpoints: SqliteSaver) -> Any:
    graph = StateGraph(RefundState)
    refund = SignoffWrite(gate, "refund_order", principal=AGENT, arguments=lambda s: s["request"])
    propose, confirm = refund.add_to(graph, "refund")
    graph.add_edge(START, propose)
    graph.add_edge(confirm, END)
    return graph.compile(checkpointer=checkpoints)


def main(workdir: Path) -> int:
    shop = DemoShop(str(workdir / "shop.sqlite"))
    seed_demo_orders(shop)
    provider = RefundProvider(shop)
    store = SQLiteStore(workdir / "signoff.db")
    store.migrate()
    gate = Gate(demo_catalog(shop, provider), store)
    conn = sqlite3.connect(workdir / "checkpoints.sqlite", check_same_thread=False)
    try:
        graph = build(gate, SqliteSaver(conn))
        request = {"order_id": "ord_1001", "amount_minor": 19900, "currency": "CNY", "reason": None}
        (paused,) = graph.invoke({"request": request}, THREAD)["__interrupt__"]
        proposal_id = paused.value["proposal_id"]
        print(f"interrupted: {proposal_id} {paused.value['status']} at {paused.value['confirm_url']}")

        again = graph.invoke(Command(resume="please"), THREAD)
        print(f"resumed without a person: {'still waiting' if '__interrupt__' in again else again}")

        proposal = gate.proposal(APPROVER, proposal_id)
        decision = Decision(DecisionKind.APPROVE, proposal.version)
        gate.decide(APPROVER, proposal_id, decision, idempotency_key="page-click-1")
        done = graph.invoke(Command(resume="approved"), THREAD)["signoff_result"]
        print(f"execution: {done['status']}, receipt {done['receipt']['request_key']}")
        ledger = [(e.order_id, e.amount_minor, e.currency) for e in provider.ledger("acme")]
        print(f"provider ledger: {ledger}")
        return 0 if done["status"] == "succeeded" and len(ledger) == 1 else 1
    finally:
        conn.close()
        store.close()
        shop.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as directory:
        sys.exit(main(Path(directory)))

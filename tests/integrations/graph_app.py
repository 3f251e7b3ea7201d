"""A refund graph with a signoff step, built the same way by every process of a test."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from signoff import Gate
from signoff.integrations.langgraph import SignoffWrite
from tests.conftest import AGENT, REFUND, make_world

CONFIG: Any = {"configurable": {"thread_id": "refund-1"}}


class RefundState(TypedDict, total=False):
    request: dict[str, Any]
    proposal_id: str
    signoff_result: dict[str, Any]


def build(gate: Gate, saver: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(RefundState)
    write = SignoffWrite(gate, "refund_order", principal=AGENT, arguments=lambda s: s["request"])
    propose, confirm = write.add_to(graph, "refund")
    graph.add_edge(START, propose)
    graph.add_edge(confirm, END)
    return graph.compile(checkpointer=saver)


@contextmanager
def saver(kind: str, where: str) -> Iterator[BaseCheckpointSaver[Any]]:
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(where, check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
        return
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(where) as postgres:
        postgres.setup()
        yield postgres


def first_run(workdir: Path, kind: str, where: str) -> str:
    """The process that starts the graph and stops at the interrupt; returns the proposal id."""
    world = make_world(workdir, seed=False)
    try:
        with saver(kind, where) as checkpointer:
            result = build(world.gate, checkpointer).invoke({"request": REFUND}, CONFIG)
        (paused,) = result["__interrupt__"]
        return str(paused.value["proposal_id"])
    finally:
        world.store.close()
        world.shop.close()


if __name__ == "__main__":
    print(first_run(Path(sys.argv[1]), sys.argv[2], sys.argv[3]))

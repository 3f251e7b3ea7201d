"""LangGraph: interrupt() carries the proposal; only a signoff confirmation resumes into a write.

The graph starts in one process and stops at the interrupt; that process exits.
This test process then resumes it from the checkpointer (SQLite file or
PostgreSQL) — first without a person's confirmation, then with one.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.types import Command

from signoff import ProposalStatus
from tests.conftest import AGENT, World
from tests.integrations.graph_app import CONFIG, build, saver
from tests.pg import POSTGRES_URL, require_postgres


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def checkpoints(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        yield "sqlite", str(tmp_path / "checkpoints.sqlite")
        return
    require_postgres()
    import psycopg
    from psycopg import sql

    schema = f"signoff_lg_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        yield "postgres", f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def start_in_another_process(world: World, kind: str, where: str) -> str:
    script = "tests.integrations.graph_app"
    done = subprocess.run(
        [sys.executable, "-m", script, str(world.path), kind, where],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_resume_executes_only_after_a_person_confirmed(
    world: World, checkpoints: tuple[str, str]
) -> None:
    """Unconfirmed → interrupts again, ledger empty; confirmed → one refund; again → none."""
    kind, where = checkpoints
    proposal_id = start_in_another_process(world, kind, where)
    with saver(kind, where) as checkpointer:
        graph = build(world.gate, checkpointer)
        (paused,) = graph.get_state(CONFIG).interrupts
        assert paused.value["proposal_id"] == proposal_id
        assert paused.value["status"] == "awaiting_confirmation"
        assert paused.value["confirmation_token"] is None

        again = graph.invoke(Command(resume={"approved": True}), CONFIG)
        assert "__interrupt__" in again and "signoff_result" not in again
        assert world.ledger_amounts() == []
        proposal = world.gate.proposal(AGENT, proposal_id)
        assert proposal.status is ProposalStatus.AWAITING_CONFIRMATION

        world.approve(proposal)
        done = graph.invoke(Command(resume={"approved": True}), CONFIG)
        assert done["signoff_result"]["kind"] == "execution"
        assert done["signoff_result"]["status"] == "succeeded"
        assert world.ledger_amounts() == [("ord_1001", 19900)]

        graph.invoke(Command(resume={"approved": True}), CONFIG)
        assert world.ledger_amounts() == [("ord_1001", 19900)]
        assert len(world.gate.proposals(AGENT)) == 1  # a re-run never proposes twice


def test_a_rejection_ends_the_step_without_a_write(world: World, tmp_path: Path) -> None:
    """A person declines in signoff: the resumed step answers 'declined' and writes nothing."""
    where = str(tmp_path / "checkpoints.sqlite")
    with saver("sqlite", where) as checkpointer:
        graph = build(world.gate, checkpointer)
        paused = graph.invoke(
            {
                "request": {
                    "order_id": "ord_1001",
                    "amount_minor": 100,
                    "currency": "CNY",
                    "reason": None,
                }
            },
            CONFIG,
        )
        (interrupt,) = paused["__interrupt__"]
        world.reject(world.gate.proposal(AGENT, interrupt.value["proposal_id"]))
        done = graph.invoke(Command(resume="decided"), CONFIG)
    assert done["signoff_result"]["status"] == "declined"
    assert world.ledger_amounts() == []


def test_bad_arguments_never_interrupt(world: World, tmp_path: Path) -> None:
    """A boolean amount is refused at the propose step: no proposal, no interrupt."""
    with saver("sqlite", str(tmp_path / "c.sqlite")) as checkpointer:
        graph = build(world.gate, checkpointer)
        bad = {"order_id": "ord_1001", "amount_minor": True, "currency": "CNY", "reason": None}
        done = graph.invoke({"request": bad}, CONFIG)
    assert "__interrupt__" not in done
    assert done["signoff_result"]["code"] == "invalid_arguments"
    assert world.gate.proposals(AGENT) == []

"""Per-flow reads stay flat as the log and the queue grow: no statement walks a tenant's log
or every awaiting proposal (SQLite's own query plans; benchmarks/bench_scale.py has the times).

Each check below failed before its fix: the checkpoint's replay check walked (tenant, seq)
over every earlier event, a receipt's events by (tenant, proposal) walked the tenant's key
range, a device-approved receipt read the whole log for passkey enrolments, and the inbox's
first page sorted every awaiting proposal (proposals_by_expiry over all tenants).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from signoff import Decision, DecisionKind, Gate
from signoff.audit._chain import AuditEvent
from signoff.gate._proof import GateProof
from signoff.gate._propose import created_event
from signoff.gate._signed_receipt import _enrolments, signed_receipt
from signoff.proof import KeySet
from signoff.store import _sqlbase
from signoff.store._sql import audit_entry
from tests.conftest import AGENT, APPROVER, ISSUER, REFUND, TOKEN_KEY, World, make_world

# A plan row that reads a tenant's whole log or the whole awaiting queue.
WALKS = (
    re.compile(r"SCAN (audit_events|proposals|proposal_assignees)\b"),
    re.compile(
        r"audit_events USING (COVERING )?INDEX sqlite_autoindex_audit_events_1 \(tenant=\?\)$"
    ),
    re.compile(r"audit_events USING (COVERING )?INDEX \S+ \(tenant=\? AND seq<\?\)$"),
    re.compile(r"proposals_by_expiry"),
)


@pytest.fixture
def signing_world(tmp_path: Path) -> Iterator[World]:
    world = make_world(tmp_path)
    world.gate = Gate(
        world.gate.catalog,
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        proof=GateProof(KeySet.generate(), issuer=ISSUER),
    )
    yield world
    world.store.close()
    world.shop.close()


@contextmanager
def _statements() -> Iterator[list[tuple[str, tuple[Any, ...]]]]:
    """Every SELECT the store runs inside the block, with its parameters."""
    seen: list[tuple[str, tuple[Any, ...]]] = []
    original = _sqlbase.SqlBase.run

    def run(self: _sqlbase.SqlBase, statement: str, params: Any = ()) -> Any:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, tuple(params)))
        return original(self, statement, params)

    _sqlbase.SqlBase.run = run  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        _sqlbase.SqlBase.run = original  # type: ignore[method-assign]


def _walks(world: World, call: Callable[[], object]) -> list[str]:
    """The plan rows of ``call``'s statements that walk a log or the queue."""
    with _statements() as seen:
        call()
    assert seen, "the call ran no statement"
    found = []
    with world.store.read() as tx:
        for statement, params in seen:
            for row in tx.run(f"EXPLAIN QUERY PLAN {statement}", params).fetchall():
                detail = str(row[-1])
                if any(walk.search(detail) for walk in WALKS):
                    found.append(f"{detail}  <-  {statement[:90]}")
    return found


def _grown(world: World) -> tuple[str, str]:
    """A log of a few hundred events, forty awaiting proposals, one executed flow."""
    with world.store.transaction() as tx:
        for n in range(300):
            tx.append(audit_entry(tenant="acme", at=1, kind="bench.filler", data={"n": n}))
    model = world.propose()
    with world.store.transaction() as tx:
        for n in range(40):
            copy = dataclasses.replace(
                model,
                proposal_id=f"prop_seed{n}",
                action_id=f"act_seed{n}",
                request_key=f"refund_order:acme:act_seed{n}",
                expires_at=model.expires_at + timedelta(seconds=n),
            )
            tx.record_proposal(copy, created_event(AGENT, copy, 1))
    proposal = world.gate.propose(AGENT, "refund_order", {**REFUND, "amount_minor": 100})
    token = world.gate.decide(
        APPROVER, proposal.proposal_id, Decision(DecisionKind.APPROVE, 1), idempotency_key="k"
    ).confirmation_token
    assert token is not None
    result = world.gate.execute(AGENT, proposal.proposal_id, token)
    assert result.signed_receipt is not None
    return proposal.proposal_id, result.execution.execution_id


def test_a_checkpoint_reads_only_the_new_events(signing_world: World) -> None:
    """Checkpointing one new event: its replay check uses the (tenant, mac) index."""
    _grown(signing_world)
    with signing_world.store.transaction() as tx:
        tx.append(audit_entry(tenant="acme", at=2, kind="bench.filler", data={"n": -1}))
    assert _walks(signing_world, signing_world.gate.checkpoint_now) == []
    assert signing_world.gate.verify_audit().ok


def test_a_signed_receipt_reads_only_its_proposal(signing_world: World) -> None:
    """The receipt's events come from the (proposal, tenant, seq) index."""
    proposal_id, execution_id = _grown(signing_world)
    ctx = signing_world.gate._ctx
    receipt = _walks(signing_world, lambda: signed_receipt(ctx, "acme", proposal_id, execution_id))
    assert receipt == []


def test_a_device_approved_receipt_finds_enrolments_by_index(signing_world: World) -> None:
    """The passkey enrolments a device approval cites: the partial index, not the log."""
    proposal_id, _ = _grown(signing_world)
    with signing_world.store.transaction() as tx:
        tx.append_audit(
            tenant="acme", at=3, kind="passkey.registered", actor="alice",
            data={"credential_id": "c1", "public_key": {}},
        )  # fmt: skip
    device = AuditEvent("acme", 0, 0, "decision.approved", proposal_id, None, "alice",
                        '{"device":{"credential_id":"c1"}}', "", "", None)  # fmt: skip
    found: list[AuditEvent] = []

    def lookup() -> None:
        with signing_world.store.read() as tx:
            found.extend(_enrolments(tx, "acme", [device], tx.audit_head_seq("acme")))

    assert _walks(signing_world, lookup) == []
    assert [(e.kind, e.actor) for e in found] == [("passkey.registered", "alice")]


def test_the_inbox_first_page_reads_a_page(signing_world: World) -> None:
    """Each branch (a role, the requester's own) is read in deadline order and cut."""
    _grown(signing_world)
    page = signing_world.gate.inbox(APPROVER, limit=10)
    assert _walks(signing_world, lambda: signing_world.gate.inbox(APPROVER, limit=10)) == []
    assert len(page) == 10
    deadlines = [(p.expires_at, p.proposal_id) for p in page]
    assert deadlines == sorted(deadlines)
    rest = signing_world.gate.inbox(APPROVER, after=deadlines[-1], limit=100)
    everything = signing_world.gate.inbox(APPROVER, limit=100)
    assert [p.proposal_id for p in page + rest] == [p.proposal_id for p in everything]
    assert len(everything) == 41  # forty copies and the first proposal, all awaiting alice

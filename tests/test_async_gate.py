"""AsyncGate: the Gate's methods awaited, on the same code path, in a bounded pool."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading

import pytest

from signoff import AsyncGate, Decision, DecisionKind, Gate, ProposalStatus
from signoff.exceptions import AlreadyConsumed, NotFound
from tests.conftest import AGENT, APPROVER, OTHER_TENANT, REFUND, World

_where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="unset")


def test_every_public_gate_method_has_an_awaitable_twin() -> None:
    """Nothing a sync caller can do is missing for an async caller, with the same parameters."""
    for name, member in inspect.getmembers(Gate, inspect.isfunction):
        if name.startswith("_"):
            continue
        twin = getattr(AsyncGate, name)
        assert inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin).parameters.keys() == (
            inspect.signature(member).parameters.keys()
        ), name


def test_a_full_flow_refunds_once_and_writes_the_same_audit(world: World) -> None:
    """propose → decide → execute awaited: one ledger entry, the chain of the sync gate."""

    async def flow() -> tuple[str, str]:
        async with AsyncGate(world.gate, max_threads=2) as gate:
            proposal = await gate.propose(AGENT, "refund_order", REFUND)
            decided = await gate.decide(
                APPROVER,
                proposal.proposal_id,
                Decision(DecisionKind.APPROVE, proposal.version),
                idempotency_key="a1",
            )
            assert decided.confirmation_token is not None
            token = decided.confirmation_token
            result = await gate.execute(AGENT, proposal.proposal_id, token)
            with pytest.raises(AlreadyConsumed):
                await gate.execute(AGENT, proposal.proposal_id, token)
            assert (await gate.proposal(AGENT, proposal.proposal_id)).status is (
                ProposalStatus.SUCCEEDED
            )
            return proposal.proposal_id, result.execution.execution_id

    proposal_id, _ = asyncio.run(flow())
    assert world.ledger_amounts() == [("ord_1001", 19900)]
    kinds = [e.kind for e in world.gate.audit_events(AGENT, proposal_id=proposal_id)]
    assert kinds[:3] == ["proposal.created", "decision.approved", "token.issued"]
    assert "execution.succeeded" in kinds
    assert world.gate.verify_audit().ok


def test_refusals_arrive_as_the_same_typed_exceptions(world: World) -> None:
    """Another tenant's id is NotFound, awaited as when called directly."""
    proposal = world.propose()

    async def peek() -> None:
        async with AsyncGate(world.gate) as gate:
            await gate.proposal(OTHER_TENANT, proposal.proposal_id)

    with pytest.raises(NotFound):
        asyncio.run(peek())


def test_no_more_calls_run_at_once_than_max_threads(world: World) -> None:
    """Six concurrent calls on a pool of two never have more than two in flight."""
    running, peak, lock = 0, 0, threading.Lock()
    release = threading.Event()

    def slow_read() -> str:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        release.wait(timeout=10)
        with lock:
            running -= 1
        return _where.get()

    async def crowd() -> list[str]:
        async with AsyncGate(world.gate, max_threads=2) as gate:
            _where.set("caller")
            calls = [asyncio.ensure_future(gate.run_sync(slow_read)) for _ in range(6)]
            while True:
                await asyncio.sleep(0.01)
                with lock:
                    if running == 2:
                        break
            release.set()
            return list(await asyncio.gather(*calls))

    seen = asyncio.run(crowd())
    assert peak == 2
    assert seen == ["caller"] * 6  # the caller's context variables travel to the thread


def test_max_threads_must_be_positive(world: World) -> None:
    with pytest.raises(ValueError, match="max_threads"):
        AsyncGate(world.gate, max_threads=0)

"""The elicitation-complete watcher: decided, expired, gone, and a broken session."""

from __future__ import annotations

from datetime import timedelta

import anyio

from signoff import AsyncGate
from signoff.mcp_server._completion import CompletionWatcher
from tests.conftest import AGENT, OTHER_TENANT, World


class Session:
    def __init__(self, *, broken: bool = False) -> None:
        self.sent: list[str] = []
        self.broken = broken

    async def send_elicit_complete(self, elicitation_id: str) -> None:
        if self.broken:
            raise RuntimeError("transport gone")
        self.sent.append(elicitation_id)


def test_only_ended_elicitations_are_completed_and_a_broken_session_is_survived(
    world: World,
) -> None:
    """Awaiting: nothing; approved or expired: one notification each; errors are contained."""
    decided, waiting = world.propose(), world.propose(order_id="ord_1002")
    gate = AsyncGate(world.gate, max_threads=1)
    watcher = CompletionWatcher(gate)
    ok, broken, stranger = Session(), Session(broken=True), Session()

    async def body() -> list[int]:
        watcher.watch(broken, AGENT, decided.proposal_id)
        watcher.watch(ok, AGENT, decided.proposal_id)
        watcher.watch(ok, AGENT, waiting.proposal_id)
        watcher.watch(stranger, OTHER_TENANT, waiting.proposal_id)  # not in its tenant: dropped
        counts = [await watcher.check()]
        world.approve(decided)
        counts.append(await watcher.check())
        world.clock.advance(timedelta(days=30))
        counts.append(await watcher.check())
        return counts

    try:
        counts = anyio.run(body)
    finally:
        gate.close()
    assert counts == [0, 1, 1]
    assert ok.sent == [decided.proposal_id, waiting.proposal_id]
    assert stranger.sent == [] and broken.sent == []
    assert watcher.pending == 0

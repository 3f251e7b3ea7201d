"""After a decision on the page the agent's MCP client receives elicitation/complete."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import ElicitCompleteNotification

from signoff import ProposalStatus
from tests.conftest import AGENT, REFUND, World
from tests.mcp.conftest import Person, approve, call

REFUND_REQUEST = "request_refund_order_confirmation"


class Notifications:
    def __init__(self) -> None:
        self.completed: list[str] = []
        self.arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, ElicitCompleteNotification):
            self.completed.append(root.params.elicitation_id)
            self.arrived.set()


def test_a_page_approval_completes_the_url_elicitation(world: World, server: MCPServer) -> None:
    """A real client (2025-11-25) opens the page; alice approves there; the client is told."""
    notes = Notifications()

    async def body() -> tuple[dict[str, Any], dict[str, Any]]:
        person = Person(url="accept")
        async with Client(
            server, elicitation_callback=person, mode="legacy", message_handler=notes
        ) as c:
            requested = await call(c, REFUND_REQUEST, REFUND)
            assert requested["status"] == "awaiting_confirmation"
            await anyio.sleep(0.7)
            assert notes.completed == []  # nothing decided yet: no notification
            await anyio.to_thread.run_sync(approve, world, requested["proposal_id"])
            with anyio.fail_after(10):
                await notes.arrived.wait()
            status = await call(c, "get_proposal_status", {"proposal_id": requested["proposal_id"]})
            return requested, status

    requested, status = anyio.run(body)
    assert notes.completed == [requested["proposal_id"]]
    assert status["status"] == "confirmed" and status["confirmation_token"]
    assert world.gate.proposal(AGENT, requested["proposal_id"]).status is ProposalStatus.CONFIRMED

"""request → approve → execute → receipt through the real MCP client, with the ledger asserted."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

from signoff import Principal
from signoff.mcp_server import StaticIdentity, create_mcp_server
from tests.conftest import AGENT, REFUND, World
from tests.mcp.conftest import PUBLIC_URL, approve, call, client

REQUEST = "request_refund_order_confirmation"
EXECUTE = "execute_confirmed_refund_order"


async def _confirmed(world: World, c: Any) -> tuple[str, str]:
    answer = await call(c, REQUEST, REFUND)
    assert answer["status"] == "awaiting_confirmation"
    approve(world, answer["proposal_id"])
    status = await call(c, "get_proposal_status", {"proposal_id": answer["proposal_id"]})
    assert status["status"] == "confirmed"
    return answer["proposal_id"], status["confirmation_token"]


def test_request_approve_execute_gives_a_receipt_and_one_refund(
    world: World, server: MCPServer
) -> None:
    """The whole flow in memory: one refund in the ledger, the receipt names the approver."""

    async def body() -> dict[str, Any]:
        async with client(server) as c:
            proposal_id, token = await _confirmed(world, c)
            arguments = {"proposal_id": proposal_id, "confirmation_token": token}
            return await call(c, EXECUTE, arguments)

    answer = anyio.run(body)
    assert (answer["kind"], answer["status"]) == ("execution", "succeeded")
    assert answer["receipt"]["approvers"] == ["alice"]
    assert answer["receipt"]["provider_reference"] == world.provider.ledger("acme")[0].reference
    assert world.ledger_amounts() == [("ord_1001", 19900)]
    assert world.refunded() == 19900


def test_a_client_without_elicitation_just_gets_the_proposal(
    world: World, server: MCPServer
) -> None:
    """No elicitation capability: awaiting_confirmation with the page URL, nothing decided."""

    async def body() -> dict[str, Any]:
        async with client(server) as c:
            return await call(c, REQUEST, REFUND)

    answer = anyio.run(body)
    assert answer["status"] == "awaiting_confirmation"
    assert answer["confirmation"] is None
    assert answer["confirm_url"] == f"{PUBLIC_URL}/ui/proposals/{answer['proposal_id']}"
    assert world.gate.proposal(AGENT, answer["proposal_id"]).approvals == ()


def test_replayed_execute_is_refused_even_from_a_new_session(
    world: World, server: MCPServer
) -> None:
    """A new session reuses the same JSON-RPC ids; the retry is still refused, one refund."""

    async def body() -> tuple[dict[str, Any], dict[str, Any]]:
        async with client(server) as c:
            proposal_id, token = await _confirmed(world, c)
            arguments = {"proposal_id": proposal_id, "confirmation_token": token}
            first = await call(c, EXECUTE, arguments)
        async with client(server) as fresh:
            again = await call(fresh, EXECUTE, arguments)
        return first, again

    first, again = anyio.run(body)
    assert first["status"] == "succeeded"
    assert (again["kind"], again["code"]) == ("refusal", "already_consumed")
    assert again["details"]["receipt"] == first["receipt"]
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_refusals_are_error_results_with_structured_content(server: MCPServer) -> None:
    """Unknown fields: isError with code invalid_arguments; ambiguity: a clarification."""

    async def body() -> tuple[dict[str, Any], dict[str, Any]]:
        async with client(server) as c:
            refused = await call(c, REQUEST, {**REFUND, "amount_minor": True, "extra": 1})
            unclear = await call(c, REQUEST, {**REFUND, "currency": None})
            return refused, unclear

    refused, unclear = anyio.run(body)
    assert (refused["code"], refused["action"]) == ("invalid_arguments", "fix_arguments")
    assert (unclear["kind"], unclear["field"]) == ("clarification", "currency")


def test_the_agent_identity_comes_from_the_session_not_the_arguments(world: World) -> None:
    """The proposal's requester is the configured agent acting for the configured person."""
    identity = StaticIdentity(Principal("u_42", "acme", actor="agent:desk"))
    server = create_mcp_server(world.gate, identity)

    async def body() -> dict[str, Any]:
        async with client(server) as c:
            return await call(c, REQUEST, REFUND)

    answer = anyio.run(body)
    proposal = world.gate.proposal(AGENT, answer["proposal_id"])
    assert (proposal.requester_subject, proposal.requester_actor) == ("u_42", "agent:desk")

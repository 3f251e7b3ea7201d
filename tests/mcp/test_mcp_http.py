"""Streamable HTTP at /mcp inside `signoff serve`: a real server on a port, bearer JWT identity."""

from __future__ import annotations

import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from signoff import Principal
from signoff.http import DemoObjects, Settings, create_app
from signoff.http._extras import default_extras
from signoff.mcp_server import include_mcp
from tests.conftest import AGENT, REFUND, World
from tests.http.conftest import token_for
from tests.mcp.conftest import NOTE, Person, approve, call

SETTINGS = Settings(demo=True)


@pytest.fixture
def base_url(world: World) -> Iterator[str]:
    """`create_app` with the MCP extension, served by uvicorn on a free loopback port."""
    app = create_app(
        SETTINGS,
        gate=world.gate,
        demo=DemoObjects(world.shop, world.provider),
        extras=[include_mcp],
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", ws="none", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the server did not start")
        threading.Event().wait(0.01)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@asynccontextmanager
async def _client(
    url: str, principal: Principal, person: Person | None = None
) -> AsyncIterator[Client]:
    """An MCP client whose HTTP requests carry the principal's JWT (closed afterwards)."""
    headers = {"Authorization": f"Bearer {token_for(principal)}"}
    async with create_mcp_http_client(headers=headers) as http:
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with Client(transport, elicitation_callback=person) as client:
            yield client


def test_an_agent_with_a_jwt_requests_and_executes_over_http(world: World, base_url: str) -> None:
    """The requester is the JWT's sub and act; approve, pick up the token, execute, one refund."""

    async def body() -> dict[str, Any]:
        async with _client(base_url, AGENT) as c:
            assert len((await c.list_tools()).tools) == 8
            requested = await call(c, "request_refund_order_confirmation", REFUND)
            proposal = world.gate.proposal(AGENT, requested["proposal_id"])
            assert (proposal.requester_subject, proposal.requester_actor) == (
                "u_42",
                "agent:support-bot",
            )
            approve(world, requested["proposal_id"])
            status = await call(c, "get_proposal_status", {"proposal_id": proposal.proposal_id})
            arguments = {
                "proposal_id": proposal.proposal_id,
                "confirmation_token": status["confirmation_token"],
            }
            return await call(c, "execute_confirmed_refund_order", arguments)

    executed = anyio.run(body)
    assert executed["status"] == "succeeded"
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_over_http_even_in_band_tools_go_to_the_page(world: World, base_url: str) -> None:
    """The bearer names an agent; no person is in band, so an auto-accepting client gets a URL."""
    person = Person("accept", "accept")

    async def body() -> dict[str, Any]:
        async with _client(base_url, AGENT, person) as c:
            return await call(c, "request_add_order_note_confirmation", NOTE)

    answer = anyio.run(body)
    assert person.modes == ["url"]
    assert answer["status"] == "awaiting_confirmation"
    assert world.gate.proposal(AGENT, answer["proposal_id"]).approvals == ()


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-jwt", "Basic dTpw"])
def test_without_a_valid_bearer_the_endpoint_answers_401(
    world: World, base_url: str, authorization: str | None
) -> None:
    """No token, a bad token or another scheme: 401 before any tool runs."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with httpx2.Client() as http:
        response = http.post(f"{base_url}/mcp", json=body, headers=headers)
    assert response.status_code == 401
    assert world.gate.proposals(AGENT) == []


def test_signoff_serve_mounts_mcp_through_the_extension_point() -> None:
    """EXTRAS names include_mcp, so `signoff serve` serves /mcp."""
    assert include_mcp in default_extras()

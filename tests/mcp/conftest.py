"""The MCP server over the shared `world`, a real `mcp` client, and a scripted person."""

from __future__ import annotations

from typing import Any, Literal

import jsonschema
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ElicitRequestFormParams, ElicitRequestParams, ElicitResult

from signoff import Decision, DecisionKind, Principal
from signoff.mcp_server import StaticIdentity, create_mcp_server
from tests.conftest import AGENT, APPROVER, World

PUBLIC_URL = "https://signoff.example"
HUMAN = Principal("u_42", "acme")
IDENTITY = StaticIdentity(AGENT, HUMAN)
NOTE = {"order_id": "ord_1001", "note": "Leave the parcel with the neighbour."}
Mode = Literal["auto", "legacy"]


@pytest.fixture
def server(world: World) -> MCPServer:
    return create_mcp_server(world.gate, IDENTITY, public_url=PUBLIC_URL)


class Person:
    """The human at the MCP client: answers each elicitation as told and remembers it."""

    def __init__(
        self,
        form: Literal["accept", "decline", "cancel"] = "accept",
        url: Literal["accept", "decline", "cancel"] = "accept",
        *,
        confirm: bool = True,
        content: dict[str, Any] | None = None,
    ) -> None:
        self.form, self.url, self.confirm, self.content = form, url, confirm, content
        self.seen: list[ElicitRequestParams] = []

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        self.seen.append(params)
        if not isinstance(params, ElicitRequestFormParams):
            return ElicitResult(action=self.url, content=self.content)
        if self.form != "accept":
            return ElicitResult(action=self.form)
        shown = params.requested_schema["properties"]
        content = {
            "confirm": self.confirm,
            "proposal_id": shown["proposal_id"]["enum"][0],
            "args_digest": shown["args_digest"]["enum"][0],
        }
        return ElicitResult(action="accept", content={**content, **(self.content or {})})

    @property
    def modes(self) -> list[str]:
        return [params.mode for params in self.seen]


def client(server: MCPServer, person: Person | None = None, *, mode: Mode = "auto") -> Client:
    return Client(server, elicitation_callback=person, mode=mode)


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool; every answer is structured and matches the tool's outputSchema."""
    result: CallToolResult = await client.call_tool(name, arguments)
    assert result.structured_content is not None
    tool = next(t for t in (await client.list_tools()).tools if t.name == name)
    assert tool.output_schema is not None
    jsonschema.Draft202012Validator(tool.output_schema).validate(result.structured_content)
    content: dict[str, Any] = result.structured_content
    assert result.is_error == (content["kind"] == "refusal")
    return content


def approve(world: World, proposal_id: str, *, by: Principal = APPROVER) -> None:
    """An entitled person approves, as the confirmation page does (Gate.decide)."""
    proposal = world.gate.proposal(by, proposal_id)
    world.gate.decide(
        by,
        proposal_id,
        Decision(DecisionKind.APPROVE, proposal.version),
        idempotency_key=f"page-{proposal_id}",
    )

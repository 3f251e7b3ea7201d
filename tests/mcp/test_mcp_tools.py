"""tools/list through the real MCP client: schemas, structured output and honest annotations."""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types import Tool

from signoff.agents import REQUEST_DESCRIPTION_PREFIX, agent_tools
from signoff.mcp_server import tool_definitions
from tests.conftest import World
from tests.mcp.conftest import client

NAMES = [
    "request_refund_order_confirmation",
    "execute_confirmed_refund_order",
    "request_add_order_note_confirmation",
    "execute_confirmed_add_order_note",
    "request_suspend_account_confirmation",
    "execute_confirmed_suspend_account",
    "get_proposal_status",
    "get_mandate_status",
]


def _tools(server: MCPServer) -> dict[str, Tool]:
    async def listed() -> list[Tool]:
        async with client(server) as c:
            return (await c.list_tools()).tools

    return {tool.name: tool for tool in anyio.run(listed)}


def test_the_client_lists_request_execute_and_status_tools(server: MCPServer) -> None:
    """Per write tool a request and an execute tool, then get_proposal_status."""
    assert list(_tools(server)) == NAMES


def test_every_tool_has_input_and_output_schemas(world: World, server: MCPServer) -> None:
    """inputSchema is the catalog's strict schema; outputSchema is an object of known kinds."""
    tools = _tools(server)
    schema = tools[NAMES[0]].input_schema
    own = world.gate.catalog.schema("refund_order")
    reserved = {"signoff_mandate_id", "signoff_supersedes"}
    assert set(schema["properties"]) == set(own["properties"]) | reserved
    assert all(schema["properties"][k] == v for k, v in own["properties"].items())
    assert tools[NAMES[1]].input_schema["required"] == ["proposal_id", "confirmation_token"]
    for tool in tools.values():
        assert tool.input_schema["additionalProperties"] is False
        assert tool.output_schema is not None
        assert tool.output_schema["type"] == "object"
        kinds = {v["properties"]["kind"]["const"] for v in tool.output_schema["oneOf"]}
        assert "refusal" in kinds


def test_request_descriptions_say_they_do_not_act(server: MCPServer) -> None:
    """A client (and its model) reads that the request tool only asks for confirmation."""
    tools = _tools(server)
    for name in (NAMES[0], NAMES[2]):
        assert (tools[name].description or "").startswith(REQUEST_DESCRIPTION_PREFIX)


def test_annotations_tell_the_truth(server: MCPServer) -> None:
    """readOnlyHint false for request and execute; destructiveHint from the side effect."""
    tools = _tools(server)
    for name in NAMES[:4]:
        annotations = tools[name].annotations
        assert annotations is not None
        assert annotations.read_only_hint is False
    refund, note = tools[NAMES[1]].annotations, tools[NAMES[3]].annotations
    assert refund is not None and note is not None
    assert (refund.destructive_hint, refund.open_world_hint) == (True, True)
    assert (note.destructive_hint, note.open_world_hint) == (True, False)
    request = tools[NAMES[0]].annotations
    assert request is not None and request.destructive_hint is False
    status = tools["get_proposal_status"].annotations
    assert status is not None and status.read_only_hint is True


def test_offline_definitions_match_what_the_server_lists(world: World, server: MCPServer) -> None:
    """`signoff tools --format mcp` prints what tools/list answers."""
    listed = {
        name: tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        for name, tool in _tools(server).items()
    }
    offline = {d["name"]: d for d in tool_definitions(agent_tools(world.gate.catalog))}
    assert offline == listed

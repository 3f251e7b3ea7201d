"""What the MCP server advertises and answers beyond its tools (issue 24).

No prompts or resources capability (nothing is behind them), an unknown tool is a
JSON-RPC error and never an ``isError`` result, and every POST's SSE stream opens with a
priming event that has an id and a retry interval (SEP-1699).
"""

from __future__ import annotations

import logging

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, METHOD_NOT_FOUND

from signoff.http import DemoObjects, Settings, create_app
from signoff.mcp_server import include_mcp
from tests.conftest import AGENT, World
from tests.http.conftest import token_for
from tests.mcp.conftest import client

ACCEPT = "application/json, text/event-stream"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}


def test_only_tools_are_advertised(server: MCPServer) -> None:
    """initialize: a tools capability, and neither prompts nor resources."""

    async def body() -> None:
        async with client(server) as c:
            capabilities = c.server_capabilities
            assert capabilities is not None
            assert capabilities.tools is not None
            assert capabilities.prompts is None and capabilities.resources is None

    anyio.run(body)


def test_prompts_and_resources_are_method_not_found_without_a_traceback(
    server: MCPServer, caplog: pytest.LogCaptureFixture
) -> None:
    """prompts/get and resources/read: JSON-RPC -32601, and no ERROR logged."""

    async def body() -> list[int]:
        codes = []
        async with client(server) as c:
            for call in (lambda: c.get_prompt("x"), lambda: c.read_resource("signoff://x")):
                with pytest.raises(MCPError) as caught:
                    await call()
                codes.append(caught.value.error.code)
        return codes

    with caplog.at_level(logging.INFO):
        assert anyio.run(body) == [METHOD_NOT_FOUND, METHOD_NOT_FOUND]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_an_unknown_tool_is_a_jsonrpc_error_not_a_result(server: MCPServer, world: World) -> None:
    """-32602 naming the tool; no proposal, nothing run."""

    async def body() -> MCPError:
        async with client(server) as c:
            with pytest.raises(MCPError) as caught:
                await c.call_tool("drop_all_tables", {})
            return caught.value

    error = anyio.run(body)
    assert error.error.code == INVALID_PARAMS
    assert error.error.message == "Unknown tool: drop_all_tables"
    assert world.gate.proposals(AGENT) == []


def test_a_posts_sse_stream_opens_with_an_event_id_and_retry(world: World) -> None:
    """SEP-1699: the first event of the stream carries `id:` and `retry:` and no data."""
    app = create_app(
        Settings(demo=True),
        gate=world.gate,
        demo=DemoObjects(world.shop, world.provider),
        extras=[include_mcp],
    )
    headers = {"Authorization": f"Bearer {token_for(AGENT)}", "Accept": ACCEPT}
    with TestClient(app, base_url="http://127.0.0.1:8000") as http:
        response = http.post("/mcp", json=INITIALIZE, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    first = response.text.replace("\r\n", "\n").split("\n\n")[0]
    fields = dict(line.split(": ", 1) for line in first.splitlines() if ": " in line)
    assert fields.get("id") and fields.get("retry") == "1000", first
    assert fields.get("data", "") == ""
    assert '"serverInfo"' in response.text

"""What the MCP server advertises and answers beyond its tools, kept honest.

- No ``prompts`` or ``resources`` capability: signoff has neither, and the SDK's
  ``MCPServer`` registers their handlers (so advertises both) whatever the server holds.
  With the handlers gone, ``prompts/get`` is a JSON-RPC ``Method not found`` instead of a
  logged traceback.
- An unknown tool name is a JSON-RPC error (``-32602``, as the MCP specification's tools
  page shows), not a result with ``isError``: nothing ran, and a client must not read it
  as the tool's own answer.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.context import HandlerResult as Result
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

UNSERVED = (
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
)


def serve_only_tools(server: MCPServer) -> MCPServer:
    """Drop the prompt and resource handlers, so neither capability is advertised.

    The SDK offers no public switch for this; its capabilities come from the registered
    handlers (``Server.get_capabilities``). tests/mcp/test_mcp_protocol.py pins the result.
    """
    handlers: dict[str, Any] = server._lowlevel_server._request_handlers
    for method in UNSERVED:
        handlers.pop(method, None)
    return server


class UnknownToolIsAnError:
    """``tools/call`` of a name the server does not list (now: a gateway's listing may
    change): a JSON-RPC error, nothing run."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Result:
        if ctx.method == "tools/call" and ctx.request_id is not None:
            params = ctx.params if isinstance(ctx.params, dict) else {}
            name = params.get("name")
            if isinstance(name, str) and name not in await self._listed():
                raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}")
        return await call_next(ctx)

    async def _listed(self) -> set[str]:
        return {tool.name for tool in await self.server.list_tools()}

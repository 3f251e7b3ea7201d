"""Where the gateway's tools join the MCP server: pass-through reads, and a tool list that
follows the upstreams' listings.

Writes of an upstream are in the gate's catalog, so they appear as
``request_<upstream>_<tool>_confirmation`` / ``execute_confirmed_<upstream>_<tool>``
like native tools. Reads are registered here under ``<upstream>_<tool>``; each
call is authenticated as every other call and passed to
:meth:`signoff.gateway.Gateway.call_read`, which audits it. When an upstream's
listing changes, the server's tool list is rebuilt and swapped in one assignment.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from signoff.agents._service import refuse
from signoff.catalog._catalog import Catalog
from signoff.exceptions import SignoffError
from signoff.gate._async import AsyncGate
from signoff.gateway import Gateway, GatewayCatalog, ListedTool
from signoff.mcp_server._identity import SessionIdentity


def gateway_of(catalog: Catalog) -> Gateway | None:
    return catalog.gateway if isinstance(catalog, GatewayCatalog) else None


def read_tools(gateway: Gateway, identity: SessionIdentity, gate: AsyncGate) -> list[Tool]:
    from signoff.mcp_server._tools import _Arguments

    return [
        Tool(
            fn=_read_handler(listed, gateway, identity, gate),
            name=listed.exposed,
            title=listed.title or f"{listed.upstream}: {listed.name}",
            description=(
                f"{listed.description} (Passed through to the MCP server {listed.upstream} by "
                "signoff, which audits each call; signoff's policy classifies it as a read.)"
            ),
            parameters=dict(listed.strict),
            fn_metadata=FuncMetadata(
                arg_model=_Arguments,
                output_schema=None if listed.output_schema is None else dict(listed.output_schema),
            ),
            is_async=True,
            context_kwarg="ctx",
            annotations=ToolAnnotations(
                title=listed.title,
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        )
        for listed in gateway.reads
    ]


def with_upstream_answers(tools: list[Tool], gateway: Gateway) -> list[Tool]:
    """An upstream write's execute answer also carries what the upstream answered (its content
    blocks after signoff's own JSON); the receipt keeps the answer's digest."""
    writes = {f"execute_confirmed_{listed.exposed}" for listed in gateway.writes}
    return [
        tool.model_copy(update={"fn": _with_answer(tool.fn, gateway)})
        if tool.name in writes
        else tool
        for tool in tools
    ]


def _with_answer(execute: Callable[..., Any], gateway: Gateway) -> Callable[..., Any]:
    async def call(arguments: dict[str, Any], ctx: Context) -> Any:
        answer = await execute(arguments, ctx)
        payload = answer.structured_content if isinstance(answer, CallToolResult) else None
        if not isinstance(payload, dict) or answer.is_error:
            return answer
        receipt = payload.get("receipt") or {}
        upstream = gateway.result(receipt.get("provider_reference"))
        if upstream is None:
            return answer
        return answer.model_copy(update={"content": [*answer.content, *upstream.content]})

    return call


def follow(server: MCPServer, gateway: Gateway, build: Callable[[], list[Tool]]) -> None:
    """Rebuild the server's tools whenever the gateway's listings change."""

    def changed() -> None:
        tools = build()
        # The SDK adds tools from functions only; these carry the upstream's own schema.
        server._tool_manager._tools = {tool.name: tool for tool in tools}

    gateway.subscribe(changed)


def _read_handler(
    listed: ListedTool, gateway: Gateway, identity: SessionIdentity, gate: AsyncGate
) -> Callable[..., Any]:
    async def read(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        try:
            agent = identity.agent()
            answer: CallToolResult = await gate.run_sync(
                gateway.call_read, agent, listed.exposed, arguments
            )
            return answer
        except SignoffError as exc:
            output = refuse(exc)
            return CallToolResult(
                content=[TextContent(type="text", text=json.dumps(output.payload))],
                structured_content=output.payload,
                is_error=True,
            )

    return read

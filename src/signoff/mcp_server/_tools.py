"""The agent tools as MCP tools: inputSchema, outputSchema, structured content, honest hints.

Each tool is registered with the catalog's own strict schema, so the
arguments reach the gate exactly as the client sent them (the gate validates
them strictly; nothing is coerced on the way). Gate calls block on the store,
so they run in the :class:`~signoff.AsyncGate`'s bounded worker threads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from mcp_types import (
    Tool as ToolDefinition,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict

from signoff._model import Principal
from signoff.agents._definitions import AgentTool
from signoff.agents._names import ToolKind
from signoff.agents._service import AgentTools, ToolOutput, refuse
from signoff.exceptions import InvalidRequest, SignoffError
from signoff.gate._async import AsyncGate
from signoff.mcp_server import _confirm
from signoff.mcp_server._completion import CompletionWatcher
from signoff.mcp_server._identity import SessionIdentity

ToolResult = CallToolResult | InputRequiredResult


class _Arguments(ArgModelBase):
    """Passes the client's arguments through untouched; the gate validates them strictly."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


def mcp_tools(
    tools: AgentTools, identity: SessionIdentity, gate: AsyncGate, watcher: CompletionWatcher
) -> list[Tool]:
    return [
        _mcp_tool(spec, _handler(spec, tools, identity, gate, watcher))
        for spec in tools.definitions
    ]


def tool_definitions(specs: list[AgentTool]) -> list[dict[str, Any]]:
    """What ``tools/list`` answers, as JSON (camelCase keys), without starting a server."""
    definitions = []
    for spec in specs:
        tool = ToolDefinition(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.input_schema,
            output_schema=spec.output_schema,
            annotations=_annotations(spec),
        )
        definitions.append(tool.model_dump(mode="json", by_alias=True, exclude_none=True))
    return definitions


def _annotations(spec: AgentTool) -> ToolAnnotations:
    return ToolAnnotations(
        title=spec.title,
        read_only_hint=spec.read_only,
        destructive_hint=spec.destructive,
        idempotent_hint=spec.idempotent,
        open_world_hint=spec.open_world,
    )


def _mcp_tool(spec: AgentTool, handler: Callable[..., Any]) -> Tool:
    return Tool(
        fn=handler,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        parameters=spec.input_schema,
        fn_metadata=FuncMetadata(arg_model=_Arguments, output_schema=spec.output_schema),
        is_async=True,
        context_kwarg="ctx",
        annotations=_annotations(spec),
    )


def _handler(
    spec: AgentTool,
    tools: AgentTools,
    identity: SessionIdentity,
    gate: AsyncGate,
    watcher: CompletionWatcher,
) -> Callable[..., Any]:
    if spec.kind is ToolKind.REQUEST:
        assert spec.write_tool is not None
        write_tool = spec.write_tool

        async def request(arguments: dict[str, Any], ctx: Context) -> ToolResult:
            return await _request(tools, identity, gate, watcher, write_tool, arguments, ctx)

        return request

    async def call(arguments: dict[str, Any], ctx: Context) -> ToolResult:
        try:
            agent = identity.agent()
        except SignoffError as exc:
            return result(refuse(exc, write_tool=spec.write_tool))
        return result(await gate.run_sync(tools.call, agent, spec.name, arguments))

    return call


async def _request(
    tools: AgentTools,
    identity: SessionIdentity,
    gate: AsyncGate,
    watcher: CompletionWatcher,
    write_tool: str,
    arguments: dict[str, Any],
    ctx: Context,
) -> ToolResult:
    """Freeze the proposal, then ask the person in the client when the client can be asked."""
    try:
        agent = identity.agent()
        if ctx.request_state is not None:
            # The retry of a 2026-07-28 round trip: the person has answered.
            return await _answered(tools, gate, agent, identity.human(), ctx)
    except SignoffError as exc:
        return result(refuse(exc, write_tool=write_tool))
    output = await gate.run_sync(tools.request, agent, write_tool, arguments)
    proposal = output.proposal
    channel = (
        None
        if proposal is None
        else _confirm.choose_channel(proposal, identity.human(), ctx.client_capabilities)
    )
    if proposal is None or channel is None:
        return result(output)
    asked = _confirm.asked_for(proposal, channel)
    params = (
        _confirm.form_params(proposal)
        if channel == "form"
        else _confirm.url_params(proposal, tools.pages.url(proposal.proposal_id))
    )
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return InputRequiredResult(
            input_requests={_confirm.CONFIRM_KEY: ElicitRequest(params=params)},
            request_state=asked.dump(),
        )
    try:
        answer = await _ask_directly(ctx, params)
    except MCPError:
        unavailable = {"channel": channel, "outcome": "unavailable", "code": None}
        return result(
            await gate.run_sync(tools.describe, agent, proposal, confirmation=unavailable)
        )
    if channel == "url" and answer.action == "accept":
        # The person went to the page: tell the agent when the decision is in.
        watcher.watch(ctx.session, agent, proposal.proposal_id)
    return result(
        await gate.run_sync(_confirm.settle, tools, agent, identity.human(), asked, answer)
    )


async def _answered(
    tools: AgentTools, gate: AsyncGate, agent: Principal, human: Principal | None, ctx: Context
) -> CallToolResult:
    try:
        asked = _confirm.Asked.load(ctx.request_state or "")
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidRequest("the confirmation state is not signoff's") from exc
    answer = (ctx.input_responses or {}).get(_confirm.CONFIRM_KEY)
    elicited = answer if isinstance(answer, ElicitResult) else None
    return result(await gate.run_sync(_confirm.settle, tools, agent, human, asked, elicited))


async def _ask_directly(
    ctx: Context, params: ElicitRequestFormParams | ElicitRequestURLParams
) -> ElicitResult:
    """A 2025-era session: the server sends elicitation/create to the client."""
    if isinstance(params, ElicitRequestFormParams):
        form: ElicitResult = await ctx.session.elicit_form(
            params.message, params.requested_schema, related_request_id=ctx.request_id
        )
        return form
    assert params.elicitation_id is not None
    answer = await ctx.elicit_url(params.message, params.url, params.elicitation_id)
    return ElicitResult(action=answer.action)


def result(output: ToolOutput) -> CallToolResult:
    """Structured content that matches the outputSchema, and the same JSON as text."""
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(output.payload, ensure_ascii=False))],
        structured_content=output.payload,
        is_error=output.is_error,
    )

"""signoff's agent tools as Agents SDK function tools: request, execute, status.

The model sees ``request_<tool>_confirmation`` (creates a proposal, performs
nothing), ``execute_confirmed_<tool>`` (needs the token a person's
confirmation produced) and ``get_proposal_status``, with the catalog's strict
schemas. Every call runs through :class:`signoff.agents.AgentTools` in the
:class:`signoff.AsyncGate`'s worker threads; refusals come back as structured
answers the model can act on, never as exceptions that end the run.
"""

from __future__ import annotations

from typing import Any

from agents import FunctionTool, Tool
from agents.tool_context import ToolContext

from signoff import AsyncGate
from signoff.agents import AgentTool, AgentTools, ConfirmationPages
from signoff.integrations.openai_agents._identity import PrincipalSource, principal_of


def signoff_tools(
    gate: AsyncGate,
    principal: PrincipalSource,
    *,
    pages: ConfirmationPages | None = None,
) -> list[Tool]:
    """One function tool per signoff agent tool of ``gate``'s catalog."""
    tools = AgentTools(gate.gate, pages=pages)
    return [_function_tool(spec, tools, gate, principal) for spec in tools.definitions]


def _function_tool(
    spec: AgentTool, tools: AgentTools, gate: AsyncGate, principal: PrincipalSource
) -> FunctionTool:
    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        caller = principal_of(principal, context.context)
        output = await gate.run_sync(tools.call, caller, spec.name, arguments)
        return output.json()

    return FunctionTool(
        name=spec.name,
        description=spec.description,
        params_json_schema=spec.input_schema,
        on_invoke_tool=invoke,
        strict_json_schema=True,
    )

"""signoff's agent tools as LangChain tools: request, execute, status, with strict schemas."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import StructuredTool

from signoff import Gate, Principal
from signoff.agents import AgentTool, AgentTools, ConfirmationPages


def signoff_langchain_tools(
    gate: Gate, principal: Principal, *, pages: ConfirmationPages | None = None
) -> list[StructuredTool]:
    """One LangChain tool per signoff agent tool; each answer is the JSON payload as a string.

    Bind them to a chat model (``model.bind_tools(tools)``) or use them in a
    ``ToolNode``. The principal is the authenticated caller, never a model argument.
    """
    tools = AgentTools(gate, pages=pages)
    return [_tool(spec, tools, principal) for spec in tools.definitions]


def _tool(spec: AgentTool, tools: AgentTools, principal: Principal) -> StructuredTool:
    def run(**arguments: Any) -> str:
        return tools.call(principal, spec.name, arguments).json()

    return StructuredTool.from_function(
        func=run,
        name=spec.name,
        description=spec.description,
        args_schema=spec.input_schema,
        infer_schema=False,
    )

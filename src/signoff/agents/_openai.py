"""OpenAI function calling: strict tool definitions and a dispatcher for the model's calls.

Nothing here imports the ``openai`` package: the definitions are plain dicts in
the shape both the Chat Completions and the Responses APIs accept, and the
dispatcher takes the name and JSON argument string exactly as the SDK hands
them over.
"""

from __future__ import annotations

from typing import Any, Literal

from signoff._model import Principal
from signoff.agents._definitions import AgentTool
from signoff.agents._render import ConfirmationPages
from signoff.agents._service import AgentTools, ToolOutput
from signoff.gate._gate import Gate

OpenAIApi = Literal["chat", "responses"]


def openai_tool(tool: AgentTool, *, api: OpenAIApi = "chat") -> dict[str, Any]:
    """One strict function definition (``strict: true``, closed objects, all fields required)."""
    function = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.input_schema,
        "strict": True,
    }
    if api == "responses":
        return {"type": "function", **function}
    return {"type": "function", "function": function}


def openai_tools(
    tools: AgentTools | list[AgentTool], *, api: OpenAIApi = "chat"
) -> list[dict[str, Any]]:
    """Every agent tool of a catalog, ready for ``tools=`` of ``chat.completions.create``."""
    definitions = tools.definitions if isinstance(tools, AgentTools) else tools
    return [openai_tool(tool, api=api) for tool in definitions]


class OpenAIDispatcher:
    """Runs a model's function call through the gate and answers with the tool output JSON.

    ``dispatch(name, arguments, principal)`` takes ``tool_call.function.name``
    and ``tool_call.function.arguments`` as the SDK hands them over, plus the
    identity your application authenticated (never one the model names). It
    never raises for a protocol refusal: the refusal is the answer, with a
    ``code``, an ``action`` and a ``next_step`` the model can follow.
    """

    def __init__(self, gate: Gate, *, public_url: str | None = None) -> None:
        pages = ConfirmationPages(public_url) if public_url is not None else None
        self.tools = AgentTools(gate, pages=pages)

    def definitions(self, *, api: OpenAIApi = "chat") -> list[dict[str, Any]]:
        return openai_tools(self.tools, api=api)

    def call(self, name: str, arguments: str, principal: Principal) -> ToolOutput:
        return self.tools.call(principal, name, arguments)

    def dispatch(self, name: str, arguments: str, principal: Principal) -> str:
        """The ``content`` of the ``tool`` message that answers this call."""
        return self.call(name, arguments, principal).json()

"""Agents talk to signoff: tool definitions from the catalog, and how their calls run.

For each write tool a model sees ``request_<tool>_confirmation`` (creates a
confirmation request; does not perform the action) and
``execute_confirmed_<tool>(proposal_id, confirmation_token)``, plus
``get_proposal_status``. :class:`OpenAIDispatcher` serves OpenAI function
calling; ``signoff.mcp_server`` serves the Model Context Protocol.
"""

from signoff.agents._definitions import AgentTool, ExecuteArgs, StatusArgs, agent_tools
from signoff.agents._names import (
    REQUEST_DESCRIPTION_PREFIX,
    STATUS_TOOL,
    ToolKind,
    execute_name,
    request_name,
)
from signoff.agents._openai import OpenAIDispatcher, openai_tool, openai_tools
from signoff.agents._refusals import refusal_payload
from signoff.agents._render import DEFAULT_PUBLIC_URL, ConfirmationPages
from signoff.agents._service import AgentTools, ToolOutput

__all__ = [
    "DEFAULT_PUBLIC_URL",
    "REQUEST_DESCRIPTION_PREFIX",
    "STATUS_TOOL",
    "AgentTool",
    "AgentTools",
    "ConfirmationPages",
    "ExecuteArgs",
    "OpenAIDispatcher",
    "StatusArgs",
    "ToolKind",
    "ToolOutput",
    "agent_tools",
    "execute_name",
    "openai_tool",
    "openai_tools",
    "refusal_payload",
    "request_name",
]

"""Tool definitions derived from the catalog, neutral to OpenAI and MCP."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from signoff.agents import _outputs
from signoff.agents._names import (
    MANDATE_ARGUMENT,
    MANDATE_TOOL,
    REQUEST_DESCRIPTION_PREFIX,
    STATUS_TOOL,
    SUPERSEDES_ARGUMENT,
    ToolKind,
    execute_name,
    request_name,
)
from signoff.catalog._catalog import Catalog
from signoff.catalog._schema import strict_json_schema
from signoff.catalog._tool import StrictArgs, WriteTool
from signoff.catalog._types import SideEffect

MAX_ID_CHARS = 128
MAX_TOKEN_CHARS = 4096  # a signed (JWS) token is ~800 characters


class ExecuteArgs(StrictArgs):
    """The confirmed proposal and its confirmation token; the arguments come from the proposal."""

    proposal_id: Annotated[
        str, Field(max_length=MAX_ID_CHARS, description="The proposal a person confirmed")
    ]
    confirmation_token: Annotated[
        str,
        Field(
            max_length=MAX_TOKEN_CHARS,
            description="The token get_proposal_status returned once the proposal was confirmed",
        ),
    ]


class StatusArgs(StrictArgs):
    """The proposal to read."""

    proposal_id: Annotated[
        str, Field(max_length=MAX_ID_CHARS, description="The proposal_id a request returned")
    ]


class MandateArgs(StrictArgs):
    """The standing approval to read."""

    mandate_id: Annotated[
        str, Field(max_length=MAX_ID_CHARS, description="The mandate_id a person approved")
    ]


@dataclass(frozen=True, slots=True)
class AgentTool:
    """One tool as a model sees it, with honest hints about what calling it does."""

    name: str
    kind: ToolKind
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    write_tool: str | None
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


def agent_tools(catalog: Catalog) -> list[AgentTool]:
    """For each write tool a request and an execute tool; then ``get_proposal_status`` and
    ``get_mandate_status``."""
    tools: list[AgentTool] = []
    for tool in catalog:
        tools.append(_request_tool(catalog, tool))
        tools.append(_execute_tool(tool))
    tools.append(_status_tool())
    tools.append(_mandate_tool())
    return tools


def _request_tool(catalog: Catalog, tool: WriteTool[Any]) -> AgentTool:
    description = (
        f"{REQUEST_DESCRIPTION_PREFIX} It asks a person to confirm `{tool.name}`: "
        f"{tool.description.rstrip('.')}. The arguments are frozen into a proposal with a "
        "preview; a person entitled by the tool's policy must confirm exactly that proposal "
        "before anything happens. Returns proposal_id, status awaiting_confirmation, preview, "
        f"expires_at and confirm_url. Then call {STATUS_TOOL} to learn the decision and, once "
        f"confirmed, {execute_name(tool.name)}. Side effect once executed: "
        f"{tool.side_effect.value}. Never guess a missing value: ask the user."
    )
    return AgentTool(
        name=request_name(tool.name),
        kind=ToolKind.REQUEST,
        title=f"Request confirmation: {tool.name}",
        description=description,
        input_schema=request_schema(catalog.schema(tool.name)),
        output_schema=copy.deepcopy(_outputs.REQUEST_OUTPUT),
        write_tool=tool.name,
        # It records a proposal (so not read-only) but changes nothing else.
        read_only=False,
        destructive=False,
        idempotent=False,
        open_world=False,
    )


_RESERVED_SCHEMAS: dict[str, dict[str, Any]] = {
    MANDATE_ARGUMENT: {
        "anyOf": [{"type": "string", "maxLength": MAX_ID_CHARS}, {"type": "null"}],
        "description": "signoff: the standing approval (mandate_id) a person gave you for such "
        "requests; a write it covers is confirmed at once. null when there is none.",
    },
    SUPERSEDES_ARGUMENT: {
        "anyOf": [{"type": "string", "maxLength": MAX_ID_CHARS}, {"type": "null"}],
        "description": "signoff: the proposal_id a reviewer returned with a request for "
        "changes that this request answers. null otherwise.",
    },
}


def request_schema(arguments: dict[str, Any]) -> dict[str, Any]:
    """The write tool's strict schema plus the two reserved properties (required, nullable,
    as strict mode wants); the tool's own properties are untouched."""
    schema = copy.deepcopy(arguments)
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict):
        return schema
    for name, reserved in _RESERVED_SCHEMAS.items():
        if name not in properties:
            properties[name] = copy.deepcopy(reserved)
            schema["required"] = [*schema.get("required", []), name]
    return schema


def _execute_tool(tool: WriteTool[Any]) -> AgentTool:
    description = (
        f"Performs `{tool.name}` exactly as a person confirmed it, at most once. Pass only the "
        f"proposal_id and the confirmation_token that {STATUS_TOOL} returns after the "
        "confirmation; the confirmed arguments are read from the proposal, never from you. "
        "Calling it again never repeats the action: a finished execution is refused with its "
        "receipt, a retryable failure is retried with the same request key, and an unknown "
        f"outcome is looked up. Side effect: {tool.side_effect.value}."
    )
    return AgentTool(
        name=execute_name(tool.name),
        kind=ToolKind.EXECUTE,
        title=f"Execute confirmed: {tool.name}",
        description=description,
        input_schema=strict_json_schema(ExecuteArgs),
        output_schema=copy.deepcopy(_outputs.EXECUTE_OUTPUT),
        write_tool=tool.name,
        read_only=False,
        # Only a write we know to be harmless is reported as non-destructive.
        destructive=tool.side_effect is not SideEffect.NONE,
        # Repeating the call with the same proposal and token has no further effect.
        idempotent=True,
        open_world=tool.side_effect is SideEffect.EXTERNAL,
    )


def _status_tool() -> AgentTool:
    return AgentTool(
        name=STATUS_TOOL,
        kind=ToolKind.STATUS,
        title="Proposal status",
        description=(
            "Reads a proposal: its status, preview, approvals and execution with its receipt. "
            "Once a person confirmed it, returns the confirmation_token to the agent that "
            "requested it (and to no one else). Read-only; call it instead of guessing or "
            "retrying when an outcome is unclear."
        ),
        input_schema=strict_json_schema(StatusArgs),
        output_schema=copy.deepcopy(_outputs.STATUS_OUTPUT),
        write_tool=None,
        read_only=True,
        destructive=False,
        idempotent=True,
        open_world=False,
    )


def _mandate_tool() -> AgentTool:
    return AgentTool(
        name=MANDATE_TOOL,
        kind=ToolKind.MANDATE,
        title="Standing approval status",
        description=(
            "Reads a standing approval (mandate) a person approved for your requests: its "
            "constraints, what is left of its budget and count, until when, and every write "
            "made under it. Read-only; it never approves or spends anything."
        ),
        input_schema=strict_json_schema(MandateArgs),
        output_schema=copy.deepcopy(_outputs.MANDATE_OUTPUT),
        write_tool=None,
        read_only=True,
        destructive=False,
        idempotent=True,
        open_world=False,
    )

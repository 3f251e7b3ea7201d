"""The names a model sees: one request and one execute tool per write tool, and a status tool."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from signoff.exceptions import CatalogError, UnknownTool

STATUS_TOOL = "get_proposal_status"
MANDATE_TOOL = "get_mandate_status"
MANDATE_ARGUMENT = "signoff_mandate_id"
SUPERSEDES_ARGUMENT = "signoff_supersedes"
RESERVED_ARGUMENTS = (MANDATE_ARGUMENT, SUPERSEDES_ARGUMENT)
"""Beside a write tool's own arguments in its request tool; never part of the proposal's
arguments (nor of their digest). The catalog refuses tools that declare them."""
REQUEST_DESCRIPTION_PREFIX = "Creates a confirmation request; does not perform the action."
# OpenAI function names: 1..64 of [a-zA-Z0-9_-]; MCP accepts the same set.
_FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_REQUEST = re.compile(r"^request_(?P<tool>.+)_confirmation$")
_EXECUTE = re.compile(r"^execute_confirmed_(?P<tool>.+)$")


class ToolKind(enum.StrEnum):
    REQUEST = "request"
    EXECUTE = "execute"
    STATUS = "status"
    MANDATE = "mandate"


@dataclass(frozen=True, slots=True)
class ToolName:
    """A parsed agent-facing tool name: its kind and, for request/execute, the write tool."""

    kind: ToolKind
    write_tool: str | None = None


def request_name(tool: str) -> str:
    return _checked(f"request_{tool}_confirmation")


def execute_name(tool: str) -> str:
    return _checked(f"execute_confirmed_{tool}")


def parse_name(name: str) -> ToolName:
    """What a model's tool call asks for; the write tool is checked against the catalog later."""
    if name == STATUS_TOOL:
        return ToolName(ToolKind.STATUS)
    if name == MANDATE_TOOL:
        return ToolName(ToolKind.MANDATE)
    if (match := _REQUEST.match(name)) is not None:
        return ToolName(ToolKind.REQUEST, match["tool"])
    if (match := _EXECUTE.match(name)) is not None:
        return ToolName(ToolKind.EXECUTE, match["tool"])
    raise UnknownTool(f"no tool named {name!r}", tool=name)


def _checked(name: str) -> str:
    if not _FUNCTION_NAME.match(name):
        raise CatalogError(f"agent tool name {name!r} is not a valid function name (≤ 64 chars)")
    return name

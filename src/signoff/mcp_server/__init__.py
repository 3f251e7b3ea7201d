"""The signoff MCP server: request, execute and status tools, confirmation by elicitation.

``create_mcp_server(gate, identity)`` builds it; ``signoff mcp`` serves it over
stdio; :func:`include_mcp` mounts it at ``/mcp`` of ``signoff serve``
(streamable HTTP, bearer JWT identity).
"""

from signoff.mcp_server._http import include_mcp
from signoff.mcp_server._identity import (
    BearerIdentity,
    PrincipalTokenVerifier,
    SessionIdentity,
    StaticIdentity,
)
from signoff.mcp_server._server import create_mcp_server
from signoff.mcp_server._tools import tool_definitions

__all__ = [
    "BearerIdentity",
    "PrincipalTokenVerifier",
    "SessionIdentity",
    "StaticIdentity",
    "create_mcp_server",
    "include_mcp",
    "tool_definitions",
]

"""The signoff MCP server on the official SDK's ``MCPServer``."""

from __future__ import annotations

from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer, RequestStateSecurity
from mcp.server.mcpserver.tools import Tool

from signoff import __version__
from signoff.agents._render import ConfirmationPages
from signoff.agents._service import AgentTools
from signoff.gate._async import AsyncGate
from signoff.gate._gate import Gate
from signoff.mcp_server._completion import CompletionWatcher
from signoff.mcp_server._gateway import follow, gateway_of, read_tools, with_upstream_answers
from signoff.mcp_server._identity import PrincipalTokenVerifier, SessionIdentity
from signoff.mcp_server._protocol import UnknownToolIsAnError, serve_only_tools
from signoff.mcp_server._tools import mcp_tools

SERVER_NAME = "signoff"
INSTRUCTIONS = """\
signoff guards write operations. A request_<tool>_confirmation tool creates a
confirmation request and does not perform the action; a person must confirm
exactly that proposal (here in a form when the policy allows, otherwise on the
confirmation page). get_proposal_status tells you the decision and, once
confirmed, hands you the confirmation_token for execute_confirmed_<tool>.
Follow each answer's next_step. Never retry an unknown outcome blindly."""


def create_mcp_server(
    gate: Gate | AsyncGate,
    identity: SessionIdentity,
    *,
    public_url: str | None = None,
    token_verifier: PrincipalTokenVerifier | None = None,
    issuer_url: str | None = None,
    resource_url: str | None = None,
    request_state_keys: list[bytes] | None = None,
) -> MCPServer:
    """The MCP server for ``gate``'s catalog, running every call as ``identity`` says.

    Tool calls run in the worker threads of ``gate`` when it is an
    :class:`~signoff.AsyncGate` (``signoff serve`` shares the HTTP routes'), else
    of an AsyncGate of its own. ``public_url`` is where ``signoff serve``
    answers (confirmation pages). Pass
    ``token_verifier`` (with ``issuer_url``, the JWT issuer's URL) to require a
    bearer token on streamable HTTP; ``resource_url`` (the endpoint's own URL) makes a
    401 name its RFC 9728 metadata. Pass ``request_state_keys`` when several
    processes serve one endpoint (the sealed round-trip state must open anywhere).
    """
    agate = gate if isinstance(gate, AsyncGate) else AsyncGate(gate)
    pages = ConfirmationPages(public_url) if public_url is not None else ConfirmationPages()
    tools = AgentTools(agate.gate, pages=pages)
    watcher = CompletionWatcher(agate)
    auth = None
    if token_verifier is not None:
        auth = AuthSettings(
            issuer_url=issuer_url or pages.base_url,
            resource_server_url=resource_url,
            # The token verifier checks the audience itself (the issuer's configured one).
            validate_token_resource=False if resource_url is not None else None,
        )
    gateway = gateway_of(agate.gate.catalog)

    def build() -> list[Tool]:
        tools.refresh()
        own = mcp_tools(tools, identity, agate, watcher)
        if gateway is None:
            return own
        return [*with_upstream_answers(own, gateway), *read_tools(gateway, identity, agate)]

    server: MCPServer = MCPServer(
        SERVER_NAME,
        title="signoff",
        instructions=INSTRUCTIONS,
        version=__version__,
        token_verifier=token_verifier,
        auth=auth,
        tools=build(),
        lifespan=lambda server: watcher.running(),
        request_state_security=(
            RequestStateSecurity(keys=request_state_keys) if request_state_keys else None
        ),
        log_level="WARNING",
    )
    server.middleware.append(UnknownToolIsAnError(server))
    if gateway is not None:
        follow(server, gateway, build)  # upstream listings change: so does this server's
    return serve_only_tools(server)

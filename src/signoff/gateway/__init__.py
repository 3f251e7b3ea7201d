"""signoff in front of any MCP server: upstream tools as confirmed, exactly-once operations.

``Gateway`` connects to upstream MCP servers (``--upstream NAME=COMMAND`` over
stdio, ``NAME=https://…/mcp`` over streamable HTTP) with the official ``mcp``
client. The ``[upstreams]`` part of the policy file classifies each tool: reads
pass through (audited), writes become proposals a person confirms, and a tool
the policy does not list is a write that needs approval (docs/GATEWAY.md).
"""

# Imported on first use (PEP 562, as in ``signoff/__init__.py``): the settings read the
# upstream specs (``_config``) without importing the MCP client.
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from signoff.gateway._catalog import GatewayCatalog
    from signoff.gateway._config import (
        UpstreamSpec,
        merge_upstreams,
        parse_upstream,
        parse_upstreams,
        upstreams_json,
    )
    from signoff.gateway._gateway import READ_EVENT, Gateway
    from signoff.gateway._listed import ListedTool, Skipped
    from signoff.gateway._policy import (
        GatewayPolicy,
        LookupRule,
        RiskRule,
        ToolPolicy,
        UpstreamPolicy,
        load_gateway_policy,
        parse_gateway_policy,
    )
    from signoff.gateway._tool import UpstreamArgs, UpstreamWriteTool

__all__ = [
    "READ_EVENT",
    "Gateway",
    "GatewayCatalog",
    "GatewayPolicy",
    "ListedTool",
    "LookupRule",
    "RiskRule",
    "Skipped",
    "ToolPolicy",
    "UpstreamArgs",
    "UpstreamPolicy",
    "UpstreamSpec",
    "UpstreamWriteTool",
    "load_gateway_policy",
    "merge_upstreams",
    "parse_gateway_policy",
    "parse_upstream",
    "parse_upstreams",
    "upstreams_json",
]


def __getattr__(name: str) -> object:
    """Import a public name on first use, from the module its line above names."""
    from signoff._lazy import resolve

    return resolve(__name__, __file__, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

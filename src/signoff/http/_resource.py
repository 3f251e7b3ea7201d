"""How a client finds out where to get a token: OAuth 2.0 Protected Resource Metadata.

RFC 9728 metadata for the API at ``/.well-known/oauth-protected-resource``
names the authorization servers whose tokens signoff accepts (every trusted
issuer with an http(s) URL), and every 401 carries
``WWW-Authenticate: Bearer resource_metadata="…"`` pointing at it, so a
standard client goes from a bare 401 to a token on its own. MCP's endpoint
publishes its own document at the path-suffixed form (``…/mcp``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from mcp.shared.auth import ProtectedResourceMetadata

from signoff.http._settings import Settings
from signoff.http._state import AppState

WELL_KNOWN = "/.well-known/oauth-protected-resource"
RESOURCE_NAME = "signoff"


def public_url_of(settings: Settings) -> str:
    """Where people and clients reach ``signoff serve`` (no trailing slash)."""
    return settings.effective_public_url()


def authorization_servers(state: AppState) -> list[str]:
    """Where a client can get a token: the app's own authorization server (the demo's, when
    it runs one), then the trusted issuers that have an http(s) URL."""
    issuers = [i.issuer for i in state.authenticator.issuers]
    urls = [i for i in issuers if i.startswith(("https://", "http://"))]
    return [
        *state.authorization_servers,
        *(u for u in urls if u not in state.authorization_servers),
    ]


def metadata_url(resource: str) -> str:
    """RFC 9728 §3.1: the well-known path goes between the host and the resource's path."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{path}"


def resource_metadata(resource: str, servers: list[str]) -> dict[str, Any]:
    # Validated from strings, so an issuer keeps its exact form (no added trailing slash).
    document = ProtectedResourceMetadata.model_validate(
        {"resource": resource, "authorization_servers": servers, "resource_name": RESOURCE_NAME}
    )
    return document.model_dump(mode="json", exclude_none=True)


def challenge(state: AppState, *, error: bool, resource: str | None = None) -> str:
    """The ``WWW-Authenticate`` value of a 401 for ``resource`` (default: the API).

    ``error="invalid_token"`` only when a bearer token was presented (RFC 6750 §3.1: a
    request without one gets no error code), and ``resource_metadata`` (RFC 9728 §5.1)
    whenever there is an authorization server to discover.
    """
    parts = ['error="invalid_token"'] if error else []
    if authorization_servers(state):
        where = resource or public_url_of(state.settings)
        parts.append(f'resource_metadata="{metadata_url(where)}"')
    return "Bearer " + ", ".join(parts) if parts else "Bearer"


def presented_bearer(authorization: str | None) -> bool:
    """Whether the request carried a bearer credential at all (``Basic …`` is not one)."""
    scheme, _, credential = (authorization or "").strip().partition(" ")
    return scheme.lower() == "bearer" and bool(credential.strip())

"""Who calls the MCP server: the agent principal, and the person who may confirm in-band.

On stdio (and in memory) the process was launched by that person: the agent
acts for the configured subject and the same subject, without ``act``, is the
human who answers in-band forms. Over streamable HTTP the bearer JWT is the
only identity and it names the agent; no person is present in-band there, so
confirmation goes through the page.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from signoff._model import MCP_SURFACE, Principal
from signoff.exceptions import NotAuthenticated

DEFAULT_AGENT = "agent:mcp"


class SessionIdentity(Protocol):
    def agent(self) -> Principal:
        """The principal tool calls run as; raises NotAuthenticated when there is none."""
        ...

    def human(self) -> Principal | None:
        """The person who may answer an in-band confirmation form, if any."""
        ...


@dataclass(frozen=True, slots=True)
class StaticIdentity:
    """Fixed by whoever started the process (stdio, in-memory tests)."""

    agent_principal: Principal
    human_principal: Principal | None = None

    def __post_init__(self) -> None:
        if not self.agent_principal.is_agent:
            raise ValueError("the MCP agent principal needs an actor (the agent acting for sub)")
        human = self.human_principal
        if human is not None and (human.is_agent or human.tenant != self.agent_principal.tenant):
            raise ValueError("the human principal is a person (no actor) of the agent's tenant")

    @classmethod
    def for_person(cls, subject: str, tenant: str, *, agent: str = DEFAULT_AGENT) -> StaticIdentity:
        """``--principal SUB@TENANT``: the agent acts for SUB, and SUB confirms in-band."""
        return cls(
            Principal(subject, tenant, actor=agent), Principal(subject, tenant, client=MCP_SURFACE)
        )

    def agent(self) -> Principal:
        return self.agent_principal

    def human(self) -> Principal | None:
        return self.human_principal


class BearerIdentity:
    """Streamable HTTP: the principal the bearer JWT of the current request proved."""

    def agent(self) -> Principal:
        token = get_access_token()
        if token is None or token.claims is None:
            raise NotAuthenticated("an Authorization: Bearer <JWT> header is required")
        return principal_of(token)

    def human(self) -> Principal | None:
        return None


class PrincipalTokenVerifier:
    """The MCP SDK's ``TokenVerifier`` over signoff's JWT authenticator.

    With ``resource`` (the endpoint's URL), a token whose audience names resources (RFC 8707:
    the demo's authorization server binds each token to the one it was asked for) must name
    this one; a token with only the deployment's plain audience is taken as before.
    """

    def __init__(
        self, authenticate: Callable[[str], Awaitable[Principal]], *, resource: str | None = None
    ) -> None:
        self._authenticate = authenticate
        self._resource = None if resource is None else resource.rstrip("/")

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            principal = await self._authenticate(token)
        except NotAuthenticated:
            return None
        resources = _resources_of(token) if self._resource is not None else []
        if self._resource is not None and resources and self._resource not in resources:
            return None
        return AccessToken(
            token=token,
            client_id=principal.actor or principal.subject,
            scopes=[],
            subject=principal.subject,
            resource=self._resource if resources else None,
            claims={
                "tenant": principal.tenant,
                "roles": sorted(principal.roles),
                "act": principal.actor,
                "client": principal.client,
                "iss": principal.issuer,
            },
        )


def _resources_of(token: str) -> list[str]:
    """The URL audiences of a token the authenticator has just verified (so read unverified)."""
    try:
        audience = jwt.decode(token, options={"verify_signature": False}).get("aud")
    except jwt.PyJWTError:
        return []
    values = audience if isinstance(audience, list) else [audience]
    return [a.rstrip("/") for a in values if isinstance(a, str) and a.startswith(URL_SCHEMES)]


URL_SCHEMES = ("https://", "http://")


def principal_of(token: AccessToken) -> Principal:
    claims = token.claims or {}
    tenant, roles, actor = claims.get("tenant"), claims.get("roles"), claims.get("act")
    client, issuer = claims.get("client"), claims.get("iss")
    if token.subject is None or not isinstance(tenant, str) or not isinstance(roles, list):
        raise NotAuthenticated("the access token carries no signoff principal")
    return Principal(
        token.subject,
        tenant,
        roles=frozenset(str(role) for role in roles),
        actor=actor if isinstance(actor, str) else None,
        client=client if isinstance(client, str) else None,
        issuer=issuer if isinstance(issuer, str) else None,
    )

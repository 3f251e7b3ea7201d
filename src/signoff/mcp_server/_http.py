"""Streamable HTTP at ``/mcp`` inside ``signoff serve``, with bearer JWT identity.

Every request must carry the same JWT the REST API takes; the agent principal
comes from it alone. The session manager runs in the host app's lifespan (a
mounted app's own lifespan never runs).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mcp.server.auth.routes import cors_middleware
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff.exceptions import NotAuthenticated
from signoff.http._problems import instance_of, problem
from signoff.http._resource import (
    authorization_servers,
    challenge,
    metadata_url,
    presented_bearer,
    public_url_of,
    resource_metadata,
)
from signoff.mcp_server._events import RETRY_MS, MemoryEventStore
from signoff.mcp_server._identity import BearerIdentity, PrincipalTokenVerifier
from signoff.mcp_server._server import create_mcp_server

if TYPE_CHECKING:
    from fastapi import FastAPI

    from signoff.http._settings import Settings
    from signoff.http._state import AppState

MOUNT_PATH = "/mcp"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def include_mcp(app: FastAPI, state: AppState) -> None:
    """The ``signoff serve`` extension: mount the MCP endpoint and run its session manager."""
    settings = state.settings
    public_url = public_url_of(settings)
    resource = public_url + MOUNT_PATH
    servers = authorization_servers(state)
    server = create_mcp_server(
        state.agate,
        BearerIdentity(),
        public_url=public_url,
        token_verifier=PrincipalTokenVerifier(
            state.authenticator.authenticate_async, resource=resource
        ),
        issuer_url=servers[0] if servers else public_url,
        resource_url=resource if servers else None,
        request_state_keys=[_request_state_key(settings)],
    )
    endpoint = ProblemOnUnauthenticated(mcp_http_app(server, settings, public_url), state, resource)
    metadata = _resource_metadata_route(state, resource)
    if metadata is not None:
        app.router.routes.append(metadata)
    app.mount(MOUNT_PATH, endpoint)
    # `/mcp` itself, not only `/mcp/`: a mount alone would answer it with a redirect.
    app.router.routes.append(Route(MOUNT_PATH, _AtMountPoint(endpoint), include_in_schema=False))
    state.add_lifespan(server.session_manager.run)


def mcp_http_app(server: MCPServer, settings: Settings, public_url: str) -> Starlette:
    """The streamable HTTP ASGI app, answering at the mount point itself."""
    return server.streamable_http_app(
        streamable_http_path="/",
        # Several workers share no sessions; each request then stands alone.
        stateless_http=settings.workers > 1,
        # SEP-1699: each SSE stream starts with an event id and a retry interval.
        event_store=MemoryEventStore(),
        retry_interval=RETRY_MS,
        transport_security=transport_security(settings, public_url),
        host=settings.host,
    )


class ProblemOnUnauthenticated:
    """The SDK's 401 at ``/mcp`` as the API's: problem+json, and RFC 6750/9728's challenge.

    ``error="invalid_token"`` only when a bearer token was sent (a bare request gets none),
    and ``resource_metadata`` naming the endpoint's own RFC 9728 document, so a client goes
    from the first 401 to the authorization server on its own.
    """

    def __init__(self, app: ASGIApp, state: AppState, resource: str) -> None:
        self.app = app
        self.state = state
        self.resource = resource

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        replaced = False

        async def send_problem_instead(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 401:
                replaced = True
                await self._problem(scope)(scope, receive, send)
            elif not replaced:
                await send(message)

        await self.app(scope, receive, send_problem_instead)

    def _problem(self, scope: Scope) -> Response:
        presented = presented_bearer(Headers(scope=scope).get("authorization"))
        detail = (
            "the bearer token is not valid here (expired, another issuer, or another resource)"
            if presented
            else "an Authorization: Bearer <JWT> header is required"
        )
        header = challenge(self.state, error=presented, resource=self.resource)
        return problem(
            401,
            NotAuthenticated.code,
            detail,
            instance=instance_of({**scope, "path": MOUNT_PATH}),
            headers={"WWW-Authenticate": header},
        )


class _AtMountPoint:
    """Hands a request for the mount point itself to the mounted app, as the mount would."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        await self.app({**scope, "path": path + "/", "root_path": path}, receive, send)


def transport_security(settings: Settings, public_url: str) -> TransportSecuritySettings:
    """DNS-rebinding protection: only loopback names and the public host are answered."""
    public = urlsplit(public_url)
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if public.hostname not in _LOOPBACK:
        hosts += [public.netloc, f"{public.hostname}:*"]
        origins += [f"{public.scheme}://{public.netloc}"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def _resource_metadata_route(state: AppState, resource: str) -> Route | None:
    """RFC 9728 metadata of the MCP endpoint at its path-suffixed well-known URL."""
    servers = authorization_servers(state)
    if not servers:
        return None
    document = resource_metadata(resource, servers)

    async def metadata(_: Request) -> Response:
        return JSONResponse(document, headers={"Cache-Control": "public, max-age=300"})

    path = urlsplit(metadata_url(resource)).path
    return Route(path, cors_middleware(metadata, ["GET", "OPTIONS"]), methods=["GET", "OPTIONS"])


def _request_state_key(settings: Settings) -> bytes:
    """One key for every worker (derived from the token key), so any may take a retry."""
    return hmac.new(
        settings.effective_token_key(), b"signoff/mcp/request-state/v1", hashlib.sha256
    ).digest()


__all__ = ["MOUNT_PATH", "include_mcp", "mcp_http_app", "public_url_of"]

"""The demo's OAuth 2.1 authorization server, so MCP clients sign in with no pasted token.

Demo mode only (``signoff serve --demo``); nothing here exists outside it. The protocol
is the MCP SDK's own authorization-server routes (``mcp.server.auth``: RFC 8414
metadata, RFC 7591 dynamic client registration, authorization code with PKCE S256,
the token endpoint, RFC 8707 ``resource`` passed through); this module is only their
provider — where clients, pending sign-ins, codes and refresh tokens live (memory of this
worker: run the demo with one worker, its default) — and the page where a person picks
the demo user the agent will act for.

An access token is a development JWT of that user with ``act`` naming the client
(``agent:<client name>-<id>``), so it is an agent's token: it can propose and execute,
never approve. Its audience is the deployment's (``signoff``) plus the resource the
client asked for (the ``/mcp`` endpoint or the API), and ``/mcp`` refuses a token bound
to another resource.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, FastAPI
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from signoff.http._resource import public_url_of
from signoff.http._state import AppState
from signoff.identity import mint_dev_token
from signoff.web._forms import posted_form
from signoff.web._headers import CONTENT_SECURITY_POLICY, SECURITY_HEADERS
from signoff.web._identity import DEMO_USERS, DemoUser, demo_user
from signoff.web._session import WebSession
from signoff.web._ui import Ui, log, ui_of

SIGN_IN_PATH = "/oauth/sign-in"
MCP_PATH = "/mcp"
CODE_SECONDS = 300
PENDING_SECONDS = 600
ACCESS_SECONDS = 3600
REFRESH_SECONDS = 24 * 3600
MAX_CLIENTS = 1000  # memory bound: the oldest registrations go first
router = APIRouter(include_in_schema=False)


@dataclass(frozen=True, slots=True)
class Pending:
    """An /authorize request waiting for the person's choice on the sign-in page."""

    client: OAuthClientInformationFull
    params: AuthorizationParams
    resource: str
    expires_at: float


class DemoCode(AuthorizationCode):
    tenant: str


class DemoRefresh(RefreshToken):
    tenant: str


class DemoAuthorizationServer:
    """The SDK's ``OAuthAuthorizationServerProvider`` for the demo (kept in memory)."""

    def __init__(self, state: AppState, issuer: str) -> None:
        self.state = state
        self.issuer = issuer
        self.resources = (issuer + MCP_PATH, issuer)
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, Pending] = {}
        self.codes: dict[str, DemoCode] = {}
        self.refresh_tokens: dict[str, DemoRefresh] = {}

    def now(self) -> datetime:
        return self.state.gate.clock.now()

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        while len(self.clients) >= MAX_CLIENTS:
            self.clients.pop(next(iter(self.clients)))
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        """Validate the resource (RFC 8707) and send the browser to the sign-in page."""
        resource = self._resource(params.resource)
        self._forget_expired()
        request_id = secrets.token_urlsafe(32)
        expires = self.now().timestamp() + PENDING_SECONDS
        self.pending[request_id] = Pending(client, params, resource, expires)
        return f"{self.issuer}{SIGN_IN_PATH}?request={request_id}"

    def _resource(self, requested: str | None) -> str:
        if requested is None:
            return self.resources[0]
        resource = requested.rstrip("/")
        if resource not in self.resources:
            raise AuthorizeError(
                "invalid_target",
                f"this server issues tokens for {' and '.join(self.resources)} only",
            )
        return resource

    def waiting(self, request_id: str) -> Pending | None:
        pending = self.pending.get(request_id)
        if pending is None or pending.expires_at <= self.now().timestamp():
            return None
        return pending

    def grant(self, request_id: str, user: DemoUser) -> str:
        """The person chose ``user``: a one-time code, back to the client's redirect URI."""
        pending = self.pending.pop(request_id)
        code = secrets.token_urlsafe(32)
        self.codes[code] = DemoCode(
            code=code,
            scopes=pending.params.scopes or [],
            expires_at=self.now().timestamp() + CODE_SECONDS,
            client_id=pending.client.client_id or "",
            code_challenge=pending.params.code_challenge,
            redirect_uri=pending.params.redirect_uri,
            redirect_uri_provided_explicitly=pending.params.redirect_uri_provided_explicitly,
            resource=pending.resource,
            subject=user.principal.subject,
            tenant=user.principal.tenant,
        )
        return construct_redirect_uri(
            str(pending.params.redirect_uri), code=code, state=pending.params.state
        )

    def deny(self, request_id: str) -> str:
        pending = self.pending.pop(request_id)
        return construct_redirect_uri(
            str(pending.params.redirect_uri),
            error="access_denied",
            error_description="the person declined on the sign-in page",
            state=pending.params.state,
        )

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> DemoCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: DemoCode
    ) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:  # one use only
            raise TokenError("invalid_grant", "the authorization code was already used")
        return self._tokens(client, authorization_code)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> DemoRefresh | None:
        token = self.refresh_tokens.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: DemoRefresh, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh_tokens.pop(refresh_token.token, None) is None:  # rotated: one use
            raise TokenError("invalid_grant", "the refresh token was already used")
        return self._tokens(client, refresh_token.model_copy(update={"scopes": scopes}))

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "the demo takes no identity assertions")

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None  # access tokens are JWTs; /mcp and the API verify them themselves

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.refresh_tokens.pop(token.token, None)

    def _tokens(
        self, client: OAuthClientInformationFull, grant: DemoCode | DemoRefresh
    ) -> OAuthToken:
        user = demo_user(grant.subject)
        if user is None or user.principal.tenant != grant.tenant:
            raise TokenError("invalid_grant", "that demo user does not exist")
        resource = grant.resource or self.resources[0]
        access = mint_dev_token(
            self.state.settings,
            subject=user.principal.subject,
            tenant=user.principal.tenant,
            roles=sorted(user.principal.roles),
            actor=agent_name(client),
            ttl_seconds=ACCESS_SECONDS,
            now=self.now(),
            resources=[resource],
        )
        refresh = secrets.token_urlsafe(32)
        self.refresh_tokens[refresh] = DemoRefresh(
            token=refresh,
            client_id=client.client_id or "",
            scopes=grant.scopes,
            expires_at=int(self.now().timestamp()) + REFRESH_SECONDS,
            resource=resource,
            subject=user.principal.subject,
            tenant=user.principal.tenant,
        )
        scope = " ".join(grant.scopes) or None
        return OAuthToken(
            access_token=access, expires_in=ACCESS_SECONDS, scope=scope, refresh_token=refresh
        )

    def _forget_expired(self) -> None:
        now = self.now().timestamp()
        for request_id in [k for k, p in self.pending.items() if p.expires_at <= now]:
            del self.pending[request_id]
        for code in [k for k, c in self.codes.items() if c.expires_at <= now]:
            del self.codes[code]


def agent_name(client: OAuthClientInformationFull) -> str:
    """``agent:<client name>-<8 characters of its id>``: readable, and one per client."""
    name = re.sub(r"[^a-z0-9]+", "-", (client.client_name or "mcp-client").lower()).strip("-")
    return f"agent:{name[:40] or 'mcp-client'}-{(client.client_id or '')[:8]}"


def include_demo_oauth(app: FastAPI, state: AppState) -> None:
    """Mount the authorization server in demo mode; outside it, do nothing at all."""
    if state.demo is None:
        return
    issuer = public_url_of(state.settings)
    if state.settings.workers > 1:
        log.warning(
            "the demo's OAuth server keeps clients and codes in each worker's memory: "
            "MCP clients sign in reliably with one worker (the default)"
        )
    server = DemoAuthorizationServer(state, issuer)
    app.state.signoff_demo_oauth = server
    # Through AuthSettings, whose URLs keep an empty path: RFC 8414 compares the issuer
    # exactly, and a bare AnyHttpUrl would add a trailing slash to it.
    issuer_url = AuthSettings(issuer_url=issuer, resource_server_url=None).issuer_url
    app.router.routes.extend(
        create_auth_routes(
            server,
            issuer_url,
            client_registration_options=ClientRegistrationOptions(enabled=True),
        )
    )
    app.include_router(router)
    state.authorization_servers.insert(0, issuer)


def _server(request: Request) -> DemoAuthorizationServer:
    server = request.app.state.signoff_demo_oauth
    assert isinstance(server, DemoAuthorizationServer)
    return server


@router.get(SIGN_IN_PATH)
def sign_in_page(request: Request) -> Response:
    """Who the agent will act for: one button per demo user, and Cancel."""
    ui, server = ui_of(request), _server(request)
    session = ui.session(request)
    fresh = session is None
    session = session or WebSession.anonymous(ui.now())
    request_id = request.query_params.get("request", "")
    pending = server.waiting(request_id)
    if pending is None:
        return _expired(ui, session)
    context: dict[str, Any] = {
        "request_id": request_id,
        "client_name": pending.client.client_name or "An MCP client",
        "resource": pending.resource,
        "users": DEMO_USERS,
    }
    response = ui.render("oauth_sign_in.html", session, context, set_cookie=fresh)
    return _with_headers(response, pending)


@router.post(SIGN_IN_PATH)
async def choose_user(request: Request) -> Response:
    form = await posted_form(request)
    if isinstance(form, Response):
        return form
    ui, session, fields = form
    server = _server(request)
    request_id = fields.get("request", "")
    pending = server.waiting(request_id)
    if pending is None:
        return _expired(ui, session)
    if fields.get("decision") == "deny":
        return _with_headers(RedirectResponse(server.deny(request_id), status_code=303), pending)
    user = demo_user(fields.get("user"))
    if user is None:
        return ui.render(
            "error.html",
            session,
            {"title": "Not found", "message": "There is no such demo user on this server."},
            status=404,
        )
    redirect = RedirectResponse(server.grant(request_id, user), status_code=303)
    return _with_headers(redirect, pending)


def _expired(ui: Ui, session: WebSession) -> Response:
    return ui.render(
        "error.html",
        session,
        {
            "title": "Sign-in expired",
            "message": "This sign-in request is unknown or older than ten minutes. Start the "
            "connection again from your MCP client.",
        },
        status=400,
    )


def _with_headers(response: Response, pending: Pending) -> Response:
    """The pages' security headers; the form may also post on to the client's redirect URI
    (CSP ``form-action`` governs the redirect a form submission follows)."""
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    target = _source_of(str(pending.params.redirect_uri))
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY.replace(
        "form-action 'self'", f"form-action 'self' {target}"
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def _source_of(uri: str) -> str:
    """A CSP source for a redirect URI: its origin, or its scheme (``vscode:``)."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        return f"{parts.scheme}://{parts.netloc}"
    return f"{parts.scheme}:"

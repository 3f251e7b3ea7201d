"""MCP authorization discovery: from a bare 401 to a token, as standard MCP clients do it.

RFC 9728 metadata at ``/.well-known/oauth-protected-resource`` (the API) and
``/.well-known/oauth-protected-resource/mcp`` (the MCP endpoint), named by
``WWW-Authenticate: Bearer resource_metadata="…"`` on every 401.
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from signoff import Principal
from signoff.http import DemoObjects, Settings, create_app
from signoff.identity import IssuerConfig
from signoff.mcp_server import include_mcp
from tests.conftest import REFUND, World
from tests.identity.idp import Idp

CALLBACK = "http://127.0.0.1/mcp-client-callback"
_METADATA = re.compile(r'resource_metadata="([^"]+)"')


def settings_for(issuer: str, port: int = 8000) -> Settings:
    config = IssuerConfig(issuer=issuer, audience="signoff", jwks_refresh_cooldown_seconds=0)
    return Settings(demo=True, port=port, issuers=(config,))


def metadata_link(response: httpx.Response | Any) -> str:
    assert response.status_code == 401, response.text
    found = _METADATA.search(response.headers["www-authenticate"])
    assert found, response.headers["www-authenticate"]
    return found.group(1)


def test_a_bare_401_names_the_resource_metadata(world: World) -> None:
    """/mcp and the API each point at their own RFC 9728 document, listing the issuer."""
    app = create_app(settings_for("https://idp.example"), gate=world.gate, extras=[include_mcp])
    with TestClient(app) as client:
        link = metadata_link(client.post("/mcp", json={}))
        assert link == "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"
        document = client.get("/.well-known/oauth-protected-resource/mcp").json()
        assert document["resource"] == "http://127.0.0.1:8000/mcp"
        assert document["authorization_servers"] == ["https://idp.example"]
        api_link = metadata_link(client.get("/v1/proposals/p_1"))
        assert api_link == "http://127.0.0.1:8000/.well-known/oauth-protected-resource"
        api = client.get("/.well-known/oauth-protected-resource").json()
        assert api["resource"] == "http://127.0.0.1:8000"
        assert api["authorization_servers"] == ["https://idp.example"]


def test_without_an_http_issuer_no_metadata_is_claimed(world: World) -> None:
    """The demo issuer is no authorization server: no document, no link, still a 401."""
    app = create_app(Settings(demo=True), gate=world.gate, extras=[include_mcp])
    with TestClient(app) as client:
        response = client.get("/v1/proposals/p_1")
        assert response.status_code == 401
        assert "resource_metadata" not in response.headers["www-authenticate"]
        assert client.get("/.well-known/oauth-protected-resource").status_code == 404


@pytest.fixture
def served(world: World, idp: Idp) -> Iterator[str]:
    """`signoff serve`'s app on a real loopback port, trusting the provider."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(
        settings_for(idp.issuer, port),
        gate=world.gate,
        demo=DemoObjects(world.shop, world.provider),
        extras=[include_mcp],
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws="none", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the server did not start"
        threading.Event().wait(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


class MemoryTokens:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def test_a_standard_mcp_client_discovers_the_provider_and_calls_a_tool(
    world: World, idp: Idp, served: str
) -> None:
    """The SDK's OAuth client: 401 → metadata → provider → registration → PKCE → tool call."""
    returned: dict[str, str] = {}

    async def sign_in(url: str) -> None:
        with httpx.Client(timeout=10) as browser:
            login = idp.finish_login
            returned.update(await anyio.to_thread.run_sync(login, browser, url, "u_42", CALLBACK))

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=returned["code"], state=returned.get("state"), iss=returned.get("iss")
        )

    auth = OAuthClientProvider(
        server_url=f"{served}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="conformance of signoff",
            redirect_uris=[AnyUrl(CALLBACK)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope="openid signoff",
        ),
        storage=MemoryTokens(),
        redirect_handler=sign_in,
        callback_handler=callback,
    )

    async def body() -> dict[str, Any]:
        async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
            transport = streamable_http_client(f"{served}/mcp", http_client=http)
            async with Client(transport) as client:
                result = await client.call_tool("request_refund_order_confirmation", REFUND)
                assert not result.is_error, result
                structured: dict[str, Any] | None = result.structured_content
                assert structured is not None
                return structured

    requested = anyio.run(body)
    proposal = world.gate.proposal(Principal("u_42", "acme"), requested["proposal_id"])
    assert (proposal.requester_subject, proposal.tenant) == ("u_42", "acme")
    assert proposal.arguments["order_id"] == REFUND["order_id"]


def test_the_mcp_token_verifier_keeps_the_whole_principal() -> None:
    """sub, tenant, roles, agent and client survive the SDK's AccessToken round trip."""
    from signoff.mcp_server._identity import PrincipalTokenVerifier, principal_of

    person = Principal("u_42", "acme", frozenset({"r"}), actor="agent:x", client="jdk8-crm")

    async def authenticate(_: str) -> Principal:
        return person

    access = anyio.run(PrincipalTokenVerifier(authenticate).verify_token, "token")
    assert access is not None and principal_of(access) == person

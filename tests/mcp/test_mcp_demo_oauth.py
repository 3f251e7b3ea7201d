"""An MCP client signs in to `signoff serve --demo` with OAuth: no token pasted (issue 24).

The MCP SDK's own `OAuthClientProvider` against a real `signoff serve --demo` process:
a bare request to /mcp gets a 401 naming the RFC 9728 metadata, which names the demo's
authorization server (RFC 8414); the client registers itself (RFC 7591), sends the person
to the sign-in page with PKCE and a resource indicator (RFC 8707), the "person" (an HTTP
client acting as the browser) picks the demo user u_42, and the client calls the tools as
an agent for u_42. alice approves over the API, the agent executes, the demo shop's
ledger shows the one refund. Outside demo mode none of it exists.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
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

from signoff.demo import DemoShop, RefundProvider
from signoff.http import Settings, create_app
from signoff.http._catalog import demo_shop_path
from tests.conftest import REFUND, World
from tests.demo_oauth import CALLBACK, browse_sign_in
from tests.serving import serving

KEY = "ab" * 32


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


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    db = tmp_path_factory.mktemp("oauth") / "signoff.db"
    with serving(["--demo", "--db", str(db)]) as base:
        yield base, db


def oauth_client(base: str, returned: dict[str, str]) -> OAuthClientProvider:
    async def redirect(url: str) -> None:
        back = await anyio.to_thread.run_sync(browse_sign_in, url, "u_42")
        returned.update(back.params)

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=returned["code"], state=returned.get("state"))

    return OAuthClientProvider(
        server_url=f"{base}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="Test Agent",
            redirect_uris=[AnyUrl(CALLBACK)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=MemoryTokens(),
        redirect_handler=redirect,
        callback_handler=callback,
    )


def test_the_sdk_client_signs_in_with_oauth_and_the_confirmed_refund_runs_once(
    demo: tuple[str, Path],
) -> None:
    """Discovery, registration, PKCE, the sign-in page, a tool call as u_42's agent; alice
    approves over the API; execute over MCP; one refund in the demo shop's ledger."""
    base, db = demo
    returned: dict[str, str] = {}
    auth = oauth_client(base, returned)

    async def body() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
            transport = streamable_http_client(f"{base}/mcp", http_client=http)
            async with Client(transport) as client:
                requested = await _call(client, "request_refund_order_confirmation", REFUND)
                proposal_id = requested["proposal_id"]
                await anyio.to_thread.run_sync(_approve_as_alice, base, proposal_id)
                status = await _call(client, "get_proposal_status", {"proposal_id": proposal_id})
                arguments = {
                    "proposal_id": proposal_id,
                    "confirmation_token": status["confirmation_token"],
                }
                executed = await _call(client, "execute_confirmed_refund_order", arguments)
                return requested, status, executed

    requested, status, executed = anyio.run(body)
    assert "code" in returned and requested["status"] == "awaiting_confirmation"
    assert status["status"] == "confirmed"
    assert executed["status"] == "succeeded"
    assert executed["receipt"]["approvers"] == ["alice"]
    shop = DemoShop(demo_shop_path(str(db)))
    try:
        ledger = RefundProvider(shop).ledger("acme")
    finally:
        shop.close()
    assert [(e.order_id, e.amount_minor) for e in ledger] == [("ord_1001", 19900)]
    assert ledger[0].reference == executed["receipt"]["provider_reference"]
    proposal = httpx.get(
        f"{base}/v1/proposals/{requested['proposal_id']}",
        headers={"Authorization": f"Bearer {_dev_token(base, 'alice', 'refund_approver')}"},
    ).json()
    assert proposal["requester"]["subject"] == "u_42"
    assert re.fullmatch(r"agent:test-agent-[0-9a-f]{8}", proposal["requester"]["actor"])


def test_a_bare_request_to_mcp_points_to_the_demo_authorization_server(
    demo: tuple[str, Path],
) -> None:
    """401 problem+json, no error code (no token was sent), resource_metadata → metadata
    naming this server as the authorization server, whose RFC 8414 document is served."""
    base, _ = demo
    bare = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert bare.status_code == 401
    assert bare.headers["content-type"].startswith("application/problem+json")
    assert bare.json()["code"] == "not_authenticated"
    challenge = bare.headers["www-authenticate"]
    assert "error=" not in challenge
    metadata_url = re.search(r'resource_metadata="([^"]+)"', challenge)
    assert metadata_url is not None
    resource = httpx.get(metadata_url.group(1)).json()
    assert resource["resource"] == f"{base}/mcp"
    assert resource["authorization_servers"] == [base]
    server = httpx.get(f"{base}/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == base
    assert server["registration_endpoint"] == f"{base}/register"
    assert server["code_challenge_methods_supported"] == ["S256"]
    basic = httpx.post(f"{base}/mcp", json={}, headers={"Authorization": "Basic dTpw"})
    assert basic.status_code == 401 and "error=" not in basic.headers["www-authenticate"]
    wrong = httpx.post(f"{base}/mcp", json={}, headers={"Authorization": "Bearer nope"})
    assert 'error="invalid_token"' in wrong.headers["www-authenticate"]


def test_a_token_for_another_resource_is_refused_at_mcp(demo: tuple[str, Path]) -> None:
    """RFC 8707: the authorization server refuses an unknown resource, and /mcp refuses a
    token the server bound to the API instead of to /mcp."""
    base, _ = demo
    returned: dict[str, str] = {}
    registered = httpx.post(
        f"{base}/register",
        json={
            "client_name": "other",
            "redirect_uris": [CALLBACK],
            "token_endpoint_auth_method": "none",
        },
    ).json()
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": registered["client_id"],
        "redirect_uri": CALLBACK,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s1",
    }
    elsewhere = httpx.get(f"{base}/authorize", params={**query, "resource": "https://evil.example"})
    assert "error=invalid_target" in elsewhere.headers["location"]
    url = str(httpx.URL(f"{base}/authorize", params={**query, "resource": base}))
    returned.update(browse_sign_in(url, "u_42").params)
    token = httpx.post(
        f"{base}/token",
        data={
            "grant_type": "authorization_code",
            "code": returned["code"],
            "redirect_uri": CALLBACK,
            "client_id": registered["client_id"],
            "code_verifier": verifier,
        },
    )
    assert token.status_code == 200, token.text
    access = token.json()["access_token"]
    api = httpx.get(f"{base}/v1/proposals", headers={"Authorization": f"Bearer {access}"})
    assert api.status_code == 200, api.text
    at_mcp = httpx.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={
            "Authorization": f"Bearer {access}",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert at_mcp.status_code == 401
    replay = httpx.post(
        f"{base}/token",
        data={
            "grant_type": "authorization_code",
            "code": returned["code"],
            "redirect_uri": CALLBACK,
            "client_id": registered["client_id"],
            "code_verifier": verifier,
        },
    )
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"


def test_outside_demo_mode_there_is_no_authorization_server(world: World) -> None:
    """No metadata, registration, authorize, token or sign-in page: all 404."""
    settings = Settings(token_key=KEY, jwt_issuer="https://idp.example", jwt_hs256_secret=KEY)
    with TestClient(create_app(settings, gate=world.gate)) as client:
        for method, path in (
            ("GET", "/.well-known/oauth-authorization-server"),
            ("POST", "/register"),
            ("GET", "/authorize"),
            ("POST", "/token"),
            ("GET", "/oauth/sign-in"),
        ):
            assert client.request(method, path).status_code == 404, path


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result
    structured = result.structured_content
    assert isinstance(structured, dict)
    return structured


def _dev_token(base: str, subject: str, role: str) -> str:
    import subprocess
    import sys

    from tests.serving import clean_env

    done = subprocess.run(
        [sys.executable, "-m", "signoff", "dev-token", "--demo", "--sub", subject, "--tenant",
         "acme", "--role", role],
        capture_output=True, text=True, check=True, env=clean_env(),
    )  # fmt: skip
    return done.stdout.strip()


def _approve_as_alice(base: str, proposal_id: str) -> None:
    headers = {"Authorization": f"Bearer {_dev_token(base, 'alice', 'refund_approver')}"}
    proposal = httpx.get(f"{base}/v1/proposals/{proposal_id}", headers=headers).json()
    decided = httpx.post(
        f"{base}/v1/proposals/{proposal_id}/decision",
        json={"decision": "approve", "expected_version": proposal["version"]},
        headers={**headers, "Idempotency-Key": f"alice-{proposal_id}"},
    )
    assert decided.status_code == 200, decided.text

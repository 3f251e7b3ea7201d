"""Signing in: a verified person's JWT, a demo user in demo mode, or an OIDC login hook."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fastapi import FastAPI
from fastapi.testclient import TestClient

from signoff import Principal
from signoff.exceptions import NotAuthenticated
from signoff.http import AppState, DemoObjects, Settings, create_app
from signoff.web import SignIn, install_ui
from tests.conftest import AGENT, APPROVER, World
from tests.web.conftest import Pages, hidden_fields, jwt_for, make_pages_app

KEY = b"p" * 32
PRODUCTION = Settings(token_key=KEY, jwt_issuer="https://idp.example", jwt_hs256_secret=KEY)


def _post_token(pages: Pages, token: str, **extra: str) -> Any:
    fields = hidden_fields(pages.client.get("/ui/sign-in").text)
    return pages.client.post(
        "/ui/sign-in", data={**fields, "token": token, **extra}, follow_redirects=False
    )


def test_a_verified_jwt_signs_the_person_in(pages: Pages) -> None:
    """The pages show who is signed in: the JWT's sub, tenant and roles."""
    response = _post_token(pages, jwt_for(APPROVER))
    assert response.status_code == 303 and response.headers["location"] == "/ui/inbox"
    inbox = pages.client.get("/ui/inbox").text
    assert "alice · acme · refund_approver" in inbox


def test_an_agents_token_is_refused(pages: Pages) -> None:
    """A JWT with act (an agent acting for someone) never opens a session here."""
    response = _post_token(pages, jwt_for(AGENT))
    assert response.status_code == 401
    assert "agents never use this page" in response.text
    assert pages.client.get("/ui/inbox", follow_redirects=False).status_code == 303


def test_a_bad_token_is_refused_with_the_reason(pages: Pages) -> None:
    """Garbage and a token for another issuer: 401 and the sign-in form again."""
    assert _post_token(pages, "not-a-jwt").status_code == 401
    development = PRODUCTION.model_copy(update={"environment": "development"})
    foreign = jwt_for(APPROVER, settings=development)
    assert _post_token(pages, foreign).status_code == 401


def test_after_sign_in_only_a_local_page_is_a_destination(pages: Pages) -> None:
    """next= another site, a scheme-relative URL or the sign-in page itself → the inbox."""
    for target in ("https://evil.example/", "//evil.example", "/ui/sign-in", "/v1/proposals"):
        response = _post_token(pages, jwt_for(APPROVER), next=target)
        assert response.headers["location"] == "/ui/inbox"
    response = _post_token(pages, jwt_for(APPROVER), next="/ui/history")
    assert response.headers["location"] == "/ui/history"


def test_a_page_asks_for_sign_in_and_returns_there(pages: Pages) -> None:
    """An unsigned visit redirects to sign-in with next= the page asked for."""
    response = pages.client.get("/ui/history", follow_redirects=False)
    assert response.headers["location"] == "/ui/sign-in?next=/ui/history"


def test_a_link_from_another_site_gets_a_continue_page(pages: Pages) -> None:
    """SameSite=Strict keeps the cookie off cross-site links: one same-site click brings it."""
    response = pages.client.get("/ui/history", headers={"Sec-Fetch-Site": "cross-site"})
    assert response.status_code == 200 and 'href="/ui/history"' in response.text
    assert "set-cookie" not in response.headers


def test_sign_out_ends_the_session(pages: Pages) -> None:
    """After signing out the pages ask for sign-in again."""
    pages.sign_in(APPROVER)
    fields = hidden_fields(pages.client.get("/ui/inbox").text)
    assert pages.client.post("/ui/sign-out", data=fields, follow_redirects=False).status_code == 303
    assert pages.client.get("/ui/inbox", follow_redirects=False).status_code == 303


def test_demo_users_are_listed_and_sign_in_in_demo_mode(pages: Pages) -> None:
    """Approver, auditor, no-role user, customer and the other tenant's approver."""
    page = pages.client.get("/ui/sign-in").text
    for subject in ("alice", "dave", "carol", "u_42", "gina"):
        assert f'value="{subject}"' in page
    response = pages.client.post(
        "/ui/sign-in/demo", data={**hidden_fields(page), "user": "gina"}, follow_redirects=False
    )
    assert response.status_code == 303
    assert "gina · globex" in pages.client.get("/ui/inbox").text


def test_no_demo_sign_in_outside_demo_mode(world: World) -> None:
    """Production lists no demo users and refuses the demo sign-in (404)."""
    with TestClient(make_pages_app(world, PRODUCTION), base_url="https://127.0.0.1") as client:
        page = client.get("/ui/sign-in").text
        assert "Demo users" not in page
        response = client.post("/ui/sign-in/demo", data={**hidden_fields(page), "user": "alice"})
        assert response.status_code == 404
        assert client.get("/ui/inbox", follow_redirects=False).status_code == 303


class FakeProvider:
    """An OIDC provider stand-in: the code names the person, ``agent`` an agent."""

    name = "corp"
    label = "Sign in with Corp SSO"

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def authorization_url(
        self,
        *,
        state: str,
        nonce: str,
        code_challenge: str,
        redirect_uri: str,
        max_age: int | None = None,
        acr_values: Sequence[str] = (),
        prompt: str | None = None,
    ) -> str:
        self.seen.update(nonce=nonce, challenge=code_challenge, redirect_uri=redirect_uri)
        return f"https://idp.example/authorize?state={state}"

    def complete(self, *, code: str, nonce: str, code_verifier: str, redirect_uri: str) -> SignIn:
        if nonce != self.seen["nonce"] or redirect_uri != self.seen["redirect_uri"]:
            raise NotAuthenticated("nonce or redirect mismatch")
        self.seen["verifier"] = code_verifier
        actor = "agent:x" if code == "agent" else None
        person = Principal(code, "acme", frozenset({"refund_approver"}), actor=actor)
        return SignIn(person, datetime.now(UTC) + timedelta(hours=1))


def _oidc_app(world: World, provider: FakeProvider) -> FastAPI:
    def include(app: FastAPI, state: AppState) -> None:
        install_ui(app, state, login_providers=[provider])

    return create_app(
        PRODUCTION, gate=world.gate, demo=DemoObjects(world.shop, world.provider), extras=[include]
    )


def _start(client: TestClient) -> str:
    response = client.get("/ui/sign-in/oidc/corp?next=/ui/history", follow_redirects=False)
    assert response.status_code == 303
    return parse_qs(urlsplit(response.headers["location"]).query)["state"][0]


def test_oidc_hook_round_trip_with_state_nonce_and_pkce(world: World) -> None:
    """The provider gets state, nonce and an S256 challenge; the callback signs the person in."""
    provider = FakeProvider()
    with TestClient(_oidc_app(world, provider), base_url="https://127.0.0.1") as client:
        assert "Sign in with Corp SSO" in client.get("/ui/sign-in").text
        state = _start(client)
        back = client.get(
            f"/ui/sign-in/oidc/corp/callback?code=alice&state={state}", follow_redirects=False
        )
        assert back.headers["location"] == "/ui/history"
        assert "alice · acme" in client.get("/ui/inbox").text
    digest = hashlib.sha256(provider.seen["verifier"].encode()).digest()
    assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == provider.seen["challenge"]


def test_oidc_callback_with_another_state_or_an_agent_is_refused(world: World) -> None:
    """A forged callback (wrong state) and an agent identity both leave no session."""
    with TestClient(_oidc_app(world, FakeProvider()), base_url="https://127.0.0.1") as client:
        _start(client)
        forged = client.get("/ui/sign-in/oidc/corp/callback?code=alice&state=forged")
        assert forged.status_code == 401
        state = _start(client)
        agent = client.get(f"/ui/sign-in/oidc/corp/callback?code=agent&state={state}")
        assert agent.status_code == 401 and "agents never use this page" in agent.text
        assert client.get("/ui/inbox", follow_redirects=False).status_code == 303

"""Page sign-in with OpenID Connect against a real provider: code flow, PKCE, ID token.

The page (TestClient) and the provider (a real oidc-provider process, driven
with an HTTP client as the browser) exchange the redirects a browser follows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from signoff.http import DemoObjects, Settings, create_app
from signoff.identity import IssuerConfig
from signoff.web import include_ui
from tests.conftest import World
from tests.identity.idp import Idp, SigningKey
from tests.web.conftest import hidden_fields

BASE = "http://127.0.0.1"
CALLBACK = f"{BASE}/ui/sign-in/oidc/corp/callback"


@pytest.fixture
def page_idp(tmp_path: Path) -> Iterator[Idp]:
    provider = Idp(tmp_path, redirects=[CALLBACK]).start([SigningKey("k1")])
    try:
        yield provider
    finally:
        provider.stop()


def pages(world: World, idp: Idp) -> TestClient:
    login = {
        "name": "corp",
        "client_id": "signoff-page",
        "client_secret": "signoff-page-secret",
        "label": "Sign in with Corp SSO",
        "scopes": ["openid", "signoff"],
    }
    config = IssuerConfig.model_validate(
        {"issuer": idp.issuer, "audience": "signoff", "login": login}
    )
    app = create_app(
        Settings(demo=True, issuers=(config,)),
        gate=world.gate,
        demo=DemoObjects(world.shop, world.provider),
        extras=[include_ui],
    )
    return TestClient(app, base_url=BASE)


def sign_in(client: TestClient, idp: Idp, account: str) -> Any:
    """Button → provider's login page → the person signs in → back to the page's callback."""
    start = client.get("/ui/sign-in/oidc/corp?next=/ui/history", follow_redirects=False)
    assert start.status_code == 303
    with httpx.Client(timeout=10) as browser:
        back = idp.finish_login(browser, start.headers["location"], account, CALLBACK)
    return client.get("/ui/sign-in/oidc/corp/callback", params=back, follow_redirects=False)


def test_a_person_signs_in_with_the_provider_and_the_session_ends_with_the_id_token(
    world: World, page_idp: Idp
) -> None:
    """alice's ID token signs her in with her tenant and roles, until its exp."""
    world.clock.set(datetime.now(UTC))
    client = pages(world, page_idp)
    assert "Sign in with Corp SSO" in client.get("/ui/sign-in").text
    back = sign_in(client, page_idp, "alice")
    assert back.status_code == 303 and back.headers["location"] == "/ui/history"
    cookie = re.search(r"signoff-ui=[^;]+;.*?Max-Age=(\d+)", back.headers["set-cookie"])
    assert cookie is not None
    # Bound to the ID token's exp (a few seconds of test run after the clock was set).
    assert page_idp.ttl_seconds - 30 < int(cookie[1]) <= page_idp.ttl_seconds + 5
    inbox = client.get("/ui/inbox")
    assert inbox.status_code == 200 and "alice · acme" in inbox.text
    world.clock.advance(timedelta(seconds=page_idp.ttl_seconds + 10))
    assert client.get("/ui/inbox", follow_redirects=False).status_code == 303


def test_sign_out_ends_the_provider_session_here(world: World, page_idp: Idp) -> None:
    """After sign-out the page asks for sign-in again."""
    world.clock.set(datetime.now(UTC))
    client = pages(world, page_idp)
    sign_in(client, page_idp, "alice")
    fields = hidden_fields(client.get("/ui/inbox").text, "sign-out")
    out = client.post("/ui/sign-out", data=fields, follow_redirects=False)
    assert out.status_code == 303
    assert client.get("/ui/inbox", follow_redirects=False).status_code == 303


def test_a_person_without_the_tenant_claim_is_refused_clearly(world: World, page_idp: Idp) -> None:
    """The ID token lacks the mapped tenant claim: 401 page naming it, no session."""
    world.clock.set(datetime.now(UTC))
    client = pages(world, page_idp)
    back = sign_in(client, page_idp, "nomad")
    assert back.status_code == 401 and "&#39;tenant&#39;" in back.text
    assert client.get("/ui/inbox", follow_redirects=False).status_code == 303


def test_a_replayed_callback_is_refused(world: World, page_idp: Idp) -> None:
    """The first callback spends the login cookie; the same answer again is refused."""
    world.clock.set(datetime.now(UTC))
    client = pages(world, page_idp)
    start = client.get("/ui/sign-in/oidc/corp", follow_redirects=False)
    with httpx.Client(timeout=10) as browser:
        back = page_idp.finish_login(browser, start.headers["location"], "alice", CALLBACK)
    first = client.get("/ui/sign-in/oidc/corp/callback", params=back, follow_redirects=False)
    assert first.status_code == 303
    again = client.get("/ui/sign-in/oidc/corp/callback", params=back, follow_redirects=False)
    assert again.status_code == 401 and "could not be completed" in again.text


def test_the_round_trip_state_rides_a_lax_cookie(world: World, page_idp: Idp) -> None:
    """The provider's redirect back is cross-site: only a SameSite=Lax cookie comes along."""
    client = pages(world, page_idp)
    start = client.get("/ui/sign-in/oidc/corp", follow_redirects=False)
    cookie = next(c for c in start.headers.get_list("set-cookie") if c.startswith("signoff-login="))
    assert "samesite=lax" in cookie.lower() and "httponly" in cookie.lower()
    assert "Max-Age=600" in cookie
    location = httpx.URL(start.headers["location"])
    assert location.params["code_challenge_method"] == "S256"
    assert {"state", "nonce", "code_challenge"} <= set(location.params)

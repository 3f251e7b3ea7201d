"""Signing in to `signoff serve --demo`'s authorization server as a person would, for tests.

`browse_sign_in` is the person's browser: from an authorization URL through the sign-in
page ("Act for <account>") to the redirect back to the client. `demo_token` is a whole
public client: registration (RFC 7591), authorization code with PKCE and a resource
indicator, the token endpoint.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets

import httpx

CALLBACK = "http://127.0.0.1:9/callback"  # never requested: the "browser" stops at it


def browse_sign_in(url: str, account: str, *, callback: str = CALLBACK) -> httpx.URL:
    """/authorize → the sign-in page → the chosen demo user → the redirect to ``callback``."""
    with httpx.Client(timeout=10) as browser:
        authorize = browser.get(url)
        assert authorize.status_code == 302, authorize.text
        page_url = str(httpx.URL(url).join(authorize.headers["location"]))
        page = browser.get(page_url)
        assert page.status_code == 200, page.text
        origin = str(httpx.URL(callback).copy_with(path="/", query=None)).rstrip("/")
        # The form posts on to the client's redirect URI: CSP form-action must allow it.
        assert f"form-action 'self' {origin}" in page.headers["content-security-policy"]
        fields = dict(re.findall(r'name="(csrf_token|request)" value="([^"]+)"', page.text))
        chosen = browser.post(page_url.split("?")[0], data={**fields, "user": account})
        assert chosen.status_code == 303, chosen.text
        back = httpx.URL(chosen.headers["location"])
        assert str(back).startswith(callback), back
        return back


def register(base: str, *, callback: str = CALLBACK, name: str = "test client") -> str:
    """A public client (no secret) registered for ``callback``; its client_id."""
    answer = httpx.post(
        f"{base}/register",
        json={
            "client_name": name,
            "redirect_uris": [callback],
            "token_endpoint_auth_method": "none",
        },
    )
    assert answer.status_code == 201, answer.text
    client_id: str = answer.json()["client_id"]
    return client_id


def demo_token(base: str, account: str = "u_42", *, resource: str | None = None) -> str:
    """An access token for ``resource`` (default: the /mcp endpoint) acting for ``account``."""
    client_id = register(base)
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CALLBACK,
        "code_challenge": challenge.rstrip(b"=").decode(),
        "code_challenge_method": "S256",
        "state": secrets.token_urlsafe(8),
        "resource": resource or f"{base}/mcp",
    }
    back = browse_sign_in(str(httpx.URL(f"{base}/authorize", params=query)), account)
    assert back.params["state"] == query["state"]
    token = httpx.post(
        f"{base}/token",
        data={
            "grant_type": "authorization_code",
            "code": back.params["code"],
            "redirect_uri": CALLBACK,
            "client_id": client_id,
            "code_verifier": verifier,
        },
    )
    assert token.status_code == 200, token.text
    access: str = token.json()["access_token"]
    return access

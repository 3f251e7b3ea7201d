"""Issue 23: the page's OIDC sign-in, against a token endpoint that misbehaves.

An ID token with several audiences whose `azp` is another client was accepted; a token
endpoint that dropped the connection made the callback a 503 with a traceback (Authlib
raised httpx2 errors signoff did not catch). Both are now a clear `NotAuthenticated`,
which the page shows as "the sign-in could not be completed".
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import jwt
import pytest

from signoff.exceptions import NotAuthenticated
from signoff.identity._config import IssuerConfig, LoginClient
from signoff.identity._discovery import ProviderMetadata
from signoff.identity._issuer import TrustedIssuer
from signoff.identity._keys import StaticKeys, VerificationKey
from signoff.identity._login import OidcLogin

ISSUER = "https://idp.test"
SECRET = b"s" * 32
CLIENT = LoginClient(name="corp", client_id="signoff-page")


class _Discovery:
    def __init__(self, token_endpoint: str) -> None:
        self.token_endpoint = token_endpoint

    def metadata(self) -> ProviderMetadata:
        return ProviderMetadata(
            issuer=ISSUER,
            jwks_uri=f"{ISSUER}/jwks",
            authorization_endpoint=f"{ISSUER}/auth",
            token_endpoint=self.token_endpoint,
        )


def _login(token_endpoint: str) -> OidcLogin:
    config = IssuerConfig.model_construct(
        issuer=ISSUER, audience="signoff", leeway_seconds=30, http_timeout_seconds=5
    )
    keys = StaticKeys([VerificationKey(SECRET, "HS256")])
    issuer = TrustedIssuer(config, keys, _Discovery(token_endpoint))  # type: ignore[arg-type]
    return OidcLogin(issuer, CLIENT)


@pytest.fixture
def dropping() -> Iterator[str]:
    """A token endpoint that reads the request and closes the connection unanswered."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(10)

    def drop() -> None:
        try:
            conn, _ = server.accept()
            conn.recv(4096)
            conn.close()
        except OSError:
            return

    thread = threading.Thread(target=drop, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/token"
    server.close()
    thread.join(5)


def _answering(body: dict[str, Any]) -> tuple[HTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            raw = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/token"


def _complete(login: OidcLogin) -> Any:
    return login.complete(
        code="c", nonce="n-1", code_verifier="v" * 43, redirect_uri="http://127.0.0.1/cb"
    )


def test_a_dropped_token_endpoint_connection_is_a_clear_refusal(dropping: str) -> None:
    with pytest.raises(NotAuthenticated) as caught:
        _complete(_login(dropping))
    assert caught.value.details["reason"] == "login"
    assert "identity provider" in caught.value.message


def _id_token(**claims: Any) -> str:
    now = int(time.time())
    body = {
        "iss": ISSUER,
        "sub": "alice",
        "tenant": "acme",
        "nonce": "n-1",
        "iat": now,
        "exp": now + 300,
        **claims,
    }
    return jwt.encode(body, SECRET, algorithm="HS256")


@pytest.mark.parametrize(
    ("claims", "accepted"),
    [
        ({"aud": "signoff-page"}, True),
        ({"aud": ["signoff-page", "evil-crm"], "azp": "signoff-page"}, True),
        ({"aud": ["signoff-page", "evil-crm"], "azp": "evil-crm"}, False),
        ({"aud": ["signoff-page", "evil-crm"]}, False),
        ({"aud": "signoff-page", "azp": "evil-crm"}, False),
    ],
)
def test_several_audiences_need_this_client_as_the_authorized_party(
    claims: dict[str, Any], accepted: bool
) -> None:
    server, endpoint = _answering(
        {"access_token": "a", "token_type": "Bearer", "id_token": _id_token(**claims)}
    )
    try:
        if accepted:
            assert _complete(_login(endpoint)).principal.subject == "alice"
        else:
            with pytest.raises(NotAuthenticated, match="another client"):
                _complete(_login(endpoint))
    finally:
        server.shutdown()
        server.server_close()

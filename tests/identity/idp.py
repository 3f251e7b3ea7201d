"""Start the real OpenID provider of ``tests/identity/idp`` (oidc-provider on Node) on loopback.

Keys are made here and handed to the provider as a private JWK set; rotating
them means restarting the provider with another set on the same port, as an
operator would. Tokens are obtained the way clients obtain them: the token
endpoint (client credentials), or the browser round trip for people.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

HERE = Path(__file__).parent / "idp"
SCRIPT = HERE / "provider.mjs"
START_SECONDS = 30
AGENT_CALLBACK = "http://127.0.0.1/agent-callback"


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def require_node() -> str:
    """The node binary and the provider's installed packages; in CI their absence fails."""
    node = shutil.which("node")
    missing = node is None or not (HERE / "node_modules" / "oidc-provider").is_dir()
    if missing:
        message = f"the test identity provider needs node and `npm ci --prefix {HERE}`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    assert node is not None
    return node


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class SigningKey:
    kid: str
    key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )

    def private_jwk(self) -> dict[str, Any]:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key))
        return {**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}


@dataclass
class Idp:
    """One provider process; ``issuer`` is its URL."""

    workdir: Path
    redirects: list[str] = field(default_factory=list)
    audience: str = "signoff"
    ttl_seconds: int = 300
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[str] | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, keys: list[SigningKey]) -> Idp:
        node = require_node()
        jwks = self.workdir / f"idp-jwks-{keys[0].kid}.json"
        jwks.write_text(json.dumps({"keys": [k.private_jwk() for k in keys]}))
        env = {
            **os.environ,
            "IDP_PORT": str(self.port),
            "IDP_JWKS": str(jwks),
            "IDP_AUDIENCE": self.audience,
            "IDP_REDIRECTS": ",".join(self.redirects),
            "IDP_TTL": str(self.ttl_seconds),
        }
        self.process = subprocess.Popen(
            [node, str(SCRIPT)], cwd=HERE, env=env, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith("ready "), f"the identity provider did not start: {line!r}"
        self._wait_until_serving()
        return self

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                httpx.get(self.issuer + "/.well-known/openid-configuration", timeout=2)
                return
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None

    def restart(self, keys: list[SigningKey]) -> None:
        """Rotate: the same issuer and port, another key set."""
        self.stop()
        self.start(keys)

    def person_token(
        self,
        client_id: str,
        account: str,
        *,
        redirect_uri: str = AGENT_CALLBACK,
        resource: str | None = None,
    ) -> str:
        """An access token a client gets for a person who signed in (code flow + PKCE)."""
        verifier = secrets.token_urlsafe(48)
        code = self.authorization_code(
            client_id,
            account,
            redirect_uri=redirect_uri,
            challenge=s256(verifier),
            resource=resource,
        )
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        if resource is not None:
            form["resource"] = resource
        response = httpx.post(
            self.issuer + "/token", data=form, auth=(client_id, f"{client_id}-secret"), timeout=10
        )
        assert response.status_code == 200, response.text
        token = response.json()["access_token"]
        assert isinstance(token, str)
        return token

    def authorization_code(
        self,
        client_id: str,
        account: str,
        *,
        redirect_uri: str,
        challenge: str,
        resource: str | None = None,
    ) -> str:
        """Drive the browser part: authorize, sign in as ``account``, return the code."""
        params = {
            "client_id": client_id,
            "response_type": "code",
            "scope": "openid signoff",
            "redirect_uri": redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": secrets.token_urlsafe(8),
            "resource": resource or f"{self.issuer}/signoff",
        }
        with httpx.Client(base_url=self.issuer, timeout=10) as browser:
            url = str(browser.get("/auth", params=params).headers["location"])
            return self.finish_login(browser, url, account, redirect_uri)["code"]

    def finish_login(
        self,
        browser: httpx.Client,
        url: str,
        account: str,
        redirect_uri: str,
        *,
        acr: str | None = None,
        auth_time: int | None = None,
    ) -> dict[str, str]:
        """From the authorization URL to the parameters sent back to ``redirect_uri``.

        ``acr`` names how the person authenticates (``urn:signoff:pwd`` by default,
        ``urn:signoff:mfa``); ``auth_time`` (Unix seconds) stands for an earlier sign-in.
        """
        form = {"login": account}
        if acr is not None:
            form["acr"] = acr
        if auth_time is not None:
            form["ts"] = str(auth_time)
        while not url.startswith(redirect_uri):
            if "/interaction/" in url and not url.endswith("/login"):
                response = browser.post(url, data=form)
            else:
                response = browser.get(url)
            assert response.status_code in (302, 303), response.text
            url = str(httpx.URL(url).join(response.headers["location"]))
        query = dict(httpx.URL(url).params)
        assert "code" in query, query
        return query

    def client_credentials(self, client_id: str, *, resource: str | None = None) -> str:
        """An access token (JWT) from the token endpoint, as a machine client gets one."""
        form = {"grant_type": "client_credentials", "scope": "signoff"}
        if resource is not None:
            form["resource"] = resource
        response = httpx.post(
            self.issuer + "/token", data=form, auth=(client_id, f"{client_id}-secret"), timeout=10
        )
        assert response.status_code == 200, response.text
        token = response.json()["access_token"]
        assert isinstance(token, str)
        return token

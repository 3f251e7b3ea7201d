"""The confirmation page's OpenID Connect sign-in at a trusted issuer (code flow + PKCE).

Authlib's OAuth 2.0 client builds the authorization request and exchanges
the code (client authentication, PKCE verifier). The ID token is verified
like any other token of that issuer — its keys, its clock checks, its claim
mapping — with the page's client id as audience and the login's ``nonce``.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import jwt

try:  # Authlib's httpx client runs on httpx2 when it is installed, else on httpx
    import httpx2

    AUTHLIB_HTTP_ERROR: type[Exception] = httpx2.HTTPError
except ImportError:  # pragma: no cover - depends on what is installed
    AUTHLIB_HTTP_ERROR = httpx.HTTPError
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.httpx_client import OAuth2Client

from signoff._clock import Clock, SystemClock
from signoff._model import Principal
from signoff.exceptions import NotAuthenticated
from signoff.identity._config import LoginClient
from signoff.identity._discovery import ProviderMetadata
from signoff.identity._issuer import TrustedIssuer


def preferences_of(claims: dict[str, Any]) -> dict[str, str]:
    """The standard OIDC claims ``locale`` and ``zoneinfo``: how the person reads, not who."""
    return {
        k: v for k in ("locale", "zoneinfo") if isinstance(v := claims.get(k), str) and len(v) <= 64
    }


@dataclass(frozen=True, slots=True)
class LoginResult:
    """The person the ID token names, and until when (its ``exp``)."""

    principal: Principal
    valid_until: datetime
    preferences: dict[str, str] = field(default_factory=dict)
    """The token's ``locale`` and ``zoneinfo`` claims, when it has them (display only)."""
    id_token: str = ""
    """The provider-signed ID token itself, kept as evidence where the provider vouches
    for something (a passkey's enrolment); never logged."""


class OidcLogin:
    """One sign-in method of the page: a :class:`LoginClient` at one trusted issuer."""

    def __init__(
        self, issuer: TrustedIssuer, client: LoginClient, *, clock: Clock | None = None
    ) -> None:
        if issuer.discovery is None:
            raise ValueError("page sign-in needs an issuer found by OIDC discovery")
        self._issuer = issuer
        self._discovery = issuer.discovery
        self._client = client
        self._clock = clock or SystemClock()

    @property
    def name(self) -> str:
        return self._client.name

    @property
    def label(self) -> str:
        return self._client.label or f"Sign in with {self._client.name}"

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
        """The provider's authorization request; ``max_age``, ``acr_values`` and ``prompt``
        (OIDC Core 3.1.2.1) ask it to authenticate the person again, or more strongly."""
        endpoint = self._endpoints().authorization_endpoint
        step_up: dict[str, str] = {}
        if max_age is not None:
            step_up["max_age"] = str(max_age)
        if acr_values:
            step_up["acr_values"] = " ".join(acr_values)
        if prompt is not None:
            step_up["prompt"] = prompt
        with self._oauth(redirect_uri) as oauth:
            url, _ = oauth.create_authorization_url(
                endpoint,
                state=state,
                nonce=nonce,
                code_challenge=code_challenge,
                code_challenge_method="S256",
                **step_up,
            )
        return str(url)

    def complete(
        self, *, code: str, nonce: str, code_verifier: str, redirect_uri: str
    ) -> LoginResult:
        """Exchange the code, verify the ID token and its nonce, map its claims."""
        endpoint = self._endpoints().token_endpoint
        try:
            with self._oauth(redirect_uri) as oauth:
                token: dict[str, Any] = oauth.fetch_token(
                    endpoint, code=code, code_verifier=code_verifier, redirect_uri=redirect_uri
                )
        except (
            AuthlibBaseError,
            httpx.HTTPError,
            AUTHLIB_HTTP_ERROR,
            OSError,
            ValueError,
        ) as exc:
            # A refusal, a dropped connection, a timeout, an answer that is not JSON: the
            # sign-in failed, said plainly on the page, never a 5xx with a traceback.
            raise NotAuthenticated(
                f"the identity provider refused the sign-in: {_short(exc)}", reason="login"
            ) from None
        return self._verified(token.get("id_token"), nonce)

    def _verified(self, id_token: Any, nonce: str) -> LoginResult:
        if not isinstance(id_token, str):
            raise NotAuthenticated("the identity provider sent no ID token", reason="login")
        header = _header(id_token)
        claims = self._issuer.verify(
            id_token, header, self._clock.now(), audience=self._client.client_id
        )
        _check_authorized_party(claims, self._client.client_id)
        sent = claims.get("nonce")
        if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), nonce.encode()):
            raise NotAuthenticated("the ID token is not for this sign-in (nonce)", reason="login")
        valid_until = datetime.fromtimestamp(float(claims["exp"]), UTC)
        principal = self._issuer.principal(claims)
        return LoginResult(principal, valid_until, preferences_of(claims), id_token)

    def _endpoints(self) -> ProviderMetadata:
        metadata = self._discovery.metadata()
        if metadata.authorization_endpoint is None or metadata.token_endpoint is None:
            raise NotAuthenticated(
                "the identity provider publishes no authorization or token endpoint",
                reason="login",
            )
        return metadata

    def _oauth(self, redirect_uri: str) -> OAuth2Client:
        return OAuth2Client(
            client_id=self._client.client_id,
            client_secret=self._client.client_secret,
            scope=" ".join(self._client.scopes),
            redirect_uri=redirect_uri,
            token_endpoint_auth_method=(
                "client_secret_basic" if self._client.client_secret else "none"
            ),
            timeout=self._issuer.config.http_timeout_seconds,
        )


def _check_authorized_party(claims: dict[str, Any], client_id: str) -> None:
    """OpenID Connect Core §3.1.3.7: with several audiences, ``azp`` must be this client;
    an ``azp`` naming another client is refused whatever the audiences."""
    audience = claims.get("aud")
    audiences = [audience] if isinstance(audience, str) else list(audience or ())
    party = claims.get("azp")
    if (len(audiences) > 1 and party is None) or (party is not None and party != client_id):
        raise NotAuthenticated("the ID token was issued to another client (azp)", reason="audience")


def _header(token: str) -> dict[str, Any]:
    try:
        return jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise NotAuthenticated("the ID token is not a JWT", reason="malformed") from None


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]

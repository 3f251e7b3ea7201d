"""Development tokens: signed with the development HS256 key, refused in production."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import jwt

from signoff.exceptions import InvalidIssuer


class DevTokenSettings(Protocol):
    @property
    def development(self) -> bool: ...

    @property
    def jwt_audience(self) -> str: ...

    def effective_hs256_secret(self) -> bytes | None: ...

    def effective_issuer(self) -> str: ...


def mint_dev_token(
    settings: DevTokenSettings,
    *,
    subject: str,
    tenant: str,
    roles: Sequence[str] = (),
    actor: str | None = None,
    client: str | None = None,
    ttl_seconds: int = 3600,
    now: datetime,
    resources: Sequence[str] = (),
) -> str:
    """A token signed with the development HS256 key; refused outside demo/development.

    ``resources`` (RFC 8707 resource indicators, e.g. ``https://…/mcp``) join the
    audience next to ``jwt_audience``, as the demo's authorization server binds its tokens.
    """
    secret = settings.effective_hs256_secret()
    if not settings.development or secret is None:
        raise InvalidIssuer("dev-token works only in demo or development mode with an HS256 key")
    issued = int(now.timestamp())
    claims: dict[str, Any] = {
        "iss": settings.effective_issuer(),
        "aud": [settings.jwt_audience, *resources] if resources else settings.jwt_audience,
        "sub": subject,
        "tenant": tenant,
        "roles": list(roles),
        "iat": issued,
        "exp": issued + ttl_seconds,
        "jti": secrets.token_hex(8),
    }
    if actor is not None:
        claims["act"] = {"sub": actor}
    if client is not None:
        claims["azp"] = client
    return jwt.encode(claims, secret, algorithm="HS256")

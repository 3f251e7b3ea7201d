"""One trusted issuer: verify a token's signature and registered claims, map the rest.

Signature, ``iss`` and ``aud`` are PyJWT's checks. ``exp``, ``nbf`` and ``iat``
are checked here against the injected server clock, so expiry boundaries are
testable without sleeping, and an ``exp`` further ahead than the issuer's
``max_lifetime_seconds`` is refused as absurd rather than trusted for years.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import jwt

from signoff._model import Principal
from signoff.exceptions import InvalidIssuer, NotAuthenticated
from signoff.identity._claims import principal_from_claims
from signoff.identity._config import IssuerConfig
from signoff.identity._discovery import Discovery
from signoff.identity._keys import (
    JwksUrlKeys,
    KeySource,
    StaticKeys,
    VerificationKey,
    load_jwks,
    load_pem,
)

REGISTERED = ("exp", "iss", "aud")
_ERRORS: Mapping[type[jwt.PyJWTError], tuple[str, str]] = {
    jwt.InvalidAudienceError: ("the token is for another audience", "audience"),
    jwt.InvalidIssuerError: ("the token has another issuer", "issuer"),
}


class TrustedIssuer:
    """An issuer's keys, audience and claim mapping."""

    def __init__(
        self, config: IssuerConfig, keys: KeySource, discovery: Discovery | None = None
    ) -> None:
        self.config = config
        self.keys = keys
        self.discovery = discovery

    @classmethod
    def from_config(cls, config: IssuerConfig) -> TrustedIssuer:
        discovery = None
        if config.uses_discovery:
            discovery = Discovery(config.issuer, timeout_seconds=config.http_timeout_seconds)
        return cls(config, _key_source(config, discovery), discovery)

    @property
    def issuer(self) -> str:
        return self.config.issuer

    def verify(
        self, token: str, header: Mapping[str, Any], now: datetime, *, audience: str | None = None
    ) -> dict[str, Any]:
        """The verified claims, or NotAuthenticated with a ``reason``."""
        algorithm, kid = header.get("alg"), header.get("kid")
        if not isinstance(algorithm, str) or not (kid is None or isinstance(kid, str)):
            raise NotAuthenticated("the token header is malformed", reason="malformed")
        candidates = self.keys.candidates(algorithm, kid)
        if not candidates:
            raise NotAuthenticated(
                "no key accepts this token's algorithm and key id", reason="algorithm_not_allowed"
            )
        claims = self._decode(token, candidates, audience or self.config.audience)
        self._check_times(claims, now)
        return claims

    def principal(self, claims: dict[str, Any]) -> Principal:
        return principal_from_claims(
            claims, self.config.claims, issuer=self.issuer, tenants=self.config.allowed_tenants
        )

    def _decode(
        self, token: str, candidates: list[VerificationKey], audience: str
    ) -> dict[str, Any]:
        for index, key in enumerate(candidates):
            try:
                return jwt.decode(
                    token,
                    key.key,
                    algorithms=[key.algorithm],
                    audience=audience,
                    issuer=self.config.issuer,
                    options={
                        "require": list(REGISTERED),
                        "verify_exp": False,
                        "verify_nbf": False,
                        "verify_iat": False,
                    },
                )
            except jwt.InvalidSignatureError:
                if index == len(candidates) - 1:
                    raise NotAuthenticated(
                        "the token signature does not verify", reason="invalid_signature"
                    ) from None
            except jwt.MissingRequiredClaimError as exc:
                raise NotAuthenticated(
                    f"the token lacks the {exc.claim!r} claim", reason="missing_claim"
                ) from None
            except jwt.PyJWTError as exc:
                fallback = (f"the token is invalid: {exc}", "invalid")
                message, reason = _ERRORS.get(type(exc), fallback)
                raise NotAuthenticated(message, reason=reason) from None
        raise AssertionError("unreachable")

    def _check_times(self, claims: dict[str, Any], now: datetime) -> None:
        moment, leeway = now.timestamp(), self.config.leeway_seconds
        expires = _number(claims, "exp")
        if expires is None or expires <= moment - leeway:
            raise NotAuthenticated("the token has expired", reason="expired")
        if expires > moment + self.config.max_lifetime_seconds:
            raise NotAuthenticated(
                "the token's expiry lies further ahead than this issuer's tokens may live",
                reason="lifetime",
            )
        for name in ("nbf", "iat"):
            when = _number(claims, name)
            if when is not None and when > moment + leeway:
                raise NotAuthenticated(f"the token's {name} lies in the future", reason="immature")


def _number(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise NotAuthenticated(f"the {name} claim must be a number", reason="claims")
    return float(value)


def _key_source(config: IssuerConfig, discovery: Discovery | None) -> KeySource:
    if discovery is not None or config.jwks_url is not None:
        return JwksUrlKeys(
            discovery.jwks_uri if discovery is not None else _constant(config.jwks_url),
            algorithms=config.algorithms,
            cache_seconds=config.jwks_cache_seconds,
            cooldown_seconds=config.jwks_refresh_cooldown_seconds,
            timeout_seconds=config.http_timeout_seconds,
        )
    keys: list[VerificationKey] = []
    if config.hs256_secret is not None:
        keys.append(VerificationKey(config.hs256_secret, "HS256"))
    keys.extend(load_pem(entry) for entry in config.public_keys)
    if config.jwks_file is not None:
        keys.extend(load_jwks(_read(config.jwks_file)))
    return StaticKeys(keys)


def _constant(url: str | None) -> Callable[[], str]:
    def jwks_url() -> str:
        assert url is not None
        return url

    return jwks_url


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidIssuer(f"cannot read the JWKS file {path}: {exc}") from exc

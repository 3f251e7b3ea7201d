"""An identity provider's signed token, checked offline against the trust file's providers.

The trust file's ``identity_providers`` lists the issuers a verifier trusts to
vouch for people, each with its public keys (obtained from the provider, not
from the bundle)::

    {"issuer": "https://idp.example", "jwks": {"keys": [...]},
     "audiences": ["signoff-page"], "subject_claim": "sub", "tenant_claim": "tenant"}

``audiences`` (optional) pins the clients the token may be issued to;
``subject_claim`` (default ``sub``) and ``tenant_claim`` (optional) name the
claims that say who the person is, as the deployment maps them. Expiry is
checked against the time the log recorded the token at, not today: an ID
token lives minutes, the proof years.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jwt
from jwt import PyJWKSet
from jwt.exceptions import PyJWKError, PyJWKSetError

from signoff.proof._trust import TrustRoot

ALGORITHMS = ("RS256", "PS256", "ES256", "ES384", "EdDSA")
SKEW_SECONDS = 120


class IdpTokenRejected(Exception):
    """The token was not signed by a trusted identity provider for this person."""


def verify_idp_token(
    token: str, trust: TrustRoot, *, at_seconds: int, subject: str, tenant: str
) -> dict[str, Any]:
    """The token's claims when a provider in ``trust`` signed it for ``subject`` (in
    ``tenant``, when the provider names a tenant claim) and it was valid at ``at_seconds``."""
    try:
        unverified = jwt.decode(token, options={"verify_signature": False})
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise IdpTokenRejected(f"the identity token is not a JWT ({exc})") from None
    provider = _provider(trust, unverified.get("iss"))
    claims = _verified(token, header, provider)
    _check_time(claims, at_seconds)
    subject_claim = str(provider.get("subject_claim") or "sub")
    if claims.get(subject_claim) != subject:
        raise IdpTokenRejected(f"the identity token names another person than {subject!r}")
    tenant_claim = provider.get("tenant_claim")
    if tenant_claim and claims.get(str(tenant_claim)) != tenant:
        raise IdpTokenRejected(f"the identity token names another tenant than {tenant!r}")
    return claims


def _provider(trust: TrustRoot, issuer: Any) -> Mapping[str, Any]:
    for provider in trust.identity_providers:
        if isinstance(issuer, str) and provider.get("issuer") == issuer:
            return provider
    raise IdpTokenRejected(f"the identity token's issuer {issuer!r} is not in the trust file")


def _verified(token: str, header: dict[str, Any], provider: Mapping[str, Any]) -> dict[str, Any]:
    try:
        keys = PyJWKSet.from_dict(dict(provider.get("jwks") or {}))
    except (PyJWKError, PyJWKSetError) as exc:
        raise IdpTokenRejected(f"the trust file's keys for the provider load not: {exc}") from None
    kid = header.get("kid")
    candidates = [k for k in keys.keys if kid is None or k.key_id == kid]
    if not candidates:
        raise IdpTokenRejected(f"no key {kid!r} of the provider is in the trust file")
    audiences = list(provider.get("audiences") or ())
    for key in candidates:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=list(ALGORITHMS),
                audience=audiences or None,
                issuer=str(provider["issuer"]),
                options={
                    "verify_aud": bool(audiences),
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_nbf": False,
                    "require": ["iss", "sub", "iat", "exp"],
                },
            )
        except jwt.InvalidSignatureError:
            continue
        except jwt.PyJWTError as exc:
            raise IdpTokenRejected(f"the identity token does not verify: {exc}") from None
        return claims
    raise IdpTokenRejected("the identity token's signature does not verify with the provider's")


def _check_time(claims: Mapping[str, Any], at_seconds: int) -> None:
    issued, expires = claims.get("iat"), claims.get("exp")
    if not isinstance(issued, int | float) or not isinstance(expires, int | float):
        raise IdpTokenRejected("the identity token has no numeric iat and exp")
    if not issued - SKEW_SECONDS <= at_seconds <= expires + SKEW_SECONDS:
        raise IdpTokenRejected("the log recorded the identity token outside its lifetime")

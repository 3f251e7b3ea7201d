"""Bearer JWT identity: who calls, for which tenant, with which roles, through which agent.

Each verification key carries its own algorithm allow-list (RFC 8725): an
HS256 secret verifies only HS256, an RSA key only RS256/PS256, an Ed25519 key
only EdDSA. So ``alg: none`` and HS/RS key confusion find no key at all.
``iss``, ``aud``, ``exp``, ``sub`` and ``tenant`` are required; ``roles`` is
a list of strings; ``act`` (RFC 8693) names the agent acting for ``sub``.
Identity never comes from a request body.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from signoff._model import PAGE_SURFACE, Principal
from signoff.exceptions import NotAuthenticated
from signoff.http._settings import PublicKey, Settings, SettingsError

MAX_TOKEN_CHARS = 8192
MAX_ROLES = 64
REQUIRED_CLAIMS = ("exp", "iss", "aud", "sub", "tenant")
_NAME = re.compile(r"^[\x21-\x7e]{1,255}$")
_ALGORITHM_KEY_TYPES: dict[str, tuple[type[Any], ...]] = {
    "RS256": (rsa.RSAPublicKey,),
    "PS256": (rsa.RSAPublicKey,),
    "ES256": (ec.EllipticCurvePublicKey,),
    "EdDSA": (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey),
}


@dataclass(frozen=True, slots=True)
class VerificationKey:
    """One key and the only algorithm it may verify."""

    key: Any
    algorithm: str
    kid: str | None = None


class Authenticator:
    """Turns a bearer JWT into a :class:`~signoff.Principal`, or raises NotAuthenticated."""

    def __init__(
        self,
        keys: Sequence[VerificationKey],
        *,
        issuer: str,
        audience: str,
        leeway_seconds: int = 30,
    ) -> None:
        if not keys:
            raise SettingsError("at least one JWT verification key is required")
        self._keys = tuple(keys)
        self.issuer = issuer
        self.audience = audience
        self._leeway = leeway_seconds

    @classmethod
    def from_settings(cls, settings: Settings) -> Authenticator:
        keys: list[VerificationKey] = []
        secret = settings.effective_hs256_secret()
        if secret is not None:
            keys.append(VerificationKey(secret, "HS256"))
        keys.extend(_load_pem(entry) for entry in settings.jwt_public_keys)
        if settings.jwt_jwks_file is not None:
            keys.extend(load_jwks(settings.jwt_jwks_file.read_text(encoding="utf-8")))
        return cls(
            keys,
            issuer=settings.effective_issuer(),
            audience=settings.jwt_audience,
            leeway_seconds=settings.jwt_leeway_seconds,
        )

    def authenticate(self, token: str) -> Principal:
        """Verify signature, algorithm, issuer, audience and expiry; map the claims."""
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise NotAuthenticated("the bearer token is missing or too long")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise NotAuthenticated("the bearer token is not a JWT", reason="malformed") from None
        algorithm = header.get("alg")
        if "crit" in header:
            raise NotAuthenticated("critical JWT header extensions are not supported")
        claims = self._verify(token, algorithm, header.get("kid"))
        return principal_from_claims(claims)

    def _verify(self, token: str, algorithm: Any, kid: Any) -> dict[str, Any]:
        candidates = [
            k
            for k in self._keys
            if k.algorithm == algorithm and (kid is None or k.kid in (None, kid))
        ]
        if not candidates:
            raise NotAuthenticated(
                "no key accepts this token's algorithm", reason="algorithm_not_allowed"
            )
        for index, key in enumerate(candidates):
            try:
                return jwt.decode(
                    token,
                    key.key,
                    algorithms=[key.algorithm],
                    audience=self.audience,
                    issuer=self.issuer,
                    leeway=self._leeway,
                    options={"require": list(REQUIRED_CLAIMS)},
                )
            except jwt.InvalidSignatureError:
                if index == len(candidates) - 1:
                    raise NotAuthenticated(
                        "the token signature does not verify", reason="invalid_signature"
                    ) from None
            except jwt.ExpiredSignatureError:
                raise NotAuthenticated("the token has expired", reason="expired") from None
            except jwt.InvalidAudienceError:
                raise NotAuthenticated(
                    "the token is for another audience", reason="audience"
                ) from None
            except jwt.InvalidIssuerError:
                raise NotAuthenticated("the token has another issuer", reason="issuer") from None
            except jwt.MissingRequiredClaimError as exc:
                raise NotAuthenticated(
                    f"the token lacks the {exc.claim!r} claim", reason="missing_claim"
                ) from None
            except jwt.PyJWTError as exc:
                raise NotAuthenticated(f"the token is invalid: {exc}", reason="invalid") from None
        raise AssertionError("unreachable")


def principal_from_claims(claims: dict[str, Any]) -> Principal:
    subject = _name(claims.get("sub"), "sub")
    tenant = _name(claims.get("tenant"), "tenant")
    roles = claims.get("roles", [])
    if not isinstance(roles, list) or len(roles) > MAX_ROLES:
        raise NotAuthenticated("the roles claim must be a list of role names", reason="claims")
    act = claims.get("act")
    actor = None
    if act is not None:
        if not isinstance(act, dict):
            raise NotAuthenticated("the act claim must be an object with sub", reason="claims")
        actor = _name(act.get("sub"), "act.sub")
    return Principal(
        subject=subject,
        tenant=tenant,
        roles=frozenset(_name(role, "roles[]") for role in roles),
        actor=actor,
        client=_client(claims),
    )


def _client(claims: dict[str, Any]) -> str | None:
    """The OAuth client the token was issued to (``azp``, else ``client_id``), if named."""
    raw = claims.get("azp", claims.get("client_id"))
    if raw is None:
        return None
    client = _name(raw, "azp")
    if client == PAGE_SURFACE:
        raise NotAuthenticated(
            f"the client name {PAGE_SURFACE!r} is reserved for the confirmation page",
            reason="claims",
        )
    return client


def _name(value: Any, claim: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise NotAuthenticated(f"the {claim} claim must be a printable string", reason="claims")
    return value


def _load_pem(entry: PublicKey) -> VerificationKey:
    try:
        key = load_pem_public_key(entry.path.read_bytes())
    except (OSError, ValueError, TypeError) as exc:
        raise SettingsError(f"cannot load the public key {entry.path}: {exc}") from exc
    if not isinstance(key, _ALGORITHM_KEY_TYPES[entry.algorithm]):
        raise SettingsError(f"{entry.path} is not a key for {entry.algorithm}")
    return VerificationKey(key, entry.algorithm, entry.kid)


def load_jwks(text: str) -> list[VerificationKey]:
    """Public keys of a JWKS document; symmetric (``oct``) keys are refused."""
    try:
        document = json.loads(text)
        entries = document["keys"]
    except (ValueError, KeyError, TypeError) as exc:
        raise SettingsError(f"the JWKS file is not a JWK set: {exc}") from exc
    keys = []
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("kty") == "oct":
            raise SettingsError("the JWKS file may hold public keys only")
        if entry.get("use", "sig") != "sig":
            continue
        try:
            jwk = jwt.PyJWK.from_dict(entry)
        except jwt.PyJWTError as exc:
            raise SettingsError(f"unusable key in the JWKS file: {exc}") from exc
        if jwk.algorithm_name not in _ALGORITHM_KEY_TYPES:
            raise SettingsError(f"JWKS algorithm {jwk.algorithm_name} is not allowed")
        keys.append(VerificationKey(jwk.key, jwk.algorithm_name, jwk.key_id))
    return keys


def mint_dev_token(
    settings: Settings,
    *,
    subject: str,
    tenant: str,
    roles: Sequence[str] = (),
    actor: str | None = None,
    client: str | None = None,
    ttl_seconds: int = 3600,
    now: datetime,
) -> str:
    """A token signed with the development HS256 key; refused outside demo/development."""
    secret = settings.effective_hs256_secret()
    if not settings.development or secret is None:
        raise SettingsError("dev-token works only in demo or development mode with an HS256 key")
    issued = int(now.timestamp())
    claims: dict[str, Any] = {
        "iss": settings.effective_issuer(),
        "aud": settings.jwt_audience,
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

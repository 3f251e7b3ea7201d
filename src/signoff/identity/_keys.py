"""Verification keys and where they come from: PEM files, a JWKS file, a JWKS URL.

Each key carries the one algorithm it may verify (RFC 8725): an HS256 secret
verifies only HS256, an RSA key only RS256/PS256, an EC key only ES256, an
OKP key only EdDSA. So ``alg: none`` and HS/RS key confusion find no key.
A JWKS URL is fetched through PyJWT's ``PyJWKClient``: the set is cached,
an unknown ``kid`` (the provider rotated its keys) forces one refetch, and
forced refetches are spaced by a cooldown so random ``kid``s cannot turn
every request into a fetch.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from signoff.exceptions import InvalidIssuer, NotAuthenticated
from signoff.identity._config import PublicKey

ALGORITHM_KEY_TYPES: dict[str, tuple[type[Any], ...]] = {
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


class KeySource(Protocol):
    remote: bool
    """True when finding a key may need a network fetch (run it off the event loop)."""

    def candidates(self, algorithm: str, kid: str | None) -> list[VerificationKey]:
        """The keys that may verify a token with this header (possibly none)."""
        ...


class StaticKeys:
    """Keys known at start: an HS256 secret, PEM files, a JWKS file."""

    remote = False

    def __init__(self, keys: Sequence[VerificationKey]) -> None:
        if not keys:
            raise InvalidIssuer("at least one JWT verification key is required")
        self._keys = tuple(keys)

    def candidates(self, algorithm: str, kid: str | None) -> list[VerificationKey]:
        return [
            k
            for k in self._keys
            if k.algorithm == algorithm and (kid is None or k.kid in (None, kid))
        ]


class JwksUrlKeys:
    """Keys of a JWKS URL (given, or found lazily by OIDC discovery), cached and rotated."""

    remote = True

    def __init__(
        self,
        jwks_url: Callable[[], str],
        *,
        algorithms: Sequence[str],
        cache_seconds: int,
        cooldown_seconds: int,
        timeout_seconds: float,
    ) -> None:
        self._jwks_url = jwks_url
        self._algorithms = frozenset(algorithms)
        self._options = {
            "cache_jwk_set": True,
            "lifespan": cache_seconds,
            "cooldown_duration": cooldown_seconds,
            "timeout": timeout_seconds,
        }
        self._client: jwt.PyJWKClient | None = None

    def candidates(self, algorithm: str, kid: str | None) -> list[VerificationKey]:
        if algorithm not in self._algorithms:
            return []
        try:
            client = self._jwks_client()
            jwks = [client.get_signing_key(kid)] if kid else client.get_signing_keys()
        except jwt.PyJWKClientConnectionError:
            raise NotAuthenticated(
                "the identity provider's keys cannot be fetched now", reason="keys_unavailable"
            ) from None
        except jwt.PyJWKClientError:
            return []
        except jwt.PyJWTError:
            return []
        return [key for jwk in jwks if (key := _usable(jwk)) and key.algorithm == algorithm]

    def _jwks_client(self) -> jwt.PyJWKClient:
        if self._client is None:
            self._client = jwt.PyJWKClient(self._jwks_url(), **self._options)  # type: ignore[arg-type]
        return self._client


def _usable(jwk: jwt.PyJWK) -> VerificationKey | None:
    if jwk.algorithm_name not in ALGORITHM_KEY_TYPES:
        return None
    if not isinstance(jwk.key, ALGORITHM_KEY_TYPES[jwk.algorithm_name]):
        return None
    return VerificationKey(jwk.key, jwk.algorithm_name, jwk.key_id)


def load_pem(entry: PublicKey) -> VerificationKey:
    if entry.algorithm not in ALGORITHM_KEY_TYPES:
        raise InvalidIssuer(f"{entry.path}: algorithm {entry.algorithm} is not allowed")
    try:
        key = load_pem_public_key(entry.path.read_bytes())
    except (OSError, ValueError, TypeError) as exc:
        raise InvalidIssuer(f"cannot load the public key {entry.path}: {exc}") from exc
    if not isinstance(key, ALGORITHM_KEY_TYPES[entry.algorithm]):
        raise InvalidIssuer(f"{entry.path} is not a key for {entry.algorithm}")
    return VerificationKey(key, entry.algorithm, entry.kid)


def load_jwks(text: str) -> list[VerificationKey]:
    """Public keys of a JWKS document; symmetric (``oct``) keys are refused."""
    try:
        document = json.loads(text)
        entries = document["keys"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidIssuer(f"the JWKS file is not a JWK set: {exc}") from exc
    keys = []
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("kty") == "oct":
            raise InvalidIssuer("the JWKS file may hold public keys only")
        if entry.get("use", "sig") != "sig":
            continue
        try:
            jwk = jwt.PyJWK.from_dict(entry)
        except jwt.PyJWTError as exc:
            raise InvalidIssuer(f"unusable key in the JWKS file: {exc}") from exc
        if jwk.algorithm_name not in ALGORITHM_KEY_TYPES:
            raise InvalidIssuer(f"JWKS algorithm {jwk.algorithm_name} is not allowed")
        keys.append(VerificationKey(jwk.key, jwk.algorithm_name, jwk.key_id))
    return keys

"""Compact JWS signing and verification through PyJWT, one key per ``kid``.

PyJWT (already signoff's JOSE dependency for identity tokens) was chosen over
joserfc: it does EdDSA and ES256 with ``cryptography``, and a ``PyJWK`` binds
the algorithm of its key, so a token whose header names another ``alg`` than
the key it points to is refused before any signature check. Claims are
checked here, against an injected clock, not by PyJWT's own wall clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from jwt import PyJWK, PyJWS
from jwt.exceptions import InvalidKeyError, PyJWKError, PyJWTError

from signoff._canonical import canonical_json
from signoff.exceptions import InvalidToken, ProofFormatError
from signoff.proof._keys import (
    ALGORITHMS,
    PURPOSES,
    WINDOW_MEMBERS,
    SigningKey,
    public_keys_of,
    thumbprint,
)


@dataclass(frozen=True, slots=True)
class KeyWindow:
    """What a trusted key may have signed, and when (seconds; ``None``: unbounded)."""

    purposes: tuple[str, ...] = PURPOSES
    not_before: int | None = None
    not_after: int | None = None

    def refusal(self, kid: str, purpose: str, at: int | None) -> str | None:
        """Why a ``purpose`` signature made at ``at`` is outside this window, or None."""
        if purpose not in self.purposes:
            return f"key {kid} may not sign {purpose}s (its purposes: {', '.join(self.purposes)})"
        if at is None:
            if self.not_after is None:
                return None  # a key that was never retired: any time is inside its window
            return f"the {purpose} carries no signed time to check retired key {kid}'s window"
        if self.not_before is not None and at < self.not_before:
            return f"signed at {at}, before key {kid} was valid ({self.not_before})"
        if self.not_after is not None and at >= self.not_after:
            return f"signed at {at}, after key {kid} was retired ({self.not_after})"
        return None


def _window(entry: Mapping[str, Any]) -> KeyWindow:
    kid = entry.get("kid")
    purposes = entry.get("purposes", list(PURPOSES))
    if not isinstance(purposes, list) or not purposes or not set(purposes) <= set(PURPOSES):
        raise ProofFormatError(f"JWKS key {kid!r}: purposes must be a list of {PURPOSES}")
    times = [entry.get(name) for name in ("not_before", "not_after")]
    if not all(t is None or type(t) is int for t in times):
        raise ProofFormatError(f"JWKS key {kid!r}: not_before/not_after are integer seconds")
    return KeyWindow(tuple(purposes), times[0], times[1])


class PublicKeys:
    """Trusted verification keys (public JWKs), looked up by ``kid``, with their windows."""

    def __init__(self, jwks: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> None:
        self._keys: dict[str, PyJWK] = {}
        self._windows: dict[str, KeyWindow] = {}
        self._jwks = public_keys_of(jwks)
        for entry in self._jwks:
            alg = entry.get("alg")
            if alg not in ALGORITHMS:
                raise ProofFormatError(f"JWKS key {entry.get('kid')!r} has no usable alg {alg!r}")
            jwk = {k: v for k, v in entry.items() if k not in WINDOW_MEMBERS}
            try:
                key = PyJWK.from_dict(jwk, algorithm=alg)
            except (PyJWKError, InvalidKeyError) as exc:
                kid = entry.get("kid")
                raise ProofFormatError(f"JWKS key {kid!r} does not load: {exc}") from None
            if entry.get("kid") != thumbprint(entry):
                raise ProofFormatError(f"JWKS key {entry.get('kid')!r}: kid is not its thumbprint")
            self._keys[str(entry["kid"])] = key
            self._windows[str(entry["kid"])] = _window(entry)

    @classmethod
    def from_file(cls, path: str | Path) -> PublicKeys:
        try:
            document = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ProofFormatError(f"cannot read the JWKS file {path} ({exc.strerror})") from None
        except json.JSONDecodeError as exc:
            raise ProofFormatError(f"the JWKS file {path} is not JSON ({exc.msg})") from None
        if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            raise ProofFormatError(f"the JWKS file {path} has no 'keys' list")
        return cls(document)

    def get(self, kid: str) -> PyJWK | None:
        return self._keys.get(kid)

    def window(self, kid: str) -> KeyWindow:
        return self._windows.get(kid, KeyWindow())

    def ed25519(self, purpose: str | None = None) -> Iterator[tuple[str, ed25519.Ed25519PublicKey]]:
        for kid, key in self._keys.items():
            if purpose is not None and purpose not in self.window(kid).purposes:
                continue
            if isinstance(key.key, ed25519.Ed25519PublicKey):
                yield kid, key.key

    def kid_of(self, public_key: Ed25519PublicKey) -> str:
        raw = public_key.public_bytes_raw()
        for kid, key in self.ed25519():
            if key.public_bytes_raw() == raw:
                return kid
        raise KeyError("not a trusted key")

    def jwks(self) -> dict[str, Any]:
        return {"keys": list(self._jwks)}

    def __len__(self) -> int:
        return len(self._keys)


def sign_jws(key: SigningKey, payload: Mapping[str, Any], *, typ: str) -> str:
    """Compact JWS over the JCS form of ``payload``, naming the key by ``kid``."""
    return PyJWS().encode(
        canonical_json(dict(payload)),
        key.private_key,
        algorithm=key.alg,
        headers={"kid": key.kid, "typ": typ},
    )


def signed_kid(token: str) -> str | None:
    """The ``kid`` a compact JWS names (nothing verified)."""
    try:
        kid = PyJWS().get_unverified_header(token).get("kid")
    except PyJWTError:
        return None
    return kid if isinstance(kid, str) else None


def verify_jws(token: str, keys: PublicKeys, *, typ: str) -> dict[str, Any]:
    """The payload of ``token`` if a trusted key signed it with that key's algorithm.

    Refusals are :class:`InvalidToken`: unknown ``kid`` (another deployment's
    key, or a retired one that was removed), an ``alg`` other than the key's,
    a wrong ``typ``, a bad signature (any edited claim), a malformed token.
    """
    jws = PyJWS()
    try:
        header = jws.get_unverified_header(token)
    except PyJWTError:
        raise InvalidToken("not a compact JWS") from None
    kid = header.get("kid")
    key = keys.get(kid) if isinstance(kid, str) else None
    if key is None:
        raise InvalidToken(f"signed by a key this verifier does not trust (kid {kid!r})")
    if header.get("typ") != typ:
        raise InvalidToken(f"a {header.get('typ')!r} JWS where a {typ!r} is expected")
    try:
        payload = jws.decode_complete(token, key=key, algorithms=[key.algorithm_name])["payload"]
    except PyJWTError as exc:
        raise InvalidToken(f"the signature does not verify ({exc})") from None
    try:
        claims = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidToken("the JWS payload is not JSON") from None
    if not isinstance(claims, dict):
        raise InvalidToken("the JWS payload is not a JSON object")
    return claims

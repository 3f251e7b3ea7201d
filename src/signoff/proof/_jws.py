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
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519
from jwt import PyJWK, PyJWS
from jwt.exceptions import InvalidKeyError, PyJWKError, PyJWTError

from signoff._canonical import canonical_json
from signoff.exceptions import InvalidToken, ProofFormatError
from signoff.proof._keys import ALGORITHMS, SigningKey, public_keys_of, thumbprint


class PublicKeys:
    """Trusted verification keys (public JWKs), looked up by ``kid``."""

    def __init__(self, jwks: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> None:
        self._keys: dict[str, PyJWK] = {}
        self._jwks = public_keys_of(jwks)
        for entry in self._jwks:
            alg = entry.get("alg")
            if alg not in ALGORITHMS:
                raise ProofFormatError(f"JWKS key {entry.get('kid')!r} has no usable alg {alg!r}")
            try:
                key = PyJWK.from_dict(entry, algorithm=alg)
            except (PyJWKError, InvalidKeyError) as exc:
                kid = entry.get("kid")
                raise ProofFormatError(f"JWKS key {kid!r} does not load: {exc}") from None
            if entry.get("kid") != thumbprint(entry):
                raise ProofFormatError(f"JWKS key {entry.get('kid')!r}: kid is not its thumbprint")
            self._keys[str(entry["kid"])] = key

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

    def ed25519(self) -> Iterator[tuple[str, ed25519.Ed25519PublicKey]]:
        for kid, key in self._keys.items():
            if isinstance(key.key, ed25519.Ed25519PublicKey):
                yield kid, key.key

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

"""Signing keys: a JWK set file with private keys and one ``active`` kid.

The file (or the ``SIGNOFF_SIGNING_KEYS`` environment variable holding the
same JSON) is RFC 7517 JWK Set with one extra member::

    {"active": "<kid>", "keys": [{"kty": "OKP", "crv": "Ed25519", "x": …, "d": …,
                                  "kid": "<kid>", "alg": "EdDSA", "use": "sig"}, …]}

Keys never live in the database: someone who can write the database must
not be able to sign. ``kid`` is the RFC 7638 thumbprint of the public key,
so no two keys share one. Rotation adds a key and makes it active; older
keys stay in the file and in the published JWKS so that what they signed
still verifies.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from jwt import PyJWK
from jwt.algorithms import ECAlgorithm, OKPAlgorithm
from jwt.exceptions import PyJWKError

from signoff._canonical import canonical_json
from signoff.exceptions import SigningKeyError

ALGORITHMS = ("EdDSA", "ES256")
KEYS_ENV = "SIGNOFF_SIGNING_KEYS"
KEYS_FILE_ENV = "SIGNOFF_SIGNING_KEYS_FILE"
PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey
_PUBLIC_MEMBERS = {"OKP": ("crv", "kty", "x"), "EC": ("crv", "kty", "x", "y")}
_FIX = " — check the key file, or make one with `signoff keys generate --out FILE`"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def thumbprint(public_jwk: Mapping[str, Any]) -> str:
    """RFC 7638 JWK thumbprint (SHA-256, base64url): the key's ``kid``."""
    members = _PUBLIC_MEMBERS.get(str(public_jwk.get("kty")))
    if members is None:
        raise SigningKeyError(f"unsupported key type {public_jwk.get('kty')!r}{_FIX}")
    required = {name: public_jwk[name] for name in members}
    return b64url(hashlib.sha256(canonical_json(required)).digest())


@dataclass(frozen=True, slots=True)
class SigningKey:
    """One private signing key and its algorithm (``EdDSA`` or ``ES256``)."""

    kid: str
    alg: str
    private_key: PrivateKey

    def public_jwk(self) -> dict[str, Any]:
        jwk = _jwk_of(self.private_key.public_key(), self.alg)
        return {**jwk, "kid": self.kid, "alg": self.alg, "use": "sig"}

    def private_jwk(self) -> dict[str, Any]:
        jwk = _jwk_of(self.private_key, self.alg)
        return {**jwk, "kid": self.kid, "alg": self.alg, "use": "sig"}

    def public_bytes_raw(self) -> bytes:
        """The 32-byte Ed25519 public key (signed-note key IDs need it)."""
        if not isinstance(self.private_key, ed25519.Ed25519PrivateKey):
            raise SigningKeyError(f"key {self.kid} is not an Ed25519 key")
        return self.private_key.public_key().public_bytes_raw()


def _jwk_of(key: Any, alg: str) -> dict[str, Any]:
    algorithm = ECAlgorithm if alg == "ES256" else OKPAlgorithm
    jwk: dict[str, Any] = algorithm.to_jwk(key, as_dict=True)
    jwk.pop("kid", None)
    return jwk


def generate_key(alg: str = "EdDSA") -> SigningKey:
    """A fresh key from the operating system's randomness (inside ``cryptography``)."""
    if alg == "EdDSA":
        private: PrivateKey = ed25519.Ed25519PrivateKey.generate()
    elif alg == "ES256":
        private = ec.generate_private_key(ec.SECP256R1())
    else:
        raise SigningKeyError(f"unsupported algorithm {alg!r} — use one of {', '.join(ALGORITHMS)}")
    public = _jwk_of(private.public_key(), alg)
    return SigningKey(thumbprint(public), alg, private)


@dataclass(frozen=True, slots=True)
class KeySet:
    """Every key this deployment holds; ``active`` signs, all of them verify."""

    keys: tuple[SigningKey, ...]
    active: str

    def __post_init__(self) -> None:
        kids = [key.kid for key in self.keys]
        if len(set(kids)) != len(kids):
            raise SigningKeyError(f"two keys share one kid{_FIX}")
        if self.active not in kids:
            raise SigningKeyError(f"the active kid {self.active!r} is not in the key set{_FIX}")

    @classmethod
    def generate(cls, alg: str = "EdDSA") -> KeySet:
        key = generate_key(alg)
        return cls((key,), key.kid)

    @property
    def active_key(self) -> SigningKey:
        return next(key for key in self.keys if key.kid == self.active)

    def note_key(self) -> SigningKey:
        """The key that signs checkpoints: the active one, or the newest Ed25519 key.

        C2SP signed notes use Ed25519 (signature type 0x01), so a deployment
        whose JWS key is ES256 still keeps one Ed25519 key for checkpoints.
        """
        for key in (self.active_key, *reversed(self.keys)):
            if key.alg == "EdDSA":
                return key
        raise SigningKeyError(
            "checkpoints are Ed25519 signed notes and this key set has no EdDSA key"
            " — add one with `signoff keys rotate --alg EdDSA`"
        )

    def rotated(self, alg: str = "EdDSA") -> KeySet:
        """A new active key; every older key stays for verification."""
        key = generate_key(alg)
        return KeySet((*self.keys, key), key.kid)

    def public_jwks(self) -> dict[str, Any]:
        return {"keys": [key.public_jwk() for key in self.keys]}

    def to_json(self) -> str:
        document = {"active": self.active, "keys": [key.private_jwk() for key in self.keys]}
        return json.dumps(document, indent=2) + "\n"

    def save(self, path: str | Path) -> None:
        """Write the file readable by its owner only, replacing it atomically."""
        target = Path(path)
        temporary = target.with_name(f".{target.name}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(self.to_json())
        temporary.replace(target)


def keyset_from_json(text: str) -> KeySet:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SigningKeyError(f"the signing key set is not JSON ({exc.msg}){_FIX}") from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise SigningKeyError(f"the signing key set has no 'keys' list{_FIX}")
    keys = tuple(_private_key(entry) for entry in document["keys"])
    if not keys:
        raise SigningKeyError(f"the signing key set is empty{_FIX}")
    return KeySet(keys, str(document.get("active", keys[-1].kid)))


def _private_key(entry: Any) -> SigningKey:
    if not isinstance(entry, dict) or "d" not in entry:
        raise SigningKeyError(f"a signing key entry has no private part 'd'{_FIX}")
    alg = entry.get("alg")
    if alg not in ALGORITHMS:
        raise SigningKeyError(f"key alg {alg!r} is not one of {', '.join(ALGORITHMS)}{_FIX}")
    try:
        private = PyJWK.from_dict(entry, algorithm=alg).key
    except PyJWKError as exc:
        raise SigningKeyError(f"a signing key does not load ({exc}){_FIX}") from None
    if not isinstance(private, ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey):
        raise SigningKeyError(f"a signing key entry is not a private key{_FIX}")
    kid = thumbprint(_jwk_of(private.public_key(), alg))
    if entry.get("kid", kid) != kid:
        raise SigningKeyError(f"key {entry.get('kid')!r}: kid is not its thumbprint{_FIX}")
    return SigningKey(kid, alg, private)


def load_keyset(path: str | Path) -> KeySet:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        reason = f"cannot read the signing key file {path} ({exc.strerror})"
        raise SigningKeyError(reason + _FIX) from None
    return keyset_from_json(text)


def keyset_from_environment(environ: Mapping[str, str]) -> KeySet | None:
    """``SIGNOFF_SIGNING_KEYS`` (the JSON) or ``SIGNOFF_SIGNING_KEYS_FILE`` (a path); else None."""
    if environ.get(KEYS_ENV):
        return keyset_from_json(environ[KEYS_ENV])
    if environ.get(KEYS_FILE_ENV):
        return load_keyset(environ[KEYS_FILE_ENV])
    return None


def public_keys_of(jwks: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The public members of each key in a JWKS; private parts are dropped, never copied."""
    entries = jwks.get("keys", []) if isinstance(jwks, Mapping) else jwks
    public = []
    for entry in entries:
        members = _PUBLIC_MEMBERS.get(str(entry.get("kty")), ())
        kept = {name: entry[name] for name in members if name in entry}
        kept.update({k: entry[k] for k in ("kid", "alg", "use") if k in entry})
        public.append(kept)
    return public

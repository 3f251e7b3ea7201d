"""Signing keys: a JWK set file with private keys, one ``active`` kid, and MAC keys.

The file (or the ``SIGNOFF_SIGNING_KEYS`` environment variable holding the
same JSON) is an RFC 7517 JWK Set with a few extra members::

    {"active": "<kid>",
     "keys": [{"kty": "OKP", "crv": "Ed25519", "x": …, "d": …, "kid": "<kid>",
               "alg": "EdDSA", "use": "sig", "purposes": ["token", "receipt", "checkpoint"],
               "not_before": 1767225600}, …],
     "retired": [{<public JWK>, "purposes": […], "not_before": …, "not_after": …}, …],
     "mac_keys": [{"kid": "mac-…", "k": "<base64url 32 bytes>", "not_before": …}, …]}

Keys never live in the database: someone who can write the database must
not be able to sign. ``kid`` is the RFC 7638 thumbprint of the public key,
so no two keys share one. Each key has purposes (``token``, ``receipt``,
``checkpoint``) and a validity window in seconds (``not_before``, and
``not_after`` once retired). Rotation retires the keys the new one replaces:
their ``not_after`` is set, their private part leaves the file (unless kept
on purpose, and then it can never sign again) and their public half stays in
the published JWKS with its window, so what they signed while valid still
verifies and nothing they sign later does. ``mac_keys`` are the secrets the
gate authenticates its audit events with (proof/_event_mac.py); they are
never published.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from jwt import PyJWK
from jwt.algorithms import ECAlgorithm, OKPAlgorithm
from jwt.exceptions import PyJWKError

from signoff._canonical import canonical_json
from signoff.exceptions import SigningKeyError

ALGORITHMS = ("EdDSA", "ES256")
PURPOSES = ("token", "receipt", "checkpoint")
"""What a key may sign: confirmation tokens, signed receipts, checkpoint notes."""
WINDOW_MEMBERS = ("purposes", "not_before", "not_after")
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


def purposes_for(alg: str) -> tuple[str, ...]:
    """A new key's purposes: an ES256 key cannot sign checkpoints (C2SP notes are Ed25519)."""
    return PURPOSES if alg == "EdDSA" else ("token", "receipt")


@dataclass(frozen=True, slots=True)
class SigningKey:
    """One private signing key, its algorithm (``EdDSA`` or ``ES256``), purposes and window.

    ``not_after`` is set once the key is retired: it can then never sign again
    (:meth:`can_sign`), whether or not its private part is still in the file.
    """

    kid: str
    alg: str
    private_key: PrivateKey
    purposes: tuple[str, ...] = PURPOSES
    not_before: int = 0
    not_after: int | None = None

    def _window(self) -> dict[str, Any]:
        window: dict[str, Any] = {"purposes": list(self.purposes), "not_before": self.not_before}
        if self.not_after is not None:
            window["not_after"] = self.not_after
        return window

    def public_jwk(self) -> dict[str, Any]:
        jwk = _jwk_of(self.private_key.public_key(), self.alg)
        return {**jwk, "kid": self.kid, "alg": self.alg, "use": "sig", **self._window()}

    def private_jwk(self) -> dict[str, Any]:
        jwk = _jwk_of(self.private_key, self.alg)
        return {**jwk, "kid": self.kid, "alg": self.alg, "use": "sig", **self._window()}

    def public_bytes_raw(self) -> bytes:
        """The 32-byte Ed25519 public key (signed-note key IDs need it)."""
        if not isinstance(self.private_key, ed25519.Ed25519PrivateKey):
            raise SigningKeyError(f"key {self.kid} is not an Ed25519 key")
        return self.private_key.public_key().public_bytes_raw()

    @property
    def retired(self) -> bool:
        return self.not_after is not None

    def can_sign(self, purpose: str) -> bool:
        return not self.retired and purpose in self.purposes


@dataclass(frozen=True, slots=True)
class MacKey:
    """A secret that authenticates audit events; ``not_after`` once rotated out."""

    kid: str
    secret: bytes
    not_before: int = 0
    not_after: int | None = None

    @classmethod
    def of(cls, secret: bytes, not_before: int = 0) -> MacKey:
        digest = hashlib.sha256(b"signoff-mac-kid\n" + secret).digest()
        return cls("mac-" + b64url(digest[:9]), secret, not_before)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kid": self.kid, "k": b64url(self.secret)}
        out["not_before"] = self.not_before
        if self.not_after is not None:
            out["not_after"] = self.not_after
        return out

    def valid_at(self, seconds: int) -> bool:
        return self.not_before <= seconds and (self.not_after is None or seconds < self.not_after)


def _jwk_of(key: Any, alg: str) -> dict[str, Any]:
    algorithm = ECAlgorithm if alg == "ES256" else OKPAlgorithm
    jwk: dict[str, Any] = algorithm.to_jwk(key, as_dict=True)
    jwk.pop("kid", None)
    return jwk


def generate_key(
    alg: str = "EdDSA", *, not_before: int = 0, purposes: tuple[str, ...] | None = None
) -> SigningKey:
    """A fresh key from the operating system's randomness (inside ``cryptography``)."""
    if alg == "EdDSA":
        private: PrivateKey = ed25519.Ed25519PrivateKey.generate()
    elif alg == "ES256":
        private = ec.generate_private_key(ec.SECP256R1())
    else:
        raise SigningKeyError(f"unsupported algorithm {alg!r} — use one of {', '.join(ALGORITHMS)}")
    public = _jwk_of(private.public_key(), alg)
    return SigningKey(thumbprint(public), alg, private, purposes or purposes_for(alg), not_before)


@dataclass(frozen=True, slots=True)
class KeySet:
    """Every key this deployment holds; unretired keys sign, all of them verify.

    ``retired`` holds public JWKs (with their windows) of keys whose private
    part left the file at rotation; ``mac_keys`` the audit event secrets.
    """

    keys: tuple[SigningKey, ...]
    active: str
    retired: tuple[dict[str, Any], ...] = ()
    mac_keys: tuple[MacKey, ...] = field(default=())
    log_name: str = ""
    """The deployment's own log name (``signoff-<first kid>``), kept across rotations:
    the origin of its logs when no public URL or ``SIGNOFF_LOG_NAME`` names one."""

    def __post_init__(self) -> None:
        kids = [key.kid for key in self.keys] + [str(jwk.get("kid")) for jwk in self.retired]
        if len(set(kids)) != len(kids):
            raise SigningKeyError(f"two keys share one kid{_FIX}")
        if self.active not in kids[: len(self.keys)]:
            raise SigningKeyError(f"the active kid {self.active!r} is not in the key set{_FIX}")
        if self.active_key.retired:
            raise SigningKeyError(f"the active key {self.active!r} is retired{_FIX}")
        if not self.mac_keys:
            object.__setattr__(self, "mac_keys", (_derived_mac_key(self.keys),))
        if not self.log_name:
            object.__setattr__(self, "log_name", f"signoff-{kids[0][:16]}")

    @classmethod
    def generate(cls, alg: str = "EdDSA", *, now: int = 0) -> KeySet:
        key = generate_key(alg, not_before=now)
        return cls((key,), key.kid, mac_keys=(MacKey.of(secrets.token_bytes(32), now),))

    @property
    def active_key(self) -> SigningKey:
        return next(key for key in self.keys if key.kid == self.active)

    def signing_key(self, purpose: str) -> SigningKey:
        """The key that signs ``purpose``: the active one if it may, else the newest that may."""
        for key in (self.active_key, *reversed(self.keys)):
            if key.can_sign(purpose) and (purpose != "checkpoint" or key.alg == "EdDSA"):
                return key
        if purpose == "checkpoint":
            raise SigningKeyError(
                "checkpoints are Ed25519 signed notes and this key set has no unretired EdDSA"
                " key for them — add one with `signoff keys rotate --alg EdDSA`"
            )
        raise SigningKeyError(f"no unretired key may sign {purpose}s{_FIX}")

    def note_key(self) -> SigningKey:
        """The key that signs checkpoints (C2SP signed notes use Ed25519, type 0x01)."""
        return self.signing_key("checkpoint")

    @property
    def mac_key(self) -> MacKey:
        """The MAC key new audit events are authenticated with: the newest unretired one."""
        current = [key for key in self.mac_keys if key.not_after is None]
        if not current:
            raise SigningKeyError(f"every audit MAC key is retired{_FIX}")
        return current[-1]

    def rotated(self, alg: str = "EdDSA", *, now: int, keep_private: bool = False) -> KeySet:
        """A new active key; the keys it replaces are retired at ``now``.

        A key is replaced when the new one takes over all of its purposes. A
        retired key keeps its public half (and window) for verification; its
        private part leaves the file unless ``keep_private`` — and then it still
        can never sign. The audit MAC key is rotated too; the old one stays to
        check events written before ``now``.
        """
        new = generate_key(alg, not_before=now)
        kept: list[SigningKey] = []
        retired = list(self.retired)
        for key in self.keys:
            if key.retired or not set(key.purposes) <= set(new.purposes):
                kept.append(key)
                continue
            done = dataclasses.replace(key, not_after=now)
            if keep_private:
                kept.append(done)
            else:
                retired.append(done.public_jwk())
        macs = tuple(
            key if key.not_after is not None else dataclasses.replace(key, not_after=now)
            for key in self.mac_keys
        )
        fresh = MacKey.of(secrets.token_bytes(32), now)
        return KeySet((*kept, new), new.kid, tuple(retired), (*macs, fresh), self.log_name)

    def public_jwks(self) -> dict[str, Any]:
        return {"keys": [key.public_jwk() for key in self.keys] + [dict(j) for j in self.retired]}

    def to_json(self) -> str:
        document: dict[str, Any] = {
            "active": self.active,
            "log_name": self.log_name,
            "keys": [key.private_jwk() for key in self.keys],
        }
        if self.retired:
            document["retired"] = [dict(jwk) for jwk in self.retired]
        document["mac_keys"] = [key.to_dict() for key in self.mac_keys]
        return json.dumps(document, indent=2) + "\n"

    def save(self, path: str | Path) -> None:
        """Write the file readable by its owner only, replacing it atomically."""
        target = Path(path)
        temporary = target.with_name(f".{target.name}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(self.to_json())
            handle.flush()
            os.fsync(handle.fileno())
        temporary.replace(target)


def _derived_mac_key(keys: Sequence[SigningKey]) -> MacKey:
    """A key file from before audit MAC keys: HKDF of its first private key (stable)."""
    private = keys[0].private_key
    if isinstance(private, ed25519.Ed25519PrivateKey):
        material = private.private_bytes_raw()
    else:
        material = private.private_bytes(
            serialization.Encoding.DER,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    secret = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"signoff", info=b"signoff audit event mac v1"
    ).derive(material)
    return MacKey.of(secret)


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
    retired = tuple(_retired_key(entry) for entry in document.get("retired", []))
    macs = tuple(_mac_key(entry) for entry in document.get("mac_keys", []))
    unretired = [key.kid for key in keys if not key.retired]
    active = str(document.get("active", unretired[-1] if unretired else keys[-1].kid))
    log_name = document.get("log_name", "")
    if not isinstance(log_name, str) or "+" in log_name or any(c.isspace() for c in log_name):
        raise SigningKeyError(f"log_name {log_name!r} holds a space or '+'{_FIX}")
    return KeySet(keys, active, retired, macs, log_name)


def _window_of(entry: Mapping[str, Any], alg: str) -> tuple[tuple[str, ...], int, int | None]:
    purposes = entry.get("purposes", list(PURPOSES if alg == "EdDSA" else purposes_for(alg)))
    if not isinstance(purposes, list) or not set(purposes) <= set(PURPOSES) or not purposes:
        raise SigningKeyError(f"key purposes {purposes!r} are not a list of {PURPOSES}{_FIX}")
    not_before, not_after = entry.get("not_before", 0), entry.get("not_after")
    if type(not_before) is not int or not (not_after is None or type(not_after) is int):
        raise SigningKeyError(f"key validity times are integer seconds{_FIX}")
    return tuple(purposes), not_before, not_after


def _private_key(entry: Any) -> SigningKey:
    if not isinstance(entry, dict) or "d" not in entry:
        raise SigningKeyError(f"a signing key entry has no private part 'd'{_FIX}")
    alg = entry.get("alg")
    if alg not in ALGORITHMS:
        raise SigningKeyError(f"key alg {alg!r} is not one of {', '.join(ALGORITHMS)}{_FIX}")
    jwk = {k: v for k, v in entry.items() if k not in WINDOW_MEMBERS}
    try:
        private = PyJWK.from_dict(jwk, algorithm=alg).key
    except PyJWKError as exc:
        raise SigningKeyError(f"a signing key does not load ({exc}){_FIX}") from None
    if not isinstance(private, ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey):
        raise SigningKeyError(f"a signing key entry is not a private key{_FIX}")
    kid = thumbprint(_jwk_of(private.public_key(), alg))
    if entry.get("kid", kid) != kid:
        raise SigningKeyError(f"key {entry.get('kid')!r}: kid is not its thumbprint{_FIX}")
    return SigningKey(kid, alg, private, *_window_of(entry, alg))


def _retired_key(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict) or "d" in entry or entry.get("alg") not in ALGORITHMS:
        raise SigningKeyError(f"a retired key is a public JWK with its alg{_FIX}")
    _, _, not_after = _window_of(entry, str(entry["alg"]))
    if not_after is None or entry.get("kid") != thumbprint(entry):
        raise SigningKeyError(f"retired key {entry.get('kid')!r} lacks not_after or its kid{_FIX}")
    return dict(entry)


def _mac_key(entry: Any) -> MacKey:
    if not isinstance(entry, dict) or not isinstance(entry.get("k"), str):
        raise SigningKeyError(f"an audit MAC key has no secret 'k'{_FIX}")
    secret = b64url_decode(entry["k"])
    if len(secret) < 32:
        raise SigningKeyError(f"an audit MAC key is shorter than 32 bytes{_FIX}")
    key = MacKey.of(secret, int(entry.get("not_before", 0)))
    not_after = entry.get("not_after")
    return key if not_after is None else dataclasses.replace(key, not_after=int(not_after))


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
        kept.update({k: entry[k] for k in ("kid", "alg", "use", *WINDOW_MEMBERS) if k in entry})
        public.append(kept)
    return public

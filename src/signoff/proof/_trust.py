"""The trust root a verifier brings: keys, log origins, witnesses — never the bundle's own.

A trust file (``signoff keys export-trust`` writes one) is JSON::

    {"format": "signoff-trust/1",
     "jwks": {"keys": [<public JWK with kid, alg, purposes, not_before, not_after>, …]},
     "logs": [{"origin": "signoff.example.com/acme"}, …],
     "witnesses": [{"name": "witness.example/w1", "vkey": "witness.example/w1+…+…"}, …],
     "witness_quorum": 1,
     "identity_providers": [{"issuer": "https://idp.example", "jwks": {"keys": […]}}, …]}

``logs`` lists the origins the deployment vouches for (empty: any origin its
keys signed); ``witness_quorum`` is how many of the listed witnesses must
have cosigned; ``identity_providers`` are the issuers (and their public
signing keys) whose tokens vouch for approvals under ``evidence: idp`` and
for passkey enrolments (``signoff keys export-trust --idp ISSUER JWKS_FILE``;
an entry may also pin ``audiences``, ``subject_claim``, ``tenant_claim``: see
``_idp``). A JWKS file alone is
a trust root of keys only: no origin pinned, no witness required.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signoff.exceptions import ProofFormatError
from signoff.proof._idp import IdentityProvider
from signoff.proof._jws import PublicKeys
from signoff.proof._note import Cosigner, NoteRejected, parse_vkey

TRUST_FORMAT = "signoff-trust/1"


@dataclass(frozen=True, slots=True)
class TrustRoot:
    """Everything a verifier trusts, obtained apart from what it verifies."""

    keys: PublicKeys
    origins: frozenset[str] = frozenset()
    witnesses: tuple[Cosigner, ...] = ()
    witness_quorum: int = 0
    identity_providers: tuple[Mapping[str, Any], ...] = field(default=())

    def __post_init__(self) -> None:
        if not 0 <= self.witness_quorum <= len(self.witnesses):
            raise ProofFormatError(
                f"witness_quorum {self.witness_quorum} needs that many witnesses"
                f" (the trust file lists {len(self.witnesses)})"
            )
        issuers = [IdentityProvider.from_entry(p).issuer for p in self.identity_providers]
        if len(set(issuers)) != len(issuers):
            raise ProofFormatError("each identity provider is listed once")
        raw = [w.public_key.public_bytes_raw() for w in self.witnesses]
        if len(set(raw)) != len(raw) or len({w.name for w in self.witnesses}) != len(raw):
            raise ProofFormatError("each witness is listed once, with its own name and key")

    @classmethod
    def of(cls, trusted: TrustRoot | PublicKeys) -> TrustRoot:
        return trusted if isinstance(trusted, TrustRoot) else cls(trusted)

    @classmethod
    def from_document(cls, document: Any, *, where: str = "the trust file") -> TrustRoot:
        if not isinstance(document, dict) or document.get("format") != TRUST_FORMAT:
            raise ProofFormatError(f"{where} is not a {TRUST_FORMAT} document")
        jwks = document.get("jwks")
        if not isinstance(jwks, dict) or not isinstance(jwks.get("keys"), list):
            raise ProofFormatError(f"{where} has no 'jwks' with a 'keys' list")
        logs = document.get("logs", [])
        witnesses = document.get("witnesses", [])
        providers = document.get("identity_providers", [])
        if not all(isinstance(x, list) for x in (logs, witnesses, providers)):
            raise ProofFormatError(f"{where}: logs, witnesses, identity_providers are lists")
        origins = []
        for log in logs:
            if not isinstance(log, dict) or not isinstance(log.get("origin"), str):
                raise ProofFormatError(f"{where}: each log is {{'origin': …}}")
            origins.append(log["origin"])
        quorum = document.get("witness_quorum", len(witnesses))
        if type(quorum) is not int:
            raise ProofFormatError(f"{where}: witness_quorum is an integer")
        return cls(
            PublicKeys(jwks),
            frozenset(origins),
            tuple(_witness(entry, where) for entry in witnesses),
            quorum,
            tuple(_provider(entry, where) for entry in providers),
        )

    @classmethod
    def from_file(cls, path: str | Path) -> TrustRoot:
        try:
            document = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ProofFormatError(f"cannot read the trust file {path} ({exc.strerror})") from None
        except json.JSONDecodeError as exc:
            raise ProofFormatError(f"the trust file {path} is not JSON ({exc.msg})") from None
        return cls.from_document(document, where=f"the trust file {path}")

    def to_document(self) -> dict[str, Any]:
        return {
            "format": TRUST_FORMAT,
            "jwks": self.keys.jwks(),
            "logs": [{"origin": origin} for origin in sorted(self.origins)],
            "witnesses": [{"name": w.name, "vkey": w.vkey()} for w in self.witnesses],
            "witness_quorum": self.witness_quorum,
            "identity_providers": [dict(p) for p in self.identity_providers],
        }

    def providers(self) -> tuple[IdentityProvider, ...]:
        """The identity providers whose signed tokens may vouch for approvals."""
        return tuple(IdentityProvider.from_entry(p) for p in self.identity_providers)

    def vouches_for(self, origin: str) -> bool:
        return not self.origins or origin in self.origins


def _provider(entry: Any, where: str) -> Mapping[str, Any]:
    IdentityProvider.from_entry(entry, where=where)  # refuses a malformed entry now
    return dict(entry)


def _witness(entry: Any, where: str) -> Cosigner:
    if not isinstance(entry, dict) or not isinstance(entry.get("vkey"), str):
        raise ProofFormatError(f"{where}: each witness is {{'name': …, 'vkey': …}}")
    try:
        cosigner = parse_vkey(entry["vkey"])
    except NoteRejected as exc:
        raise ProofFormatError(f"{where}: {exc}") from None
    if entry.get("name", cosigner.name) != cosigner.name:
        raise ProofFormatError(f"{where}: witness {entry.get('name')!r} has another name's vkey")
    return cosigner

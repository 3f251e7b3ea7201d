"""The identity provider's word on one approval: a token it signed that names the proposal.

Under ``evidence: idp`` an approval counts only with a token the approver's identity
provider signed (OpenID CIBA with RFC 9396 ``authorization_details``) whose one
``signoff_proposal`` entry names exactly this proposal — id, version, tenant, tool and
args digest — for this person (``sub``). It is checked with the provider's keys from the
trust file (``identity_providers``), never with keys the token or the log carry, so an
operator holding signoff's keys cannot make one.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jwt
from jwt import PyJWK
from jwt.exceptions import PyJWKError, PyJWTError

from signoff.exceptions import ProofFormatError

AUTHORIZATION_TYPE = "signoff_proposal"
BOUND = ("proposal_id", "tenant", "tool", "args_digest")
"""What the entry must name exactly as the log does (``version`` is an integer besides)."""
SKEW_SECONDS = 300


class EvidenceRejected(Exception):
    """The recorded identity-provider evidence does not vouch for this approval."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class IdentityProvider:
    """A trusted issuer and its public signing keys (the trust file's ``identity_providers``)."""

    issuer: str
    keys: tuple[PyJWK, ...]

    @classmethod
    def from_entry(cls, entry: Any, *, where: str = "the trust file") -> IdentityProvider:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("issuer"), str):
            raise ProofFormatError(f"{where}: each identity provider is {{'issuer': …, 'jwks': …}}")
        jwks = entry.get("jwks")
        if not isinstance(jwks, Mapping) or not isinstance(jwks.get("keys"), list):
            raise ProofFormatError(f"{where}: identity provider {entry['issuer']!r} has no jwks")
        keys = []
        for key in jwks["keys"]:
            if isinstance(key, Mapping) and key.get("use", "sig") != "sig":
                continue  # an encryption key: never a signature's
            try:
                keys.append(PyJWK.from_dict(dict(key)))
            except (PyJWKError, TypeError, ValueError) as exc:
                raise ProofFormatError(
                    f"{where}: a key of identity provider {entry['issuer']!r} does not load ({exc})"
                ) from None
        return cls(entry["issuer"], tuple(keys))

    def key_for(self, kid: str | None) -> PyJWK | None:
        if kid is None:
            return self.keys[0] if len(self.keys) == 1 else None
        return next((k for k in self.keys if k.key_id == kid), None)


def signoff_authorization(
    *,
    proposal_id: str,
    version: int,
    tenant: str,
    tool: str,
    args_digest: str,
    title: str,
    amount: str | None,
) -> dict[str, Any]:
    """The ``authorization_details`` entry signoff asks the provider to have the person approve."""
    return {
        "type": AUTHORIZATION_TYPE,
        "proposal_id": proposal_id,
        "version": version,
        "tenant": tenant,
        "tool": tool,
        "args_digest": args_digest,
        "title": title,
        "amount": amount,
    }


def verify_idp_evidence(
    evidence: Any,
    providers: Sequence[IdentityProvider],
    *,
    subject: str,
    proposal: Mapping[str, Any],
    decided_at: int,
) -> dict[str, Any]:
    """The verified claims of an approval's ``idp`` evidence; raises :class:`EvidenceRejected`.

    ``proposal`` holds what the log says (``proposal_id``, ``tenant``, ``tool``,
    ``args_digest``); ``decided_at`` is the approval's time (seconds): the token
    cannot be younger than the decision that records it.
    """
    token = evidence.get("token") if isinstance(evidence, Mapping) else None
    if not isinstance(token, str):
        raise EvidenceRejected("evidence_invalid", "the idp evidence carries no token")
    claims = _verified_claims(token, providers)
    if not hmac.compare_digest(str(claims.get("sub")), subject):
        raise EvidenceRejected(
            "evidence_mismatch", f"the provider's token is for {claims.get('sub')!r}"
        )
    iat = claims.get("iat")
    if type(iat) is not int or iat > decided_at + SKEW_SECONDS:
        raise EvidenceRejected("evidence_invalid", "the token was issued after the decision")
    entry = _the_entry(claims.get("authorization_details"))
    for name in BOUND:
        if not hmac.compare_digest(str(entry.get(name)), str(proposal.get(name))):
            raise EvidenceRejected(
                "evidence_mismatch",
                f"the provider's authorization_details name another {name} than the log",
            )
    if type(entry.get("version")) is not int:
        raise EvidenceRejected("evidence_mismatch", "the authorization_details name no version")
    return claims


def _verified_claims(token: str, providers: Sequence[IdentityProvider]) -> dict[str, Any]:
    try:
        header = jwt.get_unverified_header(token)
        issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
    except PyJWTError:
        raise EvidenceRejected("evidence_invalid", "the idp token is not a JWT") from None
    provider = next((p for p in providers if p.issuer == issuer), None)
    if provider is None:
        raise EvidenceRejected(
            "evidence_invalid",
            f"issuer {issuer!r} is not an identity provider the trust file lists",
        )
    key = provider.key_for(header.get("kid"))
    if key is None:
        raise EvidenceRejected("evidence_invalid", f"no key of {issuer!r} for this token's kid")
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[str(key.algorithm_name)],
            issuer=provider.issuer,
            # Verified long after it expired: what counts is who signed it, and when (iat).
            options={"verify_exp": False, "verify_aud": False, "verify_nbf": False},
        )
    except PyJWTError as exc:
        raise EvidenceRejected(
            "evidence_invalid", f"the idp token does not verify: {exc}"
        ) from None
    return claims


def _the_entry(details: Any) -> Mapping[str, Any]:
    entries = details if isinstance(details, list) else []
    ours = [d for d in entries if isinstance(d, Mapping) and d.get("type") == AUTHORIZATION_TYPE]
    if len(ours) != 1:
        raise EvidenceRejected(
            "evidence_mismatch",
            f"the token's authorization_details hold {len(ours)} {AUTHORIZATION_TYPE}"
            " entries, not one",
        )
    return ours[0]

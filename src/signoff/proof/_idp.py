"""An identity provider's signed token, checked offline with the provider's keys in the trust file.

Two tokens of the provider vouch for people, both verified here with the keys of the
trust file's ``identity_providers`` (never with keys the token or the log carry, so an
operator holding signoff's keys cannot make one):

- the approval's ``idp`` evidence (:func:`verify_idp_evidence`): under ``evidence: idp``
  an approval counts only with a token the approver's provider signed (OpenID CIBA with
  RFC 9396 ``authorization_details``) whose one ``signoff_proposal`` entry names exactly
  this proposal — id, version, tenant, tool and args digest — for this person;
- the ID token of a passkey enrolment's fresh sign-in (:func:`verify_idp_token`, used by
  ``_enrolment``), valid when the log recorded it.

One entry of ``identity_providers``::

    {"issuer": "https://idp.example", "jwks": {"keys": [...]},
     "audiences": ["signoff-page"], "subject_claim": "sub", "tenant_claim": "tenant"}

``audiences`` (optional) pins the clients an ID token may be issued to;
``subject_claim`` (default ``sub``) and ``tenant_claim`` (optional) name the claims
that say who the person is, as the deployment maps them.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jwt
from jwt import PyJWK
from jwt.exceptions import PyJWKError, PyJWTError

from signoff.exceptions import ProofFormatError

if TYPE_CHECKING:
    from signoff.proof._trust import TrustRoot

AUTHORIZATION_TYPE = "signoff_proposal"
BOUND = ("proposal_id", "tenant", "tool", "args_digest")
"""What the entry must name exactly as the log does (``version`` is an integer besides)."""
SKEW_SECONDS = 300
"""How far the provider's clock may run ahead of signoff's."""
ALGORITHMS = ("RS256", "PS256", "ES256", "ES384", "EdDSA")
"""The signature algorithms a provider's key may use (never a shared secret)."""


class EvidenceRejected(Exception):
    """The recorded identity-provider evidence does not vouch for this approval."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class IdpTokenRejected(EvidenceRejected):
    """The ID token was not signed by a trusted identity provider for this person."""

    def __init__(self, message: str) -> None:
        super().__init__("evidence_invalid", message)


@dataclass(frozen=True, slots=True)
class IdentityProvider:
    """A trusted issuer and its public signing keys (the trust file's ``identity_providers``)."""

    issuer: str
    keys: tuple[PyJWK, ...]
    audiences: tuple[str, ...] = ()
    subject_claim: str = "sub"
    tenant_claim: str | None = None

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
                loaded = PyJWK.from_dict(dict(key))
            except (PyJWKError, TypeError, ValueError) as exc:
                raise ProofFormatError(
                    f"{where}: a key of identity provider {entry['issuer']!r} does not load ({exc})"
                ) from None
            if loaded.algorithm_name in ALGORITHMS:
                keys.append(loaded)
        audiences = entry.get("audiences") or ()
        subject_claim, tenant_claim = entry.get("subject_claim"), entry.get("tenant_claim")
        if (
            not isinstance(audiences, list | tuple)
            or not all(isinstance(a, str) for a in audiences)
            or not isinstance(subject_claim, str | None)
            or not isinstance(tenant_claim, str | None)
        ):
            raise ProofFormatError(
                f"{where}: identity provider {entry['issuer']!r}: audiences is a list of"
                " strings, subject_claim and tenant_claim strings"
            )
        return cls(
            entry["issuer"], tuple(keys), tuple(audiences), subject_claim or "sub", tenant_claim
        )

    def candidates(self, kid: str | None) -> tuple[PyJWK, ...]:
        """The keys that may have signed a token with this ``kid`` (all, without one)."""
        return tuple(k for k in self.keys if kid is None or k.key_id == kid)


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
    provider, claims = provider_claims(token, providers)
    person = claims.get(provider.subject_claim)
    if not hmac.compare_digest(str(person), subject):
        raise EvidenceRejected("evidence_mismatch", f"the provider's token is for {person!r}")
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


def verify_idp_token(
    token: str, trust: TrustRoot, *, at_seconds: int, subject: str, tenant: str
) -> dict[str, Any]:
    """The ID token's claims when a provider in ``trust`` signed it for
    ``subject`` (in ``tenant``, when the provider names a tenant claim), for one of the
    provider's ``audiences``, and it was valid at ``at_seconds`` (when the log recorded it:
    an ID token lives minutes, the proof years); raises :class:`IdpTokenRejected`."""
    try:
        provider, claims = provider_claims(token, trust.providers(), audiences=True)
    except EvidenceRejected as exc:
        raise IdpTokenRejected(exc.message) from None
    issued, expires = claims.get("iat"), claims.get("exp")
    if not isinstance(issued, int | float) or not isinstance(expires, int | float):
        raise IdpTokenRejected("the identity token has no numeric iat and exp")
    if not issued - SKEW_SECONDS <= at_seconds <= expires + SKEW_SECONDS:
        raise IdpTokenRejected("the log recorded the identity token outside its lifetime")
    if claims.get(provider.subject_claim) != subject:
        raise IdpTokenRejected(f"the identity token names another person than {subject!r}")
    if provider.tenant_claim and claims.get(provider.tenant_claim) != tenant:
        raise IdpTokenRejected(f"the identity token names another tenant than {tenant!r}")
    return claims


def provider_claims(
    token: str, providers: Sequence[IdentityProvider], *, audiences: bool = False
) -> tuple[IdentityProvider, dict[str, Any]]:
    """The provider that signed ``token`` and its verified claims; with ``audiences``, the
    token's ``aud`` must be one the provider lists (when it lists any)."""
    try:
        header = jwt.get_unverified_header(token)
        issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
    except PyJWTError as exc:
        raise EvidenceRejected("evidence_invalid", f"the token is not a JWT ({exc})") from None
    provider = next((p for p in providers if p.issuer == issuer), None)
    if provider is None:
        raise EvidenceRejected(
            "evidence_invalid", f"the token's issuer {issuer!r} is not in the trust file"
        )
    candidates = provider.candidates(header.get("kid"))
    if not candidates:
        raise EvidenceRejected(
            "evidence_invalid", f"no key {header.get('kid')!r} of {issuer!r} is in the trust file"
        )
    pinned = list(provider.audiences) if audiences else []
    for key in candidates:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[str(key.algorithm_name)],
                audience=pinned or None,
                issuer=provider.issuer,
                # Verified long after it expired: what counts is who signed it, and when.
                options={
                    "verify_aud": bool(pinned),
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_nbf": False,
                    "require": ["iss", "sub", "iat"],
                },
            )
        except jwt.InvalidSignatureError:
            continue
        except PyJWTError as exc:
            raise EvidenceRejected(
                "evidence_invalid", f"the token does not verify: {exc}"
            ) from None
        return provider, claims
    raise EvidenceRejected(
        "evidence_invalid", "the token's signature does not verify with the provider's keys"
    )


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

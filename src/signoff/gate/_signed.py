"""The two token forms at the gate: what is handed out, and how a presented one is found.

Opaque: ``sot_…``, found by the hash of the secret. Signed: a JWS whose
signature, audience, issuer and expiry are checked first, then found by
``jti`` (the token id) in the same ``tokens`` table, where every binding is
compared with the stored record and the token is consumed once — so both
forms share one consume path and one set of refusals.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from signoff._canonical import sha256_hex
from signoff._tokens import token_hash
from signoff.exceptions import InvalidToken
from signoff.gate._context import GateContext
from signoff.store._sql import SqlTransaction, TokenRecord

if TYPE_CHECKING:
    from signoff.proof import ConfirmationClaims

MICROS = 1_000_000


@dataclass(frozen=True, slots=True)
class Presented:
    """A token as the caller sent it; ``identity`` is what idempotency fingerprints use."""

    identity: str
    claims: ConfirmationClaims | None = None


def looks_signed(token: str) -> bool:
    return token.count(".") == 2 and not token.startswith("sot_")


def present(ctx: GateContext, token: str) -> Presented:
    """Check a signed token's signature and claims now; an opaque one is only hashed."""
    if not looks_signed(token):
        return Presented(token_hash(token))
    if ctx.proof is None:
        raise InvalidToken("this deployment does not accept signed confirmation tokens")
    from signoff.proof import verify_confirmation

    claims = verify_confirmation(
        token,
        ctx.proof.public_keys,
        audience=ctx.audience,
        now=ctx.now_micros() // MICROS,
        issuer=ctx.proof.issuer,
    )
    # The jti, not the JWS text: an ES256 token handed out again has other bytes.
    return Presented(sha256_hex(f"jws:{claims.jti}".encode()), claims)


def find_token(tx: SqlTransaction, presented: Presented) -> TokenRecord | None:
    if presented.claims is None:
        return tx.token_by_hash(presented.identity)
    record = tx.token(presented.claims.jti)
    if record is not None and _claims_of(record, presented.claims.tool_version, "") != (
        _comparable(presented.claims)
    ):
        raise InvalidToken("the signed token's claims differ from the confirmation it names")
    return record


def handed_token(ctx: GateContext, tx: SqlTransaction, token_id: str) -> str:
    """The token string for ``token_id`` in the form its tool uses (the same one each time)."""
    if ctx.proof is None:
        return ctx.minter.secret(token_id)
    record = tx.token(token_id)
    assert record is not None
    if ctx.proof.form_for(record.operation) == "opaque":
        return ctx.minter.secret(token_id)
    proposal = tx.proposal(record.tenant, record.proposal_id)
    assert proposal is not None
    return token_for_record(ctx, record, proposal.tool_version)


def token_for_record(ctx: GateContext, record: TokenRecord, tool_version: str) -> str:
    """:func:`handed_token` for a record in hand (just issued): nothing is read."""
    if ctx.proof is None or ctx.proof.form_for(record.operation) == "opaque":
        return ctx.minter.secret(record.token_id)
    from signoff.proof import sign_confirmation

    claims = _claims_of(record, tool_version, ctx.proof.issuer)
    return sign_confirmation(ctx.proof.keys.signing_key("token"), claims)


def _claims_of(record: TokenRecord, tool_version: str, issuer: str) -> ConfirmationClaims:
    from signoff.proof import ConfirmationClaims

    return ConfirmationClaims(
        iss=issuer,
        aud=record.audience,
        sub=record.subject,
        act=record.actor,
        tenant=record.tenant,
        jti=record.token_id,
        tool=record.operation,
        tool_version=tool_version,
        resource=record.resource_id,
        args_digest=record.args_digest,
        policy_version=record.policy_version,
        request_key=record.request_key,
        iat=record.issued_at // MICROS,
        exp=record.expires_at // MICROS,
    )


def _comparable(claims: ConfirmationClaims) -> ConfirmationClaims:
    return replace(claims, iss="")

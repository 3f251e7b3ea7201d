"""Issuing the one-time confirmation token once every approval is in."""

from __future__ import annotations

from signoff._clock import to_micros
from signoff._model import Proposal
from signoff._tokens import token_hash
from signoff.gate._context import GateContext
from signoff.store._sql import IssuedToken, TokenRecord, audit_entry


def issued_token(ctx: GateContext, proposal: Proposal, now: int) -> IssuedToken:
    """Bind a new token to subject, tenant, audience, operation, resource, digest, expiry;
    the decision's write stores it (by hash) with its ``token.issued`` event."""
    token_id = ctx.minter.new_id("tok_")
    record = TokenRecord(
        token_id=token_id,
        proposal_id=proposal.proposal_id,
        tenant=proposal.tenant,
        subject=proposal.requester_subject,
        actor=proposal.requester_actor,
        audience=ctx.audience,
        operation=proposal.tool,
        resource_id=proposal.resource_id,
        args_digest=proposal.args_digest,
        policy_version=str(proposal.policy["version"]),
        request_key=proposal.request_key,
        issued_at=now,
        expires_at=to_micros(proposal.expires_at),
        status="issued",
    )
    event = audit_entry(
        tenant=proposal.tenant,
        at=now,
        kind="token.issued",
        proposal_id=proposal.proposal_id,
        data={
            "token_id": token_id,
            "subject": record.subject,
            "actor": record.actor,
            "audience": record.audience,
            "operation": record.operation,
            "resource_id": record.resource_id,
            "args_digest": record.args_digest,
            "expires_at": record.expires_at,
        },
    )
    return IssuedToken(record, token_hash(ctx.minter.secret(token_id)), event)

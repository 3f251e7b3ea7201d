"""Consent holds only while it holds (PROTOCOL rule 11).

An approval is consent while it is unexpired, unrevoked, every approver still
holds the required role *now*, the requester still holds every role they asked
with (the requester side of consent), and the tool's ``max_attempts`` are not used up.
Every execution attempt — the first, a retry, a reconciler's attempt with the
same request key — asks this in the transaction that starts it. Looking up the
outcome of an earlier attempt never does: that is not a new write.
"""

from __future__ import annotations

from signoff._model import Execution, Proposal
from signoff.exceptions import (
    ApproverRevoked,
    AttemptsExhausted,
    MandateRevoked,
    Refusal,
    RequesterRevoked,
    Revoked,
    TokenExpired,
)
from signoff.gate._context import GateContext
from signoff.gate._policy import approvers_who_lost_role, requester_lost_roles
from signoff.store._sql import SqlTransaction


def consent_refusal(
    ctx: GateContext, tx: SqlTransaction, proposal: Proposal, execution: Execution, now: int
) -> Refusal | None:
    """Why no attempt may start now, or None while consent holds."""
    ids = {"proposal_id": proposal.proposal_id, "execution_id": execution.execution_id}
    token = tx.token(execution.token_id)
    if token is None or token.status == "revoked":
        return Revoked("the confirmation was revoked; nothing was done", **ids)
    if now >= token.expires_at:
        return TokenExpired(
            "the confirmation expired before this attempt; nothing was done; "
            "ask for a new proposal",
            **ids,
        )
    cover = proposal.mandate
    if cover is not None:
        # A write under a mandate: its consent is the mandate's, which revocation ends.
        mandate = tx.mandate(proposal.tenant, str(cover.get("mandate_id")))
        if mandate is None or mandate.status in ("revoked", "declined"):
            return MandateRevoked(
                "the mandate this write runs under was revoked; nothing was done", **ids
            )
    directory = ctx.directory_in(tx)
    gone = requester_lost_roles(proposal, directory)
    if gone:
        return RequesterRevoked(
            "the requester no longer holds a role they asked with; nothing was done",
            roles=gone,
            **ids,
        )
    lost = approvers_who_lost_role(proposal, directory)
    if lost:
        return ApproverRevoked(
            "an approver no longer holds the required role; nothing was done",
            approvers=lost,
            **ids,
        )
    max_attempts = ctx.catalog.get(proposal.tool).max_attempts
    if execution.attempts >= max_attempts:
        return AttemptsExhausted(
            f"all {max_attempts} attempts of this tool are used; nothing more will be tried",
            attempts=execution.attempts,
            **ids,
        )
    return None

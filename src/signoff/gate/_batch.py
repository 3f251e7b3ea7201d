"""Several decisions at once: each its own decision over its own digest and version.

A batch is a convenience for the person, never a weaker decision: every item goes
through the one ``decide`` path (its version, deadline, entitlement, fresh state, its
own audit event, and its own refusal evidence), and is answered on its own — a stale
version is that item's ``409``, the rest are recorded. An approval whose policy asks
for more than a click (re-typing, a device signature, the identity provider) is left
out with ``not_batchable``: it must be decided on its own page. Item keys are derived
from the batch's key and the proposal, so a retried batch replays each item.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from signoff._canonical import fingerprint
from signoff._model import Decision, DecisionKind, DecisionResult, Proposal
from signoff.exceptions import InvalidRequest, NotBatchable, Refusal

MAX_BATCH = 100
NEEDS_RETYPE = "approving it needs the value re-typed"
NEEDS_DEVICE = "approving it is signed with the approver's passkey"
NEEDS_IDP = "approving it needs the identity provider"
EVIDENCE_KEYS = ("idp", "evidence", "vouched_by")


@dataclasses.dataclass(frozen=True, slots=True)
class BatchItem:
    proposal_id: str
    decision: Decision


@dataclasses.dataclass(frozen=True, slots=True)
class BatchOutcome:
    """One item's answer: the decision recorded (or replayed), or the refusal."""

    proposal_id: str
    result: DecisionResult | None = None
    refusal: Refusal | None = None


def item_key(batch_key: str, proposal_id: str) -> str:
    """A retried batch repeats each item's key; two items never share one."""
    return "batch_" + fingerprint("batch-item", {"key": batch_key, "proposal_id": proposal_id})[:48]


def check_batch(items: Sequence[BatchItem], batch_key: str) -> None:
    if not batch_key:
        raise InvalidRequest("a batch needs an Idempotency-Key")
    if not 0 < len(items) <= MAX_BATCH:
        raise InvalidRequest(f"a batch has 1 to {MAX_BATCH} decisions")
    ids = [item.proposal_id for item in items]
    if len(set(ids)) != len(ids):
        raise InvalidRequest("a proposal appears twice in the batch")


def batch_blocker(proposal: Proposal, kind: DecisionKind) -> str | None:
    """Why approving ``proposal`` cannot be part of a batch, in words; None when it can."""
    if kind is not DecisionKind.APPROVE:
        return None  # a rejection asks for no re-typing, device or identity provider
    policy = proposal.policy
    if policy.get("retype"):
        return NEEDS_RETYPE
    if str(policy.get("device") or "none") != "none":
        return NEEDS_DEVICE
    if any(policy.get(key) for key in EVIDENCE_KEYS):
        return NEEDS_IDP
    return None


def decide_batch(
    items: Sequence[BatchItem],
    batch_key: str,
    *,
    read: Callable[[str], Proposal],
    decide: Callable[[str, Decision, str], DecisionResult],
    refuse: Callable[[str, Refusal], None],
) -> list[BatchOutcome]:
    """Each item through ``decide`` with its derived key; refusals answered per item."""
    check_batch(items, batch_key)
    outcomes = []
    for item in items:
        try:
            proposal = read(item.proposal_id)
            reason = batch_blocker(proposal, item.decision.kind)
            if reason is not None:
                refusal = NotBatchable(
                    f"left out of the batch: {reason}; decide it on its own page",
                    proposal_id=item.proposal_id,
                )
                refuse(item.proposal_id, refusal)
                raise refusal
            result = decide(item.proposal_id, item.decision, item_key(batch_key, item.proposal_id))
        except Refusal as refusal:
            outcomes.append(BatchOutcome(item.proposal_id, refusal=refusal))
            continue
        outcomes.append(BatchOutcome(item.proposal_id, result=result))
    return outcomes

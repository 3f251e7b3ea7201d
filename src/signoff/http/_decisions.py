"""/v1/decisions: several decisions in one request, each recorded and answered on its own."""

from __future__ import annotations

import json

from fastapi import APIRouter

from signoff.gate._batch import BatchItem, BatchOutcome
from signoff.http._deps import Caller, IdempotencyKey, State
from signoff.http._openapi import problems
from signoff.http._problems import error_problem
from signoff.http._requests import BatchRequest, as_decision
from signoff.http._views import BatchItemView, BatchView, DecisionView

router = APIRouter(prefix="/v1/decisions", tags=["proposals"])


@router.post(
    "",
    operation_id="decideProposals",
    response_model=BatchView,
    responses=problems(400, 401),
    summary="Approve or reject several proposals; each item answered on its own",
)
async def decide_many(
    body: BatchRequest, key: IdempotencyKey, caller: Caller, state: State
) -> BatchView:
    """Each item is its own decision over its own version and digest, audited one by one:
    a stale version is that item's 409 and the others are recorded. An approval that needs
    re-typing, a device signature or the identity provider is left out (422
    ``not_batchable``). A retried batch (same Idempotency-Key) replays each item."""
    items = [BatchItem(d.root.proposal_id, as_decision(d.root)) for d in body.decisions]
    outcomes = await state.agate.decide_batch(caller, items, idempotency_key=key)
    return BatchView(results=[_item(outcome) for outcome in outcomes])


def _item(outcome: BatchOutcome) -> BatchItemView:
    if outcome.result is not None:
        decision = DecisionView.of(outcome.result)
        return BatchItemView(proposal_id=outcome.proposal_id, status=200, decision=decision)
    assert outcome.refusal is not None
    response = error_problem(outcome.refusal)
    return BatchItemView(
        proposal_id=outcome.proposal_id,
        status=response.status_code,
        problem=json.loads(bytes(response.body)),
    )

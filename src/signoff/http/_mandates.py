"""/v1/mandates: standing approvals — propose, read (budget, count, history), decide, revoke."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from signoff._model import Decision, DecisionKind
from signoff.http._deps import Caller, IdempotencyKey, State
from signoff.http._openapi import problems
from signoff.http._requests import DecisionRequest, MandateRequest, MandateRevocationRequest
from signoff.http._views import MandateView

router = APIRouter(prefix="/v1/mandates", tags=["mandates"])
MandateId = Annotated[str, Path(min_length=1, max_length=128)]


@router.post(
    "",
    status_code=201,
    operation_id="createMandate",
    response_model=MandateView,
    responses=problems(400, 401, 403, 404),
    summary="Ask for a standing approval: one tool, constraints, a validity window",
)
async def propose(
    body: MandateRequest, caller: Caller, state: State, response: Response
) -> MandateView:
    """Decided like a proposal; until then nothing is covered. No constraint, no mandate."""
    created = await state.agate.propose_mandate(
        caller, body.tool, body.constraints, expires_in_seconds=body.expires_in_seconds
    )
    response.headers["Location"] = f"/v1/mandates/{created.record.mandate_id}"
    return MandateView.of(created)


@router.get(
    "/{mandate_id}",
    operation_id="getMandate",
    response_model=MandateView,
    responses=problems(400, 401, 404),
    summary="A mandate: what is left of its budget and count, and every write under it",
)
async def read(mandate_id: MandateId, caller: Caller, state: State) -> MandateView:
    return MandateView.of(await state.agate.mandate(caller, mandate_id))


@router.post(
    "/{mandate_id}/decision",
    operation_id="decideMandate",
    response_model=MandateView,
    responses=problems(400, 401, 403, 404, 409, 422),
    summary="Approve or reject a mandate; a retried key answers the first decision again",
)
async def decide(
    mandate_id: MandateId,
    body: DecisionRequest,
    key: IdempotencyKey,
    caller: Caller,
    state: State,
) -> MandateView:
    chosen = body.root
    decision = Decision(
        kind=DecisionKind(chosen.decision),
        expected_version=chosen.expected_version,
        reason_code=chosen.reason_code,
        reason=chosen.reason,
        retyped=None if chosen.retyped is None else dict(chosen.retyped),
    )
    decided = await state.agate.decide_mandate(caller, mandate_id, decision, idempotency_key=key)
    return MandateView.of(await state.agate.mandate(caller, mandate_id)).model_copy(
        update={"duplicate": decided.duplicate}
    )


@router.post(
    "/{mandate_id}/revocation",
    operation_id="revokeMandate",
    response_model=MandateView,
    responses=problems(400, 401, 403, 404, 409),
    summary="End a mandate now; its confirmed writes not yet started are revoked too",
)
async def revoke(
    mandate_id: MandateId, body: MandateRevocationRequest, caller: Caller, state: State
) -> MandateView:
    return MandateView.of(await state.agate.revoke_mandate(caller, mandate_id, reason=body.reason))

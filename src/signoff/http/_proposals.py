"""/v1/proposals: propose, list, read, decide, revoke, cancel."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response
from fastapi.responses import JSONResponse

from signoff._model import Principal, Proposal, ProposalStatus
from signoff.http._deps import Caller, IdempotencyKey, ProposingCaller, State
from signoff.http._openapi import problems
from signoff.http._requests import (
    ApproveRequest,
    DecisionRequest,
    ProposeRequest,
    ReassignmentRequest,
    RevokeRequest,
    as_decision,
)
from signoff.http._state import AppState
from signoff.http._views import (
    ConfirmationTokenView,
    DecisionView,
    IdpPendingView,
    ProposalList,
    ProposalView,
)

router = APIRouter(prefix="/v1/proposals", tags=["proposals"])
ProposalId = Annotated[str, Path(min_length=1, max_length=128)]


@router.post(
    "",
    status_code=201,
    operation_id="createProposal",
    response_model=ProposalView,
    responses=problems(400, 401, 403, 404, 409, 422, 429),
    summary="Freeze a write request into a proposal awaiting confirmation",
)
async def propose(
    body: ProposeRequest, caller: ProposingCaller, state: State, response: Response
) -> ProposalView:
    """422 ``clarification_needed`` carries the question to ask the person. With
    ``mandate_id``, a covered write is answered ``confirmed``: pick its token up as usual."""
    proposal = await state.agate.propose(
        caller,
        body.tool,
        body.arguments,
        rationale=body.rationale,
        mandate_id=body.mandate_id,
        supersedes=body.supersedes,
    )
    response.headers["Location"] = f"/v1/proposals/{proposal.proposal_id}"
    return ProposalView.of(proposal)


@router.get(
    "",
    operation_id="listProposals",
    response_model=ProposalList,
    responses=problems(400, 401),
    summary="Proposals the caller may see (its circle in the tenant), newest first",
)
async def list_proposals(
    caller: Caller,
    state: State,
    status: Annotated[list[ProposalStatus] | None, Query(max_length=12)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> ProposalList:
    found = await state.agate.proposals(caller, statuses=status or (), limit=limit)
    return ProposalList(proposals=[ProposalView.of(p) for p in found])


@router.get(
    "/{proposal_id}",
    operation_id="getProposal",
    response_model=ProposalView,
    responses=problems(400, 401, 404),
    summary="One proposal of the caller's tenant",
)
async def read_proposal(proposal_id: ProposalId, caller: Caller, state: State) -> ProposalView:
    return ProposalView.of(await state.agate.proposal(caller, proposal_id))


@router.post(
    "/{proposal_id}/decision",
    operation_id="decideProposal",
    response_model=DecisionView,
    responses={
        202: {"model": IdpPendingView, "description": "Waiting for the identity provider"},
        **problems(400, 401, 403, 404, 409, 422),
    },
    summary="Approve or reject; a retried key answers the first decision again",
)
async def decide(
    proposal_id: ProposalId,
    body: DecisionRequest,
    key: IdempotencyKey,
    caller: Caller,
    state: State,
) -> DecisionView | JSONResponse:
    """Never carries the confirmation token: it is bound to the requester, who picks it up.

    With ``evidence: idp`` the approval goes through the person's identity provider
    (OpenID CIBA): the first call answers 202 ``pending`` with an ``auth_req_id``; the
    person approves on their device what it shows (the proposal, its digest and amount);
    the same body with that ``auth_req_id`` answers 202 again until they did, then records
    the approval with the provider's signed token as its evidence."""
    if isinstance(body.root, ApproveRequest) and body.root.evidence == "idp":
        return await _through_idp(proposal_id, body.root, key, caller, state)
    decision = as_decision(body.root)
    result = await state.agate.decide(caller, proposal_id, decision, idempotency_key=key)
    return DecisionView.of(result)


async def _through_idp(
    proposal_id: str, body: ApproveRequest, key: str, caller: Principal, state: AppState
) -> DecisionView | JSONResponse:
    gate, version = state.gate, body.expected_version
    if body.auth_req_id is None:
        pending = await state.agate.run_sync(
            gate.start_idp_approval, caller, proposal_id, expected_version=version
        )
        return _pending(proposal_id, pending.auth_req_id, pending.expires_in, pending.interval)
    result = await state.agate.run_sync(
        gate.approve_through_idp, caller, proposal_id, body.auth_req_id,
        expected_version=version, idempotency_key=key,
    )  # fmt: skip
    if result is None:
        return _pending(proposal_id, body.auth_req_id, None, IDP_POLL_SECONDS)
    return DecisionView.of(result)


IDP_POLL_SECONDS = 5


def _pending(
    proposal_id: str, auth_req_id: str, expires_in: int | None, interval: int
) -> JSONResponse:
    view = IdpPendingView(
        status="pending", auth_req_id=auth_req_id, expires_in=expires_in, interval=interval
    )
    headers = {"Cache-Control": "no-store", "Location": f"/v1/proposals/{proposal_id}"}
    return JSONResponse(view.model_dump(), status_code=202, headers=headers)


@router.get(
    "/{proposal_id}/confirmation-token",
    operation_id="getConfirmationToken",
    response_model=ConfirmationTokenView,
    responses=problems(400, 401, 403, 404, 409),
    summary="The requesting agent picks up its token after a person approved on the page",
)
async def confirmation_token(
    proposal_id: ProposalId, caller: Caller, state: State, response: Response
) -> ConfirmationTokenView:
    """Only the principal the token is bound to (same subject and actor), only while confirmed."""
    token, proposal = await state.agate.run_sync(_token_and_proposal, state, caller, proposal_id)
    response.headers["Cache-Control"] = "no-store"
    return ConfirmationTokenView(
        proposal_id=proposal_id, confirmation_token=token, expires_at=proposal.expires_at
    )


def _token_and_proposal(
    state: AppState, caller: Principal, proposal_id: str
) -> tuple[str, Proposal]:
    """Both in one hand-off to a worker thread (each is a read of its own)."""
    token = state.gate.confirmation_token(caller, proposal_id)
    return token, state.gate.proposal(caller, proposal_id)


@router.post(
    "/{proposal_id}/revoke",
    operation_id="revokeProposal",
    response_model=ProposalView,
    responses=problems(400, 401, 403, 404, 409),
    summary="Withdraw a confirmation before it is used",
)
async def revoke(
    proposal_id: ProposalId, body: RevokeRequest, caller: Caller, state: State
) -> ProposalView:
    return ProposalView.of(await state.agate.revoke(caller, proposal_id, reason=body.reason))


@router.post(
    "/{proposal_id}/cancel",
    operation_id="cancelProposal",
    response_model=ProposalView,
    responses=problems(400, 401, 403, 404, 409),
    summary="The requester withdraws a proposal nobody has decided yet",
)
async def cancel(proposal_id: ProposalId, caller: Caller, state: State) -> ProposalView:
    return ProposalView.of(await state.agate.cancel(caller, proposal_id))


@router.post(
    "/{proposal_id}/reassignment",
    operation_id="reassignProposal",
    response_model=ProposalView,
    responses=problems(400, 401, 403, 404, 409),
    summary="An admin hands a pending proposal to other people (audited)",
)
async def reassign(
    proposal_id: ProposalId, body: ReassignmentRequest, caller: Caller, state: State
) -> ProposalView:
    """Only the ``to`` targets may decide it from now on, under the same separation of duties
    (the requester never); its version moves, so decisions read before are stale. 403 without
    ``signoff_admin``; 409 once it is no longer awaiting confirmation."""
    proposal = await state.agate.reassign(caller, proposal_id, to=body.to, reason=body.reason)
    return ProposalView.of(proposal)

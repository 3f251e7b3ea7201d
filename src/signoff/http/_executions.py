"""/v1/executions: consume a confirmation once, read the outcome, retry with the same key."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Path, Response

from signoff._model import ExecutionResult, ExecutionStatus
from signoff.http._deps import Caller, IdempotencyKey, State
from signoff.http._openapi import problems
from signoff.http._requests import ExecuteRequest, ResolutionOutcome, ResolveRequest, StopRequest
from signoff.http._views import (
    ExecutionOutcomeView,
    ExecutionStatusView,
    ExecutionView,
    ReceiptFileView,
    ReceiptView,
)

router = APIRouter(prefix="/v1/executions", tags=["executions"])
ExecutionId = Annotated[str, Path(min_length=1, max_length=128)]
# The outcome is not known yet: the provider call is running or its answer was lost.
PENDING = frozenset(
    {
        ExecutionStatus.PREPARED,
        ExecutionStatus.RUNNING,
        ExecutionStatus.UNKNOWN,
        ExecutionStatus.NEEDS_ATTENTION,
    }
)
_ACCEPTED: dict[int | str, dict[str, Any]] = {
    202: {"model": ExecutionOutcomeView, "description": "Running, or the outcome is unknown"}
}


@router.post(
    "",
    operation_id="executeProposal",
    response_model=ExecutionOutcomeView,
    responses={**_ACCEPTED, **problems(400, 401, 403, 404, 409, 422)},
    summary="Present the confirmation token; the confirmed write runs once",
)
async def execute(
    body: ExecuteRequest, key: IdempotencyKey, caller: Caller, state: State, response: Response
) -> ExecutionOutcomeView:
    """200 once the outcome is known, 202 while running or unknown (poll the Location)."""
    result = await state.agate.execute(
        caller, body.proposal_id, body.confirmation_token, idempotency_key=key
    )
    return _outcome(result, response)


@router.get(
    "/{execution_id}",
    operation_id="getExecution",
    response_model=ExecutionStatusView,
    responses=problems(400, 401, 404),
    summary="An execution of the caller's tenant and its receipt once terminal",
)
async def read_execution(
    execution_id: ExecutionId, caller: Caller, state: State
) -> ExecutionStatusView:
    execution = await state.agate.execution(caller, execution_id)
    receipt = (
        await state.agate.receipt(caller, execution_id) if execution.status.is_terminal else None
    )
    signed = None if receipt is None else await state.agate.signed_receipt(caller, execution_id)
    return ExecutionStatusView(
        execution=ExecutionView.of(execution),
        receipt=None if receipt is None else ReceiptView.of(receipt),
        signed_receipt=signed,
    )


@router.get(
    "/{execution_id}/receipt",
    operation_id="downloadReceipt",
    response_class=Response,
    responses={
        200: {
            "model": ReceiptFileView,
            "description": "The signed receipt file (`signoff audit verify --receipt FILE`)",
        },
        **problems(400, 401, 404),
    },
    summary="The signed receipt as a file to keep; check it offline with `signoff audit verify`",
)
async def download_receipt(execution_id: ExecutionId, caller: Caller, state: State) -> Response:
    """404 until the execution finished and a checkpoint holds its outcome."""
    document = await state.agate.run_sync(state.gate.receipt_file, caller, execution_id)
    return receipt_response(document, execution_id)


def receipt_response(document: dict[str, Any], execution_id: str) -> Response:
    """A receipt file as a download (the API and the page)."""
    safe = "".join(ch for ch in execution_id if ch.isalnum() or ch in "_-")[:128]
    return Response(
        json.dumps(document, indent=1) + "\n",
        media_type="application/json",
        headers={
            "Content-Disposition": f'attachment; filename="receipt-{safe}.json"',
            "Cache-Control": "no-store",
        },
    )


@router.post(
    "/{execution_id}/retry",
    operation_id="retryExecution",
    response_model=ExecutionOutcomeView,
    responses={**_ACCEPTED, **problems(400, 401, 403, 404, 409)},
    summary="Ask again: a retryable failure runs again with the same request key",
)
async def retry(
    execution_id: ExecutionId, caller: Caller, state: State, response: Response
) -> ExecutionOutcomeView:
    """Safe to repeat: the provider sees the same request key every time."""
    return _outcome(await state.agate.retry(caller, execution_id), response)


@router.post(
    "/{execution_id}/resolution",
    operation_id="resolveExecution",
    response_model=ExecutionOutcomeView,
    responses=problems(400, 401, 403, 404, 409),
    summary="A person (signoff_admin) records what the provider shows for a stuck execution",
)
async def resolve(
    execution_id: ExecutionId,
    body: ResolveRequest,
    caller: Caller,
    state: State,
    response: Response,
) -> ExecutionOutcomeView:
    """Only ``unknown`` or ``needs_attention`` executions; the provider is never called."""
    found = body.root
    result = await state.agate.resolve(
        caller,
        execution_id,
        outcome="succeeded" if found.outcome is ResolutionOutcome.SUCCEEDED else "failed_terminal",
        provider_reference=found.provider_reference,
        reason=found.reason,
    )
    return _outcome(result, response)


@router.post(
    "/{execution_id}/stop",
    operation_id="stopExecution",
    response_model=ExecutionOutcomeView,
    responses=problems(400, 401, 403, 404, 409),
    summary="A person who may withdraw the confirmation ends a failed_retryable execution",
)
async def stop(
    execution_id: ExecutionId,
    body: StopRequest,
    caller: Caller,
    state: State,
    response: Response,
) -> ExecutionOutcomeView:
    """``failed_terminal`` with the reason, audited; no attempt ever starts again."""
    return _outcome(await state.agate.stop(caller, execution_id, reason=body.reason), response)


def _outcome(result: ExecutionResult, response: Response) -> ExecutionOutcomeView:
    if result.execution.status in PENDING:
        response.status_code = 202
        response.headers["Location"] = f"/v1/executions/{result.execution.execution_id}"
    return ExecutionOutcomeView(
        execution=ExecutionView.of(result.execution),
        receipt=None if result.receipt is None else ReceiptView.of(result.receipt),
        duplicate=result.duplicate,
        signed_receipt=result.signed_receipt,
    )

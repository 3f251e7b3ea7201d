"""/v1/deliveries: notification deliveries of the caller's tenant; replay a dead letter."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict

from signoff._clock import from_micros
from signoff.exceptions import Forbidden, NotEntitled
from signoff.http._deps import Caller, State
from signoff.http._openapi import problems
from signoff.http._roles import require_admin
from signoff.http._state import AppState
from signoff.notify._admin import list_deliveries, replay
from signoff.store._q_deliveries import DeliveryRecord

router = APIRouter(prefix="/v1/deliveries", tags=["notifications"])


class DeliveryStatus(enum.StrEnum):
    """Where a notification to one destination stands (a named schema for generators)."""

    PENDING = "pending"
    DELIVERED = "delivered"
    DEAD = "dead"


class DeliveryView(BaseModel):
    model_config = ConfigDict(extra="forbid")

    destination: str
    audit_seq: int
    event_type: str
    status: DeliveryStatus
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None

    @classmethod
    def of(cls, record: DeliveryRecord) -> DeliveryView:
        return cls(
            destination=record.destination,
            audit_seq=record.seq,
            event_type=record.event_type,
            status=record.status,
            attempts=record.attempts,
            next_attempt_at=from_micros(record.next_attempt_at),
            last_error=record.last_error,
            created_at=from_micros(record.created_at),
            delivered_at=None if record.delivered_at is None else from_micros(record.delivered_at),
        )


class DeliveryList(BaseModel):
    deliveries: list[DeliveryView]


def _require_admin(state: AppState, caller: Caller) -> None:
    """The role directory decides, as for /v1/roles (a revoked admin is stopped at once)."""
    try:
        require_admin(state, caller, "deliveries")
    except Forbidden as exc:
        raise NotEntitled(exc.message) from None


@router.get(
    "",
    operation_id="listDeliveries",
    response_model=DeliveryList,
    responses=problems(400, 401, 403),
    summary="Notification deliveries of the caller's tenant (status=dead: the dead letters)",
)
async def deliveries(
    caller: Caller,
    state: State,
    status: Annotated[DeliveryStatus | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> DeliveryList:
    await state.agate.run_sync(_require_admin, state, caller)
    wanted = None if status is None else status.value
    found = await state.agate.run_sync(
        list_deliveries, state.gate.store, caller.tenant, status=wanted, limit=limit
    )
    return DeliveryList(deliveries=[DeliveryView.of(d) for d in found])


@router.post(
    "/{destination}/{audit_seq}/replay",
    operation_id="replayDelivery",
    response_model=DeliveryView,
    responses=problems(400, 401, 403, 404, 409),
    summary="Send a dead delivery again, with a fresh attempt budget and the same event id",
)
async def replay_delivery(
    destination: Annotated[str, Path(min_length=1, max_length=200)],
    audit_seq: Annotated[int, Path(ge=1, le=2**62)],
    caller: Caller,
    state: State,
) -> DeliveryView:
    await state.agate.run_sync(_require_admin, state, caller)
    replayed = await state.agate.run_sync(
        replay,
        state.gate.store,
        state.gate.clock,
        caller.tenant,
        destination,
        audit_seq,
        by=caller.subject,
    )
    return DeliveryView.of(replayed)

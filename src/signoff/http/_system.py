"""Liveness, readiness, metrics and the caller's identity."""

from __future__ import annotations

from fastapi import APIRouter, Response

from signoff.http._deps import Caller, State
from signoff.http._openapi import problems
from signoff.http._views import Health, WhoAmI

router = APIRouter(tags=["system"])


@router.get(
    "/healthz",
    operation_id="getHealth",
    response_model=Health,
    responses=problems(),
    summary="The process answers",
)
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    operation_id="getReadiness",
    response_model=Health,
    responses=problems(),
    summary="The store is reachable",
)
def readyz(state: State) -> Health:
    state.gate.store.ping()
    return Health(status="ok")


@router.get(
    "/metrics",
    operation_id="getMetrics",
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}},
        **problems(),
    },
    summary="Prometheus metrics of this worker",
)
async def metrics(state: State) -> Response:
    body, content_type = state.metrics.render()
    return Response(body, media_type=content_type)


@router.get(
    "/v1/whoami",
    operation_id="whoAmI",
    response_model=WhoAmI,
    responses=problems(401),
    summary="The caller's sub, tenant, roles and acting agent",
)
async def whoami(caller: Caller) -> WhoAmI:
    return WhoAmI.of(caller)

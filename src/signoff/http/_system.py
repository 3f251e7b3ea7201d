"""Liveness, readiness, metrics and the caller's identity."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import APIRouter, Depends, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from signoff.exceptions import NotAuthenticated
from signoff.http._deps import Caller, State
from signoff.http._openapi import problems
from signoff.http._roles import require_admin
from signoff.http._views import Health, WhoAmI

_scraper = HTTPBearer(
    auto_error=False,
    scheme_name="metrics",
    description="SIGNOFF_METRICS_TOKEN, or the JWT of a person holding signoff_admin",
)

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
        **problems(401, 403),
    },
    summary="Prometheus metrics (SIGNOFF_METRICS_TOKEN, or a signoff_admin person)",
)
async def metrics(
    state: State,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_scraper)],
) -> Response:
    """The deployment's counters are not for strangers: a scrape token or an admin reads them.

    They carry no tenant label, so no one tenant's traffic can be told apart.
    """
    if credentials is None:
        raise NotAuthenticated("/metrics needs Authorization: Bearer <metrics token or JWT>")
    presented = credentials.credentials
    token = state.settings.metrics_token
    if token is None or not hmac.compare_digest(presented.encode(), token.encode()):
        caller = await state.authenticator.authenticate_async(presented)
        await state.agate.run_sync(require_admin, state, caller, "reading /metrics")
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

"""Extensions (the /ui pages, the /mcp endpoint) attach through create_app's extras."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request
from fastapi.testclient import TestClient

from signoff.http import AppState, state_of
from signoff.http._extras import EXTRAS, default_extras
from tests.conftest import AGENT, World
from tests.http.conftest import auth, make_app


def test_extra_gets_the_app_and_state_and_its_lifespan_runs(world: World) -> None:
    """An extra adds a router that reaches the gate, and a lifespan around serving."""
    events: list[str] = []

    def include(app: FastAPI, state: AppState) -> None:
        router = APIRouter(prefix="/ui")

        @router.get("/count")
        def count(request: Request) -> dict[str, int]:
            gate = state_of(request.app).gate
            principal = state_of(request.app).authenticator.authenticate(
                request.headers["authorization"].removeprefix("Bearer ")
            )
            return {"proposals": len(gate.proposals(principal))}

        app.include_router(router)

        @asynccontextmanager
        async def running() -> AsyncIterator[None]:
            events.append("start")
            yield
            events.append("stop")

        state.add_lifespan(running)

    app = make_app(world, extras=[include])
    with TestClient(app) as client:
        world.gate.propose(
            AGENT,
            "refund_order",
            {"order_id": "ord_1001", "amount_minor": 1, "currency": "CNY", "reason": None},
        )
        assert client.get("/ui/count", headers=auth(AGENT)).json() == {"proposals": 1}
        assert events == ["start"]
    assert events == ["start", "stop"]


def test_default_extras_are_importable() -> None:
    """Every extension listed for `signoff serve` imports and is callable."""
    assert len(default_extras()) == len(EXTRAS)

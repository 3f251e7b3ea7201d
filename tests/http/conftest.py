"""An in-process API over the shared `world`: TestClient, tokens per principal, flow helpers."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx2 as httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from signoff import Execution, Gate, HookPoint, Principal
from signoff.demo import demo_catalog
from signoff.http import DemoObjects, Settings, create_app, mint_dev_token
from tests.conftest import AGENT, APPROVER, REFUND, TOKEN_KEY, World

SETTINGS = Settings(demo=True)


def token_for(principal: Principal, *, settings: Settings = SETTINGS, ttl: int = 600) -> str:
    return mint_dev_token(
        settings,
        subject=principal.subject,
        tenant=principal.tenant,
        roles=sorted(principal.roles),
        actor=principal.actor,
        ttl_seconds=ttl,
        now=datetime.now(UTC),
    )


def auth(principal: Principal, key: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token_for(principal)}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return headers


@dataclass
class Api:
    """The app under test, its client and the world behind it."""

    app: FastAPI
    client: TestClient
    world: World

    def propose(self, by: Principal = AGENT, **changes: Any) -> dict[str, Any]:
        body = {"tool": "refund_order", "arguments": {**REFUND, **changes}}
        response = self.client.post("/v1/proposals", json=body, headers=auth(by))
        assert response.status_code == 201, response.text
        return response.json()  # type: ignore[no-any-return]

    def decide(
        self,
        proposal: dict[str, Any],
        *,
        by: Principal = APPROVER,
        key: str | None = None,
        **body: Any,
    ) -> httpx.Response:
        key = key or uuid.uuid4().hex
        payload = {"decision": "approve", "expected_version": proposal["version"], **body}
        return self.client.post(
            f"/v1/proposals/{proposal['proposal_id']}/decision", json=payload, headers=auth(by, key)
        )

    def approve(
        self, proposal: dict[str, Any], *, requester: Principal = AGENT, **kwargs: Any
    ) -> str:
        """Approve as a person; the requesting agent then picks up its token."""
        response = self.decide(proposal, **kwargs)
        assert response.status_code == 200, response.text
        assert "confirmation_token" not in response.json()
        return self.pick_up(proposal["proposal_id"], by=requester)

    def pick_up(self, proposal_id: str, *, by: Principal = AGENT) -> str:
        response = self.client.get(
            f"/v1/proposals/{proposal_id}/confirmation-token", headers=auth(by)
        )
        assert response.status_code == 200, response.text
        assert response.headers["cache-control"] == "no-store"
        token = response.json()["confirmation_token"]
        assert isinstance(token, str)
        return token

    def execute(
        self, proposal_id: str, token: str, *, by: Principal = AGENT, key: str | None = None
    ) -> httpx.Response:
        key = key or uuid.uuid4().hex
        body = {"proposal_id": proposal_id, "confirmation_token": token}
        return self.client.post("/v1/executions", json=body, headers=auth(by, key))


def make_app(world: World, **kwargs: Any) -> FastAPI:
    return create_app(
        SETTINGS,
        gate=kwargs.pop("gate", world.gate),
        demo=DemoObjects(world.shop, world.provider),
        extras=kwargs.pop("extras", ()),
        **kwargs,
    )


def paused_gate(world: World) -> tuple[Gate, threading.Event, threading.Event]:
    """A gate whose provider call waits: ``reached`` is set there, ``release`` lets it go."""
    reached, release = threading.Event(), threading.Event()

    def hooks(point: HookPoint, execution: Execution) -> None:
        if point is HookPoint.BEFORE_PROVIDER_CALL:
            reached.set()
            release.wait(10)

    gate = Gate(
        demo_catalog(world.shop, world.provider),
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        hooks=hooks,
    )
    return gate, reached, release


@pytest.fixture
def api(world: World) -> Iterator[Api]:
    app = make_app(world)
    with TestClient(app) as client:
        yield Api(app, client, world)


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["code"] == code, body
    assert body["status"] == status
    assert body["type"] == f"urn:signoff:problem:{code}"
    return body  # type: ignore[no-any-return]

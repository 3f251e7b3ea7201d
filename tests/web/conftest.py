"""The confirmation pages in-process: a TestClient over the shared `world`, signed in by form."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from signoff import Principal, Proposal
from signoff.http import DemoObjects, Settings, create_app, mint_dev_token
from signoff.web import include_ui
from tests.conftest import AGENT, REFUND, World

SETTINGS = Settings(demo=True)
BASE = "http://127.0.0.1"
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


def jwt_for(principal: Principal, *, settings: Settings = SETTINGS) -> str:
    return mint_dev_token(
        settings,
        subject=principal.subject,
        tenant=principal.tenant,
        roles=sorted(principal.roles),
        actor=principal.actor,
        now=datetime.now(UTC),
    )


def hidden_fields(html: str, form_class: str | None = None) -> dict[str, str]:
    """The hidden inputs of the page, or of the first form with ``class="<form_class>"``."""
    if form_class is not None:
        html = html.split(f'class="{form_class}"', 1)[1].split("</form>", 1)[0]
    return dict(_HIDDEN.findall(html))


@dataclass
class Pages:
    """The app with the pages, a browser-like client and the world behind it."""

    app: FastAPI
    client: TestClient
    world: World

    def sign_in(self, principal: Principal) -> None:
        page = self.client.get("/ui/sign-in")
        fields = hidden_fields(page.text)
        response = self.client.post(
            "/ui/sign-in", data={**fields, "token": jwt_for(principal)}, follow_redirects=False
        )
        assert response.status_code == 303, response.text

    def propose(self, *, rationale: str | None = None, **changes: Any) -> Proposal:
        return self.world.gate.propose(
            AGENT, "refund_order", {**REFUND, **changes}, rationale=rationale
        )

    def decision_form(self, proposal: Proposal, form_class: str = "approve") -> dict[str, str]:
        page = self.client.get(f"/ui/proposals/{proposal.proposal_id}")
        assert page.status_code == 200, page.text
        return hidden_fields(page.text, form_class)

    def post_decision(self, proposal: Proposal, data: dict[str, str]) -> Any:
        return self.client.post(
            f"/ui/proposals/{proposal.proposal_id}/decision", data=data, follow_redirects=False
        )

    def approvals(self, proposal: Proposal) -> int:
        events = self.world.gate.audit_events(AGENT, proposal_id=proposal.proposal_id)
        return sum(e.kind.startswith("decision.") for e in events)


def make_pages_app(world: World, settings: Settings = SETTINGS) -> FastAPI:
    return create_app(
        settings,
        gate=world.gate,
        demo=DemoObjects(world.shop, world.provider) if settings.demo else None,
        extras=[include_ui],
    )


@pytest.fixture
def pages(world: World) -> Iterator[Pages]:
    app = make_pages_app(world)
    with TestClient(app, base_url=BASE) as client:
        yield Pages(app, client, world)

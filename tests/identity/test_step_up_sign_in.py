"""Step-up through the page's OIDC sign-in, against the real provider (oidc-provider).

A refund whose policy asks for a sign-in with a second factor within 5 minutes
(``max_age=300``, ``acr_values=urn:signoff:mfa``): the approver's page session came from
an older password sign-in, so approving sends the browser back to the provider with
``max_age`` and ``acr_values``; the provider authenticates again, the approval goes
through, and the decision records the ``acr`` and ``auth_time`` the provider returned.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from signoff import Catalog, Gate, Principal, ProposalStatus
from tests.conftest import AGENT, TOKEN_KEY, World
from tests.identity.idp import Idp, SigningKey
from tests.identity.test_page_sign_in import CALLBACK, pages
from tests.test_step_up import MAX_AGE, MFA, StepUpRefund
from tests.web.conftest import hidden_fields

PASSWORD = "urn:signoff:pwd"
AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))


@pytest.fixture
def page_idp(tmp_path: Path) -> Iterator[Idp]:
    provider = Idp(tmp_path, redirects=[CALLBACK], ttl_seconds=3600).start([SigningKey("k1")])
    try:
        yield provider
    finally:
        provider.stop()


@pytest.fixture
def stepped(world: World) -> World:
    """The world's gate with the step-up refund, on the real clock (the provider's)."""
    world.clock.set(datetime.now(UTC))
    world.gate = Gate(
        Catalog([StepUpRefund(world.shop, world.provider)]),
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
    )
    return world


def _sign_in(client: TestClient, idp: Idp, url: str, **how: Any) -> Any:
    """Follow ``url`` to the provider, sign in as alice ``how`` asks, come back."""
    start = client.get(url, follow_redirects=False)
    assert start.status_code == 303, start.text
    with httpx.Client(timeout=10) as browser:
        back = idp.finish_login(browser, start.headers["location"], "alice", CALLBACK, **how)
    return start, client.get("/ui/sign-in/oidc/corp/callback", params=back, follow_redirects=False)


def _approve(client: TestClient, proposal_id: str) -> Any:
    page = client.get(f"/ui/proposals/{proposal_id}")
    assert page.status_code == 200, page.text
    form = hidden_fields(page.text, "approve")
    return client.post(
        f"/ui/proposals/{proposal_id}/decision",
        data={**form, "decision": "approve"},
        follow_redirects=False,
    )


def test_an_old_password_sign_in_is_stepped_up_at_the_provider(
    stepped: World, page_idp: Idp
) -> None:
    """Signed in with a password 10 minutes ago: approving goes back to the provider with
    max_age=300 and acr_values=urn:signoff:mfa; after a second-factor sign-in the approval
    is recorded with what the provider returned, and the refund runs once."""
    client = pages(stepped, page_idp)
    ten_minutes_ago = int(time.time()) - 600
    _, back = _sign_in(
        client, page_idp, "/ui/sign-in/oidc/corp?next=/ui/inbox", acr=PASSWORD,
        auth_time=ten_minutes_ago,
    )  # fmt: skip
    assert back.status_code == 303
    proposal = stepped.propose()

    refused = _approve(client, proposal.proposal_id)
    assert refused.status_code == 303
    step_up = httpx.URL(refused.headers["location"])
    assert step_up.path == "/ui/sign-in/oidc/corp"
    assert dict(step_up.params) == {
        "next": f"/ui/proposals/{proposal.proposal_id}",
        "max_age": str(MAX_AGE),
        "acr_values": MFA,
    }
    assert stepped.gate.proposal(AGENT, proposal.proposal_id).approvals == ()

    start, back = _sign_in(client, page_idp, str(step_up), acr=MFA)
    asked = dict(httpx.URL(start.headers["location"]).params)
    assert (asked["max_age"], asked["acr_values"]) == (str(MAX_AGE), MFA)
    assert back.headers["location"] == f"/ui/proposals/{proposal.proposal_id}"

    approved = _approve(client, proposal.proposal_id)
    assert approved.status_code == 303, approved.text
    assert "/result" in approved.headers["location"]
    confirmed = stepped.gate.proposal(AGENT, proposal.proposal_id)
    assert confirmed.status is ProposalStatus.CONFIRMED
    [event] = [
        e
        for e in stepped.gate.audit_events(AUDITOR, proposal_id=proposal.proposal_id)
        if e.kind == "decision.approved"
    ]
    recorded = json.loads(event.data)["authentication"]
    assert recorded["acr"] == MFA
    assert abs(recorded["auth_time"] - int(time.time())) < 60
    token = stepped.gate.confirmation_token(AGENT, proposal.proposal_id)
    stepped.gate.execute(AGENT, proposal.proposal_id, token)
    assert stepped.ledger_amounts() == [("ord_1001", 19900)]


def test_a_fresh_password_sign_in_is_asked_for_the_second_factor(
    stepped: World, page_idp: Idp
) -> None:
    """Fresh, but without the second factor: back to the provider for acr urn:signoff:mfa;
    a password sign-in again is still refused, nothing decided."""
    client = pages(stepped, page_idp)
    _sign_in(client, page_idp, "/ui/sign-in/oidc/corp?next=/ui/inbox", acr=PASSWORD)
    proposal = stepped.propose()
    refused = _approve(client, proposal.proposal_id)
    location = refused.headers["location"]
    assert "acr_values=urn%3Asignoff%3Amfa" in location
    _sign_in(client, page_idp, location, acr=PASSWORD)  # the person did not use the factor
    again = _approve(client, proposal.proposal_id)
    assert again.status_code == 303 and again.headers["location"].startswith(
        "/ui/sign-in/oidc/corp"
    )
    assert stepped.gate.proposal(AGENT, proposal.proposal_id).approvals == ()
    assert stepped.ledger_amounts() == []

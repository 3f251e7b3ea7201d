"""Operations: request ids in logs and audit, rate limit, offline API docs, no secret in logs."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from signoff.http import DemoObjects, Settings, create_app
from signoff.http._settings import DEMO_JWT_SECRET, DEMO_TOKEN_KEY
from tests.conftest import AGENT, APPROVER, REFUND, World
from tests.http.conftest import Api, assert_problem, auth
from tests.serving import clean_env, serving

OTHER_AGENT = AGENT.__class__("u_42", "acme", actor="agent:other-bot")


def test_request_id_is_echoed_and_lands_in_the_audit_event(api: Api) -> None:
    """A client's X-Request-ID comes back and is written into the proposal's audit event."""
    body = {"tool": "refund_order", "arguments": REFUND}
    headers = {**auth(AGENT), "X-Request-ID": "req-42.a"}
    response = api.client.post("/v1/proposals", json=body, headers=headers)
    assert response.status_code == 201
    assert response.headers["X-Request-ID"] == "req-42.a"
    with api.world.store.read() as tx:
        events = tx.audit_events(proposal_id=response.json()["proposal_id"])
    created = [json.loads(e.data) for e in events if e.kind == "proposal.created"]
    assert [data["request_id"] for data in created] == ["req-42.a"]


def test_a_forged_request_id_is_replaced(api: Api) -> None:
    """An id with separators or of unbounded length is not trusted: a fresh one is made."""
    for offered in ("a\nb", "x" * 65, "a b"):
        response = api.client.get("/healthz", headers={"X-Request-ID": offered})
        assert response.headers["X-Request-ID"] != offered
        assert len(response.headers["X-Request-ID"]) == 32


def test_proposals_per_agent_are_rate_limited_with_retry_after(world: World) -> None:
    """The third proposal of one agent in a minute: 429 + Retry-After; another agent goes on."""
    settings = Settings(demo=True, proposal_rate_limit="2/minute")
    app = create_app(
        settings, gate=world.gate, demo=DemoObjects(world.shop, world.provider), extras=()
    )
    body = {"tool": "refund_order", "arguments": REFUND}
    with TestClient(app) as client:
        for _ in range(2):
            assert client.post("/v1/proposals", json=body, headers=auth(AGENT)).status_code == 201
        refused = client.post("/v1/proposals", json=body, headers=auth(AGENT))
        other = client.post("/v1/proposals", json=body, headers=auth(OTHER_AGENT))
    problem = assert_problem(refused, 429, "rate_limited")
    assert int(refused.headers["Retry-After"]) >= 1
    assert problem["retry_after_seconds"] == int(refused.headers["Retry-After"])
    assert other.status_code == 201
    with world.store.read() as tx:
        assert len(tx.proposals("acme")) == 3


def test_api_docs_are_served_without_a_cdn(api: Api) -> None:
    """/docs and /redoc load their scripts from this server; the scripts are there."""
    for page in ("/docs", "/redoc"):
        html = api.client.get(page).text
        assert "cdn" not in html.lower() and "https://" not in html
        for asset in ("/docs-assets/swagger-ui-bundle.js", "/docs-assets/redoc.standalone.js"):
            if asset in html:
                served = api.client.get(asset)
                assert served.status_code == 200 and len(served.content) > 100_000


@pytest.mark.slow
def test_json_logs_carry_request_ids_and_no_secret(tmp_path: Path) -> None:
    """A real server at debug level, a full flow: JSON lines, request ids, no token or key."""
    args = ["--demo", "--log-format", "json", "--log-level", "debug"]
    log = tmp_path / "server.log"
    env = clean_env(SIGNOFF_DATA_DIR=str(tmp_path))
    with log.open("wb") as sink, serving(args, env=env, output=sink) as base:
        secrets = _full_flow(base)
    text = log.read_text()
    for secret in (*secrets, DEMO_TOKEN_KEY.hex(), DEMO_JWT_SECRET.hex()):
        assert secret not in text
    records = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    requests = [r for r in records if r.get("event") == "http.request"]
    assert len(requests) >= 3
    assert all(len(r["request_id"]) == 32 and r["route"] for r in requests)
    assert "/v1/proposals" in {r["route"] for r in requests}


def _full_flow(base: str) -> list[str]:
    """Propose, approve, execute over HTTP; return every secret that crossed the wire."""
    from tests.http.conftest import token_for

    agent_jwt, approver_jwt = token_for(AGENT), token_for(APPROVER)
    agent = {"Authorization": f"Bearer {agent_jwt}"}
    approver = {"Authorization": f"Bearer {approver_jwt}", "Idempotency-Key": "k1"}
    with httpx.Client(base_url=base, timeout=30) as client:
        proposal = client.post(
            "/v1/proposals", json={"tool": "refund_order", "arguments": REFUND}, headers=agent
        ).json()
        client.post(
            f"/v1/proposals/{proposal['proposal_id']}/decision",
            json={"decision": "approve", "expected_version": proposal["version"]},
            headers=approver,
        ).raise_for_status()
        token = client.get(
            f"/v1/proposals/{proposal['proposal_id']}/confirmation-token", headers=agent
        ).json()["confirmation_token"]
        executed = client.post(
            "/v1/executions",
            json={"proposal_id": proposal["proposal_id"], "confirmation_token": token},
            headers={**agent, "Idempotency-Key": "k2"},
        )
        assert executed.status_code in (200, 201), executed.text
    return [agent_jwt, approver_jwt, token]


def test_the_in_process_window_moves() -> None:
    """memory://: the oldest proposal leaving the window lets the next one in, no sooner."""
    from limits import parse

    from signoff.http._rate_limit import _LocalWindow

    window = _LocalWindow(parse("2/minute"))
    key = ("acme", "agent:a")
    assert window.hit(key, 0.0) is None and window.hit(key, 30.0) is None
    assert window.hit(key, 59.0) == pytest.approx(1.0)
    assert window.hit(("acme", "agent:b"), 59.0) is None
    assert window.hit(key, 60.0) is None
    assert window.hit(key, 61.0) == pytest.approx(29.0)

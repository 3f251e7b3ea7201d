"""healthz, readyz, metrics, whoami, the OpenAPI document and the docs page."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from signoff import Principal
from signoff.exceptions import StoreUnavailable
from tests.conftest import AGENT, APPROVER, World
from tests.http.conftest import Api, assert_problem, auth, make_app


def test_healthz_needs_no_token(api: Api) -> None:
    """Liveness answers without identity."""
    assert api.client.get("/healthz").json() == {"status": "ok"}


def test_readyz_pings_the_store(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ready while the store answers; 503 store_unavailable when it does not."""
    assert api.client.get("/readyz").json() == {"status": "ok"}

    def down() -> None:
        raise StoreUnavailable("SQLite store unavailable: disk I/O error")

    monkeypatch.setattr(api.world.store, "ping", down)
    assert_problem(api.client.get("/readyz"), 503, "store_unavailable")


def test_whoami_reports_the_token_identity(api: Api) -> None:
    """sub, tenant, sorted roles and the acting agent."""
    assert api.client.get("/v1/whoami", headers=auth(AGENT)).json() == {
        "sub": "u_42",
        "tenant": "acme",
        "roles": [],
        "act": "agent:support-bot",
    }
    me = api.client.get("/v1/whoami", headers=auth(APPROVER)).json()
    assert me["roles"] == ["refund_approver"]
    assert me["act"] is None


ADMIN = Principal("olga", "acme", frozenset({"signoff_admin"}))


def test_metrics_count_requests_by_route_and_problem_code(api: Api) -> None:
    """Prometheus text with route templates (not raw ids) and problem codes."""
    api.client.get("/v1/proposals/prop_guess", headers=auth(AGENT))
    api.client.get("/v1/whoami")
    text = api.client.get("/metrics", headers=auth(ADMIN)).text
    assert 'route="/v1/proposals/{proposal_id}"' in text
    assert "prop_guess" not in text
    assert 'signoff_http_problems_total{code="not_found"} 1.0' in text
    assert 'signoff_http_problems_total{code="not_authenticated"} 1.0' in text


def test_openapi_is_3_1_with_problem_details(api: Api) -> None:
    """Errors are documented as application/problem+json Problems; no FastAPI 422 schema."""
    document = api.client.get("/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    schemas = document["components"]["schemas"]
    assert "Problem" in schemas
    assert "HTTPValidationError" not in schemas
    execute = document["paths"]["/v1/executions"]["post"]
    assert set(execute["responses"]) == {
        "200",
        "202",
        "400",
        "401",
        "403",
        "404",
        "405",
        "409",
        "413",
        "422",
        "503",
    }
    assert list(execute["responses"]["409"]["content"]) == ["application/problem+json"]
    key = next(p for p in execute["parameters"] if p["name"] == "Idempotency-Key")
    assert key["in"] == "header"
    assert key["required"] is True
    assert "bearer" in document["components"]["securitySchemes"]


def test_docs_page_is_served(api: Api) -> None:
    """Swagger UI at /docs."""
    response = api.client.get("/docs")
    assert response.status_code == 200
    assert "swagger" in response.text.lower()


def test_demo_routes_exist_only_in_demo_mode(world: World) -> None:
    """Without demo objects, /v1/demo/* is an unknown route."""
    from signoff.http import Settings, create_app

    app = create_app(Settings(demo=True), gate=world.gate, extras=())
    client = TestClient(app)
    response = client.get("/v1/demo/provider/ledger", headers=auth(AGENT))
    assert_problem(response, 404, "not_found")


def test_lifespan_closes_only_what_the_app_opened(world: World) -> None:
    """A gate passed in stays open after shutdown: the caller owns it."""
    with TestClient(make_app(world)) as client:
        client.get("/healthz")
    world.store.ping()

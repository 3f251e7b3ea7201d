"""Every failure is an RFC 9457 problem with a stable code; nothing answers 500."""

from __future__ import annotations

import logging

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from signoff.exceptions import CatalogError, StoreUnavailable
from signoff.http import AppState
from tests.conftest import AGENT, REFUND, World
from tests.http.conftest import Api, assert_problem, auth, make_app


def test_malformed_json_is_400(api: Api) -> None:
    """A body that is not JSON is invalid_request, not a 500."""
    response = api.client.post(
        "/v1/proposals",
        content=b'{"tool": "refund_order", "arguments": ',
        headers={**auth(AGENT), "Content-Type": "application/json"},
    )
    assert_problem(response, 400, "invalid_request")


def test_non_object_bodies_are_400(api: Api) -> None:
    """Arrays, strings, numbers and nulls where an object belongs are 400s."""
    for content in (b"[]", b'"x"', b"1", b"null", b'{"tool": 1, "arguments": {}}'):
        response = api.client.post(
            "/v1/proposals",
            content=content,
            headers={**auth(AGENT), "Content-Type": "application/json"},
        )
        assert_problem(response, 400, "invalid_request")


def test_wrong_content_type_is_400(api: Api) -> None:
    """A JSON body sent as text/plain is not parsed as JSON."""
    response = api.client.post(
        "/v1/proposals",
        content=b'{"tool": "refund_order", "arguments": {}}',
        headers={**auth(AGENT), "Content-Type": "text/plain"},
    )
    assert_problem(response, 400, "invalid_request")


def test_huge_body_is_413(api: Api) -> None:
    """A body over the configured limit is payload_too_large, and nothing is proposed."""
    arguments = {**REFUND, "reason": "x" * 100_000}
    response = api.client.post(
        "/v1/proposals", json={"tool": "refund_order", "arguments": arguments}, headers=auth(AGENT)
    )
    assert_problem(response, 413, "payload_too_large")
    assert api.world.gate.proposals(AGENT) == []


def test_huge_numbers_and_deep_nesting_are_4xx(api: Api) -> None:
    """An integer beyond Python's digit limit and deep nesting are client errors."""
    for content in (
        b'{"tool": "refund_order", "arguments": {"amount_minor": ' + b"9" * 5000 + b"}}",
        b'{"tool": "refund_order", "arguments": ' + b'{"a":' * 5000 + b"1" + b"}" * 5001,
        b'{"tool": "refund_order", "arguments": {"amount_minor": 1e400}}',
    ):
        response = api.client.post(
            "/v1/proposals",
            content=content,
            headers={**auth(AGENT), "Content-Type": "application/json"},
        )
        assert 400 <= response.status_code < 500, response.text
        assert response.headers["content-type"].startswith("application/problem+json")


def test_unknown_route_and_method_are_problems(api: Api) -> None:
    """404 for an unknown path, 405 for a wrong method; both problem+json."""
    assert_problem(api.client.get("/v1/nothing", headers=auth(AGENT)), 404, "not_found")
    assert_problem(
        api.client.delete("/v1/proposals", headers=auth(AGENT)), 405, "method_not_allowed"
    )


def boom_extra(app: FastAPI, state: AppState) -> None:
    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret internals: password=hunter2")

    @app.get("/catalog-bug")
    def catalog_bug() -> None:
        raise CatalogError("tool x declared wrongly at /srv/app.py:12")

    @app.get("/store-down")
    def store_down() -> None:
        raise StoreUnavailable("database unreachable")


def test_unexpected_error_is_503_without_internals(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """An unexpected exception is logged and answered 503 'unavailable', never leaked."""
    client = TestClient(make_app(world, extras=[boom_extra]))
    with caplog.at_level(logging.ERROR, logger="signoff.http"):
        response = client.get("/boom")
    problem = assert_problem(response, 503, "unavailable")
    assert "hunter2" not in response.text
    assert "status" in problem["detail"]
    assert response.headers["retry-after"] == "1"
    assert any("unexpected error" in r.message for r in caplog.records)


def test_internal_signoff_error_is_503_without_its_message(world: World) -> None:
    """A programming error inside signoff is answered like any unexpected one."""
    client = TestClient(make_app(world, extras=[boom_extra]))
    response = client.get("/catalog-bug")
    assert_problem(response, 503, "unavailable")
    assert "/srv/app.py" not in response.text


def test_store_unavailable_keeps_its_code(world: World) -> None:
    """StoreUnavailable is a 503 with its own code: no outcome is known."""
    client = TestClient(make_app(world, extras=[boom_extra]))
    assert_problem(client.get("/store-down"), 503, "store_unavailable")

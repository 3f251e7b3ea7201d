"""RFC 9110 method semantics and RFC 9457/6750 details of the answers (issue 24).

A 405's Allow lists every method of the path (FastAPI named only the first route's:
`DELETE /v1/proposals` said `Allow: POST` though GET exists); HEAD answers as GET without
a body; a problem's `instance` is a percent-encoded URI reference; `error="invalid_token"`
appears only when a bearer token was sent.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from signoff.http import Settings, create_app
from tests.conftest import AGENT, World
from tests.http.conftest import Api, assert_problem, auth

METHODS = ("DELETE", "GET", "PATCH", "POST", "PUT")


def test_a_405_allows_every_method_of_the_path(api: Api) -> None:
    """For every path of the document, each undeclared method: 405, Allow = the declared
    ones (and HEAD with GET), as a problem."""
    document: dict[str, Any] = api.client.get("/openapi.json").json()
    checked = 0
    for path, item in document["paths"].items():
        declared = {m.upper() for m in item}
        expected = sorted(declared | ({"HEAD"} if "GET" in declared else set()))
        concrete = path.replace("{proposal_id}", "p1").replace("{execution_id}", "e1")
        concrete = concrete.replace("{subject}", "s").replace("{role}", "r")
        concrete = concrete.replace("{destination}", "d").replace("{audit_seq}", "1")
        for method in set(METHODS) - declared:
            response = api.client.request(method, concrete)
            assert_problem(response, 405, "method_not_allowed")
            assert response.headers["allow"] == ", ".join(expected), (method, path)
            checked += 1
    assert checked > 60


def test_head_is_get_without_a_body(api: Api) -> None:
    """HEAD /healthz and HEAD of an authenticated read: GET's status and headers, no body."""
    get, head = api.client.get("/healthz"), api.client.head("/healthz")
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-type"] == get.headers["content-type"]
    listed = api.client.head("/v1/proposals", headers=auth(AGENT))
    assert (listed.status_code, listed.content) == (200, b"")
    assert api.client.head("/v1/executions").headers["allow"] == "POST"


def test_problem_instance_is_a_percent_encoded_uri_reference(api: Api) -> None:
    """`/v1/proposals/a bé"<` is named `/v1/proposals/a%20b%C3%A9%22%3C`, never raw."""
    response = api.client.get("/v1/proposals/a%20b%C3%A9%22%3C", headers=auth(AGENT))
    problem = assert_problem(response, 404, "not_found")
    assert problem["instance"] == "/v1/proposals/a%20b%C3%A9%22%3C"


def test_no_error_code_without_a_bearer_token(world: World) -> None:
    """No Authorization, or Basic: a bare Bearer challenge; a bad bearer token: invalid_token."""
    with TestClient(create_app(Settings(demo=True), gate=world.gate, extras=())) as client:
        bare = client.get("/v1/proposals")
        basic = client.get("/v1/proposals", headers={"Authorization": "Basic dTpw"})
        wrong = client.get("/v1/proposals", headers={"Authorization": "Bearer nope"})
    for response in (bare, basic):
        assert response.status_code == 401
        assert "error=" not in response.headers["www-authenticate"]
    assert wrong.headers["www-authenticate"].startswith('Bearer error="invalid_token"')

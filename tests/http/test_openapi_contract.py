"""The checked-in openapi.json is what the server serves, and is fit for client generators."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from signoff.cli._main import cli
from signoff.http import create_app
from signoff.http._contract import REGENERATE, render, served_document
from tests.conftest import World
from tests.http.conftest import SETTINGS, make_app

CONTRACT = Path(__file__).resolve().parents[2] / "openapi.json"
METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
CAMEL_CASE = re.compile(r"^[a-z][a-zA-Z0-9]*$")
PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


@pytest.fixture
def served(world: World) -> dict[str, Any]:
    """GET /openapi.json of a production app: every default extension, no demo routes."""
    app = create_app(SETTINGS, gate=world.gate)
    response = TestClient(app).get("/openapi.json")
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


def test_checked_in_contract_is_the_served_document(served: dict[str, Any]) -> None:
    """openapi.json equals what the server answers; regenerate it when an API change is meant."""
    checked_in = json.loads(CONTRACT.read_text(encoding="utf-8"))
    changed = sorted(
        {*served["paths"], *checked_in["paths"]}
        - {p for p in served["paths"] if served["paths"][p] == checked_in["paths"].get(p)}
    )
    assert served == checked_in, f"openapi.json drifted (paths {changed}); run: {REGENERATE}"


def test_regenerate_command_writes_the_file_byte_for_byte() -> None:
    """`signoff openapi` prints exactly the checked-in text, so `> openapi.json` reproduces it."""
    result = CliRunner().invoke(cli, ["openapi"])
    assert result.exit_code == 0, result.output
    assert result.output == CONTRACT.read_text(encoding="utf-8")
    assert render(served_document()) == result.output


def test_contract_leaves_out_the_demo_routes(served: dict[str, Any]) -> None:
    """The demo shop's endpoints exist only under --demo, so the contract does not promise them."""
    assert not [path for path in served["paths"] if path.startswith("/v1/demo")]
    assert "decideProposal" in {op["operationId"] for _, _, op in operations(served)}


def test_every_operation_has_a_unique_camel_case_operation_id(world: World) -> None:
    """Generated clients get readable method names on every route, the demo ones included."""
    document = TestClient(make_app(world, extras=None)).get("/openapi.json").json()
    found = operations(document)
    ids = [operation.get("operationId") for _, _, operation in found]
    missing = [f"{m} {p}" for m, p, op in found if not CAMEL_CASE.match(op.get("operationId", ""))]
    assert not missing, f'set operation_id="camelCase" in the route decorator of {missing}'
    assert len(ids) == len(set(ids)), ids
    assert "getDemoLedger" in ids


def test_the_names_a_generator_sees(served: dict[str, Any]) -> None:
    """The approver client's calls have the names the docs use; schemas are named, not Body_…."""
    by_route = {f"{m} {p}": op["operationId"] for m, p, op in operations(served)}
    assert by_route["GET /v1/proposals"] == "listProposals"
    assert by_route["GET /v1/proposals/{proposal_id}"] == "getProposal"
    assert by_route["POST /v1/proposals/{proposal_id}/decision"] == "decideProposal"
    assert by_route["POST /v1/executions"] == "executeProposal"
    schemas = served["components"]["schemas"]
    assert {"ProposalView", "DecisionRequest", "DecisionView", "Problem"} <= set(schemas)
    auto = [n for n in schemas if n.startswith("Body_") or re.search(r"__|-Input$|-Output$", n)]
    assert not auto


def test_every_error_is_a_problem_with_a_code(served: dict[str, Any]) -> None:
    """Each 4xx/5xx answer is application/problem+json Problem; 503 names Retry-After."""
    for method, path, operation in operations(served):
        for status, response in operation["responses"].items():
            if int(status) < 400:
                continue
            assert response["content"] == {"application/problem+json": {"schema": PROBLEM_REF}}, (
                f"{method} {path} {status}"
            )
            assert "Codes: `" in response["description"]
        assert "503" in operation["responses"], f"{method} {path}"
        assert "Retry-After" in operation["responses"]["503"]["headers"]
    problem = served["components"]["schemas"]["Problem"]
    assert {"type", "title", "status", "detail", "code"} <= set(problem["required"])


def test_problem_descriptions_list_the_codes_of_each_status(served: dict[str, Any]) -> None:
    """A client writer reads which codes a status carries, e.g. version_conflict under 409."""
    decide = served["paths"]["/v1/proposals/{proposal_id}/decision"]["post"]["responses"]
    assert "`version_conflict`" in decide["409"]["description"]
    assert "`not_found`" in decide["404"]["description"]
    assert "`idempotency_key_reused`" in decide["422"]["description"]
    assert "`version_conflict`" not in decide["422"]["description"]


def _inline_enums(node: Any, where: str = "") -> list[str]:
    """Enums written inside a property (a generator names them Status, Status1, …)."""
    found = []
    if isinstance(node, dict):
        if "enum" in node and "/properties/" in where:
            found.append(where)
        for key, value in node.items():
            found += _inline_enums(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _inline_enums(value, f"{where}[{i}]")
    return found


def test_the_contract_declares_what_the_server_enforces(served: dict[str, Any]) -> None:
    """Issue 24: named enums, one tag each, a server, 405/413 and Location documented, the
    Idempotency-Key and ?after= formats, reject → reason_code, succeeded → reference, a
    plain `loc`, and the RFC 9728 well-known route."""
    schemas = served["components"]["schemas"]
    assert _inline_enums(served["components"]) == []
    assert {"DeliveryStatus", "RoleGrantStatus", "RiskLevel", "DecisionKind"} <= set(schemas)
    assert {"ExecutionStatus", "ProposalStatus"} <= set(schemas)
    assert served["servers"] == [
        {"url": "http://127.0.0.1:8000", "description": "This signoff server"}
    ]
    for method, path, operation in operations(served):
        assert len(operation["tags"]) == 1, f"{method} {path}: {operation['tags']}"
        responses = operation["responses"]
        assert "405" in responses and "Allow" in responses["405"]["headers"], f"{method} {path}"
        assert ("413" in responses) == ("requestBody" in operation), f"{method} {path}"
        for status in ("201", "202"):
            if status in responses:
                assert "Location" in responses[status]["headers"], f"{method} {path} {status}"
    decide = served["paths"]["/v1/proposals/{proposal_id}/decision"]["post"]
    key = next(p for p in decide["parameters"] if p["name"] == "Idempotency-Key")
    assert key["schema"]["pattern"].startswith("^(?:[\\x21")
    inbox = served["paths"]["/v1/inbox"]["get"]["parameters"]
    after = next(p for p in inbox if p["name"] == "after")["schema"]["anyOf"][0]
    assert after["pattern"] == "^[0-9]{1,18}\\.[\\s\\S]{1,128}$"
    assert "reason_code" in schemas["RejectRequest"]["required"]
    assert "provider_reference" in schemas["ResolvedSucceeded"]["required"]
    assert schemas["DecisionRequest"]["discriminator"]["propertyName"] == "decision"
    assert schemas["ProblemFieldError"]["properties"]["loc"]["items"] == {"type": "string"}
    assert "getProtectedResourceMetadata" in {o["operationId"] for _, _, o in operations(served)}

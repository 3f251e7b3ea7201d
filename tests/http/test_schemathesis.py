"""Property-based conformance: generated requests over the served OpenAPI document.

Zero server errors and zero schema violations: every answer has a documented
status, content type, headers and body schema. Examples per operation stay
modest so the suite stays fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import APIOperation, BaseSchema, Case, GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.errors import InvalidSchema
from schemathesis.core.result import Err, Ok
from schemathesis.openapi import from_asgi

from signoff import Principal
from tests.conftest import AGENT, APPROVER, make_world
from tests.http.conftest import make_app, token_for

AnyCase = Case[Any]
AnyOperation = APIOperation[Any, Any, Any, Any]
EXAMPLES = 20
AUDITOR = Principal("audrey", "acme", roles=frozenset({"auditor", "refund_approver"}))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaseSchema]:
    world = make_world(Path(tmp_path_factory.mktemp("schemathesis")))
    # Some real records, so generated ids sometimes meet existing rows.
    proposal = world.propose()
    world.gate.execute(AGENT, proposal.proposal_id, world.approve(proposal))
    world.propose(order_id="ord_1002")
    yield from_asgi("/openapi.json", make_app(world))
    world.store.close()
    world.shop.close()


def operation_of(result: Ok[AnyOperation] | Err[InvalidSchema]) -> AnyOperation:
    assert isinstance(result, Ok), result
    return result.ok()


def caller_for(case: AnyCase) -> Principal:
    path, method = case.operation.path, case.operation.method.upper()
    if path.endswith(("/decision", "/revoke")) or path.startswith("/v1/audit"):
        return AUDITOR
    if method == "POST" or path.startswith("/v1/executions"):
        return AGENT
    return APPROVER


def check(operation: AnyOperation, mode: GenerationMode) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: AnyCase) -> None:
        headers = {"Authorization": f"Bearer {token_for(caller_for(case))}"}
        case.call_and_validate(headers=headers, checks=CHECKS)

    try:
        run()
    except Unsatisfiable:
        # Nothing to negate: the operation takes no parameters and no body.
        assert mode is GenerationMode.NEGATIVE


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_api_conforms_to_its_openapi(api_schema: BaseSchema, mode: GenerationMode) -> None:
    """No 5xx; every answer matches its documented status, type, headers and schema."""
    operations = [operation_of(result) for result in api_schema.get_all_operations()]
    assert len(operations) >= 15
    for operation in operations:
        check(operation, mode)

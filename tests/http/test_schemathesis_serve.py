"""Schemathesis against a real `signoff serve --demo`, on SQLite and on PostgreSQL (issue 24).

For every operation of the served document: positive and negative examples (bounded, so
a store costs well under a minute), then stateful runs along the document's OpenAPI links
(a created proposal → its decision, token, cancellation; an execution → its reads,
retries, resolution). Any 5xx, or an answer whose status, content type, headers or body
the document does not declare, fails. The agent, approver and auditor tokens are the
demo server's development JWTs.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import FlakyStrategyDefinition, Unsatisfiable
from schemathesis import BaseSchema, Case, GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Ok

from signoff import Principal
from tests.conftest import AGENT, APPROVER, REFUND
from tests.http.conftest import token_for
from tests.pg import fresh_schema
from tests.serving import clean_env, serving

pytestmark = pytest.mark.slow
EXAMPLES = 20
STATEFUL_SCENARIOS = 40
STEPS = 8
AUDITOR = Principal("audrey", "acme", roles=frozenset({"auditor", "refund_approver"}))
ADMIN = Principal("olga", "acme", roles=frozenset({"signoff_admin"}))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]
AnyCase = Case[Any]


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """`signoff serve --demo` on the store named by the parameter, with some real records."""
    if request.param == "sqlite":
        db = str(tmp_path_factory.mktemp("schemathesis") / "signoff.db")
        with serving(["--demo", "--db", db]) as base:
            _seed(base)
            yield base
        return
    # The demo shop of a PostgreSQL store lives in the data directory: a fresh one per run.
    env = clean_env(SIGNOFF_DATA_DIR=str(tmp_path_factory.mktemp("data")))
    with fresh_schema("schemathesis") as url, serving(["--demo", "--db", url], env=env) as base:
        _seed(base)
        yield base


def _seed(base: str) -> None:
    """One refund run to the end and one awaiting a person, so ids sometimes meet rows."""
    with httpx.Client(base_url=base, timeout=30) as http:
        done = _propose(http)
        approved = http.post(
            f"/v1/proposals/{done['proposal_id']}/decision",
            json={"decision": "approve", "expected_version": done["version"]},
            headers={**_auth(APPROVER), "Idempotency-Key": uuid.uuid4().hex},
        )
        assert approved.status_code == 200, approved.text
        token = http.get(
            f"/v1/proposals/{done['proposal_id']}/confirmation-token", headers=_auth(AGENT)
        ).json()["confirmation_token"]
        executed = http.post(
            "/v1/executions",
            json={"proposal_id": done["proposal_id"], "confirmation_token": token},
            headers={**_auth(AGENT), "Idempotency-Key": uuid.uuid4().hex},
        )
        assert executed.status_code == 200, executed.text
        _propose(http, order_id="ord_1002")


def _propose(http: httpx.Client, **changes: Any) -> dict[str, Any]:
    body = {"tool": "refund_order", "arguments": {**REFUND, **changes}}
    response = http.post("/v1/proposals", json=body, headers=_auth(AGENT))
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _auth(principal: Principal) -> dict[str, str]:
    return {"Authorization": f"Bearer {token_for(principal)}"}


def caller_for(case: AnyCase) -> Principal:
    path, method = case.operation.path, case.operation.method.upper()
    if path.endswith(("/decision", "/revoke")) or path.startswith("/v1/audit"):
        return AUDITOR
    if path.startswith(("/v1/roles", "/v1/deliveries")) or path.endswith("/resolution"):
        return ADMIN
    if method == "POST" or path.startswith("/v1/executions"):
        return AGENT
    return APPROVER


def _schema(base: str) -> BaseSchema:
    """The live document, with each case signed in as the principal its operation needs."""
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    servers = schema.raw_schema["servers"]
    assert servers == [{"url": base, "description": "This signoff server"}]

    @schema.auth(refresh_interval=None, cache_by_key=lambda case, _: caller_for(case).subject)
    class DevTokens:
        def get(self, case: AnyCase, ctx: Any) -> str:
            return token_for(caller_for(case))

        def set(self, case: AnyCase, data: str, ctx: Any) -> None:
            headers = dict(case.headers or {})
            headers["Authorization"] = f"Bearer {data}"
            case.headers = headers  # type: ignore[assignment]

    return schema


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_operation_conforms_to_the_served_document(served: str, mode: GenerationMode) -> None:
    """No 5xx; every answer has a documented status, content type, headers and body."""
    operations = [r.ok() for r in _schema(served).get_all_operations() if isinstance(r, Ok)]
    assert len(operations) >= 20
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: AnyCase) -> None:
            case.call_and_validate(checks=CHECKS)

        try:
            run()
        except Unsatisfiable:
            assert mode is GenerationMode.NEGATIVE  # nothing to negate: no parameters, no body


def test_stateful_runs_along_the_links_conform(served: str) -> None:
    """Created proposals lead to decisions, tokens and withdrawals; executions to reads and
    retries — each answer conforming, none a 5xx."""
    schema = _schema(served)
    machine = schema.as_state_machine()

    class Calls(machine):  # type: ignore[valid-type, misc]
        proposals = 0

        def before_call(self, case: AnyCase) -> None:
            """Signed in as the operation's principal (the stateful runner does not apply
            the schema's auth provider); every other new proposal is a real refund, so the
            links lead to real rows."""
            headers = dict(case.headers or {})
            headers["Authorization"] = f"Bearer {token_for(caller_for(case))}"
            case.headers = headers  # type: ignore[assignment]
            if case.operation.label == "POST /v1/proposals":
                Calls.proposals += 1
                if Calls.proposals % 2:
                    order = f"ord_{1001 + Calls.proposals % 8}"
                    body: dict[str, Any] = {"tool": "refund_order", "arguments": dict(REFUND)}
                    body["arguments"]["order_id"] = order
                    case.body = body

        def validate_response(self, response: Any, case: AnyCase, **kwargs: Any) -> None:
            answered.append(response.status_code)
            case.validate_response(response, checks=CHECKS)

    answered: list[int] = []
    run = functools.partial(
        Calls.run,
        settings=settings(
            max_examples=STATEFUL_SCENARIOS,
            stateful_step_count=STEPS,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    try:
        run()
    except FlakyStrategyDefinition:
        # A step failed once and Hypothesis could not replay it: the links feed it ids and
        # counts a live server answered, so a replay draws differently. Seen under the
        # whole suite's load and in runs of 200 scenarios, never with a non-conforming answer
        # recorded (validate_response); the step that failed was not found. One fresh
        # run must pass; a failure that happens again fails the test.
        run()
    # It got somewhere: answers beyond refusals (the links are followed from real rows).
    assert len(answered) >= STATEFUL_SCENARIOS and any(200 <= s < 300 for s in answered)


def test_the_live_document_names_this_server_and_its_links(served: str) -> None:
    """The live document names this server and carries the links the stateful run follows."""
    document = httpx.get(f"{served}/openapi.json").json()
    links = document["paths"]["/v1/proposals"]["post"]["responses"]["201"]["links"]
    assert {"getProposal", "decideProposal", "getConfirmationToken"} <= set(links)

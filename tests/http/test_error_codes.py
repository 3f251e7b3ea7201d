"""The remaining refusal codes over HTTP, and the one mapping for every exception class."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from signoff import Gate, exceptions
from signoff.http import error_problem
from tests.conftest import AGENT, APPROVER, TOKEN_KEY, World
from tests.http.conftest import Api, assert_problem, auth, make_app, paused_gate


def all_errors() -> list[type[exceptions.SignoffError]]:
    found, pending = [], [exceptions.SignoffError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


@pytest.mark.parametrize("cls", all_errors(), ids=lambda cls: cls.__name__)
def test_every_exception_maps_to_its_status_and_code(cls: type[exceptions.SignoffError]) -> None:
    """4xx refusals keep status and code; 5xx become 503 without their message."""
    response = error_problem(cls("the message", proposal_id="prop_1"))
    body = json.loads(bytes(response.body))
    assert response.media_type == "application/problem+json"
    passed_on = (
        exceptions.StoreUnavailable,
        exceptions.OutcomeUnknown,
        exceptions.UpstreamUnavailable,
    )
    if 400 <= cls.status < 500 or cls in passed_on:
        assert (response.status_code, body["code"]) == (cls.status, cls.code)
        assert body["proposal_id"] == "prop_1"
    else:
        assert (response.status_code, body["code"]) == (503, "unavailable")
        assert "the message" not in body["detail"]


def test_token_of_another_proposal_is_args_mismatch(api: Api) -> None:
    """A valid token presented for a different proposal confirms nothing."""
    first = api.propose()
    second = api.propose(order_id="ord_1002")
    token = api.approve(first)
    api.approve(second)
    assert_problem(api.execute(second["proposal_id"], token), 409, "args_mismatch")
    assert api.world.ledger_amounts() == []


def test_approver_who_lost_the_role_is_409(api: Api) -> None:
    """The approver's role is revoked after approving: approver_revoked, no refund."""
    proposal = api.propose()
    token = api.approve(proposal)
    api.world.directory.revoke("acme", "alice", "refund_approver")
    assert_problem(api.execute(proposal["proposal_id"], token), 409, "approver_revoked")
    assert api.world.ledger_amounts() == []


def test_token_for_another_executor_is_audience_mismatch(world: World) -> None:
    """An executor with another audience refuses tokens issued for 'signoff'."""
    issuing_app = make_app(world)
    api = Api(issuing_app, TestClient(issuing_app), world)
    proposal = api.propose()
    token = api.approve(proposal)
    other = Gate(
        world.gate.catalog,
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        audience="billing-executor",
    )
    client = TestClient(make_app(world, gate=other))
    body = {"proposal_id": proposal["proposal_id"], "confirmation_token": token}
    response = client.post("/v1/executions", json=body, headers=auth(AGENT, "k"))
    assert_problem(response, 403, "audience_mismatch")
    assert world.ledger_amounts() == []


def test_retry_while_running_is_execution_in_progress(world: World) -> None:
    """Asking again while the provider call runs: 409 execution_in_progress, one call."""
    gate, reached, release = paused_gate(world)
    with TestClient(make_app(world, gate=gate)) as client:
        api = Api(client.app, client, world)  # type: ignore[arg-type]
        proposal = api.propose()
        token = api.approve(proposal, by=APPROVER)
        with ThreadPoolExecutor(max_workers=1) as pool:
            first = pool.submit(api.execute, proposal["proposal_id"], token)
            assert reached.wait(10)
            execution = world.gate.execution_for(AGENT, proposal["proposal_id"])
            assert execution is not None
            path = f"/v1/executions/{execution.execution_id}"
            assert client.get(path, headers=auth(AGENT)).json()["execution"]["status"] == "running"
            retried = client.post(f"{path}/retry", headers=auth(AGENT))
            assert_problem(retried, 409, "execution_in_progress")
            release.set()
            assert first.result(10).status_code == 200
    assert world.ledger_amounts() == [("ord_1001", 19900)]

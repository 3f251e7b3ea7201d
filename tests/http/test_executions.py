"""POST /v1/executions and friends: one token, one refund, every refusal typed."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx2 as httpx
from fastapi.testclient import TestClient

from signoff import Principal
from signoff.demo import FaultMode
from tests.conftest import AGENT, APPROVER, OTHER_TENANT, World
from tests.http.conftest import Api, assert_problem, auth, make_app, paused_gate


def confirmed(api: Api, **changes: Any) -> tuple[str, str]:
    proposal = api.propose(**changes)
    return proposal["proposal_id"], api.approve(proposal)


def test_execute_refunds_once_and_returns_the_receipt(api: Api) -> None:
    """200 with a succeeded execution and receipt; the provider ledger has one refund."""
    proposal_id, token = confirmed(api)
    response = api.execute(proposal_id, token)
    assert response.status_code == 200
    body = response.json()
    assert body["duplicate"] is False
    assert body["execution"]["status"] == "succeeded"
    assert body["receipt"]["approvers"] == ["alice"]
    assert body["receipt"]["provider_reference"].startswith("re_")
    assert api.world.ledger_amounts() == [("ord_1001", 19900)]
    assert api.world.refunded() == 19900
    status = api.client.get(
        f"/v1/executions/{body['execution']['execution_id']}", headers=auth(AGENT)
    ).json()
    assert status == {
        "execution": body["execution"],
        "receipt": body["receipt"],
        "signed_receipt": body["signed_receipt"],
    }


def test_same_key_replays_the_first_response(api: Api) -> None:
    """Redelivery with the same key: duplicate, same execution, still one refund."""
    proposal_id, token = confirmed(api)
    first = api.execute(proposal_id, token, key="x1").json()
    again = api.execute(proposal_id, token, key="x1")
    assert again.status_code == 200
    assert again.json()["duplicate"] is True
    assert again.json()["execution"]["execution_id"] == first["execution"]["execution_id"]
    assert api.world.ledger_amounts() == [("ord_1001", 19900)]


def test_token_again_with_a_new_key_is_already_consumed(api: Api) -> None:
    """The walkthrough's last step: the token is refused once used, naming the execution."""
    proposal_id, token = confirmed(api)
    first = api.execute(proposal_id, token, key="x1").json()
    problem = assert_problem(api.execute(proposal_id, token, key="x2"), 409, "already_consumed")
    assert problem["execution_id"] == first["execution"]["execution_id"]
    assert api.world.ledger_amounts() == [("ord_1001", 19900)]


def test_same_key_other_payload_is_422(api: Api) -> None:
    """A key used for one execution cannot carry another."""
    proposal_id, token = confirmed(api)
    other_id, other_token = confirmed(api, order_id="ord_1002")
    api.execute(proposal_id, token, key="x1")
    assert_problem(api.execute(other_id, other_token, key="x1"), 422, "idempotency_key_reused")
    assert api.world.ledger_amounts() == [("ord_1001", 19900)]


def test_missing_key_is_400(api: Api) -> None:
    """No Idempotency-Key: 400, and the token is still unused."""
    proposal_id, token = confirmed(api)
    body = {"proposal_id": proposal_id, "confirmation_token": token}
    response = api.client.post("/v1/executions", json=body, headers=auth(AGENT))
    assert_problem(response, 400, "invalid_request")
    assert api.world.ledger_amounts() == []
    assert api.execute(proposal_id, token).status_code == 200


def test_token_is_bound_to_the_requester(api: Api) -> None:
    """The approver holding the token cannot use it: subject_mismatch."""
    proposal_id, token = confirmed(api)
    assert_problem(api.execute(proposal_id, token, by=APPROVER), 403, "subject_mismatch")
    assert api.world.ledger_amounts() == []


def test_forged_token_and_other_tenant(api: Api) -> None:
    """A token never issued is invalid_token; another tenant sees no proposal."""
    proposal_id, token = confirmed(api)
    assert_problem(api.execute(proposal_id, "sot_forged"), 403, "invalid_token")
    assert_problem(api.execute(proposal_id, token, by=OTHER_TENANT), 404, "not_found")
    assert api.world.ledger_amounts() == []


def test_expired_confirmation_is_409(api: Api) -> None:
    """A token presented at its expiry is token_expired; nothing is refunded."""
    proposal_id, token = confirmed(api)
    api.world.clock.advance(timedelta(minutes=10))
    assert_problem(api.execute(proposal_id, token), 409, "token_expired")
    assert api.world.ledger_amounts() == []


def test_state_changed_since_the_preview_is_409(api: Api) -> None:
    """The order moved after confirmation: state_changed, no refund."""
    proposal_id, token = confirmed(api)
    api.world.shop.touch_order("acme", "ord_1001")
    assert_problem(api.execute(proposal_id, token), 409, "state_changed")
    assert api.world.ledger_amounts() == []


def test_lost_answer_is_202_then_reconciled_by_retry(api: Api) -> None:
    """Provider timeout after success: 202 unknown with Location; retry looks it up."""
    proposal_id, token = confirmed(api)
    api.world.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    response = api.execute(proposal_id, token)
    assert response.status_code == 202
    execution = response.json()["execution"]
    assert execution["status"] == "unknown"
    assert response.json()["receipt"] is None
    assert response.headers["location"] == f"/v1/executions/{execution['execution_id']}"
    polled = api.client.get(response.headers["location"], headers=auth(AGENT)).json()
    assert polled["execution"]["status"] == "unknown"
    retried = api.client.post(
        f"/v1/executions/{execution['execution_id']}/retry", headers=auth(AGENT)
    )
    assert retried.status_code == 200
    assert retried.json()["execution"]["status"] == "succeeded"
    assert api.world.ledger_amounts() == [("ord_1001", 19900)]


def test_retryable_failure_then_retry_with_the_same_request_key(api: Api) -> None:
    """failed_retryable is a known outcome (200); retry runs with the same request key."""
    proposal_id, token = confirmed(api)
    api.world.provider.fail_next(FaultMode.RETRYABLE)
    response = api.execute(proposal_id, token)
    assert response.status_code == 200
    execution = response.json()["execution"]
    assert execution["status"] == "failed_retryable"
    assert api.world.ledger_amounts() == []
    path = f"/v1/executions/{execution['execution_id']}/retry"
    assert_problem(api.client.post(path, headers=auth(APPROVER)), 403, "subject_mismatch")
    retried = api.client.post(path, headers=auth(AGENT)).json()
    assert retried["execution"]["status"] == "succeeded"
    assert api.world.provider.ledger("acme")[0].request_key == execution["request_key"]


def test_terminal_failure_is_200_with_receipt(api: Api) -> None:
    """The provider refused: failed_terminal, a receipt, no refund."""
    proposal_id, token = confirmed(api)
    api.world.provider.fail_next(FaultMode.TERMINAL)
    response = api.execute(proposal_id, token)
    assert response.status_code == 200
    assert response.json()["receipt"]["status"] == "failed_terminal"
    assert api.world.ledger_amounts() == []


def test_unknown_execution_is_404(api: Api) -> None:
    """Guessing an execution id answers 404, also across tenants."""
    proposal_id, token = confirmed(api)
    execution_id = api.execute(proposal_id, token).json()["execution"]["execution_id"]
    for path in (f"/v1/executions/{execution_id}", "/v1/executions/exe_nope"):
        who = OTHER_TENANT if "nope" not in path else AGENT
        assert_problem(api.client.get(path, headers=auth(who)), 404, "not_found")


def race(client: TestClient, proposal_id: str, token: str, keys: list[str]) -> list[httpx.Response]:
    body = {"proposal_id": proposal_id, "confirmation_token": token}
    headers = [auth(AGENT, key) for key in keys]
    with ThreadPoolExecutor(max_workers=len(keys)) as pool:
        return list(
            pool.map(lambda h: client.post("/v1/executions", json=body, headers=h), headers)
        )


def test_32_concurrent_executions_with_one_token_refund_once(api: Api) -> None:
    """32 racing requests, 32 keys, one token: one 200, 31 conflicts, one refund."""
    proposal_id, token = confirmed(api)
    responses = race(api.client, proposal_id, token, [f"k{n}" for n in range(32)])
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [409] * 31
    codes = {r.json()["code"] for r in responses if r.status_code == 409}
    assert codes <= {"already_consumed", "invalid_state"}
    assert api.world.ledger_amounts() == [("ord_1001", 19900)]
    assert api.world.refunded() == 19900


def test_32_concurrent_executions_with_one_key_refund_once(api: Api) -> None:
    """32 racing redeliveries of one key: 200s and in-flight 409s only, one refund."""
    proposal_id, token = confirmed(api)
    responses = race(api.client, proposal_id, token, ["same"] * 32)
    assert {r.status_code for r in responses} <= {200, 409}
    fresh = [r for r in responses if r.status_code == 200 and not r.json()["duplicate"]]
    assert len(fresh) == 1
    codes = {r.json()["code"] for r in responses if r.status_code == 409}
    assert codes <= {"idempotency_key_in_flight", "already_consumed", "invalid_state"}
    assert api.world.ledger_amounts() == [("ord_1001", 19900)]


def test_same_key_while_in_flight_is_409(world: World) -> None:
    """While the first request waits on the provider, its key answers 409 in flight."""
    gate, reached, release = paused_gate(world)
    with TestClient(make_app(world, gate=gate)) as client:
        api = Api(client.app, client, world)  # type: ignore[arg-type]
        proposal_id, token = confirmed(api)
        with ThreadPoolExecutor(max_workers=1) as pool:
            first = pool.submit(api.execute, proposal_id, token, key="slow")
            assert reached.wait(10)
            in_flight = api.execute(proposal_id, token, key="slow")
            assert_problem(in_flight, 409, "idempotency_key_in_flight")
            assert_problem(api.execute(proposal_id, token, key="other"), 409, "already_consumed")
            assert world.ledger_amounts() == []
            release.set()
            assert first.result(10).status_code == 200
        assert api.execute(proposal_id, token, key="slow").json()["duplicate"] is True
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_resolution_endpoint_settles_an_unknown_execution(api: Api) -> None:
    """POST /v1/executions/{id}/resolution: signoff_admin only; the provider is not called."""
    proposal = api.propose()
    token = api.approve(proposal)
    api.world.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    first = api.execute(proposal["proposal_id"], token)
    assert first.status_code == 202
    execution_id = first.json()["execution"]["execution_id"]
    path = f"/v1/executions/{execution_id}/resolution"
    body = {"outcome": "failed_terminal", "reason": "no refund at the provider"}
    assert api.client.post(path, json=body, headers=auth(APPROVER)).status_code == 403
    admin = Principal("olga", "acme", frozenset({"signoff_admin"}))
    api.world.directory.grant("acme", "olga", "signoff_admin")
    bad = api.client.post(path, json={"outcome": "succeeded", "reason": "x"}, headers=auth(admin))
    assert bad.status_code == 400
    done = api.client.post(path, json=body, headers=auth(admin))
    assert done.status_code == 200, done.text
    assert done.json()["execution"]["status"] == "failed_terminal"
    assert api.world.ledger_amounts() == []

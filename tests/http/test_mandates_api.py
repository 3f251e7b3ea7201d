"""/v1/mandates over HTTP: propose, decide (Idempotency-Key, expected_version), read the budget
and history, revoke; POST /v1/proposals with mandate_id; refusals as problem+json."""

from __future__ import annotations

import uuid
from typing import Any

from signoff import Principal
from tests.conftest import AGENT, APPROVER, REFUND
from tests.http.conftest import Api, assert_problem, auth

DEMO = {"currency": "CNY", "max_amount_minor": 20000, "total_amount_minor": 30000, "max_count": 3}


def _mandate(api: Api, constraints: dict[str, Any] = DEMO) -> dict[str, Any]:
    body = {"tool": "refund_order", "constraints": constraints, "expires_in_seconds": 3600}
    created = api.client.post("/v1/mandates", json=body, headers=auth(AGENT))
    assert created.status_code == 201, created.text
    view = created.json()
    assert created.headers["location"] == f"/v1/mandates/{view['mandate_id']}"
    decided = api.client.post(
        f"/v1/mandates/{view['mandate_id']}/decision",
        json={"decision": "approve", "expected_version": view["version"]},
        headers=auth(APPROVER, uuid.uuid4().hex),
    )
    assert decided.status_code == 200, decided.text
    return decided.json()  # type: ignore[no-any-return]


def _write(api: Api, mandate_id: str, **changes: Any) -> Any:
    body = {"tool": "refund_order", "arguments": {**REFUND, **changes}, "mandate_id": mandate_id}
    return api.client.post("/v1/proposals", json=body, headers=auth(AGENT))


def test_the_demo_mandate_end_to_end(api: Api) -> None:
    """Approve once; a write under it is confirmed, picked up, executed; the receipt and
    GET /v1/mandates/{id} show the budget and count left, and the write in its history."""
    mandate = _mandate(api)
    assert mandate["status"] == "active" and mandate["approvals"][0]["approver"] == "alice"
    assert (mandate["remaining_amount_minor"], mandate["remaining_count"]) == (30000, 3)
    written = _write(api, mandate["mandate_id"], amount_minor=12000)
    assert written.status_code == 201, written.text
    proposal = written.json()
    assert proposal["status"] == "confirmed"
    assert proposal["mandate"]["mandate_id"] == mandate["mandate_id"]
    token = api.pick_up(proposal["proposal_id"])
    executed = api.execute(proposal["proposal_id"], token)
    assert executed.status_code == 200, executed.text
    receipt = executed.json()["receipt"]
    assert receipt["mandate"]["remaining_amount_minor"] == 18000
    assert receipt["mandate"]["approvers"] == ["alice"]
    assert api.world.ledger_amounts() == [("ord_1001", 12000)]
    read = api.client.get(f"/v1/mandates/{mandate['mandate_id']}", headers=auth(APPROVER))
    assert read.status_code == 200
    state = read.json()
    assert (state["remaining_amount_minor"], state["remaining_count"]) == (18000, 2)
    assert [(w["proposal_id"], w["budget"], w["proposal_status"]) for w in state["writes"]] == [
        (proposal["proposal_id"], "held", "succeeded")
    ]


def test_refusals_are_problems_naming_the_constraint(api: Api) -> None:
    mandate = _mandate(api)
    over = _write(api, mandate["mandate_id"], amount_minor=19900)
    assert over.status_code == 201  # within 20,000 per write
    again = _write(api, mandate["mandate_id"], order_id="ord_1002", amount_minor=19900)
    body = assert_problem(again, 409, "mandate_exceeded")
    assert body["constraint"] == "total_amount_minor"
    other = Principal("u_42", "acme", actor="agent:other")
    only = _mandate(api, {**DEMO, "agents": ["agent:support-bot"]})
    response = api.client.post(
        "/v1/proposals",
        json={"tool": "refund_order", "arguments": REFUND, "mandate_id": only["mandate_id"]},
        headers=auth(other),
    )
    assert assert_problem(response, 403, "mandate_not_applicable")["constraint"] == "agents"
    missing = _write(api, "mnd_nope")
    assert_problem(missing, 404, "not_found")


def test_no_constraint_no_mandate(api: Api) -> None:
    body = {"tool": "refund_order", "constraints": {}, "expires_in_seconds": 60}
    assert_problem(
        api.client.post("/v1/mandates", json=body, headers=auth(AGENT)), 400, "invalid_request"
    )


def test_revocation_ends_it_and_a_decision_replays(api: Api) -> None:
    created = api.client.post(
        "/v1/mandates",
        json={"tool": "refund_order", "constraints": DEMO, "expires_in_seconds": 60},
        headers=auth(AGENT),
    ).json()
    url = f"/v1/mandates/{created['mandate_id']}"
    key = uuid.uuid4().hex
    decision = {"decision": "approve", "expected_version": created["version"]}
    first = api.client.post(f"{url}/decision", json=decision, headers=auth(APPROVER, key))
    replay = api.client.post(f"{url}/decision", json=decision, headers=auth(APPROVER, key))
    assert (first.json()["duplicate"], replay.json()["duplicate"]) == (False, True)
    stale = api.client.post(f"{url}/decision", json=decision, headers=auth(APPROVER, "other"))
    assert_problem(stale, 409, "invalid_state")
    revoked = api.client.post(f"{url}/revocation", json={"reason": "done"}, headers=auth(AGENT))
    assert revoked.status_code == 200 and revoked.json()["status"] == "revoked"
    assert_problem(_write(api, created["mandate_id"]), 409, "mandate_revoked")
    stranger = Principal("mallory", "globex")
    assert_problem(api.client.get(url, headers=auth(stranger)), 404, "not_found")

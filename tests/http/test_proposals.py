"""POST/GET /v1/proposals, cancel and revoke, over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from signoff import Principal
from signoff.exceptions import InvalidArguments
from tests.conftest import AGENT, APPROVER, NO_ROLE, OTHER_TENANT, REFUND
from tests.http.conftest import Api, assert_problem, auth

PROPOSAL_FIELDS = {
    "proposal_id",
    "action_id",
    "status",
    "version",
    "tool",
    "tool_version",
    "arguments",
    "args_digest",
    "resource",
    "preview",
    "risk",
    "required_role",
    "retype",
    "requester",
    "approvals",
    "untrusted_rationale",
    "created_at",
    "expires_at",
    "supersedes",
    "changes_requested",
    "policy_version",
    "mandate",
    "mandate_refusal",
}


def post(api: Api, body: dict[str, Any]) -> Any:
    return api.client.post("/v1/proposals", json=body, headers=auth(AGENT))


def test_propose_returns_the_frozen_snapshot(api: Api) -> None:
    """201, a Location, canonical arguments, digest and the rendered preview."""
    response = api.client.post(
        "/v1/proposals",
        json={"tool": "refund_order", "arguments": REFUND, "rationale": "customer said so"},
        headers=auth(AGENT),
    )
    assert response.status_code == 201
    view = response.json()
    assert set(view) == PROPOSAL_FIELDS
    assert response.headers["location"] == f"/v1/proposals/{view['proposal_id']}"
    assert view["status"] == "awaiting_confirmation"
    assert view["arguments"] == REFUND
    assert view["required_role"] == "refund_approver"
    assert view["requester"] == {"subject": "u_42", "actor": "agent:support-bot"}
    assert view["untrusted_rationale"] == "customer said so"
    amount = next(f for f in view["preview"]["fields"] if f["name"] == "amount_minor")
    assert amount == {
        "name": "amount_minor",
        "label": "Amount",
        "machine_value": 19900,
        "display_value": "¥199.00",
    }
    stored = api.world.gate.proposal(AGENT, view["proposal_id"])
    assert stored.args_digest == view["args_digest"]
    # One name across the edges: Python's Proposal.resource is the view's resource (and
    # resource_id, the name ResourceState uses, stays as an alias).
    assert stored.resource == stored.resource_id == view["resource"] == "order:ord_1001"


def test_key_order_does_not_change_the_digest(api: Api) -> None:
    """The same arguments in another key order give the same digest."""
    first = api.propose()
    reordered = dict(reversed(list(REFUND.items())))
    second = post(api, {"tool": "refund_order", "arguments": reordered}).json()
    assert first["args_digest"] == second["args_digest"]
    assert first["proposal_id"] != second["proposal_id"]


def test_missing_currency_is_a_clarification(api: Api) -> None:
    """An ambiguous amount answers 422 with the question, and no proposal exists."""
    response = post(api, {"tool": "refund_order", "arguments": {**REFUND, "currency": None}})
    problem = assert_problem(response, 422, "clarification_needed")
    assert "currency" in problem["detail"]
    assert problem["field"] == "currency"
    assert api.world.gate.proposals(AGENT) == []


def test_unknown_tool_is_400(api: Api) -> None:
    """A tool outside the catalog is unknown_tool."""
    assert_problem(post(api, {"tool": "drop_table", "arguments": {}}), 400, "unknown_tool")


def test_bad_arguments_are_400_naming_the_field(api: Api) -> None:
    """Unknown argument fields, boolean and float amounts are invalid_arguments, and the
    problem's top-level `errors` name the field as in-process `details["errors"]` does."""
    for arguments, loc, kind in (
        ({**REFUND, "note": "x"}, ["note"], "extra_forbidden"),
        ({**REFUND, "amount_minor": True}, ["amount_minor"], "int_type"),
        ({**REFUND, "amount_minor": 199.0}, ["amount_minor"], "int_type"),
    ):
        response = post(api, {"tool": "refund_order", "arguments": arguments})
        problem = assert_problem(response, 400, "invalid_arguments")
        assert problem["tool"] == "refund_order"
        assert [(e["loc"], e["type"]) for e in problem["errors"]] == [(loc, kind)]
        assert all(isinstance(e["msg"], str) and e["msg"] for e in problem["errors"])
        with pytest.raises(InvalidArguments) as caught:
            api.world.gate.propose(AGENT, "refund_order", arguments)
        assert problem["errors"] == caught.value.details["errors"]
    assert api.world.gate.proposals(AGENT) == []


def test_unknown_body_field_is_400(api: Api) -> None:
    """An unknown top-level field is refused, never ignored."""
    response = post(api, {"tool": "refund_order", "arguments": REFUND, "approved": True})
    problem = assert_problem(response, 400, "invalid_request")
    assert problem["errors"][0]["loc"] == ["body", "approved"]


def test_another_tenants_order_is_404(api: Api) -> None:
    """An order id of another tenant does not exist for the caller."""
    response = post(api, {"tool": "refund_order", "arguments": {**REFUND, "order_id": "ord_2001"}})
    assert_problem(response, 404, "not_found")


def test_someone_elses_order_is_403(api: Api) -> None:
    """Only the customer (or support staff) may request the refund of an order."""
    response = api.client.post(
        "/v1/proposals", json={"tool": "refund_order", "arguments": REFUND}, headers=auth(NO_ROLE)
    )
    assert_problem(response, 403, "forbidden")


def test_list_is_tenant_scoped_and_filters_by_status(api: Api) -> None:
    """The list holds the caller's tenant only; ?status= filters."""
    first = api.propose()
    second = api.propose(order_id="ord_1002")
    api.approve(second)
    listed = api.client.get("/v1/proposals", headers=auth(AGENT)).json()["proposals"]
    assert {p["proposal_id"] for p in listed} == {first["proposal_id"], second["proposal_id"]}
    awaiting = api.client.get(
        "/v1/proposals?status=awaiting_confirmation", headers=auth(AGENT)
    ).json()["proposals"]
    assert [p["proposal_id"] for p in awaiting] == [first["proposal_id"]]
    other = api.client.get("/v1/proposals", headers=auth(OTHER_TENANT)).json()
    assert other == {"proposals": []}


def test_bad_status_filter_is_400(api: Api) -> None:
    """A status outside the lifecycle is a 400, not an empty list."""
    response = api.client.get("/v1/proposals?status=approved", headers=auth(AGENT))
    assert_problem(response, 400, "invalid_request")


def test_read_proposal_and_cross_tenant_404(api: Api) -> None:
    """The owner tenant reads it; another tenant guessing the id gets 404."""
    proposal = api.propose()
    path = f"/v1/proposals/{proposal['proposal_id']}"
    assert api.client.get(path, headers=auth(APPROVER)).json() == proposal
    assert_problem(api.client.get(path, headers=auth(OTHER_TENANT)), 404, "not_found")
    assert_problem(api.client.get("/v1/proposals/prop_x", headers=auth(AGENT)), 404, "not_found")


def test_cancel_by_requester_then_conflict(api: Api) -> None:
    """The requester cancels; a second cancel is 409; another agent of theirs is 403;
    a stranger is told 404."""
    proposal = api.propose()
    path = f"/v1/proposals/{proposal['proposal_id']}/cancel"
    assert_problem(api.client.post(path, headers=auth(NO_ROLE)), 404, "not_found")
    other_agent = Principal(AGENT.subject, AGENT.tenant, actor="agent:other-bot")
    assert_problem(api.client.post(path, headers=auth(other_agent)), 403, "forbidden")
    assert_problem(api.client.post(path, headers=auth(APPROVER)), 403, "forbidden")
    response = api.client.post(path, headers=auth(AGENT))
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert_problem(api.client.post(path, headers=auth(AGENT)), 409, "invalid_state")
    assert_problem(api.client.post(path, headers=auth(OTHER_TENANT)), 404, "not_found")


def test_revoke_needs_a_reason_and_a_confirmed_proposal(api: Api) -> None:
    """No reason is 400; an agent is 403; awaiting is 409; confirmed → revoked."""
    proposal = api.propose()
    path = f"/v1/proposals/{proposal['proposal_id']}/revoke"
    assert_problem(api.client.post(path, json={}, headers=auth(APPROVER)), 400, "invalid_request")
    reason = {"reason": "customer withdrew"}
    assert_problem(api.client.post(path, json=reason, headers=auth(APPROVER)), 409, "invalid_state")
    token = api.approve(proposal)
    assert_problem(api.client.post(path, json=reason, headers=auth(AGENT)), 403, "forbidden")
    response = api.client.post(path, json=reason, headers=auth(APPROVER))
    assert response.status_code == 200
    assert response.json()["status"] == "revoked"
    assert_problem(api.execute(proposal["proposal_id"], token), 409, "revoked")
    assert api.world.ledger_amounts() == []


def test_requesting_agent_picks_up_its_token_after_approval(api: Api) -> None:
    """After a person approved elsewhere, only the requesting agent can fetch the token."""
    proposal = api.propose()
    path = f"/v1/proposals/{proposal['proposal_id']}/confirmation-token"
    early = api.client.get(path, headers=auth(AGENT))
    assert early.status_code == 409
    assert early.json()["code"] == "invalid_state"
    token = api.approve(proposal)
    picked = api.client.get(path, headers=auth(AGENT))
    assert picked.status_code == 200
    assert picked.headers["cache-control"] == "no-store"
    assert picked.json()["confirmation_token"] == token
    assert api.client.get(path, headers=auth(APPROVER)).status_code == 403
    assert api.client.get(path, headers=auth(OTHER_TENANT)).status_code == 404
    executed = api.execute(proposal["proposal_id"], picked.json()["confirmation_token"])
    assert executed.status_code == 200
    assert api.world.ledger_amounts() == [("ord_1001", 19900)]

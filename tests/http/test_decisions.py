"""POST /v1/proposals/{id}/decision: entitled, versioned, idempotent by key."""

from __future__ import annotations

from datetime import timedelta

from signoff import Principal
from tests.conftest import AGENT, APPROVER, APPROVER_2, NO_ROLE, OTHER_TENANT
from tests.http.conftest import Api, assert_problem, auth


def test_approve_issues_the_token_to_the_requester_never_to_the_approver(api: Api) -> None:
    """The last approval confirms; the decision response never carries the token (rule 12)."""
    proposal = api.propose()
    response = api.decide(proposal)
    assert response.status_code == 200
    body = response.json()
    assert body["duplicate"] is False
    assert "confirmation_token" not in body
    assert "sot_" not in response.text
    assert api.pick_up(proposal["proposal_id"]).startswith("sot_")
    assert body["proposal"]["status"] == "confirmed"
    assert body["proposal"]["version"] == proposal["version"] + 1
    assert [a["approver"] for a in body["proposal"]["approvals"]] == ["alice"]


def test_same_key_same_request_answers_the_first_decision(api: Api) -> None:
    """A double click: same key and payload → duplicate, same action, still no token."""
    proposal = api.propose()
    first = api.decide(proposal, key="click-1").json()
    again = api.decide(proposal, key="click-1")
    assert again.status_code == 200
    assert again.json()["duplicate"] is True
    assert again.json()["proposal"]["action_id"] == first["proposal"]["action_id"]
    assert "sot_" not in again.text
    assert len(api.world.gate.proposal(AGENT, proposal["proposal_id"]).approvals) == 1


def test_quoted_structured_field_key_is_the_same_key(api: Api) -> None:
    """Idempotency-Key as an sf-string ("k") is the same key as k."""
    proposal = api.propose()
    api.decide(proposal, key="k-7")
    assert api.decide(proposal, key='"k-7"').json()["duplicate"] is True


def test_same_key_other_payload_is_422(api: Api) -> None:
    """The key was used for another request: idempotency_key_reused."""
    proposal = api.propose()
    api.decide(proposal, key="k")
    response = api.decide(proposal, key="k", decision="reject", reason_code="policy")
    assert_problem(response, 422, "idempotency_key_reused")


def test_missing_or_bad_idempotency_key_is_400(api: Api) -> None:
    """No Idempotency-Key, an empty or a non-ASCII one: 400, and nothing decided."""
    proposal = api.propose()
    path = f"/v1/proposals/{proposal['proposal_id']}/decision"
    body = {"decision": "approve", "expected_version": 1}
    missing = api.client.post(path, json=body, headers=auth(APPROVER))
    assert "Idempotency-Key" in assert_problem(missing, 400, "invalid_request")["detail"]
    for key in (b"", b'""', b"x" * 300, "ключ".encode()):
        headers = [(k.encode(), v.encode()) for k, v in auth(APPROVER).items()]
        headers.append((b"Idempotency-Key", key))
        response = api.client.post(path, json=body, headers=headers)
        assert_problem(response, 400, "invalid_request")
    assert api.world.gate.proposal(AGENT, proposal["proposal_id"]).approvals == ()


def test_keys_are_scoped_per_subject(api: Api) -> None:
    """Two approvers using the same key string on two proposals do not collide."""
    first = api.propose()
    second = api.propose(order_id="ord_1002")
    assert api.decide(first, key="same").json()["duplicate"] is False
    response = api.decide(second, by=APPROVER_2, key="same")
    assert response.status_code == 200
    assert response.json()["duplicate"] is False
    assert response.json()["proposal"]["approvals"][0]["approver"] == "bob"


def test_agent_can_never_decide(api: Api) -> None:
    """A token with act (an agent) is refused: separation_of_duties."""
    proposal = api.propose()
    assert_problem(api.decide(proposal, by=AGENT), 403, "separation_of_duties")


def test_person_outside_the_circle_is_told_404(api: Api) -> None:
    """A person of the tenant without refund_approver may not see it: 404, as another tenant."""
    proposal = api.propose()
    assert_problem(api.decide(proposal, by=NO_ROLE), 404, "not_found")
    read = api.client.get(f"/v1/proposals/{proposal['proposal_id']}", headers=auth(NO_ROLE))
    assert_problem(read, 404, "not_found")
    assert api.world.gate.proposal(AGENT, proposal["proposal_id"]).approvals == ()


def test_stale_version_is_409(api: Api) -> None:
    """expected_version must equal the current version."""
    proposal = api.propose()
    response = api.decide({**proposal, "version": 7})
    assert assert_problem(response, 409, "version_conflict")["current_version"] == 1


def test_reject_needs_a_reason_code(api: Api) -> None:
    """Reject without reason_code is 400; with one, the proposal is declined."""
    proposal = api.propose()
    assert_problem(api.decide(proposal, decision="reject"), 400, "invalid_request")
    bad = api.decide(proposal, key="d2", decision="reject", reason_code="because")
    assert_problem(bad, 400, "invalid_request")
    response = api.decide(proposal, key="d3", decision="reject", reason_code="wrong_amount")
    assert response.json()["proposal"]["status"] == "declined"


def test_wrong_types_are_400(api: Api) -> None:
    """A string or boolean version and a free-text decision are schema violations."""
    proposal = api.propose()
    for changes in ({"expected_version": "1"}, {"expected_version": True}, {"decision": "ok"}):
        assert_problem(api.decide(proposal, **changes), 400, "invalid_request")


def test_expired_proposal_is_409(api: Api) -> None:
    """Past the proposal's deadline: preview_expired (server clock)."""
    proposal = api.propose()
    api.world.clock.advance(timedelta(minutes=10))
    assert_problem(api.decide(proposal), 409, "preview_expired")


def test_other_tenant_is_404(api: Api) -> None:
    """An approver of another tenant cannot even see the proposal."""
    proposal = api.propose()
    assert_problem(api.decide(proposal, by=OTHER_TENANT), 404, "not_found")


def test_high_risk_needs_the_amount_retyped(api: Api) -> None:
    """≥ ¥1000: approving needs the amount re-typed exactly as shown."""
    api.world.shop.add_order("acme", "ord_9001", owner="u_42", payable=500_000)
    proposal = api.propose(order_id="ord_9001", amount_minor=250_000)
    assert proposal["retype"] == ["amount_minor"]
    assert_problem(api.decide(proposal), 422, "retype_mismatch")
    wrong = api.decide(proposal, key="d2", retyped={"amount_minor": "25000"})
    assert_problem(wrong, 422, "retype_mismatch")
    right = api.decide(proposal, key="d3", retyped={"amount_minor": "¥2,500.00"})
    assert right.json()["proposal"]["status"] == "confirmed"


def test_the_decision_receipt_names_its_audit_event_and_replays_the_same(api: Api) -> None:
    """audit_id is the decision's event (<tenant>:<seq>), with the action, the status and
    version it left, tool_status not_started; a replay answers the same, and after the
    write ran its tool_status is the execution's."""
    proposal = api.propose()
    first = api.decide(proposal, key="receipt-1").json()
    assert {k: first[k] for k in ("action_id", "status", "version", "tool_status")} == {
        "action_id": proposal["action_id"],
        "status": "confirmed",
        "version": proposal["version"] + 1,
        "tool_status": "not_started",
    }
    tenant, seq = first["audit_id"].rsplit(":", 1)
    auditor = Principal("dave", "acme", frozenset({"auditor"}))
    events = api.client.get(
        "/v1/audit", params={"proposal_id": proposal["proposal_id"]}, headers=auth(auditor)
    ).json()["events"]
    [event] = [e for e in events if e["seq"] == int(seq)]
    assert (tenant, event["kind"], event["actor"]) == ("acme", "decision.approved", "alice")
    again = api.decide(proposal, key="receipt-1").json()
    assert again == {**first, "duplicate": True}
    executed = api.execute(proposal["proposal_id"], api.pick_up(proposal["proposal_id"]))
    assert executed.json()["execution"]["status"] == "succeeded"
    later = api.decide(proposal, key="receipt-1").json()
    assert later["tool_status"] == "succeeded" and later["proposal"]["status"] == "succeeded"
    assert {k: later[k] for k in ("audit_id", "action_id", "status", "version")} == {
        k: first[k] for k in ("audit_id", "action_id", "status", "version")
    }
    assert api.world.ledger_amounts() == [("ord_1001", 19900)]

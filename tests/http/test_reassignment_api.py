"""POST /v1/proposals/{id}/reassignment: an admin hands a pending proposal to other people."""

from __future__ import annotations

import httpx2 as httpx
from fastapi.testclient import TestClient

from signoff import Principal
from tests.conftest import AGENT, APPROVER, OTHER_TENANT, World
from tests.http.conftest import Api, auth, make_app

ADMIN = Principal("olga", "acme", frozenset({"signoff_admin"}))
BOB = Principal("bob", "acme")
"""Holds no refund_approver role in his token: only the reassignment lets him decide."""
CAROL = Principal("carol", "acme")


def _api(world: World) -> Api:
    app = make_app(world)
    return Api(app, TestClient(app), world)


def _reassign(api: Api, proposal_id: str, by: Principal, to: list[str]) -> int:
    return _answer(api, proposal_id, by, to).status_code


def _answer(api: Api, proposal_id: str, by: Principal, to: list[str]) -> httpx.Response:
    body = {"to": to, "reason": "alice is away this week"}
    path = f"/v1/proposals/{proposal_id}/reassignment"
    return api.client.post(path, json=body, headers=auth(by))


def test_an_admin_reassigns_and_only_the_new_person_may_decide(world: World) -> None:
    """After the reassignment the role holder is refused and bob's approval runs the refund."""
    api = _api(world)
    proposal = api.propose()
    body = {"to": ["person:bob"], "reason": "alice is away this week"}
    path = f"/v1/proposals/{proposal['proposal_id']}/reassignment"
    answered = api.client.post(path, json=body, headers=auth(ADMIN))
    assert answered.status_code == 200, answered.text
    moved = answered.json()
    assert moved["version"] == proposal["version"] + 1  # decisions read before are stale
    assert api.decide(proposal, by=APPROVER).status_code == 409
    refused = api.decide(moved, by=APPROVER)
    assert refused.status_code == 403 and refused.json()["code"] == "not_entitled"
    assert api.client.get(f"/v1/proposals/{moved['proposal_id']}", headers=auth(BOB)).is_success
    token = api.approve(moved, by=BOB)
    assert api.execute(moved["proposal_id"], token).status_code == 200
    assert world.ledger_amounts() == [("ord_1001", 19900)]
    with world.store.read() as tx:
        events = tx.audit_events_after("acme", 0, 100)
    (event,) = [e for e in events if e.kind == "proposal.reassigned"]
    assert event.actor == "olga" and event.payload()["targets"] == ["person:bob"]


def test_who_may_not_reassign_is_told_403_or_404(world: World) -> None:
    """A role holder who sees it: 403; someone outside its circle or tenant: 404."""
    api = _api(world)
    pid = api.propose()["proposal_id"]
    assert _reassign(api, pid, APPROVER, ["person:bob"]) == 403
    assert _reassign(api, pid, AGENT, ["person:bob"]) == 403
    assert _reassign(api, pid, CAROL, ["person:bob"]) == 404
    assert _reassign(api, pid, OTHER_TENANT, ["person:bob"]) == 404
    assert _reassign(api, "prop_nope", ADMIN, ["person:bob"]) == 404
    with world.store.read() as tx:
        assert tx.assignment("acme", pid).targets == ()


def test_bad_targets_and_the_requester_are_refused(world: World) -> None:
    """Malformed targets and the requester as a target are 400 problems; nothing moves."""
    api = _api(world)
    proposal = api.propose()
    pid = proposal["proposal_id"]
    for to in (["bob"], [], ["person:u_42"]):
        answered = _answer(api, pid, ADMIN, to)
        assert answered.status_code == 400, answered.text
        assert answered.headers["content-type"].startswith("application/problem+json")
    assert "requester" in _answer(api, pid, ADMIN, ["person:u_42"]).json()["detail"]
    assert (
        api.client.get(f"/v1/proposals/{pid}", headers=auth(ADMIN)).json()["version"]
        == (proposal["version"])
    )


def test_a_decided_proposal_can_no_longer_be_reassigned(world: World) -> None:
    """409 once it is no longer awaiting confirmation."""
    api = _api(world)
    proposal = api.propose()
    assert api.decide(proposal).status_code == 200
    assert _reassign(api, proposal["proposal_id"], ADMIN, ["person:bob"]) == 409

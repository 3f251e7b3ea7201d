"""POST /v1/decisions: each item its own decision over its own version and digest, audited one
by one, answered per item; approvals needing more than a click are left out."""

from __future__ import annotations

from typing import Any

from tests.conftest import AGENT, APPROVER
from tests.http.conftest import Api, auth


def _batch(api: Api, items: list[dict[str, Any]], key: str = "batch-1") -> Any:
    response = api.client.post(
        "/v1/decisions", json={"decisions": items}, headers=auth(APPROVER, key)
    )
    assert response.status_code == 200, response.text
    return response.json()["results"]


def _approve(proposal: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {
        "proposal_id": proposal["proposal_id"],
        "decision": "approve",
        "expected_version": proposal["version"],
        **changes,
    }


def _decisions(api: Api) -> list[str]:
    with api.world.store.read() as tx:
        return [str(e.proposal_id) for e in tx.audit_events() if e.kind.startswith("decision.")]


def test_a_stale_version_is_that_items_409_and_the_rest_are_recorded(api: Api) -> None:
    """Three approvals, one with a stale version: 200, 409, 200; two decisions in the log;
    both recorded proposals execute once each; the stale one is untouched."""
    first, second, third = (api.propose(order_id=f"ord_10{n:02d}") for n in (1, 2, 3))
    results = _batch(api, [_approve(first), _approve(second, expected_version=7), _approve(third)])
    assert [r["status"] for r in results] == [200, 409, 200]
    assert results[1]["problem"]["code"] == "version_conflict" and results[1]["decision"] is None
    assert results[0]["decision"]["proposal"]["status"] == "confirmed"
    assert _decisions(api) == [first["proposal_id"], third["proposal_id"]]
    for proposal in (first, third):
        token = api.pick_up(proposal["proposal_id"])
        assert api.execute(proposal["proposal_id"], token).status_code == 200
    assert sorted(api.world.ledger_amounts()) == [("ord_1001", 19900), ("ord_1003", 19900)]
    stale = api.client.get(f"/v1/proposals/{second['proposal_id']}", headers=auth(AGENT)).json()
    assert stale["status"] == "awaiting_confirmation"
    with api.world.store.read() as tx:
        refused = [e.payload() for e in tx.audit_events() if e.kind == "refusal"]
    assert [r["code"] for r in refused] == ["version_conflict"]


def test_an_approval_that_needs_re_typing_or_a_passkey_is_left_out(api: Api) -> None:
    """A high-risk refund (re-type or passkey): 422 not_batchable with the reason, audited;
    rejecting it in a batch is fine."""
    normal = api.propose()
    high = api.propose(order_id="ord_9200", amount_minor=300000)
    results = _batch(api, [_approve(high), _approve(normal)])
    assert [r["status"] for r in results] == [422, 200]
    assert results[0]["problem"]["code"] == "not_batchable"
    assert "re-typed" in results[0]["problem"]["detail"]
    with api.world.store.read() as tx:
        refused = [e for e in tx.audit_events() if e.kind == "refusal"]
    assert [(e.proposal_id, e.payload()["code"]) for e in refused] == [
        (high["proposal_id"], "not_batchable")
    ]
    reject = {**_approve(high), "decision": "reject", "reason_code": "policy"}
    [rejected] = _batch(api, [reject], key="batch-2")
    assert rejected["status"] == 200
    assert rejected["decision"]["proposal"]["status"] == "declined"


def test_a_retried_batch_replays_each_item(api: Api) -> None:
    first, second = api.propose(), api.propose(order_id="ord_1002")
    items = [_approve(first), _approve(second)]
    _batch(api, items)
    again = _batch(api, items)
    assert [r["decision"]["duplicate"] for r in again] == [True, True]
    assert len(_decisions(api)) == 2


def test_malformed_batches_are_400_and_decide_nothing(api: Api) -> None:
    proposal = api.propose()
    for decisions in ([], [_approve(proposal), _approve(proposal)], [_approve(proposal)] * 101):
        response = api.client.post(
            "/v1/decisions", json={"decisions": decisions}, headers=auth(APPROVER, "k-bad")
        )
        assert response.status_code == 400, response.text
        assert response.headers["content-type"] == "application/problem+json"
    missing_key = api.client.post(
        "/v1/decisions", json={"decisions": [_approve(proposal)]}, headers=auth(APPROVER)
    )
    assert missing_key.status_code == 400
    assert _decisions(api) == []


def test_another_tenants_proposal_in_a_batch_is_404(api: Api) -> None:
    """Not in the caller's circle: 404 for that item, as for a single decision."""
    from tests.conftest import OTHER_TENANT

    ours = api.propose()
    response = api.client.post(
        "/v1/decisions", json={"decisions": [_approve(ours)]}, headers=auth(OTHER_TENANT, "k-x")
    )
    assert [r["status"] for r in response.json()["results"]] == [404]
    assert _decisions(api) == []
    with api.world.store.read() as tx:
        refused = [e for e in tx.audit_events() if e.kind == "refusal"]
    assert [(e.tenant, e.proposal_id, e.payload()["code"]) for e in refused] == [
        ("acme", ours["proposal_id"], "not_found")
    ]

"""/v1/delegations: alice lends her role to bob; bob decides over the API as her delegate."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient

from signoff import Gate, Principal
from signoff.identity import StoreRoleDirectory
from tests.conftest import AGENT, APPROVER, TOKEN_KEY, World
from tests.http.conftest import Api, auth, make_app

BOB = Principal("bob", "acme")


def test_alice_delegates_to_bob_who_approves_then_she_ends_it(world: World) -> None:
    directory = StoreRoleDirectory(world.store, mode="grants", clock=world.clock)
    directory.grant("acme", "alice", "refund_approver", by="olga")
    gate = Gate(
        world.gate.catalog, world.store, token_key=TOKEN_KEY, clock=world.clock, directory=directory
    )
    app = make_app(world, gate=gate)
    api = Api(app, TestClient(app), world)
    now = world.clock.now()
    body = {
        "delegate": "bob",
        "role": "refund_approver",
        "starts_at": now.isoformat(),
        "ends_at": (now + timedelta(hours=4)).isoformat(),
    }
    by_bob = {**body, "delegate": "carol"}
    assert api.client.post("/v1/delegations", json=by_bob, headers=auth(BOB)).status_code == 403
    created = api.client.post("/v1/delegations", json=body, headers=auth(APPROVER))
    assert created.status_code == 201, created.text
    delegation = created.json()
    assert (delegation["delegator"], delegation["delegate"]) == ("alice", "bob")
    listed = api.client.get("/v1/delegations", headers=auth(BOB)).json()["delegations"]
    assert [d["delegation_id"] for d in listed] == [delegation["delegation_id"]]
    proposal = api.propose()
    inbox = api.client.get("/v1/inbox", headers=auth(BOB)).json()["proposals"]
    assert [p["proposal_id"] for p in inbox] == [proposal["proposal_id"]]
    decided = api.decide(proposal, by=BOB)
    assert decided.status_code == 200, decided.text
    assert decided.json()["proposal"]["approvals"][0]["delegate_of"] == "alice"
    token = api.pick_up(proposal["proposal_id"])
    done = api.execute(proposal["proposal_id"], token).json()
    assert done["receipt"]["on_behalf_of"] == {"bob": "alice"}
    assert world.ledger_amounts() == [("ord_1001", 19900)]
    path = f"/v1/delegations/{delegation['delegation_id']}"
    assert api.client.delete(path, headers=auth(AGENT)).status_code == 403
    assert api.client.delete(path, headers=auth(APPROVER)).status_code == 204
    assert api.client.get("/v1/inbox", headers=auth(BOB)).json()["proposals"] == []

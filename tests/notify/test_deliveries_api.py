"""/v1/deliveries: the dead letters are visible to an admin and replayable through the API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from signoff import ManualClock, Principal
from tests.conftest import AGENT, APPROVER, World
from tests.http.conftest import Api, auth, make_app
from tests.notify.conftest import Receiver, notifier_for, webhook

ADMIN = Principal("olga", "acme", roles=frozenset({"signoff_admin"}))
OTHER_ADMIN = Principal("boss", "globex", roles=frozenset({"signoff_admin"}))


@pytest.fixture
def api(world: World) -> Iterator[Api]:
    world.directory.grant("globex", "boss", "signoff_admin")
    app = make_app(world)
    with TestClient(app) as client:
        yield Api(app, client, world)


def test_an_admin_sees_a_dead_letter_and_replays_it_once(
    api: Api, receiver: Receiver, clock: ManualClock
) -> None:
    """Dead after the limit → listed → replayed → delivered; a second replay is 409."""
    notifier = notifier_for(api.world, webhook(receiver, max_attempts=2), clock=clock)
    notifier.run_once()
    receiver.status = 500
    api.propose()
    for _ in range(3):
        notifier.run_once()
        clock.advance(timedelta(seconds=5))
    listed = api.client.get("/v1/deliveries?status=dead", headers=auth(ADMIN))
    assert listed.status_code == 200, listed.text
    (dead,) = listed.json()["deliveries"]
    assert (dead["status"], dead["attempts"], dead["last_error"]) == ("dead", 2, "HTTP 500")
    assert dead["event_type"] == "proposal.awaiting_confirmation"
    path = f"/v1/deliveries/{dead['destination']}/{dead['audit_seq']}/replay"
    receiver.status = 204
    replayed = api.client.post(path, headers=auth(ADMIN))
    assert replayed.status_code == 200, replayed.text
    assert (replayed.json()["status"], replayed.json()["attempts"]) == ("pending", 0)
    again = api.client.post(path, headers=auth(ADMIN))
    assert again.status_code == 409 and again.json()["code"] == "invalid_state"
    assert notifier.run_once() == 1
    assert len(receiver.accepted_ids()) == 1
    delivered = api.client.get("/v1/deliveries", headers=auth(ADMIN)).json()["deliveries"]
    assert [d["status"] for d in delivered] == ["delivered"]


def test_deliveries_are_for_admins_of_the_tenant_only(
    api: Api, receiver: Receiver, clock: ManualClock
) -> None:
    """An approver or an agent gets 403; another tenant's admin sees nothing and gets 404."""
    notifier = notifier_for(api.world, webhook(receiver, max_attempts=1), clock=clock)
    notifier.run_once()
    receiver.status = 500
    api.propose()
    notifier.run_once()
    for who in (APPROVER, AGENT):
        refused = api.client.get("/v1/deliveries", headers=auth(who))
        assert refused.status_code == 403 and refused.json()["code"] == "not_entitled"
    assert api.client.get("/v1/deliveries", headers=auth(OTHER_ADMIN)).json() == {"deliveries": []}
    (dead,) = api.client.get("/v1/deliveries", headers=auth(ADMIN)).json()["deliveries"]
    path = f"/v1/deliveries/{dead['destination']}/{dead['audit_seq']}/replay"
    missing = api.client.post(path, headers=auth(OTHER_ADMIN))
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"

"""Web Push: the page as an app, subscriptions per person, pushes with the title and deadline
only — checked by a stand-in push service that validates VAPID and decrypts aes128gcm."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from signoff import Principal
from signoff.channels import Channels, ChannelsConfig, install_channels
from signoff.channels._push import new_vapid_keys
from signoff.http import DemoObjects, create_app
from signoff.http._state import state_of
from signoff.web import include_ui
from tests.channels.conftest import SETTINGS
from tests.channels.standin import PushStandIn, push_standin
from tests.conftest import AGENT, APPROVER, NO_ROLE, REFUND, World
from tests.web.conftest import hidden_fields, jwt_for


@dataclass
class PushWorld:
    client: TestClient
    world: World
    channels: Channels
    standin: PushStandIn
    public_key: str

    def sign_in(self, person: Principal) -> None:
        self.client.cookies.clear()
        page = self.client.get("/ui/sign-in")
        response = self.client.post(
            "/ui/sign-in",
            data={**hidden_fields(page.text), "token": jwt_for(person)},
            follow_redirects=False,
        )
        assert response.status_code == 303

    def subscribe(self, person: Principal, device: str) -> dict[str, object]:
        self.sign_in(person)
        page = self.client.get("/ui/notifications")
        assert f'data-push-key="{self.public_key}"' in page.text
        subscription = self.standin.subscribe(device)
        fields = {"csrf_token": hidden_fields(page.text)["csrf_token"]}
        fields.update(action="subscribe", subscription=json.dumps(subscription))
        done = self.client.post("/ui/notifications", data=fields, follow_redirects=False)
        assert done.status_code == 303, done.text
        return subscription


@pytest.fixture
def push(world: World) -> Iterator[PushWorld]:
    private, public = new_vapid_keys()
    with push_standin() as standin:
        app = create_app(
            SETTINGS,
            gate=world.gate,
            demo=DemoObjects(world.shop, world.provider),
            extras=[include_ui],
        )
        config = ChannelsConfig.model_validate(
            {
                "webpush": {
                    "vapid_private_key_env": "VAPID",
                    "vapid_subject": "mailto:ops@signoff.example",
                }
            }
        )
        channels = install_channels(
            app, state_of(app), config, env={"VAPID": private}, run_notifier=False
        )
        pw = PushWorld(
            TestClient(app, base_url="https://signoff.example"), world, channels, standin, public
        )
        channels.notifier.run_once()
        yield pw


def test_a_push_carries_the_title_and_deadline_only(push: PushWorld) -> None:
    """Subscribed on the page → proposal → the push service receives a VAPID-signed,
    aes128gcm message it decrypts to the title, deadline and page URL — no argument."""
    push.subscribe(APPROVER, "alice-phone")
    proposal = push.world.gate.propose(AGENT, "refund_order", REFUND, rationale="secret rationale")
    push.channels.notifier.run_once()
    assert push.standin.refused == []
    [got] = push.standin.received
    assert set(got.payload) == {"title", "body", "deadline", "url", "tag"}
    assert got.payload["title"] == proposal.preview.title
    assert got.payload["deadline"] == proposal.expires_at.isoformat().replace("+00:00", "Z")
    assert got.payload["url"] == f"https://signoff.example/ui/proposals/{proposal.proposal_id}"
    assert "19900" not in json.dumps(got.payload) and "secret" not in json.dumps(got.payload)
    assert got.claims["sub"] == "mailto:ops@signoff.example"


def test_only_people_who_may_decide_are_pushed(push: PushWorld) -> None:
    """Carol has no role: subscribed, but never told; the directory decides, not the page."""
    push.subscribe(NO_ROLE, "carol-phone")
    push.subscribe(APPROVER, "alice-phone")
    push.world.directory.revoke("acme", "alice", "refund_approver")
    push.world.gate.propose(AGENT, "refund_order", REFUND)
    push.channels.notifier.run_once()
    assert push.standin.received == []


def test_a_subscription_the_push_service_says_is_gone_is_removed(push: PushWorld) -> None:
    sub = push.subscribe(APPROVER, "old-phone")
    push.standin.gone.add(str(sub["endpoint"]))
    push.world.gate.propose(AGENT, "refund_order", REFUND)
    push.channels.notifier.run_once()
    with push.world.store.read() as tx:
        assert tx.push_subscriptions_of("acme", "alice") == []


def test_a_bad_subscription_is_refused(push: PushWorld) -> None:
    push.sign_in(APPROVER)
    page = push.client.get("/ui/notifications")
    good = push.standin.subscribe("x")
    bad = [
        {**good, "endpoint": "http://push.example.com/x"},
        {**good, "keys": {"p256dh": "AAAA", "auth": good["keys"]["auth"]}},
        "not json",
    ]
    for subscription in bad:
        fields = {"csrf_token": hidden_fields(page.text)["csrf_token"], "action": "subscribe"}
        fields["subscription"] = (
            subscription if isinstance(subscription, str) else json.dumps(subscription)
        )
        assert push.client.post("/ui/notifications", data=fields).status_code == 400
    with push.world.store.read() as tx:
        assert tx.push_subscriptions_of("acme") == []


def test_the_page_is_an_installable_app(push: PushWorld) -> None:
    """A manifest, a service worker scoped to /ui/, and a CSP that admits both."""
    manifest = push.client.get("/ui/manifest.webmanifest")
    assert manifest.headers["content-type"].startswith("application/manifest+json")
    assert manifest.json()["scope"] == "/ui/" and manifest.json()["display"] == "standalone"
    worker = push.client.get("/ui/sw.js")
    assert worker.headers["content-type"].startswith("text/javascript")
    assert worker.headers["service-worker-allowed"] == "/ui/"
    assert "showNotification" in worker.text and "notificationclick" in worker.text
    csp = worker.headers["content-security-policy"]
    assert "worker-src 'self'" in csp and "manifest-src 'self'" in csp

"""Webhooks from the audit chain: signed per Standard Webhooks, retried, dead-lettered, filtered."""

from __future__ import annotations

import json
from datetime import timedelta

from standardwebhooks import Webhook

from signoff import ManualClock
from signoff.store._q_deliveries import DeliveryRecord
from tests.conftest import AGENT, World
from tests.notify.conftest import PUBLIC_URL, SECRET, Receiver, notifier_for, webhook


def deliveries(world: World) -> list[DeliveryRecord]:
    with world.store.read() as tx:
        return tx.deliveries("acme")


def start(world: World, receiver: Receiver, clock: ManualClock, **options: object) -> object:
    notifier = notifier_for(world, webhook(receiver, **options), clock=clock)
    assert notifier.run_once() == 0  # a new destination starts at the chain's head
    return notifier


def test_each_event_is_signed_and_verifies_with_the_specs_library(
    world: World, receiver: Receiver, clock: ManualClock
) -> None:
    """The receiver checks webhook-signature with standardwebhooks; the body names no secret."""
    notifier = notifier_for(world, webhook(receiver), clock=clock)
    notifier.run_once()
    proposal = world.propose()
    token = world.approve(proposal)
    assert notifier.run_once() == 2
    bodies = [Webhook(SECRET).verify(r.body, r.headers) for r in receiver.requests]
    assert [b["type"] for b in bodies] == ["proposal.awaiting_confirmation", "proposal.approved"]
    awaiting = bodies[0]["data"]
    assert awaiting["proposal_id"] == proposal.proposal_id
    assert awaiting["page_url"] == f"{PUBLIC_URL}/ui/proposals/{proposal.proposal_id}"
    assert awaiting["required_role"] == "refund_approver"
    assert bodies[1]["data"]["status"] == "confirmed"
    raw = b"".join(r.body for r in receiver.requests).decode()
    assert token not in raw and "sot_" not in raw and "19900" not in raw
    ids = [r.headers["webhook-id"] for r in receiver.requests]
    assert len(set(ids)) == 2
    assert ids == [b["data"]["event_id"] for b in bodies]


def test_each_payload_carries_the_status_at_its_event_not_at_delivery(
    world: World, receiver: Receiver, clock: ManualClock
) -> None:
    """Proposed, approved and executed before the notifier runs: the awaiting_confirmation
    webhook still says awaiting_confirmation (it said succeeded, the status at delivery)."""
    notifier = notifier_for(world, webhook(receiver), clock=clock)
    notifier.run_once()
    proposal = world.propose()
    world.gate.execute(AGENT, proposal.proposal_id, world.approve(proposal))
    notifier.run_once()
    bodies = [Webhook(SECRET).verify(r.body, r.headers) for r in receiver.requests]
    statuses = [(b["type"], b["data"]["proposal_status"]) for b in bodies]
    assert statuses == [
        ("proposal.awaiting_confirmation", "awaiting_confirmation"),
        ("proposal.approved", "confirmed"),
        ("execution.succeeded", "succeeded"),
    ]


def test_a_tampered_body_does_not_verify(
    world: World, receiver: Receiver, clock: ManualClock
) -> None:
    """The signature covers id, timestamp and body: changing the body breaks it."""
    notifier = notifier_for(world, webhook(receiver), clock=clock)
    notifier.run_once()
    world.propose()
    notifier.run_once()
    (request,) = receiver.requests
    tampered = request.body.replace(b"awaiting_confirmation", b"approved")
    try:
        Webhook(SECRET).verify(tampered, request.headers)
    except Exception as exc:
        assert type(exc).__name__ == "WebhookVerificationError"
    else:
        raise AssertionError("a tampered body verified")


def test_a_receiver_that_is_down_gets_each_event_once_when_it_is_back(
    world: World, receiver: Receiver, clock: ManualClock
) -> None:
    """503 twice → retried with backoff, same webhook-id → accepted once; nothing resent after."""
    notifier = notifier_for(world, webhook(receiver), clock=clock)
    notifier.run_once()
    receiver.status = 503
    world.propose()
    world.propose(order_id="ord_1002", amount_minor=100)
    assert notifier.run_once() == 0
    assert notifier.run_once() == 0  # not due yet: backoff
    clock.advance(timedelta(seconds=1))
    assert notifier.run_once() == 0
    receiver.status = 200
    clock.advance(timedelta(seconds=1))
    assert notifier.run_once() == 0  # second backoff is 2 s
    clock.advance(timedelta(seconds=1))
    assert notifier.run_once() == 2
    for _ in range(3):
        clock.advance(timedelta(minutes=5))
        assert notifier.run_once() == 0
    accepted = receiver.accepted_ids()
    assert len(accepted) == 2 and len(set(accepted)) == 2
    assert len(receiver.requests) == 6  # 2 events × (2 refusals + 1 delivery)
    assert {r.headers["webhook-id"] for r in receiver.requests} == set(accepted)
    assert {(d.status, d.attempts) for d in deliveries(world)} == {("delivered", 3)}


def test_after_the_limit_a_delivery_is_dead_until_replayed(
    world: World, receiver: Receiver, clock: ManualClock
) -> None:
    """max_attempts failures → dead (no more attempts); a replay delivers it."""
    notifier = notifier_for(world, webhook(receiver, max_attempts=3), clock=clock)
    notifier.run_once()
    receiver.status = 500
    world.propose()
    for _ in range(6):
        notifier.run_once()
        clock.advance(timedelta(seconds=10))
    (dead,) = deliveries(world)
    assert (dead.status, dead.attempts, dead.last_error) == ("dead", 3, "HTTP 500")
    assert len(receiver.requests) == 3
    receiver.status = 204
    now = int(clock.now().timestamp() * 1_000_000)
    with world.store.transaction() as tx:
        assert tx.replay_delivery(dead.destination, dead.tenant, dead.seq, now)
        assert not tx.replay_delivery(dead.destination, dead.tenant, dead.seq, now)
    assert notifier.run_once() == 1
    assert receiver.accepted_ids() == [receiver.requests[0].headers["webhook-id"]]
    assert deliveries(world)[0].status == "delivered"


def test_an_endpoint_hears_only_the_events_and_tenants_it_asked_for(
    world: World, receiver: Receiver, clock: ManualClock
) -> None:
    """events=[execution.succeeded], tenants=[acme]: one webhook for a whole flow."""
    notifier = notifier_for(
        world,
        webhook(receiver, events=["execution.succeeded"], tenants=["acme"]),
        clock=clock,
    )
    notifier.run_once()
    proposal = world.propose()
    world.gate.execute(AGENT, proposal.proposal_id, world.approve(proposal))
    world.propose(order_id="ord_1002", amount_minor=100)
    notifier.run_once()
    (request,) = receiver.requests
    body = json.loads(request.body)
    assert body["type"] == "execution.succeeded"
    assert body["data"]["proposal_id"] == proposal.proposal_id
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_a_new_destination_hears_what_happens_from_now_on(
    world: World, receiver: Receiver, clock: ManualClock
) -> None:
    """History before the first pass is not sent; everything after is."""
    world.propose()
    notifier = notifier_for(world, webhook(receiver), clock=clock)
    assert notifier.run_once() == 0
    world.propose(order_id="ord_1002", amount_minor=100)
    assert notifier.run_once() == 1
    assert len(receiver.requests) == 1

"""Web Push follows reminders and escalations: again to who may decide, then to whom it adds."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from signoff import Gate, Principal
from signoff.policy import PolicySource
from tests.channels.test_push import PushWorld, push  # noqa: F401  (the push stand-in fixture)
from tests.conftest import AGENT, APPROVER, REFUND, TOKEN_KEY

POLICY = """
[tools.refund_order.expiry]
medium = "2h"
low = "2h"

[tools.refund_order.escalation]
remind_after = ["10m"]
escalate_after = "30m"
targets = ["person:erin"]
"""
ERIN = Principal("erin", "acme")


def test_alice_is_pushed_twice_and_erin_once_at_the_escalation(
    push: PushWorld,  # noqa: F811
    tmp_path: Path,
) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    world = push.world
    gate = Gate(
        world.gate.catalog,
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        policy=PolicySource(world.gate.catalog, path),
    )
    alice = str(push.subscribe(APPROVER, "alice-phone")["endpoint"])
    erin = str(push.subscribe(ERIN, "erin-phone")["endpoint"])
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    for minutes in (0, 10, 20):  # created, reminded, escalated
        world.clock.advance(timedelta(minutes=minutes))
        gate.follow_up()
        push.channels.notifier.run_once()
    assert push.standin.refused == []
    assert [r.endpoint for r in push.standin.received] == [alice, alice, erin]
    assert {r.payload["url"] for r in push.standin.received} == {
        f"https://signoff.example/ui/proposals/{proposal.proposal_id}"
    }

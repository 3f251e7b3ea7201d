"""Teams hears reminders and escalations: a message in each copy's conversation, a card to
the person an escalation adds, whose Action.Execute then decides."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from signoff import Gate, Principal, ProposalStatus
from signoff.policy import PolicySource
from tests.channels.teams_world import TeamsWorld, teams_world, verbs
from tests.conftest import AGENT, APPROVER, REFUND, TOKEN_KEY, World

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


@pytest.fixture
def teams(world: World) -> Iterator[TeamsWorld]:
    with teams_world(world) as tw:
        yield tw


def test_a_reminder_in_the_conversation_then_the_escalation_target_approves(
    teams: TeamsWorld, tmp_path: Path
) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    world = teams.world
    gate = Gate(
        world.gate.catalog,
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        policy=PolicySource(world.gate.catalog, path),
    )
    teams.link("alice", APPROVER)
    teams.link("erin", ERIN)
    teams.say("alice")
    teams.say("erin")
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    teams.notify()
    assert teams.standin.cards_in("a:chat-erin") == []
    world.clock.advance(timedelta(minutes=10))
    gate.follow_up()
    teams.notify()
    reminders = [t for t in teams.standin.texts_to("a:chat-alice") if t.startswith("Reminder")]
    assert len(reminders) == 1
    assert proposal.expires_at.strftime("%Y-%m-%d %H:%M:%S") in reminders[0]
    world.clock.advance(timedelta(minutes=20))
    gate.follow_up()
    teams.notify()
    [card] = teams.standin.cards_in("a:chat-erin")
    assert verbs(card)[0] == "signoff.approve"
    assert teams.click("signoff.approve", proposal, user="erin").status_code == 200
    decided = gate.proposal(APPROVER, proposal.proposal_id)
    assert decided.status is ProposalStatus.CONFIRMED
    assert [a.approver for a in decided.approvals] == ["erin"]

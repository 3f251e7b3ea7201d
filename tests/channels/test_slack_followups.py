"""Slack hears reminders and escalations: a reply under each copy, a message to whom it adds."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from signoff import Gate, Principal, ProposalStatus
from signoff.policy import PolicySource
from tests.channels.conftest import SlackWorld, action_ids
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


def test_a_reminder_threads_under_the_copy_and_the_escalation_target_approves(
    slack: SlackWorld, tmp_path: Path
) -> None:
    """At 10m a reply under alice's message; at 30m erin gets her own and her click counts."""
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    world = slack.world
    gate = Gate(
        world.gate.catalog,
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        policy=PolicySource(world.gate.catalog, path),
    )
    slack.link("UALICE", APPROVER)
    slack.link("UERIN", ERIN)
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    slack.notify()
    assert [c.args["channel"] for c in slack.standin.of("chat.postMessage")] == ["DUALICE"]
    world.clock.advance(timedelta(minutes=10))
    gate.follow_up()
    slack.notify()
    replies = [c.args for c in slack.standin.of("chat.postMessage") if "thread_ts" in c.args]
    assert [(r["channel"], r["text"].split(":")[0]) for r in replies] == [("DUALICE", "Reminder")]
    assert proposal.expires_at.strftime("%Y-%m-%d %H:%M:%S") in replies[0]["text"]
    world.clock.advance(timedelta(minutes=20))
    gate.follow_up()
    slack.notify()
    assert action_ids(slack.message_to("UERIN"))[0] == "signoff.approve"
    assert slack.click("signoff.approve", proposal, user="UERIN").status_code == 200
    decided = gate.proposal(APPROVER, proposal.proposal_id)
    assert decided.status is ProposalStatus.CONFIRMED
    assert [a.approver for a in decided.approvals] == ["erin"]
    (alices,) = [
        m for (c, _), m in slack.standin.messages.items() if c == "DUALICE" and "blocks" in m
    ]
    assert action_ids(alices) == ["signoff.open"]  # her copy is redrawn: decided

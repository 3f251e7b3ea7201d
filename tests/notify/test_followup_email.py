"""Reminders mail everyone who may decide; an escalation mails only the people it added."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from signoff import Gate, ManualClock
from signoff.notify import AddressBook, EmailChannel
from signoff.policy import PolicySource
from tests.conftest import AGENT, REFUND, TOKEN_KEY, World
from tests.notify.conftest import notifier_for
from tests.notify.test_email import Inbox, smtp  # noqa: F401  (the SMTP stand-in fixture)

POLICY = """
[tools.refund_order.expiry]
medium = "2h"
low = "2h"

[tools.refund_order.escalation]
remind_after = ["10m"]
escalate_after = "30m"
targets = ["role:finance_lead", "person:erin"]
"""
BOOK = AddressBook(
    roles={"acme": {"refund_approver": ["alice@acme.test"], "finance_lead": ["fred@acme.test"]}},
    people={"acme": {"erin": "erin@acme.test"}},
)


def test_reminder_then_escalation_mail_the_right_people_once(
    world: World,
    smtp: tuple[Inbox, int],  # noqa: F811
    clock: ManualClock,
    tmp_path: Path,
) -> None:
    """Alice at the start and at 10m; at 30m the finance lead and erin, and nobody else."""
    inbox, port = smtp
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    gate = Gate(
        world.gate.catalog,
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        policy=PolicySource(world.gate.catalog, path),
    )
    mail = EmailChannel(
        "mail", host="127.0.0.1", port=port, sender="signoff@acme.test", recipients=BOOK
    )
    notifier = notifier_for(world, mail, clock=clock)
    notifier.run_once()
    gate.propose(AGENT, "refund_order", REFUND)
    for minutes in (0, 10, 20, 20):  # created, reminded, escalated, nothing more
        world.clock.advance(timedelta(minutes=minutes))
        gate.follow_up()
        notifier.run_once()
    sent = [(m["Subject"].split(":")[0], to) for to, m in inbox.messages]
    assert sent == [
        ("Awaiting your decision", ["alice@acme.test"]),
        ("Reminder, awaiting your decision", ["alice@acme.test"]),
        ("Now yours to decide", ["erin@acme.test", "fred@acme.test"]),
    ]

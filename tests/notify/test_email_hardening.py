"""Issue 23: e-mail that an agent's text cannot break, and a queue nothing can block.

A subject with a line break used to raise inside the mail library; the row stayed
`pending` with 0 attempts, every pass aborted and later notifications waited. Agent text
reached the subject raw (a right-to-left override), and the title carried arguments.
"""

from __future__ import annotations

import email
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.message import Message
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from signoff import ManualClock
from signoff.notify import AddressBook, EmailChannel
from signoff.notify._email import compose
from signoff.notify._events import PROPOSAL_AWAITING, Notification
from tests.conftest import World
from tests.notify.conftest import Receiver, notifier_for, webhook


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(email.message_from_bytes(envelope.content))
        return "250 OK"


@pytest.fixture
def smtp(free_tcp_port: int) -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_tcp_port)
    controller.start()
    try:
        yield inbox, free_tcp_port
    finally:
        controller.stop()


BOOK = AddressBook(roles={"acme": {"refund_approver": ["alice@acme.test"]}})


def _rows(world: World) -> list[tuple[str, str, int]]:
    with world.store.read() as tx:
        rows = tx.run(
            "SELECT destination, status, attempts FROM deliveries ORDER BY destination, seq", ()
        ).fetchall()
    return [(str(d), str(s), int(a)) for d, s, a in rows]


def test_the_mail_names_the_tool_only_and_carries_no_argument(
    world: World, smtp: tuple[Inbox, int], clock: ManualClock
) -> None:
    inbox, port = smtp
    mail = EmailChannel("mail", host="127.0.0.1", port=port, sender="s@acme.test", recipients=BOOK)
    notifier = notifier_for(world, mail, clock=clock)
    notifier.run_once()
    world.propose(order_id="ord_1077", amount_minor=12345)
    assert notifier.run_once() == 1
    [message] = inbox.messages
    assert message["Subject"] == "Awaiting your decision: a refund_order request"
    text = message.as_string()
    for argument in ("ord_1077", "12345", "123.45", "damaged"):
        assert argument not in text
    assert _rows(world) == [("email:mail", "delivered", 1)]


def test_agent_text_in_an_email_is_shown_not_obeyed() -> None:
    """Whatever a title holds, the subject is one line and overrides are visible."""
    note = Notification(
        "evt_1",
        PROPOSAL_AWAITING,
        "acme",
        1,
        {"title": "refund\r\nBcc: mallory@evil.test \u202eevil", "proposal_id": "prop_1"},
        "refund_approver",
        "https://signoff.test/ui/proposals/prop_1",
    )
    message = compose(note, sender="s@acme.test", to=["a@acme.test"], now=datetime.now(UTC))
    subject = str(message["Subject"])
    assert "\n" not in subject and "\u202e" not in subject
    assert "⟨U+000D⟩⟨U+000A⟩" in subject and "⟨U+202E⟩" in subject
    assert message["Bcc"] is None
    assert "\u202e" not in message.get_content()


def test_a_message_that_cannot_be_composed_is_a_failed_delivery_and_the_queue_moves(
    world: World, receiver: Receiver, clock: ManualClock
) -> None:
    """A header the mail library refuses: retried, then dead; the webhook row still goes."""
    broken = EmailChannel(
        "mail",
        host="127.0.0.1",
        port=9,
        sender="s@acme.test\nBcc: mallory@evil.test",
        recipients=BOOK,
        max_attempts=2,
    )
    notifier = notifier_for(world, broken, webhook(receiver), clock=clock)
    notifier.run_once()
    world.propose()
    assert notifier.run_once() == 1  # the webhook is delivered although the e-mail failed
    assert _rows(world) == [("email:mail", "pending", 1), ("webhook:hook", "delivered", 1)]
    clock.advance(timedelta(minutes=5))
    notifier.run_once()
    with world.store.read() as tx:
        [(status, attempts, error)] = tx.run(
            "SELECT status, attempts, last_error FROM deliveries WHERE destination = ?",
            ("email:mail",),
        ).fetchall()
    assert (status, attempts) == ("dead", 2)
    assert "could not be composed" in error


class _Exploding:
    destination = "explode:x"
    max_attempts = 1

    def accepts(self, event_type: str, tenant: str) -> bool:
        return True

    def send(self, notification: Notification, now: datetime) -> None:
        raise RuntimeError("a bug in a channel")

    def close(self) -> None:
        return None


def test_an_unforeseen_channel_error_is_a_failed_attempt_not_a_stuck_pass(
    world: World, receiver: Receiver, clock: ManualClock
) -> None:
    notifier = notifier_for(world, _Exploding(), webhook(receiver), clock=clock)
    notifier.run_once()
    world.propose()
    assert notifier.run_once() == 1
    assert _rows(world) == [("explode:x", "dead", 1), ("webhook:hook", "delivered", 1)]

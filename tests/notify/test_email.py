"""E-mail to who may decide, through a real SMTP server (aiosmtpd) on loopback."""

from __future__ import annotations

import email
from collections.abc import Iterator
from email.message import Message
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from signoff import ManualClock
from signoff.identity import StoreRoleDirectory
from signoff.notify import AddressBook, DirectoryRecipients, EmailChannel
from tests.conftest import AGENT, World
from tests.notify.conftest import PUBLIC_URL, notifier_for


class Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Message]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((list(envelope.rcpt_tos), email.message_from_bytes(envelope.content)))
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


BOOK = AddressBook(
    roles={"acme": {"refund_approver": ["alice@acme.test", "bob@acme.test"]}},
    people={"acme": {"u_42": "u42@acme.test"}},
)


def channel(port: int, book: AddressBook = BOOK) -> EmailChannel:
    return EmailChannel(
        "mail", host="127.0.0.1", port=port, sender="signoff@acme.test", recipients=book
    )


def test_the_role_holders_get_a_link_and_no_secret(
    world: World, smtp: tuple[Inbox, int], clock: ManualClock
) -> None:
    """A refund awaiting approval mails the refund approvers, never the requester, with the link."""
    inbox, port = smtp
    notifier = notifier_for(world, channel(port), clock=clock)
    notifier.run_once()
    proposal = world.propose()
    assert notifier.run_once() == 1
    token = world.approve(proposal)
    assert notifier.run_once() == 0  # only 'awaiting' is mailed by default
    ((to, message),) = inbox.messages
    assert to == ["alice@acme.test", "bob@acme.test"]
    assert message["From"] == "signoff@acme.test"
    assert message["Subject"].startswith("Awaiting your decision: ")
    payload = message.get_payload(decode=True)
    assert isinstance(payload, bytes)
    text = payload.decode()
    assert f"{PUBLIC_URL}/ui/proposals/{proposal.proposal_id}" in text
    assert "refund_approver" in text
    assert token not in text and "sot_" not in text and proposal.args_digest not in text


def test_a_policy_where_the_requester_confirms_mails_the_requester(
    world: World, smtp: tuple[Inbox, int], clock: ManualClock
) -> None:
    """A note on the customer's own order: the customer decides, so the customer is told."""
    inbox, port = smtp
    notifier = notifier_for(world, channel(port), clock=clock)
    notifier.run_once()
    note = {"order_id": "ord_1001", "note": "Leave it at the door."}
    world.gate.propose(AGENT, "add_order_note", note)
    notifier.run_once()
    ((to, _),) = inbox.messages
    assert to == ["u42@acme.test"]


def test_nobody_to_tell_is_a_dead_letter_with_the_reason(
    world: World, smtp: tuple[Inbox, int], clock: ManualClock
) -> None:
    inbox, port = smtp
    notifier = notifier_for(world, channel(port, AddressBook()), clock=clock)
    notifier.run_once()
    world.propose()
    notifier.run_once()
    with world.store.read() as tx:
        (delivery,) = tx.deliveries("acme")
    assert delivery.status == "pending" and "no address" in (delivery.last_error or "")
    assert inbox.messages == []


def test_the_role_directory_decides_who_is_mailed(
    world: World, smtp: tuple[Inbox, int], clock: ManualClock
) -> None:
    """Granted in the directory: mailed at the book's address; revoked: never, even if listed."""
    inbox, port = smtp
    directory = StoreRoleDirectory(world.store)
    directory.grant("acme", "carol", "refund_approver", by="ops")
    directory.revoke("acme", "bob", "refund_approver", by="ops")
    book = AddressBook(
        roles={"acme": {"refund_approver": ["alice@acme.test", "bob@acme.test"]}},
        people={"acme": {"bob": "bob@acme.test", "carol": "carol@acme.test"}},
    )
    recipients = DirectoryRecipients(world.store, book)
    mail = EmailChannel(
        "mail", host="127.0.0.1", port=port, sender="signoff@acme.test", recipients=recipients
    )
    notifier = notifier_for(world, mail, clock=clock)
    notifier.run_once()
    world.propose()
    assert notifier.run_once() == 1
    ((to, _),) = inbox.messages
    assert to == ["alice@acme.test", "carol@acme.test"]

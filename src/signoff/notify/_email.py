"""E-mail to the people who may decide: a link to the confirmation page, never a secret.

Who may decide is the proposal's policy: holders of its required role, and
the requester when the policy asks them to confirm their own request. The
addresses come from a :class:`Recipients` source (an :class:`AddressBook` per
tenant today). The message names the operation and links to the page, where
the person signs in and sees every value; it carries no token and no argument.
"""

from __future__ import annotations

import smtplib
from collections.abc import Iterable, Mapping
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from typing import Protocol

from signoff._i18n import Localizer
from signoff._text import visible
from signoff.notify._channel import DeliveryFailed, EventFilter
from signoff.notify._events import (
    ASKING,
    PROPOSAL_AWAITING,
    PROPOSAL_ESCALATED,
    PROPOSAL_REASSIGNED,
    PROPOSAL_REMINDED,
    Notification,
)


class Recipients(Protocol):
    def for_role(self, tenant: str, role: str) -> list[str]: ...

    def for_person(self, tenant: str, subject: str) -> list[str]: ...


class AddressBook:
    """Addresses per (tenant, role) and per (tenant, person)."""

    def __init__(
        self,
        roles: Mapping[str, Mapping[str, Iterable[str]]] | None = None,
        people: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self._roles = {t: {r: list(a) for r, a in m.items()} for t, m in (roles or {}).items()}
        self._people = {t: dict(m) for t, m in (people or {}).items()}

    def for_role(self, tenant: str, role: str) -> list[str]:
        return list(self._roles.get(tenant, {}).get(role, []))

    def for_person(self, tenant: str, subject: str) -> list[str]:
        address = self._people.get(tenant, {}).get(subject)
        return [] if address is None else [address]


def deciders(notification: Notification, recipients: Recipients) -> list[str]:
    """The addresses of everyone who may decide this proposal, each once, sorted.

    An escalation or a reassignment is addressed to the targets it added only; a
    reminder to everyone who may decide now (the role, unless an admin reassigned the
    proposal, and every target added since).
    """
    found: set[str] = set()
    if notification.addressed is not None:
        return sorted(_addresses(notification.tenant, notification.addressed, recipients))
    found.update(_addresses(notification.tenant, notification.assigned, recipients))
    if notification.required_role is not None:
        found.update(recipients.for_role(notification.tenant, notification.required_role))
    if notification.requester_confirms and notification.requester is not None:
        found.update(recipients.for_person(notification.tenant, notification.requester))
    return sorted(found)


def _addresses(tenant: str, targets: Iterable[str], recipients: Recipients) -> set[str]:
    found: set[str] = set()
    for target in targets:
        kind, _, name = target.partition(":")
        if kind == "role":
            found.update(recipients.for_role(tenant, name))
        elif kind == "person":
            found.update(recipients.for_person(tenant, name))
    return found


class EmailChannel:
    """SMTP delivery of 'awaiting your decision' (or the ``events`` given) to the deciders."""

    def __init__(
        self,
        name: str,
        *,
        host: str,
        port: int,
        sender: str,
        recipients: Recipients,
        events: Iterable[str] = tuple(sorted(ASKING)),
        tenants: Iterable[str] | None = None,
        starttls: bool = False,
        username: str | None = None,
        password: str | None = None,
        max_attempts: int = 8,
        timeout_seconds: float = 10.0,
        localizer: Localizer | None = None,
    ) -> None:
        if not name or max_attempts < 1:
            raise ValueError("an e-mail channel needs a name and max_attempts ≥ 1")
        self.name, self.host, self.port, self.sender = name, host, port, sender
        self.recipients = recipients
        self.max_attempts = max_attempts
        self._filter = EventFilter(events, tenants)
        self.tenants = None if self._filter.tenants is None else sorted(self._filter.tenants)
        self.starttls, self.username, self.password = starttls, username, password
        self._starttls, self._login = starttls, (username, password)
        self._timeout = timeout_seconds
        self._words = localizer or Localizer()

    @property
    def destination(self) -> str:
        return f"email:{self.name}"

    def accepts(self, event_type: str, tenant: str) -> bool:
        return self._filter.accepts(event_type, tenant)

    def send(self, notification: Notification, now: datetime) -> None:
        to = deciders(notification, self.recipients)
        if not to:
            # Nobody to tell is not a delivery: it stays visible as dead, with the reason.
            raise DeliveryFailed(f"no address for who may decide in {notification.tenant}")
        try:
            message = compose(
                notification, sender=self.sender, to=to, now=now, localizer=self._words
            )
        except (ValueError, TypeError) as exc:
            # A header the mail library refuses (a line break, a bad address) is a failed
            # delivery, retried and then dead-lettered — never a row stuck in the queue.
            raise DeliveryFailed(f"the message could not be composed: {exc}") from exc
        self.deliver(message)

    def deliver(self, message: EmailMessage) -> None:
        """Hand one message to the SMTP server, or raise :class:`DeliveryFailed`."""
        try:
            with smtplib.SMTP(self.host, self.port, timeout=self._timeout) as smtp:
                if self._starttls:
                    smtp.starttls()
                if self._login[0] is not None:
                    smtp.login(self._login[0], self._login[1] or "")
                smtp.send_message(message)
        except (OSError, ValueError, smtplib.SMTPException) as exc:
            raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        return None


def compose(
    notification: Notification,
    *,
    sender: str,
    to: list[str],
    now: datetime,
    localizer: Localizer | None = None,
) -> EmailMessage:
    """The message in the tenant's language, with the deadline in its zone (and offset)."""
    words = localizer or Localizer()
    _ = words.gettext
    data = notification.data
    # Text that reached signoff from outside is shown, never obeyed: bidirectional overrides
    # and line breaks become visible (⟨U+202E⟩), as on the page; no header can be broken.
    title = visible(data.get("title") or data.get("tool") or _("a write operation"))
    deadline = _deadline(data.get("expires_at"), words)
    message = EmailMessage()
    message["Subject"] = _subject(notification.event_type, str(title), words)
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Date"] = format_datetime(now)
    message["Message-ID"] = make_msgid(idstring=notification.event_id, domain="signoff")
    lines = [
        f"{title}",
        "",
        _("Requested by %(who)s in %(tenant)s.")
        % {
            "who": visible(data.get("requester", _("someone"))),
            "tenant": visible(notification.tenant),
        },
        _("Decision needed from: %(who)s.")
        % {"who": visible(data.get("required_role") or _("the requester"))},
        _("Open the confirmation page to see every value and decide before %(deadline)s:")
        % {"deadline": deadline},
        "",
        f"  {notification.page_url}",
        "",
        _("Proposal %(proposal)s · event %(event)s")
        % {"proposal": visible(data.get("proposal_id")), "event": notification.event_id},
        _("This message carries no confirmation and no secret; deciding happens on the page."),
    ]
    message.set_content("\n".join(lines))
    if words.locale != "en":  # after set_content, which replaces the Content-* headers
        message["Content-Language"] = words.html_lang
    return message


def _deadline(recorded: object, words: Localizer) -> str:
    """The notification's UTC deadline in the reader's zone; as recorded if unreadable."""
    try:
        return words.when(datetime.fromisoformat(str(recorded).replace("Z", "+00:00")))
    except ValueError:
        return str(recorded)


def _subject(event_type: str, title: str, words: Localizer) -> str:
    if event_type == PROPOSAL_AWAITING:
        return words.gettext("Awaiting your decision: %(title)s") % {"title": title}
    if event_type == PROPOSAL_REMINDED:
        return words.gettext("Reminder, awaiting your decision: %(title)s") % {"title": title}
    if event_type in (PROPOSAL_ESCALATED, PROPOSAL_REASSIGNED):
        return words.gettext("Now yours to decide: %(title)s") % {"title": title}
    return f"[signoff] {event_type}: {title}"

"""People keep their own copy: the signed receipt, e-mailed to the approvers and the requester.

After an execution finished, each person who approved it and the person it was requested for
receive the signed receipt as an attachment (``receipt-<execution>.json``), so the evidence
exists outside the operator's database. Anyone can check it offline with
``signoff audit verify --receipt FILE --trust FILE`` (docs/PROOF.md). The receipt is signed
by the deployment's receipt key (``receipts`` reads it); until a checkpoint holds the outcome
there is none yet, and the delivery is retried.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from typing import Any

from signoff._text import visible
from signoff.notify._channel import DeliveryFailed
from signoff.notify._email import EmailChannel, Recipients
from signoff.notify._events import EXECUTION_RESOLVED, EXECUTION_SUCCEEDED, Notification
from signoff.proof._verify_receipt import receipt_file

SignedReceipts = Callable[[str, str, str], "str | None"]
"""(tenant, proposal id, execution id) → the signed receipt (a JWS), None while unsigned."""
RECEIPT_EVENTS = (EXECUTION_SUCCEEDED, EXECUTION_RESOLVED)


def people(notification: Notification, recipients: Recipients) -> list[str]:
    """The approvers' and the requester's addresses, each once, sorted."""
    subjects = set(notification.approvers)
    if notification.requester is not None:
        subjects.add(notification.requester)
    found: set[str] = set()
    for subject in subjects:
        found.update(recipients.for_person(notification.tenant, subject))
    return sorted(found)


def receipt_channel(mail: EmailChannel, receipts: SignedReceipts) -> ReceiptEmailChannel:
    """A receipt channel over the same SMTP server, sender and address book as ``mail``."""
    return ReceiptEmailChannel(
        mail.name, receipts=receipts, host=mail.host, port=mail.port, sender=mail.sender,
        recipients=mail.recipients, tenants=mail.tenants, starttls=mail.starttls,
        username=mail.username, password=mail.password, max_attempts=mail.max_attempts,
    )  # fmt: skip


class ReceiptEmailChannel(EmailChannel):
    """SMTP delivery of each finished execution's signed receipt to the people concerned."""

    def __init__(
        self,
        name: str,
        *,
        receipts: SignedReceipts,
        events: Iterable[str] = RECEIPT_EVENTS,
        **smtp: Any,
    ) -> None:
        super().__init__(name, events=events, **smtp)
        self._receipts = receipts

    @property
    def destination(self) -> str:
        return f"email-receipt:{self.name}"

    def send(self, notification: Notification, now: datetime) -> None:
        execution_id, proposal_id = (
            notification.data.get("execution_id"),
            notification.data.get("proposal_id"),
        )
        if not execution_id or not proposal_id:
            raise DeliveryFailed("the event names no execution: nothing to send a receipt of")
        to = people(notification, self.recipients)
        if not to:
            raise DeliveryFailed(
                f"no address for the approvers or requester in {notification.tenant}"
            )
        signed = self._receipts(notification.tenant, str(proposal_id), str(execution_id))
        if signed is None:
            raise DeliveryFailed("the receipt is not signed yet (no checkpoint holds the outcome)")
        try:
            message = compose_receipt(
                notification, receipt_file(signed, str(execution_id)), sender=self.sender,
                to=to, now=now,
            )  # fmt: skip
        except (ValueError, TypeError) as exc:
            raise DeliveryFailed(f"the message could not be composed: {exc}") from exc
        self.deliver(message)


def compose_receipt(
    notification: Notification, file: dict[str, Any], *, sender: str, to: list[str], now: datetime
) -> EmailMessage:
    """The message: what ran, how to check it, and the signed receipt attached."""
    execution_id = str(file["execution_id"])
    tool = visible(notification.data.get("tool") or "a write operation")
    message = EmailMessage()
    message["Subject"] = f"[signoff] Your signed receipt: {tool} {execution_id}"
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Date"] = format_datetime(now)
    message["Message-ID"] = make_msgid(idstring=notification.event_id, domain="signoff")
    lines = [
        f"The {tool} you approved or requested in {visible(notification.tenant)} has finished"
        f" (execution {execution_id}, proposal {visible(notification.data.get('proposal_id'))}).",
        "",
        "The attached receipt is signed by the deployment. Keep it: it proves what was approved,"
        " by whom, and what ran, without the operator's database. Check it with the trust file"
        " your organisation publishes:",
        "",
        f"  signoff audit verify --receipt receipt-{execution_id}.json --trust trust.json",
        "",
        "This message carries no confirmation and no secret.",
    ]
    message.set_content("\n".join(lines))
    message.add_attachment(
        (json.dumps(file, indent=1) + "\n").encode(),
        maintype="application",
        subtype="json",
        filename=f"receipt-{execution_id}.json",
    )
    return message

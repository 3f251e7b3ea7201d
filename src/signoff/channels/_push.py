"""Web Push to the page installed as an app (PWA): the proposal's title and deadline only.

A person turns notifications on for a device on the page (``/ui/notifications``);
the browser's push subscription is kept for them with the roles of their sign-in.
When a proposal they may decide awaits a decision, pywebpush sends the push
service a message encrypted for that browser (RFC 8291, ``aes128gcm``) and signed
with the server's VAPID key (RFC 8292). The message carries the title, the deadline
and the page's URL — never an argument, a token or the rationale; tapping it opens
the proposal, where the person signs in and sees every value. A subscription the
push service says is gone (404, 410) is deleted.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives import serialization
from py_vapid import Vapid02
from pywebpush import WebPushException, webpush

from signoff._model import Proposal, ProposalStatus
from signoff.channels._card import page_url, when
from signoff.channels._deciding import named, person_may_decide
from signoff.notify import DeliveryFailed, EventFilter, Notification
from signoff.notify._events import ASKING

if TYPE_CHECKING:
    from signoff import Gate
    from signoff.channels._config import WebPushConfig

log = logging.getLogger("signoff.channels.push")
GONE = (404, 410)


def application_server_key(vapid: Vapid02) -> str:
    """The public key the browser subscribes with (uncompressed P-256 point, base64url)."""
    raw = vapid.public_key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def new_vapid_keys() -> tuple[str, str]:
    """(private key as base64url DER, application server key): `signoff channels vapid-keys`."""
    vapid = Vapid02()
    vapid.generate_keys()
    der = vapid.private_key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return base64.urlsafe_b64encode(der).rstrip(b"=").decode(), application_server_key(vapid)


def load_vapid(key: str) -> Vapid02:
    """A VAPID key given as PEM, or as base64url DER or raw (py_vapid's forms)."""
    if "-----BEGIN" in key:
        return Vapid02.from_pem(key.encode())
    return Vapid02.from_string(key)


def push_message(proposal: Proposal, public_url: str) -> dict[str, str]:
    """What the phone shows: the title and the deadline, and where tapping goes."""
    return {
        "title": proposal.preview.title,
        "body": f"Awaiting your decision · decide before {when(proposal.expires_at)}",
        "deadline": proposal.expires_at.isoformat().replace("+00:00", "Z"),
        "url": page_url(public_url, proposal.proposal_id),
        "tag": proposal.proposal_id,
    }


class WebPush:
    """The VAPID key and the subscriptions kept in the gate's store."""

    def __init__(
        self, gate: Gate, config: WebPushConfig, *, public_url: str, env: dict[str, str]
    ) -> None:
        self.gate = gate
        self.config = config
        self.public_url = public_url
        self.vapid = load_vapid(config.private_key(env))
        self.public_key = application_server_key(self.vapid)

    def send(self, proposal: Proposal, *, only: Sequence[str] | None = None) -> int:
        """Push to everyone who may decide; with ``only``, to those targets alone."""
        with self.gate.store.read() as tx:
            subscriptions = tx.push_subscriptions_of(proposal.tenant)
        data = json.dumps(push_message(proposal, self.public_url), ensure_ascii=False)
        sent = 0
        failures: list[str] = []
        for sub in subscriptions:
            if not person_may_decide(self.gate, sub.tenant, sub.subject, sub.roles, proposal):
                continue
            if only is not None and not named(only, sub.tenant, sub.subject, sub.roles, self.gate):
                continue
            try:
                webpush(
                    sub.info(),
                    data=data,
                    vapid_private_key=self.vapid,
                    vapid_claims={"sub": self.config.vapid_subject},
                    ttl=self.config.ttl_seconds,
                    timeout=10,
                )
                sent += 1
            except WebPushException as exc:
                status = None if exc.response is None else exc.response.status_code
                if status in GONE:
                    with self.gate.store.transaction() as tx:
                        tx.delete_push_subscription(sub.endpoint, tenant=sub.tenant, subject=None)
                    log.info("push: %s's subscription is gone (%s); removed", sub.subject, status)
                else:
                    failures.append(f"{sub.subject}: {status or type(exc).__name__}")
        if failures and sent == 0:
            raise DeliveryFailed("push service refused: " + ", ".join(failures)[:400])
        return sent


class PushChannel:
    """The notification destination ``push:webpush``: proposals awaiting a decision."""

    def __init__(self, push: WebPush, tenants: frozenset[str] | None = None) -> None:
        self.push = push
        self.max_attempts = push.config.max_attempts
        self._filter = EventFilter(ASKING, tenants)

    @property
    def destination(self) -> str:
        return "push:webpush"

    def accepts(self, event_type: str, tenant: str) -> bool:
        return self._filter.accepts(event_type, tenant)

    def send(self, notification: Notification, now: datetime) -> None:
        proposal_id = notification.data.get("proposal_id")
        if proposal_id is None:
            return
        with self.push.gate.store.read() as tx:
            proposal = tx.proposal(notification.tenant, str(proposal_id))
        if proposal is None or proposal.status is not ProposalStatus.AWAITING_CONFIRMATION:
            return  # decided (or gone) before the push went out: nothing to ask any more
        self.push.send(proposal, only=notification.addressed)

    def close(self) -> None:
        return None

"""Audit event authenticators: a MAC with a secret the database never holds.

The gate seals each event it appends with
``mac = "v1." + kid + "." + base64url(nonce) + "." + base64url(tag)`` where
``tag = HMAC-SHA256(key, "signoff-event-mac/v1\\n" || JCS({tenant, at, kind,
proposal_id, execution_id, actor, data, nonce}))`` and ``nonce`` is 16 random
bytes. The ``mac`` string is stored with the event and is part of its hash
(audit._chain), so it is covered by every checkpoint like the rest of the
event.

What it binds, and why not the position: on PostgreSQL the event's ``seq``
and ``prev_hash`` are assigned inside the server-side step function, after
Python has built the event, so Python cannot MAC them without a second round
trip. The MAC therefore binds the content and a unique nonce; position is
bound by the chain and by the signer: it checks that the new events link to
the last event it signed (the head hash it keeps outside the database), that
every new event's MAC verifies, and that no MAC appears twice — so a
database writer can neither add an event, nor replay one the gate wrote,
nor rewrite what was signed. A verifier without the key sees the MAC as an
opaque unique string and refuses duplicates.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from signoff._canonical import canonical_json
from signoff.audit._chain import AuditEvent
from signoff.proof._keys import MacKey, b64url, b64url_decode

MAC_VERSION = "v1"
_LABEL = b"signoff-event-mac/v1\n"
MICROS = 1_000_000


def _tag(key: bytes, content: dict[str, object]) -> bytes:
    return hmac.new(key, _LABEL + canonical_json(content), hashlib.sha256).digest()


def _content(
    tenant: str,
    at: int,
    kind: str,
    proposal_id: str | None,
    execution_id: str | None,
    actor: str | None,
    data: str,
    nonce: str,
) -> dict[str, object]:
    return {
        "tenant": tenant, "at": at, "kind": kind, "proposal_id": proposal_id,
        "execution_id": execution_id, "actor": actor, "data": data, "nonce": nonce,
    }  # fmt: skip


@dataclass(frozen=True, slots=True)
class EventAuthenticator:
    """Seals new events with the newest MAC key; checks old ones with any key valid then."""

    keys: Sequence[MacKey]
    random: Callable[[int], bytes] = secrets.token_bytes

    def seal(
        self,
        *,
        tenant: str,
        at: int,
        kind: str,
        proposal_id: str | None,
        execution_id: str | None,
        actor: str | None,
        data: str,
    ) -> str:
        key = next(k for k in reversed(self.keys) if k.not_after is None)
        nonce = b64url(self.random(16))
        content = _content(tenant, at, kind, proposal_id, execution_id, actor, data, nonce)
        return f"{MAC_VERSION}.{key.kid}.{nonce}.{b64url(_tag(key.secret, content))}"

    def check(self, event: AuditEvent) -> str | None:
        """Why ``event``'s MAC does not prove the gate wrote it, or None when it does."""
        if event.mac is None:
            return "it carries no authenticator"
        parts = event.mac.split(".")
        if len(parts) != 4 or parts[0] != MAC_VERSION:
            return "its authenticator is malformed"
        _, kid, nonce, tag = parts
        key = next((k for k in self.keys if k.kid == kid), None)
        if key is None:
            return f"its authenticator names an unknown MAC key {kid!r}"
        if not key.valid_at(event.at // MICROS):
            return f"MAC key {kid} was not valid when the event says it was written"
        content = _content(
            event.tenant, event.at, event.kind, event.proposal_id, event.execution_id,
            event.actor, event.data, nonce,
        )  # fmt: skip
        try:
            presented = b64url_decode(tag)
        except ValueError:
            return "its authenticator is malformed"
        if not hmac.compare_digest(presented, _tag(key.secret, content)):
            return "its authenticator does not verify"
        return None

"""Which chat user is which signoff person: only through an explicit link, never a name.

A link is made one of two ways. The chat user asks to decide, is not linked, and
gets a one-time code as a link to the confirmation page; they sign in there (the
page's OIDC or token sign-in) and confirm, and the link records who signed in and
the roles their identity token carried. Or an admin sets the entry (``signoff
channels link``). A display name, an e-mail address shown in the chat profile or
anything else the chat user controls is never used. Every link and unlink is an
audit event in the tenant's chain; codes are stored as their SHA-256 only.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from signoff._clock import Clock, to_micros
from signoff._model import Principal
from signoff.exceptions import InvalidRequest, LinkCodeInvalid, NotLinked
from signoff.store._base import Store
from signoff.store._sql import ChannelLink, LinkCode, SqlTransaction

CODE_TTL = timedelta(minutes=10)
LINK_TTL = timedelta(days=30)
"""A sign-in link lasts this long; then the chat user signs in again (fresh roles)."""
MAX_ID = 255
SIGN_IN = "sign-in"
"""``linked_by`` of a link the person made by signing in on the page."""


def code_hash(code: str) -> str:
    return hashlib.sha256(b"signoff channel link code\x00" + code.encode()).hexdigest()


class IdentityLinks:
    """Links between chat users and signoff people, kept in the gate's store."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        code_ttl: timedelta = CODE_TTL,
        link_ttl: timedelta | None = LINK_TTL,
    ) -> None:
        self.store = store
        self.clock = clock
        self.code_ttl = code_ttl
        self.link_ttl = link_ttl

    def start(self, channel: str, workspace: str, user_id: str, tenant: str) -> str:
        """A one-time code for this chat user to complete on the page; only its hash is kept."""
        _check_ids(channel, workspace, user_id, tenant)
        code = secrets.token_urlsafe(24)
        now = to_micros(self.clock.now())
        record = LinkCode(
            code_hash(code),
            channel,
            workspace,
            user_id,
            tenant,
            now,
            now + int(self.code_ttl.total_seconds() * 1_000_000),
            None,
        )
        with self.store.transaction() as tx:
            tx.insert_link_code(record)
        return code

    def pending(self, code: str) -> LinkCode:
        """The code's chat user while it is unused and unexpired, else ``LinkCodeInvalid``."""
        with self.store.read() as tx:
            record = tx.link_code(code_hash(code)) if 0 < len(code) <= MAX_ID else None
        if (
            record is None
            or record.used_at is not None
            or record.expires_at <= to_micros(self.clock.now())
        ):
            raise LinkCodeInvalid("this link code is unknown, used or expired; ask again in chat")
        return record

    def complete(self, code: str, principal: Principal) -> ChannelLink:
        """The signed-in person completes the code: their identity becomes the chat user's."""
        if principal.is_agent:
            raise NotLinked("an agent cannot link a chat user; a person signs in")
        record = self.pending(code)
        if record.tenant != principal.tenant:
            # The chat workspace belongs to one tenant; nobody links it into another.
            raise LinkCodeInvalid("this link code is unknown, used or expired; ask again in chat")
        now = to_micros(self.clock.now())
        link = self._link(record.channel, record.workspace, record.user_id, principal, SIGN_IN, now)
        with self.store.transaction() as tx:
            if not tx.use_link_code(record.code_hash, now):
                raise LinkCodeInvalid("this link code was used or expired just now")
            self._put(tx, link, now)
        return link

    def link(
        self,
        channel: str,
        workspace: str,
        user_id: str,
        principal: Principal,
        *,
        by: str,
        ttl: timedelta | None = None,
    ) -> ChannelLink:
        """An admin's directory entry (``signoff channels link``): no expiry unless given."""
        _check_ids(channel, workspace, user_id, principal.tenant, principal.subject, by)
        now = to_micros(self.clock.now())
        link = self._link(channel, workspace, user_id, principal, by, now, ttl=ttl, admin=True)
        with self.store.transaction() as tx:
            self._put(tx, link, now)
        return link

    def unlink(self, channel: str, workspace: str, user_id: str, *, by: str) -> bool:
        with self.store.transaction() as tx:
            found = tx.channel_link(channel, workspace, user_id)
            if found is None or not tx.delete_channel_link(channel, workspace, user_id):
                return False
            tx.append_audit(
                tenant=found.tenant,
                at=to_micros(self.clock.now()),
                kind="channel.unlinked",
                actor=by,
                data={"channel": channel, "workspace": workspace, "user_id": user_id},
            )
        return True

    def principal(self, channel: str, workspace: str, user_id: str, *, surface: str) -> Principal:
        """The linked person deciding through ``surface``, or ``NotLinked``."""
        with self.store.read() as tx:
            link = tx.channel_link(channel, workspace, user_id)
        if link is None or (
            link.expires_at is not None and link.expires_at <= to_micros(self.clock.now())
        ):
            raise NotLinked(
                f"this {channel} user is not linked to a signoff identity; link it first",
                channel=channel,
            )
        return Principal(link.subject, link.tenant, roles=frozenset(link.roles), client=surface)

    def links(self, tenant: str, *, channel: str | None = None) -> list[ChannelLink]:
        """The tenant's links that hold now (an expired sign-in link is left out)."""
        now = to_micros(self.clock.now())
        with self.store.read() as tx:
            found = tx.channel_links_of(tenant, channel=channel)
        return [x for x in found if x.expires_at is None or x.expires_at > now]

    def _link(
        self,
        channel: str,
        workspace: str,
        user_id: str,
        principal: Principal,
        by: str,
        now: int,
        *,
        ttl: timedelta | None = None,
        admin: bool = False,
    ) -> ChannelLink:
        lasting = ttl if admin else self.link_ttl
        expires = None if lasting is None else now + int(lasting.total_seconds() * 1_000_000)
        return ChannelLink(
            channel,
            workspace,
            user_id,
            principal.tenant,
            principal.subject,
            tuple(sorted(principal.roles)),
            by,
            now,
            expires,
        )

    def _put(self, tx: SqlTransaction, link: ChannelLink, now: int) -> None:
        tx.put_channel_link(link)
        tx.append_audit(
            tenant=link.tenant,
            at=now,
            kind="channel.linked",
            actor=link.subject if link.linked_by == SIGN_IN else link.linked_by,
            data={
                "channel": link.channel,
                "workspace": link.workspace,
                "user_id": link.user_id,
                "subject": link.subject,
                "roles": list(link.roles),
                "how": "sign-in" if link.linked_by == SIGN_IN else "admin",
                "expires_at": link.expires_at,
            },
        )


def _check_ids(*names: str) -> None:
    for name in names:
        if not isinstance(name, str) or not name.isprintable() or not 0 < len(name) <= MAX_ID:
            raise InvalidRequest(
                f"chat ids, tenant and subject are 1 to {MAX_ID} printable characters"
            )

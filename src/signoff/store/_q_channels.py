"""Chat channels' rows: identity links, one-time link codes, and each posted message copy.

A link says which chat user (channel, workspace, user id) is which signoff person
(tenant, subject) with the roles their identity token carried when they linked. A
code is kept only as its SHA-256 and is used once (a conditional update). A message
row lets a decision update every copy of the proposal's message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from signoff.store._sqlbase import SqlBase

_LINK = "channel, workspace, user_id, tenant, subject, roles, linked_by, linked_at, expires_at"
_CODE = "code_hash, channel, workspace, user_id, tenant, created_at, expires_at, used_at"
_MESSAGE = (
    "channel, tenant, proposal_id, workspace, conversation, message_ref, recipient, posted_at"
)


@dataclass(frozen=True, slots=True)
class ChannelLink:
    channel: str
    workspace: str
    user_id: str
    tenant: str
    subject: str
    roles: tuple[str, ...]
    linked_by: str
    linked_at: int
    expires_at: int | None


@dataclass(frozen=True, slots=True)
class LinkCode:
    code_hash: str
    channel: str
    workspace: str
    user_id: str
    tenant: str
    created_at: int
    expires_at: int
    used_at: int | None


@dataclass(frozen=True, slots=True)
class ChannelMessage:
    channel: str
    tenant: str
    proposal_id: str
    workspace: str
    conversation: str
    message_ref: str
    recipient: str | None
    posted_at: int


def _link(row: tuple[object, ...]) -> ChannelLink:
    values = list(row)
    values[5] = tuple(json.loads(str(values[5])))
    return ChannelLink(*values)  # type: ignore[arg-type]


class ChannelQueries(SqlBase):
    def channel_link(self, channel: str, workspace: str, user_id: str) -> ChannelLink | None:
        row = self.run(
            f"SELECT {_LINK} FROM channel_links WHERE channel = ? AND workspace = ? "
            "AND user_id = ?",
            (channel, workspace, user_id),
        ).fetchone()
        return None if row is None else _link(row)

    def channel_links_of(self, tenant: str, *, channel: str | None = None) -> list[ChannelLink]:
        where, params = "tenant = ?", [tenant]
        if channel is not None:
            where += " AND channel = ?"
            params.append(channel)
        rows = self.run(
            f"SELECT {_LINK} FROM channel_links WHERE {where} ORDER BY subject, channel, user_id",
            params,
        ).fetchall()
        return [_link(row) for row in rows]

    def put_channel_link(self, link: ChannelLink) -> None:
        """Insert or replace the link of this chat user (one signoff person per chat user)."""
        self.run(
            f"INSERT INTO channel_links ({_LINK}) VALUES (?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT (channel, workspace, user_id) DO UPDATE SET tenant = excluded.tenant, "
            "subject = excluded.subject, roles = excluded.roles, "
            "linked_by = excluded.linked_by, linked_at = excluded.linked_at, "
            "expires_at = excluded.expires_at",
            (
                link.channel,
                link.workspace,
                link.user_id,
                link.tenant,
                link.subject,
                json.dumps(sorted(link.roles)),
                link.linked_by,
                link.linked_at,
                link.expires_at,
            ),
        )

    def delete_channel_link(self, channel: str, workspace: str, user_id: str) -> bool:
        return (
            self.run(
                "DELETE FROM channel_links WHERE channel = ? AND workspace = ? AND user_id = ?",
                (channel, workspace, user_id),
            ).rowcount
            == 1
        )

    def insert_link_code(self, code: LinkCode) -> None:
        self.run(
            f"INSERT INTO channel_link_codes ({_CODE}) VALUES (?,?,?,?,?,?,?,?)",
            (
                code.code_hash,
                code.channel,
                code.workspace,
                code.user_id,
                code.tenant,
                code.created_at,
                code.expires_at,
                code.used_at,
            ),
        )

    def link_code(self, code_hash: str) -> LinkCode | None:
        row = self.run(
            f"SELECT {_CODE} FROM channel_link_codes WHERE code_hash = ?", (code_hash,)
        ).fetchone()
        return None if row is None else LinkCode(*row)

    def use_link_code(self, code_hash: str, now: int) -> bool:
        """The single winner of a code: unused and unexpired, marked used now."""
        return (
            self.run(
                "UPDATE channel_link_codes SET used_at = ? WHERE code_hash = ? "
                "AND used_at IS NULL AND expires_at > ?",
                (now, code_hash, now),
            ).rowcount
            == 1
        )

    def add_channel_message(self, message: ChannelMessage) -> bool:
        """Record a posted copy; False when this conversation already has one (kept)."""
        return (
            self.run(
                f"INSERT INTO channel_messages ({_MESSAGE}) VALUES (?,?,?,?,?,?,?,?) "
                "ON CONFLICT (channel, proposal_id, workspace, conversation) DO NOTHING",
                (
                    message.channel,
                    message.tenant,
                    message.proposal_id,
                    message.workspace,
                    message.conversation,
                    message.message_ref,
                    message.recipient,
                    message.posted_at,
                ),
            ).rowcount
            == 1
        )

    def channel_messages(self, channel: str, proposal_id: str) -> list[ChannelMessage]:
        rows = self.run(
            f"SELECT {_MESSAGE} FROM channel_messages WHERE channel = ? AND proposal_id = ? "
            "ORDER BY posted_at, workspace, conversation",
            (channel, proposal_id),
        ).fetchall()
        return [ChannelMessage(*row) for row in rows]

    def put_conversation(
        self, channel: str, workspace: str, user_id: str, reference: str, now: int
    ) -> None:
        """Where the bot reaches this chat user (a Teams conversation reference, as JSON)."""
        self.run(
            "INSERT INTO channel_conversations (channel, workspace, user_id, reference, "
            "updated_at) VALUES (?,?,?,?,?) ON CONFLICT (channel, workspace, user_id) "
            "DO UPDATE SET reference = excluded.reference, updated_at = excluded.updated_at",
            (channel, workspace, user_id, reference, now),
        )

    def conversation(self, channel: str, workspace: str, user_id: str) -> str | None:
        row = self.run(
            "SELECT reference FROM channel_conversations WHERE channel = ? AND workspace = ? "
            "AND user_id = ?",
            (channel, workspace, user_id),
        ).fetchone()
        return None if row is None else str(row[0])

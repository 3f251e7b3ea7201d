"""Web Push subscriptions: where the push service reaches one person's installed page."""

from __future__ import annotations

import json
from dataclasses import dataclass

from signoff.store._sqlbase import SqlBase

_COLUMNS = "endpoint, tenant, subject, roles, p256dh, auth, created_at"


@dataclass(frozen=True, slots=True)
class PushSubscription:
    endpoint: str
    tenant: str
    subject: str
    roles: tuple[str, ...]
    p256dh: str
    auth: str
    created_at: int

    def info(self) -> dict[str, object]:
        """The browser's ``PushSubscription`` as pywebpush takes it."""
        return {"endpoint": self.endpoint, "keys": {"p256dh": self.p256dh, "auth": self.auth}}


def _subscription(row: tuple[object, ...]) -> PushSubscription:
    values = list(row)
    values[3] = tuple(json.loads(str(values[3])))
    return PushSubscription(*values)  # type: ignore[arg-type]


class PushQueries(SqlBase):
    def put_push_subscription(self, sub: PushSubscription) -> None:
        """Keep (or move to this person) the subscription of this endpoint."""
        self.run(
            f"INSERT INTO push_subscriptions ({_COLUMNS}) VALUES (?,?,?,?,?,?,?) "
            "ON CONFLICT (endpoint) DO UPDATE SET tenant = excluded.tenant, "
            "subject = excluded.subject, roles = excluded.roles, p256dh = excluded.p256dh, "
            "auth = excluded.auth, created_at = excluded.created_at",
            (
                sub.endpoint,
                sub.tenant,
                sub.subject,
                json.dumps(sorted(sub.roles)),
                sub.p256dh,
                sub.auth,
                sub.created_at,
            ),
        )

    def push_subscriptions_of(
        self, tenant: str, subject: str | None = None
    ) -> list[PushSubscription]:
        where, params = "tenant = ?", [tenant]
        if subject is not None:
            where += " AND subject = ?"
            params.append(subject)
        rows = self.run(
            f"SELECT {_COLUMNS} FROM push_subscriptions WHERE {where} ORDER BY subject, created_at",
            params,
        ).fetchall()
        return [_subscription(row) for row in rows]

    def delete_push_subscription(self, endpoint: str, *, tenant: str, subject: str | None) -> bool:
        where, params = "endpoint = ? AND tenant = ?", [endpoint, tenant]
        if subject is not None:
            where += " AND subject = ?"
            params.append(subject)
        return self.run(f"DELETE FROM push_subscriptions WHERE {where}", params).rowcount == 1

"""Delegations: a role of one person held by another of the same tenant for a window."""

from __future__ import annotations

from dataclasses import dataclass

from signoff.store._sqlbase import SqlBase

_COLUMNS = (
    "delegation_id, tenant, delegator, delegate, role, starts_at, ends_at, created_by, "
    "created_at, ended_at"
)


@dataclass(frozen=True, slots=True)
class Delegation:
    delegation_id: str
    tenant: str
    delegator: str
    delegate: str
    role: str
    starts_at: int
    ends_at: int
    created_by: str
    created_at: int
    ended_at: int | None = None

    def active(self, now: int) -> bool:
        return self.ended_at is None and self.starts_at <= now < self.ends_at


class DelegationQueries(SqlBase):
    def insert_delegation(self, d: Delegation) -> None:
        self.run(
            f"INSERT INTO delegations ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                d.delegation_id,
                d.tenant,
                d.delegator,
                d.delegate,
                d.role,
                d.starts_at,
                d.ends_at,
                d.created_by,
                d.created_at,
                d.ended_at,
            ),
        )

    def delegations_to(self, tenant: str, delegate: str, now: int) -> list[Delegation]:
        """The delegations ``delegate`` holds now (unended, inside their window)."""
        rows = self.run(
            f"SELECT {_COLUMNS} FROM delegations WHERE tenant = ? AND delegate = ? "
            "AND ended_at IS NULL AND starts_at <= ? AND ends_at > ? ORDER BY created_at",
            (tenant, delegate, now, now),
        ).fetchall()
        return [Delegation(*row) for row in rows]

    def delegations_of(self, tenant: str, subject: str | None = None) -> list[Delegation]:
        where, params = "tenant = ?", [tenant]
        if subject is not None:
            where += " AND (delegator = ? OR delegate = ?)"
            params += [subject, subject]
        rows = self.run(
            f"SELECT {_COLUMNS} FROM delegations WHERE {where} ORDER BY starts_at, delegation_id",
            params,
        ).fetchall()
        return [Delegation(*row) for row in rows]

    def delegation(self, tenant: str, delegation_id: str) -> Delegation | None:
        row = self.run(
            f"SELECT {_COLUMNS} FROM delegations WHERE tenant = ? AND delegation_id = ?",
            (tenant, delegation_id),
        ).fetchone()
        return None if row is None else Delegation(*row)

    def end_delegation(self, tenant: str, delegation_id: str, now: int) -> bool:
        return (
            self.run(
                "UPDATE delegations SET ended_at = ? WHERE tenant = ? AND delegation_id = ? "
                "AND ended_at IS NULL",
                (now, tenant, delegation_id),
            ).rowcount
            == 1
        )

"""The role directory's rows: per (tenant, subject, role), granted or revoked, by whom, when.

A revocation is a row too (``revoked = 1``), so a directory that trusts identity
tokens until told otherwise can still be told otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from signoff.store._sqlbase import RoleKey, SqlBase


@dataclass(frozen=True, slots=True)
class RoleGrant:
    tenant: str
    subject: str
    role: str
    changed_by: str
    changed_at: int
    revoked: bool = False


class RoleQueries(SqlBase):
    def role_entry(self, tenant: str, subject: str, role: str) -> bool | None:
        """True if granted, False if revoked, None if the directory has never heard of it.

        Every answer is remembered (:meth:`roles_read`): a write step that relies on it
        checks that the entry still reads the same.
        """
        key = (tenant, subject, role)
        if key in self._roles_known:
            entry = self._roles_known[key]
        else:
            row = self.run(
                "SELECT revoked FROM role_grants WHERE tenant = ? AND subject = ? AND role = ?",
                key,
            ).fetchone()
            entry = None if row is None else not row[0]
        self._roles_read[key] = entry
        return entry

    def roles_read(self) -> dict[RoleKey, bool | None]:
        """The role entries this transaction read, as they read."""
        return dict(self._roles_read)

    def _know_role(self, key: RoleKey, revoked: int | None) -> None:
        self._roles_known[key] = None if revoked is None else not revoked

    def set_role(self, entry: RoleGrant) -> bool:
        """Grant or revoke; False when the entry already said so (nothing changed)."""
        if self.role_entry(entry.tenant, entry.subject, entry.role) is (not entry.revoked):
            return False
        self.run(
            "INSERT INTO role_grants (tenant, subject, role, changed_by, changed_at, revoked) "
            "VALUES (?,?,?,?,?,?) ON CONFLICT (tenant, subject, role) DO UPDATE SET "
            "changed_by = excluded.changed_by, changed_at = excluded.changed_at, "
            "revoked = excluded.revoked",
            (
                entry.tenant,
                entry.subject,
                entry.role,
                entry.changed_by,
                entry.changed_at,
                1 if entry.revoked else 0,
            ),
        )
        return True

    def role_grants(self, tenant: str, *, subject: str | None = None) -> list[RoleGrant]:
        where, params = "tenant = ?", [tenant]
        if subject is not None:
            where += " AND subject = ?"
            params.append(subject)
        rows = self.run(
            "SELECT tenant, subject, role, changed_by, changed_at, revoked FROM role_grants "
            f"WHERE {where} ORDER BY subject, role",
            params,
        ).fetchall()
        return [RoleGrant(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in rows]

"""Follow-ups of pending proposals: single-winner steps and the assignees they add."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from signoff.store._sqlbase import SqlBase

REASSIGNED = "reassigned"
"""The step recorded once an admin reassigned the proposal: its role no longer decides."""


@dataclass(frozen=True, slots=True)
class Assignment:
    """Who besides the policy's role may decide one proposal, and whether the role still may."""

    targets: tuple[str, ...] = ()
    """``role:NAME`` or ``person:SUBJECT``, sorted."""
    role_replaced: bool = False

    @property
    def widened(self) -> bool:
        return bool(self.targets) or self.role_replaced


class FollowupQueries(SqlBase):
    def claim_followup(self, tenant: str, proposal_id: str, step: str, now: int) -> bool:
        """Record ``step`` for the proposal; True for the one caller whose insert won."""
        self._forget_assignment(proposal_id)
        cursor = self.run(
            "INSERT INTO proposal_followups (proposal_id, step, tenant, at) VALUES (?,?,?,?) "
            "ON CONFLICT (proposal_id, step) DO NOTHING",
            (proposal_id, step, tenant, now),
        )
        return cursor.rowcount == 1

    def followups(self, proposal_id: str) -> set[str]:
        rows = self.run(
            "SELECT step FROM proposal_followups WHERE proposal_id = ?", (proposal_id,)
        ).fetchall()
        return {str(row[0]) for row in rows}

    def add_assignees(
        self, tenant: str, proposal_id: str, targets: Iterable[str], *, via: str, now: int
    ) -> None:
        self._forget_assignment(proposal_id)
        for target in targets:
            self.run(
                "INSERT INTO proposal_assignees (proposal_id, target, tenant, via, added_at) "
                "VALUES (?,?,?,?,?) ON CONFLICT (proposal_id, target) DO NOTHING",
                (proposal_id, target, tenant, via, now),
            )

    def clear_assignees(self, proposal_id: str) -> None:
        self._forget_assignment(proposal_id)
        self.run("DELETE FROM proposal_assignees WHERE proposal_id = ?", (proposal_id,))

    def _forget_assignment(self, proposal_id: str) -> None:
        for key in [k for k in self._known if k[0] == "assignment" and k[2] == proposal_id]:
            del self._known[key]

    def assignment(self, tenant: str, proposal_id: str) -> Assignment:
        known = self._known.get(("assignment", tenant, proposal_id))
        if known is not None:  # read_for_decision found it empty
            return known  # type: ignore[no-any-return]
        # One statement (one round trip on PostgreSQL).
        rows = self.run(
            "SELECT target FROM proposal_assignees WHERE tenant = ? AND proposal_id = ? "
            "UNION ALL SELECT NULL FROM proposal_followups WHERE proposal_id = ? AND step = ?",
            (tenant, proposal_id, proposal_id, REASSIGNED),
        ).fetchall()
        targets = sorted(str(r[0]) for r in rows if r[0] is not None)
        replaced = any(r[0] is None for r in rows)
        return Assignment(tuple(targets), replaced)

    def pending_with_followups(
        self, now: int, limit: int, after: tuple[int, str] | None = None
    ) -> list[tuple[str, str, int]]:
        """(tenant, proposal id, created_at) of awaiting proposals whose policy names an
        escalation, oldest first; ``after`` is the previous page's last (created_at, id)."""
        where = "status = 'awaiting_confirmation' AND expires_at > ? AND policy LIKE ?"
        params: list[object] = [now, '%"escalation":%']
        if after is not None:
            where += " AND (created_at > ? OR (created_at = ? AND proposal_id > ?))"
            params += [after[0], after[0], after[1]]
        rows = self.run(
            f"SELECT tenant, proposal_id, created_at FROM proposals WHERE {where} "
            "ORDER BY created_at, proposal_id LIMIT ?",
            (*params, limit),
        ).fetchall()
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    def bump_proposal_version(self, proposal_id: str, expected_version: int, now: int) -> bool:
        """A pending proposal's version moves on (who may decide changed); True if we won."""
        cursor = self.run(
            "UPDATE proposals SET version = version + 1, updated_at = ? "
            "WHERE proposal_id = ? AND status = 'awaiting_confirmation' AND version = ?",
            (now, proposal_id, expected_version),
        )
        return cursor.rowcount == 1

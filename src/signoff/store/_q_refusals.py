"""Counting refused attempts per proposal, so a flood cannot grow the audit without bound."""

from __future__ import annotations

from signoff.store._sqlbase import SqlBase


class RefusalQueries(SqlBase):
    def count_refusal(self, proposal_id: str, code: str, now: int) -> int:
        """Add one refusal of ``code`` on the proposal; return how many there are now."""
        self.run(
            "INSERT INTO refusal_counts (proposal_id, code, refusals, first_at, last_at) "
            "VALUES (?, ?, 1, ?, ?) ON CONFLICT (proposal_id, code) "
            "DO UPDATE SET refusals = refusal_counts.refusals + 1, last_at = excluded.last_at",
            (proposal_id, code, now, now),
        )
        row = self.run(
            "SELECT refusals FROM refusal_counts WHERE proposal_id = ? AND code = ?",
            (proposal_id, code),
        ).fetchone()
        return int(row[0])

    def refusal_counts(self, proposal_id: str) -> dict[str, int]:
        rows = self.run(
            "SELECT code, refusals FROM refusal_counts WHERE proposal_id = ?", (proposal_id,)
        ).fetchall()
        return {row[0]: int(row[1]) for row in rows}

    def proposal_tenant(self, proposal_id: str) -> str | None:
        """The tenant a proposal belongs to, for recording a refusal in its owner's chain.

        Never returned to a caller: a caller from another tenant still gets 404.
        """
        row = self.run(
            "SELECT tenant FROM proposals WHERE proposal_id = ?", (proposal_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    def execution_proposal(self, execution_id: str) -> str | None:
        """The proposal an execution belongs to, for the same purpose (never answered)."""
        row = self.run(
            "SELECT proposal_id FROM executions WHERE execution_id = ?", (execution_id,)
        ).fetchone()
        return None if row is None else str(row[0])

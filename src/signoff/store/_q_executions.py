"""Executions: one per request key, moved by conditional updates, claimed by leases."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from signoff._clock import from_micros, to_micros
from signoff._model import (
    Execution,
    ExecutionStatus,
)
from signoff.catalog._types import ItemOutcome
from signoff.store._sqlbase import Cursor, SqlBase, _dump

_EXECUTION_COLUMNS = (
    "execution_id, proposal_id, tenant, token_id, request_key, status, attempts, "
    "provider_reference, error_code, error_message, created_at, updated_at, lease_until, items"
)


def items_text(items: Sequence[ItemOutcome]) -> str | None:
    """A batch's item outcomes as stored (JSON); None for a write of one item."""
    return _dump([item.to_dict() for item in items]) if items else None


class ExecutionQueries(SqlBase):
    def insert_execution(self, e: Execution) -> None:
        self.run(
            f"INSERT INTO executions ({_EXECUTION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                e.execution_id,
                e.proposal_id,
                e.tenant,
                e.token_id,
                e.request_key,
                e.status.value,
                e.attempts,
                e.provider_reference,
                e.error_code,
                e.error_message,
                to_micros(e.created_at),
                to_micros(e.updated_at),
                None if e.lease_until is None else to_micros(e.lease_until),
                items_text(e.items),
            ),
        )

    def execution(self, tenant: str, execution_id: str) -> Execution | None:
        row = self.run(
            f"SELECT {_EXECUTION_COLUMNS} FROM executions WHERE execution_id = ? AND tenant = ?",
            (execution_id, tenant),
        ).fetchone()
        return None if row is None else _execution(row)

    def execution_for_proposal(self, proposal_id: str) -> Execution | None:
        row = self.run(
            f"SELECT {_EXECUTION_COLUMNS} FROM executions WHERE proposal_id = ?", (proposal_id,)
        ).fetchone()
        return None if row is None else _execution(row)

    def transition_execution(
        self,
        execution_id: str,
        *,
        from_statuses: Iterable[ExecutionStatus],
        to: ExecutionStatus,
        now: int,
        lease_until: int | None = None,
        provider_reference: str | None = None,
        error_code: str | None = None,
        error_message: str | None = None,
        new_attempt: bool = False,
    ) -> bool:
        """Move the execution if still in ``from_statuses``; True if we won."""
        return (
            self._move_execution(
                execution_id,
                from_statuses=from_statuses,
                to=to,
                now=now,
                lease_until=lease_until,
                provider_reference=provider_reference,
                error_code=error_code,
                error_message=error_message,
                new_attempt=new_attempt,
            ).rowcount
            == 1
        )

    def transition_execution_row(
        self,
        execution_id: str,
        *,
        from_statuses: Iterable[ExecutionStatus],
        to: ExecutionStatus,
        now: int,
        provider_reference: str | None = None,
        error_code: str | None = None,
        error_message: str | None = None,
        items: Sequence[ItemOutcome] = (),
    ) -> Execution | None:
        """As :meth:`transition_execution`, answering the updated row (None if we lost).

        ``items`` (a batch's item outcomes) replace the stored ones; none keeps them.
        """
        rows = self._move_execution(
            execution_id,
            from_statuses=from_statuses,
            to=to,
            now=now,
            provider_reference=provider_reference,
            error_code=error_code,
            error_message=error_message,
            items=items,
            returning=True,
        ).fetchall()
        return _execution(rows[0]) if rows else None

    def _move_execution(
        self,
        execution_id: str,
        *,
        from_statuses: Iterable[ExecutionStatus],
        to: ExecutionStatus,
        now: int,
        lease_until: int | None = None,
        provider_reference: str | None = None,
        error_code: str | None = None,
        error_message: str | None = None,
        items: Sequence[ItemOutcome] = (),
        new_attempt: bool = False,
        returning: bool = False,
    ) -> Cursor:
        sources = [s.value for s in from_statuses]
        completed = now if to.is_terminal else None
        return self.run(
            "UPDATE executions SET status = ?, updated_at = ?, lease_until = ?, "
            "provider_reference = COALESCE(?, provider_reference), error_code = ?, "
            "error_message = ?, attempts = attempts + ?, completed_at = ?, "
            "items = COALESCE(?, items) "
            f"WHERE execution_id = ? AND status IN ({','.join('?' * len(sources))})"
            + (f" RETURNING {_EXECUTION_COLUMNS}" if returning else ""),
            (
                to.value,
                now,
                lease_until,
                provider_reference,
                error_code,
                error_message,
                1 if new_attempt else 0,
                completed,
                items_text(items),
                execution_id,
                *sources,
            ),
        )

    def stuck_executions(self, now: int, *, older_than: int, limit: int) -> list[Execution]:
        """Executions a reconciler should look at: expired leases, or untouched since older_than.

        ``prepared`` (provider never called), ``running`` whose lease expired, and
        ``unknown`` — each only while no other reconciler holds a live lease on it.
        """
        rows = self.run(
            f"SELECT {_EXECUTION_COLUMNS} FROM executions "
            "WHERE status IN ('prepared', 'running', 'unknown') "
            "AND COALESCE(lease_until, 0) < ? AND updated_at <= ? "
            f"ORDER BY updated_at LIMIT ? {self._dialect.skip_locked}",
            (now, older_than, limit),
        ).fetchall()
        return [_execution(row) for row in rows]

    def claim_execution(self, e: Execution, *, lease_until: int, now: int) -> bool:
        """Take a stuck execution for reconciling; only one reconciler wins it.

        The row must be unchanged since it was read and hold no live lease: the
        lease check keeps a second claimer out even when both read the same
        ``updated_at`` (same clock tick).
        """
        return (
            self.run(
                "UPDATE executions SET lease_until = ?, updated_at = ? "
                "WHERE execution_id = ? AND status = ? AND updated_at = ? "
                "AND COALESCE(lease_until, 0) < ?",
                (lease_until, now, e.execution_id, e.status.value, to_micros(e.updated_at), now),
            ).rowcount
            == 1
        )


def _execution(row: Sequence[Any]) -> Execution:
    return Execution(
        execution_id=row[0],
        proposal_id=row[1],
        tenant=row[2],
        token_id=row[3],
        request_key=row[4],
        status=ExecutionStatus(row[5]),
        attempts=row[6],
        provider_reference=row[7],
        error_code=row[8],
        error_message=row[9],
        created_at=from_micros(row[10]),
        updated_at=from_micros(row[11]),
        lease_until=None if row[12] is None else from_micros(row[12]),
        items=()
        if row[13] is None
        else tuple(ItemOutcome.from_dict(i) for i in json.loads(row[13])),
    )

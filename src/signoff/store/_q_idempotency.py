"""Idempotency keys, scoped to (tenant, actor), with their request fingerprints."""

from __future__ import annotations

from dataclasses import dataclass

from signoff.store._sqlbase import SqlBase

IDEMPOTENCY_COLUMNS = "operation, fingerprint, state, proposal_id, execution_id, token_id"


@dataclass(frozen=True, slots=True)
class IdempotencyRecord:
    operation: str
    fingerprint: str
    state: str
    proposal_id: str | None
    execution_id: str | None
    token_id: str | None


class IdempotencyQueries(SqlBase):
    def idempotency(self, tenant: str, actor: str, key: str) -> IdempotencyRecord | None:
        known = ("idempotency", tenant, actor, key)
        if known in self._known:
            return self._known[known]  # type: ignore[no-any-return]
        row = self.run(
            f"SELECT {IDEMPOTENCY_COLUMNS} "
            "FROM idempotency_keys WHERE tenant = ? AND actor = ? AND idem_key = ?",
            (tenant, actor, key),
        ).fetchone()
        return None if row is None else IdempotencyRecord(*row)

    def insert_idempotency(
        self,
        tenant: str,
        actor: str,
        key: str,
        record: IdempotencyRecord,
        now: int,
    ) -> None:
        self.run(
            "INSERT INTO idempotency_keys (tenant, actor, idem_key, operation, fingerprint, "
            "state, proposal_id, execution_id, token_id, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                tenant,
                actor,
                key,
                record.operation,
                record.fingerprint,
                record.state,
                record.proposal_id,
                record.execution_id,
                record.token_id,
                now,
            ),
        )

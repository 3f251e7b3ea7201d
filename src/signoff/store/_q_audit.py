"""Appending to and reading the per-tenant audit hash chains."""

from __future__ import annotations

from typing import Any

from signoff._request_context import with_request_id
from signoff.audit._chain import GENESIS, AuditEvent, event_hash
from signoff.store._sqlbase import SqlBase, _dump


class AuditQueries(SqlBase):
    def append_audit(
        self,
        *,
        tenant: str,
        at: int,
        kind: str,
        data: dict[str, Any],
        proposal_id: str | None = None,
        execution_id: str | None = None,
        actor: str | None = None,
    ) -> None:
        """Append to the tenant's chain; the head row lock orders concurrent writers."""
        head = self._heads.get(tenant) or self._audit_head(tenant)
        if head is None:
            # The tenant's first event. A concurrent first append waits on this insert,
            # then does nothing and locks the row the winner created.
            self.run(
                "INSERT INTO audit_heads (tenant, seq, hash) VALUES (?, 0, ?) "
                "ON CONFLICT (tenant) DO NOTHING",
                (tenant, GENESIS),
            )
            head = self._audit_head(tenant)
            assert head is not None
        seq, prev = head
        seq += 1
        payload = _dump(with_request_id(data))
        digest = event_hash(
            tenant=tenant,
            seq=seq,
            at=at,
            kind=kind,
            proposal_id=proposal_id,
            execution_id=execution_id,
            actor=actor,
            data=payload,
            prev_hash=prev,
        )
        insert = (
            "INSERT INTO audit_events (tenant, seq, at, kind, proposal_id, execution_id, actor, "
            "data, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?,?)"
        )
        event = (tenant, seq, at, kind, proposal_id, execution_id, actor, payload, prev, digest)
        advance = "UPDATE audit_heads SET seq = ?, hash = ? WHERE tenant = ?"
        if self._dialect.writable_cte:
            # One round trip fewer while this tenant's head row is locked.
            self.run(f"WITH appended AS ({insert}) {advance}", (*event, seq, digest, tenant))
        else:
            self.run(insert, event)
            self.run(advance, (seq, digest, tenant))
        self._heads[tenant] = (seq, digest)

    def _audit_head(self, tenant: str) -> tuple[int, str] | None:
        row = self.run(
            f"SELECT seq, hash FROM audit_heads WHERE tenant = ? {self._dialect.for_update}",
            (tenant,),
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def audit_events(
        self, *, tenant: str | None = None, proposal_id: str | None = None
    ) -> list[AuditEvent]:
        clauses, params = [], []
        if tenant is not None:
            clauses.append("tenant = ?")
            params.append(tenant)
        if proposal_id is not None:
            clauses.append("proposal_id = ?")
            params.append(proposal_id)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self.run(
            "SELECT tenant, seq, at, kind, proposal_id, execution_id, actor, data, prev_hash, "
            f"hash FROM audit_events {where} ORDER BY tenant, seq",
            params,
        ).fetchall()
        return [AuditEvent(*row) for row in rows]

    def audit_heads(self) -> dict[str, tuple[int, str]]:
        rows = self.run("SELECT tenant, seq, hash FROM audit_heads").fetchall()
        return {row[0]: (row[1], row[2]) for row in rows}

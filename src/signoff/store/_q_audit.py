"""Appending to and reading the per-tenant audit hash chains."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from signoff._request_context import with_request_id
from signoff.audit._chain import GENESIS, AuditEvent, event_hash
from signoff.store._sqlbase import SqlBase, _dump


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """An event to append: ``data`` is its JSON text (the request id already in it)."""

    tenant: str
    at: int
    kind: str
    data: str
    proposal_id: str | None = None
    execution_id: str | None = None
    actor: str | None = None
    mac: str | None = None
    """The gate's authenticator (proof/_event_mac.py), set as the event is appended."""

    def params(self) -> tuple[str, int, str, str | None, str | None, str | None, str, str | None]:
        """In the order the server-side functions take them (migrations 6 and 7)."""
        return (
            self.tenant,
            self.at,
            self.kind,
            self.proposal_id,
            self.execution_id,
            self.actor,
            self.data,
            self.mac,
        )


EventSeal = Callable[[AuditEntry], str]
"""Computes an event's authenticator with a key the database does not hold."""


def audit_entry(
    *,
    tenant: str,
    at: int,
    kind: str,
    data: dict[str, Any],
    proposal_id: str | None = None,
    execution_id: str | None = None,
    actor: str | None = None,
) -> AuditEntry:
    return AuditEntry(
        tenant, at, kind, _dump(with_request_id(data)), proposal_id, execution_id, actor
    )


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
        self.append(
            audit_entry(
                tenant=tenant,
                at=at,
                kind=kind,
                data=data,
                proposal_id=proposal_id,
                execution_id=execution_id,
                actor=actor,
            )
        )

    def sealed(self, entry: AuditEntry) -> AuditEntry:
        """``entry`` with its authenticator, when this store's writer holds the MAC key."""
        if self._seal is None or entry.mac is not None:
            return entry
        return dataclasses.replace(entry, mac=self._seal(entry))

    def event_params(self, entry: AuditEntry) -> tuple[Any, ...]:
        return self.sealed(entry).params()

    def append(self, entry: AuditEntry) -> None:
        entry = self.sealed(entry)
        if self._dialect.step_functions:
            # The server locks the head, hashes (JCS, as audit._chain) and appends.
            row = self.run(
                "SELECT new_seq, new_hash FROM signoff_append_audit("
                "?::text, ?::bigint, ?::text, ?::text, ?::text, ?::text, ?::text, ?::text)",
                entry.params(),
            ).fetchone()
            self._heads[entry.tenant] = (row[0], row[1])
            return
        tenant = entry.tenant
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
        e = entry
        digest = event_hash(
            tenant=tenant,
            seq=seq,
            at=e.at,
            kind=e.kind,
            proposal_id=e.proposal_id,
            execution_id=e.execution_id,
            actor=e.actor,
            data=e.data,
            prev_hash=prev,
            mac=e.mac,
        )
        row = (tenant, seq, e.at, e.kind, e.proposal_id, e.execution_id, e.actor, e.data, prev)
        self.run(
            "INSERT INTO audit_events (tenant, seq, at, kind, proposal_id, execution_id, actor, "
            "data, prev_hash, hash, mac) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (*row, digest, e.mac),
        )
        self.run("UPDATE audit_heads SET seq = ?, hash = ? WHERE tenant = ?", (seq, digest, tenant))
        self._heads[tenant] = (seq, digest)

    def _audit_head(self, tenant: str) -> tuple[int, str] | None:
        row = self.run(
            f"SELECT seq, hash FROM audit_heads WHERE tenant = ? {self._dialect.for_update}",
            (tenant,),
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def audit_events(
        self,
        *,
        tenant: str | None = None,
        proposal_id: str | None = None,
        after: int | None = None,
        upto: int | None = None,
        limit: int | None = None,
    ) -> list[AuditEvent]:
        """Events by (tenant, seq); ``after``/``upto``/``limit`` page through one tenant's chain."""
        clauses: list[str] = []
        params: list[Any] = []
        for clause, value in (
            ("tenant = ?", tenant),
            ("proposal_id = ?", proposal_id),
            ("seq > ?", after),
            ("seq <= ?", upto),
        ):
            if value is not None:
                clauses.append(clause)
                params.append(value)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        page = ""
        if limit is not None:
            page = " LIMIT ?"
            params.append(limit)
        rows = self.run(
            "SELECT tenant, seq, at, kind, proposal_id, execution_id, actor, data, prev_hash, "
            f"hash, mac FROM audit_events {where} ORDER BY tenant, seq{page}",
            params,
        ).fetchall()
        return [AuditEvent(*row) for row in rows]

    def macs_before(self, tenant: str, macs: list[str], before: int) -> set[str]:
        """Which of ``macs`` events before ``before`` already carry (a replay)."""
        found: set[str] = set()
        for start in range(0, len(macs), 500):
            chunk = macs[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            # No `seq < ?` in SQL: with it SQLite walks the (tenant, seq) key over every
            # earlier event instead of the (tenant, mac) index (O(n) per checkpoint).
            rows = self.run(
                f"SELECT seq, mac FROM audit_events WHERE tenant = ? AND mac IN ({marks})",
                (tenant, *chunk),
            ).fetchall()
            found.update(str(row[1]) for row in rows if row[0] < before)
        return found

    def enrolments(self, tenant: str, actors: Iterable[str], upto: int) -> list[AuditEvent]:
        """``passkey.registered`` events of ``actors`` up to ``upto`` (a partial index: O(k))."""
        people = sorted(set(actors))
        if not people:
            return []
        marks = ", ".join("?" for _ in people)
        rows = self.run(
            "SELECT tenant, seq, at, kind, proposal_id, execution_id, actor, data, prev_hash, "
            "hash, mac FROM audit_events WHERE tenant = ? AND kind = 'passkey.registered' "
            f"AND actor IN ({marks}) AND seq <= ? ORDER BY seq",
            (tenant, *people, upto),
        ).fetchall()
        return [AuditEvent(*row) for row in rows]

    def audit_heads(self) -> dict[str, tuple[int, str]]:
        rows = self.run("SELECT tenant, seq, hash FROM audit_heads").fetchall()
        return {row[0]: (row[1], row[2]) for row in rows}

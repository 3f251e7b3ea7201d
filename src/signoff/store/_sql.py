"""The protocol's reads and single-winner writes, in SQL both backends run.

Every state change is a conditional ``UPDATE … WHERE status = …`` whose row
count says whether this caller won; nothing relies on isolation levels above
Read Committed. Statements are written with ``?`` placeholders; a backend's
:class:`Dialect` rewrites them once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from signoff._clock import from_micros, to_micros
from signoff._model import (
    Approval,
    DecisionKind,
    Execution,
    ExecutionStatus,
    Proposal,
    ProposalStatus,
)
from signoff.audit._chain import GENESIS, AuditEvent, event_hash


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    def execute(self, sql: str, params: Any = ..., /) -> Cursor: ...


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    placeholder: str
    for_update: str
    skip_locked: str
    writable_cte: bool = False
    """``WITH x AS (INSERT …) UPDATE …`` runs both in one statement (PostgreSQL)."""

    def sql(self, statement: str) -> str:
        if self.placeholder == "?":
            return statement
        return statement.replace("?", self.placeholder)


@dataclass(frozen=True, slots=True)
class TokenRecord:
    token_id: str
    proposal_id: str
    tenant: str
    subject: str
    actor: str | None
    audience: str
    operation: str
    resource_id: str
    args_digest: str
    policy_version: str
    request_key: str
    issued_at: int
    expires_at: int
    status: str


@dataclass(frozen=True, slots=True)
class IdempotencyRecord:
    operation: str
    fingerprint: str
    state: str
    proposal_id: str | None
    execution_id: str | None
    token_id: str | None


_PROPOSAL_COLUMNS = (
    "proposal_id, action_id, tenant, requester_subject, requester_actor, tool, tool_version, "
    "arguments, args_digest, resource_id, state_version, state, risk, policy, preview, "
    "rationale, request_key, status, version, created_at, expires_at"
)
_PROPOSAL_FIELDS = tuple(name.strip() for name in _PROPOSAL_COLUMNS.split(","))
_PROPOSAL_COLUMNS_P = ", ".join(f"p.{name}" for name in _PROPOSAL_FIELDS)
_APPROVAL_COLUMNS = "approver, kind, step, reason_code, reason, decided_at"
_APPROVAL_COLUMNS_D = ", ".join(f"d.{name.strip()}" for name in _APPROVAL_COLUMNS.split(","))
_EXECUTION_COLUMNS = (
    "execution_id, proposal_id, tenant, token_id, request_key, status, attempts, "
    "provider_reference, error_code, error_message, created_at, updated_at, lease_until"
)


class SqlTransaction:
    """One open transaction; every method runs inside it."""

    def __init__(self, conn: Connection, dialect: Dialect) -> None:
        self._conn = conn
        self._dialect = dialect
        self._heads: dict[str, tuple[int, str]] = {}
        """Chain heads this transaction appended to: a second append needs no head read."""

    def run(self, statement: str, params: Sequence[Any] = ()) -> Cursor:
        return self._conn.execute(self._dialect.sql(statement), params)

    # proposals ------------------------------------------------------------

    def insert_proposal(self, p: Proposal) -> None:
        self.run(
            f"INSERT INTO proposals ({_PROPOSAL_COLUMNS}, updated_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                p.proposal_id,
                p.action_id,
                p.tenant,
                p.requester_subject,
                p.requester_actor,
                p.tool,
                p.tool_version,
                _dump(p.arguments),
                p.args_digest,
                p.resource_id,
                p.state_version,
                _dump(p.state),
                _dump(p.risk),
                _dump(p.policy),
                _dump(p.preview),
                p.rationale,
                p.request_key,
                p.status.value,
                p.version,
                to_micros(p.created_at),
                to_micros(p.expires_at),
                to_micros(p.created_at),
            ),
        )

    def proposal(self, tenant: str, proposal_id: str) -> Proposal | None:
        # One statement: the proposal on every row, with one row per decision (or none).
        rows = self.run(
            f"SELECT {_PROPOSAL_COLUMNS_P}, {_APPROVAL_COLUMNS_D} FROM proposals p "
            "LEFT JOIN decisions d ON d.proposal_id = p.proposal_id "
            "WHERE p.proposal_id = ? AND p.tenant = ? ORDER BY d.decided_at, d.approver",
            (proposal_id, tenant),
        ).fetchall()
        if not rows:
            return None
        width = len(_PROPOSAL_FIELDS)
        approvals = tuple(_approval(row[width:]) for row in rows if row[width] is not None)
        return _proposal(rows[0], approvals)

    def proposals(
        self, tenant: str, *, statuses: Sequence[str] = (), limit: int = 100
    ) -> list[Proposal]:
        where = "tenant = ?"
        params: list[Any] = [tenant]
        if statuses:
            where += f" AND status IN ({','.join('?' * len(statuses))})"
            params.extend(statuses)
        rows = self.run(
            f"SELECT {_PROPOSAL_COLUMNS} FROM proposals WHERE {where} "
            "ORDER BY created_at DESC, proposal_id DESC LIMIT ?",
            (*params, limit),
        ).fetchall()
        return [_proposal(row, self.approvals(row[0])) for row in rows]

    def transition_proposal(
        self,
        proposal_id: str,
        *,
        from_statuses: Iterable[ProposalStatus],
        to: ProposalStatus,
        now: int,
        expected_version: int | None = None,
    ) -> bool:
        """Move the proposal if it is still in one of ``from_statuses``; True if we won."""
        sources = [s.value for s in from_statuses]
        sql = (
            "UPDATE proposals SET status = ?, version = version + 1, updated_at = ? "
            f"WHERE proposal_id = ? AND status IN ({','.join('?' * len(sources))})"
        )
        params: list[Any] = [to.value, now, proposal_id, *sources]
        if expected_version is not None:
            sql += " AND version = ?"
            params.append(expected_version)
        return self.run(sql, params).rowcount == 1

    def due_proposals(self, now: int, statuses: Sequence[ProposalStatus]) -> list[tuple[str, str]]:
        marks = ",".join("?" * len(statuses))
        rows = self.run(
            f"SELECT proposal_id, tenant FROM proposals WHERE status IN ({marks}) "
            "AND expires_at <= ?",
            (*[s.value for s in statuses], now),
        ).fetchall()
        return [(row[0], row[1]) for row in rows]

    # decisions -----------------------------------------------------------

    def insert_decision(self, proposal_id: str, approval: Approval) -> None:
        self.run(
            "INSERT INTO decisions (proposal_id, approver, kind, step, reason_code, reason, "
            "decided_at) VALUES (?,?,?,?,?,?,?)",
            (
                proposal_id,
                approval.approver,
                approval.kind.value,
                approval.step,
                approval.reason_code,
                approval.reason,
                to_micros(approval.decided_at),
            ),
        )

    def approvals(self, proposal_id: str) -> tuple[Approval, ...]:
        rows = self.run(
            f"SELECT {_APPROVAL_COLUMNS} FROM decisions "
            "WHERE proposal_id = ? ORDER BY decided_at, approver",
            (proposal_id,),
        ).fetchall()
        return tuple(_approval(row) for row in rows)

    # tokens ----------------------------------------------------------------

    def insert_token(self, token: TokenRecord, token_hash: str) -> None:
        self.run(
            "INSERT INTO tokens (token_id, token_hash, proposal_id, tenant, subject, actor, "
            "audience, operation, resource_id, args_digest, policy_version, request_key, "
            "issued_at, expires_at, status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                token.token_id,
                token_hash,
                token.proposal_id,
                token.tenant,
                token.subject,
                token.actor,
                token.audience,
                token.operation,
                token.resource_id,
                token.args_digest,
                token.policy_version,
                token.request_key,
                token.issued_at,
                token.expires_at,
                token.status,
            ),
        )

    def token_by_hash(self, token_hash: str) -> TokenRecord | None:
        row = self.run(
            "SELECT token_id, proposal_id, tenant, subject, actor, audience, operation, "
            "resource_id, args_digest, policy_version, request_key, issued_at, expires_at, "
            "status FROM tokens WHERE token_hash = ?",
            (token_hash,),
        ).fetchone()
        return None if row is None else TokenRecord(*row)

    def token_id_for(self, proposal_id: str) -> str | None:
        row = self.run(
            "SELECT token_id FROM tokens WHERE proposal_id = ? AND status = 'issued'",
            (proposal_id,),
        ).fetchone()
        return None if row is None else str(row[0])

    def consume_token(self, token_id: str, now: int) -> bool:
        # The single winner of `issued -> consumed`: every other caller sees rowcount 0.
        return (
            self.run(
                "UPDATE tokens SET status = 'consumed', consumed_at = ? "
                "WHERE token_id = ? AND status = 'issued'",
                (now, token_id),
            ).rowcount
            == 1
        )

    def revoke_token(self, proposal_id: str) -> bool:
        return (
            self.run(
                "UPDATE tokens SET status = 'revoked' WHERE proposal_id = ? AND status = 'issued'",
                (proposal_id,),
            ).rowcount
            == 1
        )

    # executions ------------------------------------------------------------

    def insert_execution(self, e: Execution) -> None:
        self.run(
            f"INSERT INTO executions ({_EXECUTION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
    ) -> Execution | None:
        """As :meth:`transition_execution`, answering the updated row (None if we lost)."""
        rows = self._move_execution(
            execution_id,
            from_statuses=from_statuses,
            to=to,
            now=now,
            provider_reference=provider_reference,
            error_code=error_code,
            error_message=error_message,
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
        new_attempt: bool = False,
        returning: bool = False,
    ) -> Cursor:
        sources = [s.value for s in from_statuses]
        completed = now if to.is_terminal else None
        return self.run(
            "UPDATE executions SET status = ?, updated_at = ?, lease_until = ?, "
            "provider_reference = COALESCE(?, provider_reference), error_code = ?, "
            "error_message = ?, attempts = attempts + ?, completed_at = ? "
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

    def token(self, token_id: str) -> TokenRecord | None:
        row = self.run(
            "SELECT token_id, proposal_id, tenant, subject, actor, audience, operation, "
            "resource_id, args_digest, policy_version, request_key, issued_at, expires_at, "
            "status FROM tokens WHERE token_id = ?",
            (token_id,),
        ).fetchone()
        return None if row is None else TokenRecord(*row)

    # idempotency keys ----------------------------------------------------------

    def idempotency(self, tenant: str, actor: str, key: str) -> IdempotencyRecord | None:
        row = self.run(
            "SELECT operation, fingerprint, state, proposal_id, execution_id, token_id "
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

    # audit ------------------------------------------------------------------------

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
        payload = _dump(data)
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


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _proposal(row: Sequence[Any], approvals: tuple[Approval, ...]) -> Proposal:
    return Proposal(
        proposal_id=row[0],
        action_id=row[1],
        tenant=row[2],
        requester_subject=row[3],
        requester_actor=row[4],
        tool=row[5],
        tool_version=row[6],
        arguments=json.loads(row[7]),
        args_digest=row[8],
        resource_id=row[9],
        state_version=row[10],
        state=json.loads(row[11]),
        risk=json.loads(row[12]),
        policy=json.loads(row[13]),
        preview=json.loads(row[14]),
        rationale=row[15],
        request_key=row[16],
        status=ProposalStatus(row[17]),
        version=row[18],
        created_at=from_micros(row[19]),
        expires_at=from_micros(row[20]),
        approvals=approvals,
    )


def _approval(row: Sequence[Any]) -> Approval:
    return Approval(row[0], DecisionKind(row[1]), row[2], row[3], row[4], from_micros(row[5]))


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
    )

"""Mandates (standing approvals), their decisions, the writes under them, policy versions.

A write under a mandate debits it with one conditional update — the mandate
still ``active``, unexpired, at the version the gate read, and the budget and
count not overrun — in the same transaction that inserts the proposal already
confirmed, its token and their events; the CHECK constraints of migration 7
refuse an overrun even if a caller forgot the condition.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from signoff._clock import from_micros, to_micros
from signoff._model import Approval, DecisionKind, Proposal
from signoff.store._q_audit import AuditEntry, AuditQueries
from signoff.store._q_proposals import ProposalQueries
from signoff.store._q_roles import RoleQueries
from signoff.store._q_tokens import TokenQueries
from signoff.store._sqlbase import PremiseFailed, RoleKey, SqlBase, _dump

MANDATE_COLUMNS = (
    "mandate_id, tenant, requester_subject, requester_actor, tool, tool_version, constraints, "
    "digest, policy, required_role, requester_confirms, total_minor, max_count, spent_minor, "
    "used, status, version, created_at, expires_at, updated_at, ended_reason"
)
_DECISION_COLUMNS = "approver, kind, step, reason_code, reason, decided_at"

MandateStatus = str
AWAITING = "awaiting_confirmation"
ACTIVE = "active"


@dataclass(frozen=True, slots=True)
class MandateRecord:
    mandate_id: str
    tenant: str
    requester_subject: str
    requester_actor: str | None
    tool: str
    tool_version: str
    constraints: dict[str, Any]
    digest: str
    policy: dict[str, Any]
    required_role: str | None
    requester_confirms: bool
    total_minor: int | None
    max_count: int | None
    spent_minor: int
    used: int
    status: MandateStatus
    version: int
    created_at: int
    expires_at: int
    updated_at: int
    ended_reason: str | None
    approvals: tuple[Approval, ...] = ()

    def row(self) -> tuple[Any, ...]:
        return (
            self.mandate_id,
            self.tenant,
            self.requester_subject,
            self.requester_actor,
            self.tool,
            self.tool_version,
            _dump(self.constraints),
            self.digest,
            _dump(self.policy),
            self.required_role,
            1 if self.requester_confirms else 0,
            self.total_minor,
            self.max_count,
            self.spent_minor,
            self.used,
            self.status,
            self.version,
            self.created_at,
            self.expires_at,
            self.updated_at,
            self.ended_reason,
        )


@dataclass(frozen=True, slots=True)
class MandateWriteRecord:
    """One write under a mandate, with its proposal's status now."""

    proposal_id: str
    mandate_id: str
    amount_minor: int | None
    currency: str | None
    status: str
    """``held`` (counted against the budget) or ``returned`` (known not to have happened)."""
    debited_at: int
    returned_at: int | None
    proposal_status: str


@dataclass(frozen=True, slots=True)
class MandateWrite:
    """The step that confirms a write under a mandate: debit, proposal, approvals, token."""

    mandate_id: str
    mandate_version: int
    amount_minor: int | None
    currency: str | None
    now: int
    roles: dict[RoleKey, bool | None]
    proposal: Proposal
    created: AuditEntry
    debited: AuditEntry
    token: Any
    """An ``IssuedToken`` (record, hash, event)."""


@dataclass(frozen=True, slots=True)
class PolicyVersionRecord:
    digest: str
    applied_at: int
    applied_by: str
    source: str
    document: dict[str, Any]


def _mandate(row: Sequence[Any], approvals: tuple[Approval, ...]) -> MandateRecord:
    return MandateRecord(
        mandate_id=row[0],
        tenant=row[1],
        requester_subject=row[2],
        requester_actor=row[3],
        tool=row[4],
        tool_version=row[5],
        constraints=json.loads(row[6]),
        digest=row[7],
        policy=json.loads(row[8]),
        required_role=row[9],
        requester_confirms=bool(row[10]),
        total_minor=row[11],
        max_count=row[12],
        spent_minor=row[13],
        used=row[14],
        status=row[15],
        version=row[16],
        created_at=row[17],
        expires_at=row[18],
        updated_at=row[19],
        ended_reason=row[20],
        approvals=approvals,
    )


class MandateQueries(ProposalQueries, TokenQueries, AuditQueries, RoleQueries, SqlBase):
    def insert_mandate(self, m: MandateRecord) -> None:
        marks = ",".join("?" * len(MANDATE_COLUMNS.split(",")))
        self.run(f"INSERT INTO mandates ({MANDATE_COLUMNS}) VALUES ({marks})", m.row())

    def mandate(self, tenant: str, mandate_id: str) -> MandateRecord | None:
        row = self.run(
            f"SELECT {MANDATE_COLUMNS} FROM mandates WHERE mandate_id = ? AND tenant = ?",
            (mandate_id, tenant),
        ).fetchone()
        if row is None:
            return None
        return _mandate(row, self.mandate_approvals(mandate_id))

    def mandates_of(self, tenant: str, *, limit: int = 100) -> list[MandateRecord]:
        rows = self.run(
            f"SELECT {MANDATE_COLUMNS} FROM mandates WHERE tenant = ? "
            "ORDER BY created_at DESC, mandate_id DESC LIMIT ?",
            (tenant, limit),
        ).fetchall()
        return [_mandate(row, self.mandate_approvals(row[0])) for row in rows]

    def mandate_approvals(self, mandate_id: str) -> tuple[Approval, ...]:
        rows = self.run(
            f"SELECT {_DECISION_COLUMNS} FROM mandate_decisions WHERE mandate_id = ? "
            "ORDER BY decided_at, approver",
            (mandate_id,),
        ).fetchall()
        return tuple(
            Approval(r[0], DecisionKind(r[1]), r[2], r[3], r[4], from_micros(r[5])) for r in rows
        )

    def insert_mandate_decision(self, mandate_id: str, approval: Approval) -> None:
        self.run(
            f"INSERT INTO mandate_decisions (mandate_id, {_DECISION_COLUMNS}) "
            "VALUES (?,?,?,?,?,?,?)",
            (
                mandate_id,
                approval.approver,
                approval.kind.value,
                approval.step,
                approval.reason_code,
                approval.reason,
                to_micros(approval.decided_at),
            ),
        )

    def move_mandate(
        self,
        mandate_id: str,
        *,
        from_statuses: Sequence[str],
        to: str,
        now: int,
        expected_version: int | None = None,
        unexpired: bool = False,
        ended_reason: str | None = None,
    ) -> bool:
        """Move the mandate's status if it is still in ``from_statuses``; True if we won."""
        sql = (
            "UPDATE mandates SET status = ?, version = version + 1, updated_at = ?, "
            "ended_reason = COALESCE(?, ended_reason) "
            f"WHERE mandate_id = ? AND status IN ({','.join('?' * len(from_statuses))})"
        )
        params: list[Any] = [to, now, ended_reason, mandate_id, *from_statuses]
        if expected_version is not None:
            sql += " AND version = ?"
            params.append(expected_version)
        if unexpired:
            sql += " AND expires_at > ?"
            params.append(now)
        return self.run(sql, params).rowcount == 1

    def mandate_writes(self, mandate_id: str, *, limit: int = 500) -> list[MandateWriteRecord]:
        rows = self.run(
            "SELECT w.proposal_id, w.mandate_id, w.amount_minor, w.currency, w.status, "
            "w.debited_at, w.returned_at, p.status FROM mandate_writes w "
            "JOIN proposals p ON p.proposal_id = w.proposal_id "
            "WHERE w.mandate_id = ? ORDER BY w.debited_at, w.proposal_id LIMIT ?",
            (mandate_id, limit),
        ).fetchall()
        return [MandateWriteRecord(*row) for row in rows]

    def record_mandate_write(self, w: MandateWrite) -> None:
        """Debit the mandate (the single-winner condition), then the confirmed proposal, its
        approvals (the mandate's), the write row, the token and their events."""
        self._check_mandate_roles(w.roles)
        moved = self.run(
            "UPDATE mandates SET spent_minor = spent_minor + ?, used = used + 1, "
            "version = version + 1, updated_at = ? "
            "WHERE mandate_id = ? AND status = 'active' AND version = ? AND expires_at > ? "
            "AND (total_minor IS NULL OR spent_minor + ? <= total_minor) "
            "AND (max_count IS NULL OR used + 1 <= max_count)",
            (
                w.amount_minor or 0,
                w.now,
                w.mandate_id,
                w.mandate_version,
                w.now,
                w.amount_minor or 0,
            ),
        )
        if moved.rowcount != 1:
            raise PremiseFailed("mandate")
        self.insert_proposal(w.proposal)
        for approval in w.proposal.approvals:
            self.insert_decision(w.proposal.proposal_id, approval)
        self.run(
            "INSERT INTO mandate_writes (proposal_id, mandate_id, tenant, amount_minor, "
            "currency, status, debited_at) VALUES (?,?,?,?,?,'held',?)",
            (
                w.proposal.proposal_id,
                w.mandate_id,
                w.proposal.tenant,
                w.amount_minor,
                w.currency,
                w.now,
            ),
        )
        self.append(w.created)
        self.append(w.debited)
        self.insert_token(w.token.record, w.token.token_hash)
        self.append(w.token.event)

    def _check_mandate_roles(self, roles: dict[RoleKey, bool | None]) -> None:
        for (tenant, subject, role), entry in roles.items():
            row = self.run(
                "SELECT revoked FROM role_grants WHERE tenant = ? AND subject = ? AND role = ?",
                (tenant, subject, role),
            ).fetchone()
            if (None if row is None else not row[0]) is not entry:
                raise PremiseFailed("role_entries")

    # policy versions ------------------------------------------------------

    def record_policy_version(self, record: PolicyVersionRecord) -> None:
        self.run(
            "INSERT INTO policy_versions (digest, applied_at, applied_by, source, document) "
            "VALUES (?,?,?,?,?)",
            (
                record.digest,
                record.applied_at,
                record.applied_by,
                record.source,
                _dump(record.document),
            ),
        )

    def policy_versions(self, *, limit: int = 20) -> list[PolicyVersionRecord]:
        rows = self.run(
            "SELECT digest, applied_at, applied_by, source, document FROM policy_versions "
            "ORDER BY applied_at DESC, digest DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [PolicyVersionRecord(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]

    def awaiting_proposals(self, *, limit: int = 1000) -> list[Proposal]:
        """Every tenant's proposals still awaiting a decision, oldest first (policy diff)."""
        from signoff.store._q_proposals import _PROPOSAL_COLUMNS, _proposal

        rows = self.run(
            f"SELECT {_PROPOSAL_COLUMNS} FROM proposals p WHERE status = ? "
            "ORDER BY created_at, proposal_id LIMIT ?",
            ("awaiting_confirmation", limit),
        ).fetchall()
        return [_proposal(row, self.approvals(row[0])) for row in rows]

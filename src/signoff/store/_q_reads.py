"""What decide and execute read before their write, each in one statement.

A step's read asks for several rows — the idempotency record, the proposal
with its decisions, the token, the role entries its checks will consult.
``read_for_decision`` and ``read_for_execution`` fetch them with one statement
of LEFT JOINs; the ordinary reads of the same rows (``proposal``,
``idempotency``, ``token``, ``role_entry``) are then answered from it in the
same transaction, without another statement. Only a step's read (``peek``)
uses them; nothing is written in between.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from signoff.store._q_followups import Assignment
from signoff.store._q_idempotency import IDEMPOTENCY_COLUMNS, IdempotencyQueries, IdempotencyRecord
from signoff.store._q_proposals import (
    _APPROVAL_COLUMNS_D,
    _PROPOSAL_COLUMNS_P,
    _PROPOSAL_FIELDS,
    ProposalQueries,
    _approval,
    _proposal,
)
from signoff.store._q_roles import RoleQueries
from signoff.store._q_tokens import TOKEN_COLUMNS, TokenQueries, TokenRecord

_I = ", ".join(f"i.{c.strip()}" for c in IDEMPOTENCY_COLUMNS.split(","))
_T = ", ".join(f"t.{c.strip()}" for c in TOKEN_COLUMNS.split(","))
_P = len(_PROPOSAL_FIELDS)
_A = len(_APPROVAL_COLUMNS_D.split(","))
_REQUIRED_ROLE = "p.required_role"


# Whether an escalation or a reassignment widened who decides (store/_q_followups.py).
_WIDENED = (
    "(EXISTS (SELECT 1 FROM proposal_assignees a WHERE a.proposal_id = p.proposal_id) "
    "OR EXISTS (SELECT 1 FROM proposal_followups f WHERE f.proposal_id = p.proposal_id "
    "AND f.step = 'reassigned'))"
)


class StepReads(ProposalQueries, TokenQueries, IdempotencyQueries, RoleQueries):
    def read_for_decision(
        self, tenant: str, proposal_id: str, *, scope: str, key: str, subject: str
    ) -> None:
        """The idempotency record, the proposal and its decisions, and ``subject``'s entry
        for the proposal's required role."""
        rows = self.run(
            f"SELECT {_I}, g.revoked, {_REQUIRED_ROLE}, {_PROPOSAL_COLUMNS_P}, "
            f"{_APPROVAL_COLUMNS_D}, {_WIDENED} FROM (SELECT 1 AS one) o "
            "LEFT JOIN idempotency_keys i ON i.tenant = ? AND i.actor = ? AND i.idem_key = ? "
            "LEFT JOIN proposals p ON p.proposal_id = ? AND p.tenant = ? "
            "LEFT JOIN role_grants g ON g.tenant = p.tenant AND g.subject = ? "
            "AND g.role = p.required_role "
            "LEFT JOIN decisions d ON d.proposal_id = p.proposal_id "
            "ORDER BY d.decided_at, d.approver",
            (tenant, scope, key, proposal_id, tenant, subject),
        ).fetchall()
        first = rows[0]
        self._know_idempotency((tenant, scope, key), first[:6])
        if first[7] is not None:
            self._know_role((tenant, subject, first[7]), first[6])
        self._know_proposal(tenant, proposal_id, [row[8:-1] for row in rows])
        if first[8] is not None and not first[-1]:
            # Neither escalated nor reassigned: its assignment is known to be empty.
            self._known["assignment", tenant, proposal_id] = Assignment()

    def read_for_execution(
        self,
        tenant: str,
        proposal_id: str,
        *,
        token_hash: str | None = None,
        token_id: str | None = None,
        idempotency: tuple[str, str] | None = None,
    ) -> None:
        """The token (by hash or id), the idempotency record (``(scope, key)``), the proposal
        and its decisions, and each approver's entry for the required role."""
        token_on, token_key = (
            ("t.token_hash = ?", token_hash)
            if token_id is None
            else (
                "t.token_id = ?",
                token_id,
            )
        )
        scope, key = idempotency or ("", "")
        rows = self.run(
            f"SELECT {_T}, {_I}, {_REQUIRED_ROLE}, {_PROPOSAL_COLUMNS_P}, {_APPROVAL_COLUMNS_D}, "
            "g.revoked FROM (SELECT 1 AS one) o "
            f"LEFT JOIN tokens t ON {token_on} "
            "LEFT JOIN idempotency_keys i ON i.tenant = ? AND i.actor = ? AND i.idem_key = ? "
            "LEFT JOIN proposals p ON p.proposal_id = ? AND p.tenant = ? "
            "LEFT JOIN decisions d ON d.proposal_id = p.proposal_id "
            "LEFT JOIN role_grants g ON g.tenant = p.tenant AND g.subject = d.approver "
            "AND g.role = p.required_role "
            "ORDER BY d.decided_at, d.approver",
            (token_key, tenant, scope, key, proposal_id, tenant),
        ).fetchall()
        first = rows[0]
        token = None if first[0] is None else TokenRecord(*first[:14])
        self._known["token_id" if token_id else "token_hash", token_key or ""] = token
        if idempotency is not None:
            self._know_idempotency((tenant, scope, key), first[14:20])
        role = first[20]
        width = 21 + _P + _A
        self._know_proposal(tenant, proposal_id, [row[21:width] for row in rows])
        for row in rows:
            approver = row[21 + _P]
            if role is not None and approver is not None:
                self._know_role((tenant, approver, role), row[width])

    def _know_idempotency(self, key: tuple[str, str, str], row: Sequence[Any]) -> None:
        record = None if row[0] is None else IdempotencyRecord(*row)
        self._known[("idempotency", *key)] = record

    def _know_proposal(self, tenant: str, proposal_id: str, rows: list[Sequence[Any]]) -> None:
        if rows[0][0] is None:
            self._known["proposal", tenant, proposal_id] = None
            return
        approvals = tuple(_approval(row[_P:]) for row in rows if row[_P] is not None)
        self._known["proposal", tenant, proposal_id] = _proposal(rows[0], approvals)

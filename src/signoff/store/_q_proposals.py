"""Proposals and their decisions: snapshots in, conditional status moves."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from signoff._clock import from_micros, to_micros
from signoff._model import (
    Approval,
    DecisionKind,
    Proposal,
    ProposalStatus,
)
from signoff.catalog._types import Preview, Risk
from signoff.store._sqlbase import SqlBase, _dump


@dataclass(frozen=True, slots=True)
class Circle:
    """Who asks, as the store needs it to filter what they may see (PROTOCOL rule 12).

    ``roles`` are the roles the caller holds *now* (token and directory agree);
    ``whole_tenant`` is true for the tenant's auditors and admins.
    """

    subject: str
    is_agent: bool
    roles: tuple[str, ...]
    whole_tenant: bool = False


def _circle_clause(circle: Circle) -> tuple[str, list[Any]]:
    """The requester (person or their agents); people who may decide or did decide."""
    if circle.is_agent:
        return "p.requester_subject = ?", [circle.subject]
    marks = ",".join("?" * len(circle.roles)) or "NULL"
    clause = (
        f"(p.requester_subject = ? OR p.required_role IN ({marks}) OR EXISTS "
        "(SELECT 1 FROM decisions d WHERE d.proposal_id = p.proposal_id AND d.approver = ?))"
    )
    return clause, [circle.subject, *circle.roles, circle.subject]


_PROPOSAL_COLUMNS = (
    "proposal_id, action_id, tenant, requester_subject, requester_actor, tool, tool_version, "
    "arguments, args_digest, resource_id, state_version, state, risk, policy, preview, "
    "rationale, request_key, status, version, created_at, expires_at"
)
_PROPOSAL_FIELDS = tuple(name.strip() for name in _PROPOSAL_COLUMNS.split(","))
_PROPOSAL_COLUMNS_P = ", ".join(f"p.{name}" for name in _PROPOSAL_FIELDS)
_APPROVAL_COLUMNS = "approver, kind, step, reason_code, reason, decided_at"
_APPROVAL_COLUMNS_D = ", ".join(f"d.{name.strip()}" for name in _APPROVAL_COLUMNS.split(","))


class ProposalQueries(SqlBase):
    def insert_proposal(self, p: Proposal) -> None:
        self.run(
            f"INSERT INTO proposals ({_PROPOSAL_COLUMNS}, updated_at, required_role, "
            "requester_confirms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            proposal_row(p),
        )

    def proposal(self, tenant: str, proposal_id: str) -> Proposal | None:
        known = ("proposal", tenant, proposal_id)
        if known in self._known:
            return self._known[known]  # type: ignore[no-any-return]
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

    def proposal_id_for_request_key(self, request_key: str) -> tuple[str, str] | None:
        """(tenant, proposal id) of the proposal whose provider request key this is."""
        row = self.run(
            "SELECT tenant, proposal_id FROM proposals WHERE request_key = ?", (request_key,)
        ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def proposals(
        self,
        tenant: str,
        *,
        statuses: Sequence[str] = (),
        limit: int = 100,
        circle: Circle | None = None,
    ) -> list[Proposal]:
        """Newest first; with ``circle``, only what that caller may see (PROTOCOL rule 12)."""
        where = "tenant = ?"
        params: list[Any] = [tenant]
        if statuses:
            where += f" AND status IN ({','.join('?' * len(statuses))})"
            params.extend(statuses)
        if circle is not None and not circle.whole_tenant:
            clause, more = _circle_clause(circle)
            where += f" AND {clause}"
            params.extend(more)
        rows = self.run(
            f"SELECT {_PROPOSAL_COLUMNS} FROM proposals p WHERE {where} "
            "ORDER BY created_at DESC, proposal_id DESC LIMIT ?",
            (*params, limit),
        ).fetchall()
        return [_proposal(row, self.approvals(row[0])) for row in rows]

    def decidable_proposals(
        self,
        tenant: str,
        subject: str,
        roles: Sequence[str],
        *,
        now: int,
        after: tuple[int, str] | None = None,
        limit: int = 50,
    ) -> list[Proposal]:
        """Awaiting proposals ``subject`` may decide, oldest deadline first (the inbox).

        Role holders see requests of others that need their role; the requester sees
        requests that wait for their own confirmation. Proposals they already decided
        are left out. ``after`` is the (expires_at, proposal_id) of the previous page's
        last row.
        """
        # One branch per role and one for the requester's own confirmations, each read in
        # deadline order from its index and cut at the page, then merged: the first page
        # costs the same with 100,000 proposals waiting as with 100 (an OR across the
        # branches made the database sort every awaiting proposal of the tenant first).
        # The role branches are disjoint (one required role each; requester or not).
        # A reassignment takes the decision away from the role (its 'reassigned' follow-up);
        # an escalation or a reassignment names people for one proposal (proposal_assignees),
        # read from that table's key. The assignee branch may repeat a role branch's row:
        # UNION (not UNION ALL) keeps each proposal once.
        not_reassigned = (
            " AND NOT EXISTS (SELECT 1 FROM proposal_followups f"
            " WHERE f.proposal_id = p.proposal_id AND f.step = 'reassigned')"
        )
        branches = [
            (
                "proposals p",
                "p.required_role = ? AND p.requester_subject <> ?" + not_reassigned,
                [role, subject],
            )
            for role in sorted(set(roles))
        ]
        targets = [f"person:{subject}", *(f"role:{r}" for r in sorted(set(roles)))]
        named = ",".join("?" * len(targets))
        assignee = (
            "proposal_assignees a CROSS JOIN proposals p",  # SQLite: a drives the loop
            f"a.tenant = p.tenant AND a.proposal_id = p.proposal_id AND a.target IN ({named}) "
            "AND p.requester_subject <> ?",
            [*targets, subject],
        )
        # Without statistics SQLite would walk (status, expires_at) over every awaiting
        # proposal to find this person's own few; PostgreSQL's planner has statistics.
        mine = " INDEXED BY proposals_by_requester" if self._dialect.name == "sqlite" else ""
        own = "p.requester_subject = ? AND p.requester_confirms = 1"
        branches.append(("proposals p" + mine, own, [subject]))
        branches.append(assignee)
        page, page_params = "", []
        if after is not None:
            page = " AND (p.expires_at > ? OR (p.expires_at = ? AND p.proposal_id > ?))"
            page_params = [after[0], after[0], after[1]]
        parts: list[str] = []
        params: list[Any] = []
        for index, (source, condition, values) in enumerate(branches):
            parts.append(
                f"SELECT * FROM (SELECT {_PROPOSAL_COLUMNS_P} FROM {source} "
                f"WHERE p.tenant = ? AND p.status = ? AND p.expires_at > ? AND {condition} "
                "AND NOT EXISTS (SELECT 1 FROM decisions d "
                f"WHERE d.proposal_id = p.proposal_id AND d.approver = ?){page} "
                f"ORDER BY p.expires_at, p.proposal_id LIMIT ?) AS branch{index}"
            )
            params += [tenant, "awaiting_confirmation", now, *values, subject, *page_params, limit]
        rows = self.run(
            " UNION ".join(parts) + " ORDER BY expires_at, proposal_id LIMIT ?",
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
    ) -> bool:
        """Move the proposal if it is still in one of ``from_statuses``; True if we won."""
        sources = [s.value for s in from_statuses]
        sql = (
            "UPDATE proposals SET status = ?, version = version + 1, updated_at = ? "
            f"WHERE proposal_id = ? AND status IN ({','.join('?' * len(sources))})"
        )
        params: list[Any] = [to.value, now, proposal_id, *sources]
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


def proposal_row(p: Proposal) -> tuple[Any, ...]:
    """The proposal's columns in :data:`_PROPOSAL_COLUMNS` order, then ``updated_at``,
    ``required_role`` and ``requester_confirms``."""
    return (
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
        _dump(p.risk.to_dict()),
        _dump(p.policy),
        _dump(p.preview.to_dict()),
        p.rationale,
        p.request_key,
        p.status.value,
        p.version,
        to_micros(p.created_at),
        to_micros(p.expires_at),
        to_micros(p.created_at),
        p.required_role,
        1 if p.policy.get("requester_confirms") else 0,
    )


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
        risk=Risk.from_dict(json.loads(row[12])),
        policy=json.loads(row[13]),
        preview=Preview.from_dict(json.loads(row[14])),
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

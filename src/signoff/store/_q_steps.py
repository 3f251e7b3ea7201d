"""The protocol's four write steps, each with its premises and its audit events.

propose; decide (and issue the token); consume the token and start the first
attempt; record an attempt's outcome. The gate decides everything in a read
before the step; the step only writes, conditioned on what that read relied
on (its premises). A premise that no longer holds raises :class:`PremiseFailed`
with nothing written, and the gate reads again.

SQLite runs each step as statements in one transaction (the audit hash
computed here); PostgreSQL as one call of a server-side function
(``_pg_functions``), one round trip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from signoff._clock import to_micros
from signoff._model import Approval, Execution, ExecutionStatus, Proposal, ProposalStatus
from signoff.catalog._types import ItemOutcome
from signoff.store._pg_functions import PREMISE_FAILED
from signoff.store._q_audit import AuditEntry, AuditQueries
from signoff.store._q_executions import (
    _EXECUTION_COLUMNS,
    ExecutionQueries,
    _execution,
    items_text,
)
from signoff.store._q_idempotency import IdempotencyQueries
from signoff.store._q_passkeys import PasskeyQueries
from signoff.store._q_proposals import ProposalQueries, proposal_row
from signoff.store._q_roles import RoleQueries
from signoff.store._q_tokens import TokenQueries, TokenRecord
from signoff.store._sqlbase import PremiseFailed, RoleKey

RoleEntries = dict[RoleKey, bool | None]


@dataclass(frozen=True, slots=True)
class IssuedToken:
    record: TokenRecord
    token_hash: str
    event: AuditEntry


@dataclass(frozen=True, slots=True)
class DecisionWrite:
    proposal_id: str
    expected_version: int
    to: ProposalStatus
    now: int
    roles: RoleEntries
    idempotency: tuple[str, str, str, str]
    """(tenant, scope, key, fingerprint)."""
    approval: Approval
    event: AuditEntry
    token: IssuedToken | None
    sign_count: tuple[str, int, int] | None = None
    """A device-signed approval's passkey: (credential id, count read, new count)."""


@dataclass(frozen=True, slots=True)
class ConsumeWrite:
    token_id: str
    now: int
    roles: RoleEntries
    idempotency: tuple[str, str, str, str] | None
    """(tenant, scope, key, fingerprint), when the caller sent an Idempotency-Key."""
    execution: Execution
    """Already ``running``, attempt 1, with the worker's lease."""
    consumed: AuditEntry
    started: AuditEntry


@dataclass(frozen=True, slots=True)
class OutcomeWrite:
    execution_id: str
    from_statuses: tuple[ExecutionStatus, ...]
    to: ExecutionStatus
    now: int
    reference: str | None
    code: str | None
    message: str | None
    proposal_from: tuple[ProposalStatus, ...]
    proposal_to: ProposalStatus
    event: AuditEntry
    items: tuple[ItemOutcome, ...] = ()
    """A batch's item outcomes; none keeps those an earlier attempt recorded."""


def _entry(value: bool | None) -> str:
    return "none" if value is None else "granted" if value else "revoked"


def _role_arrays(roles: RoleEntries) -> tuple[list[str], list[str], list[str], list[str]]:
    keys = sorted(roles)
    return (
        [k[0] for k in keys],
        [k[1] for k in keys],
        [k[2] for k in keys],
        [_entry(roles[k]) for k in keys],
    )


_ROLE_PARAMS = "?::text[], ?::text[], ?::text[], ?::text[]"
_EVENT_PARAMS = "?::text, ?::bigint, ?::text, ?::text, ?::text, ?::text, ?::text, ?::text"


def _marks(*types: str) -> str:
    return ", ".join(f"?::{t}" for t in types)


class StepQueries(
    ProposalQueries,
    TokenQueries,
    ExecutionQueries,
    IdempotencyQueries,
    AuditQueries,
    RoleQueries,
    PasskeyQueries,
):
    def record_proposal(self, proposal: Proposal, event: AuditEntry) -> None:
        if self._dialect.step_functions:
            marks = _marks(*["text"] * 18, "bigint", "bigint", "bigint", "bigint", "text", "int")
            self._step(
                f"SELECT new_seq, new_hash FROM signoff_record_proposal({marks}, {_EVENT_PARAMS})",
                (*proposal_row(proposal), *self.event_params(event)),
                event.tenant,
            )
            return
        self.insert_proposal(proposal)
        self.append(event)

    def record_decision(self, w: DecisionWrite) -> int:
        """Write the decision; returns the ``seq`` of its event in the tenant's chain."""
        tenant = w.event.tenant
        if self._dialect.step_functions:
            self._step(_RECORD_DECISION, _decision_params(w, self.event_params), tenant)
            # The function appends the decision's event, then the token's when one is issued.
            return self._heads[tenant][0] - (0 if w.token is None else 1)
        self._check_roles(w.roles)
        key_tenant, scope, key, print_ = w.idempotency
        token_id = None if w.token is None else w.token.record.token_id
        record = ("decide", print_, w.proposal_id, None, token_id)
        self._claim_key(key_tenant, scope, key, record, w.now)
        moved = self.run(
            "UPDATE proposals SET status = ?, version = version + 1, updated_at = ? "
            "WHERE proposal_id = ? AND status = 'awaiting_confirmation' AND version = ? "
            "AND expires_at > ?",
            (w.to.value, w.now, w.proposal_id, w.expected_version, w.now),
        )
        if moved.rowcount != 1:
            raise PremiseFailed("proposal")
        if w.sign_count is not None and not self.advance_sign_count(
            w.sign_count[0], w.sign_count[1], w.sign_count[2]
        ):
            raise PremiseFailed("passkey")  # a replayed assertion: the counter moved
        self.insert_decision(w.proposal_id, w.approval)
        self.append(w.event)
        seq = self._heads[tenant][0]
        if w.token is not None:
            self.insert_token(w.token.record, w.token.token_hash)
            self.append(w.token.event)
        return seq

    def consume_and_start(self, w: ConsumeWrite) -> None:
        e = w.execution
        if self._dialect.step_functions:
            self._step(_CONSUME_AND_START, _consume_params(w, self.event_params), e.tenant)
            return
        self._check_roles(w.roles)
        if w.idempotency is not None:
            tenant, scope, key, print_ = w.idempotency
            record = ("execute", print_, e.proposal_id, e.execution_id, None)
            self._claim_key(tenant, scope, key, record, w.now)
        # The single winner of issued -> consumed, while the confirmation is unexpired.
        consumed = self.run(
            "UPDATE tokens SET status = 'consumed', consumed_at = ? "
            "WHERE token_id = ? AND status = 'issued' AND expires_at > ?",
            (w.now, w.token_id, w.now),
        )
        if consumed.rowcount != 1:
            raise PremiseFailed("token")
        moved = self.run(
            "UPDATE proposals SET status = 'executing', version = version + 1, updated_at = ? "
            "WHERE proposal_id = ? AND status = 'confirmed'",
            (w.now, e.proposal_id),
        )
        if moved.rowcount != 1:
            raise PremiseFailed("proposal")
        self.insert_execution(e)
        self.append(w.consumed)
        self.append(w.started)

    def record_outcome(self, w: OutcomeWrite) -> Execution | None:
        """The execution as recorded; None if it had left ``from_statuses`` (lost the race)."""
        if self._dialect.step_functions:
            row = self.run(_RECORD_OUTCOME, _outcome_params(w, self.event_params)).fetchone()
            if row[0] is None:
                return None
            self._heads[w.event.tenant] = (row[-2], row[-1])
            return _execution(row)
        moved = self.transition_execution_row(
            w.execution_id,
            from_statuses=w.from_statuses,
            to=w.to,
            now=w.now,
            provider_reference=w.reference,
            error_code=w.code,
            error_message=w.message,
            items=w.items,
        )
        if moved is None:
            return None
        self.transition_proposal(
            moved.proposal_id, from_statuses=w.proposal_from, to=w.proposal_to, now=w.now
        )
        self.append(w.event)
        return moved

    def _step(self, statement: str, params: Sequence[Any], tenant: str) -> None:
        try:
            row = self.run(statement, params).fetchone()
        except Exception as exc:
            if getattr(exc, "sqlstate", None) == PREMISE_FAILED:
                raise PremiseFailed(exc.diag.message_primary or "") from None  # type: ignore[attr-defined]
            raise
        self._heads[tenant] = (row[0], row[1])

    def _check_roles(self, roles: RoleEntries) -> None:
        for (tenant, subject, role), entry in roles.items():
            row = self.run(
                "SELECT revoked FROM role_grants WHERE tenant = ? AND subject = ? AND role = ?",
                (tenant, subject, role),
            ).fetchone()
            if (None if row is None else not row[0]) is not entry:
                raise PremiseFailed("role_entries")

    def _claim_key(
        self,
        tenant: str,
        scope: str,
        key: str,
        record: tuple[str, str, str | None, str | None, str | None],
        now: int,
    ) -> None:
        operation, print_, proposal_id, execution_id, token_id = record
        claimed = self.run(
            "INSERT INTO idempotency_keys (tenant, actor, idem_key, operation, fingerprint, "
            "state, proposal_id, execution_id, token_id, created_at) "
            "VALUES (?,?,?,?,?,'done',?,?,?,?) ON CONFLICT DO NOTHING",
            (tenant, scope, key, operation, print_, proposal_id, execution_id, token_id, now),
        )
        if claimed.rowcount != 1:
            raise PremiseFailed("idempotency_key")


_RECORD_DECISION = (
    "SELECT new_seq, new_hash FROM signoff_record_decision("
    f"{_marks('text', 'bigint', 'text', 'bigint')}, {_ROLE_PARAMS}, "
    f"{_marks(*['text'] * 9)}, {_EVENT_PARAMS}, "
    f"{_marks(*['text'] * 11, 'bigint')}, {_EVENT_PARAMS}, {_marks('text', 'bigint', 'bigint')})"
)
_CONSUME_AND_START = (
    "SELECT new_seq, new_hash FROM signoff_consume_and_start("
    f"{_marks('text', 'text', 'bigint')}, {_ROLE_PARAMS}, {_marks(*['text'] * 4)}, "
    f"{_marks('text', 'text', 'text', 'bigint')}, {_EVENT_PARAMS}, {_EVENT_PARAMS})"
)
_RECORD_OUTCOME = (
    "SELECT "
    + ", ".join(f"(f.o).{c.strip()}" for c in _EXECUTION_COLUMNS.split(","))
    + ", f.new_seq, f.new_hash FROM signoff_record_outcome("
    f"{_marks('text', 'text[]', 'text', 'bigint', 'text', 'text', 'text', 'bigint', 'text')}, "
    f"{_marks('text[]', 'text')}, {_EVENT_PARAMS}) f"
)
_NO_EVENT = (None,) * 8
EventParams = Callable[[AuditEntry], tuple[Any, ...]]


def _decision_params(w: DecisionWrite, event_params: EventParams) -> tuple[Any, ...]:
    a = w.approval
    tenant, scope, key, print_ = w.idempotency
    token: tuple[Any, ...] = (None,) * 12 + _NO_EVENT
    if w.token is not None:
        r = w.token.record
        token = (
            r.token_id,
            w.token.token_hash,
            r.tenant,
            r.subject,
            r.actor,
            r.audience,
            r.operation,
            r.resource_id,
            r.args_digest,
            r.policy_version,
            r.request_key,
            r.expires_at,
            *event_params(w.token.event),
        )
    return (
        w.proposal_id,
        w.expected_version,
        w.to.value,
        w.now,
        *_role_arrays(w.roles),
        tenant,
        scope,
        key,
        print_,
        a.approver,
        a.kind.value,
        a.step,
        a.reason_code,
        a.reason,
        *event_params(w.event),
        *token,
        *(w.sign_count or (None, None, None)),
    )


def _consume_params(w: ConsumeWrite, event_params: EventParams) -> tuple[Any, ...]:
    e = w.execution
    assert e.lease_until is not None
    return (
        w.token_id,
        e.proposal_id,
        w.now,
        *_role_arrays(w.roles),
        *(w.idempotency or (None,) * 4),
        e.execution_id,
        e.tenant,
        e.request_key,
        to_micros(e.lease_until),
        *event_params(w.consumed),
        *event_params(w.started),
    )


def _outcome_params(w: OutcomeWrite, event_params: EventParams) -> tuple[Any, ...]:
    return (
        w.execution_id,
        [s.value for s in w.from_statuses],
        w.to.value,
        w.now,
        w.reference,
        w.code,
        w.message,
        w.now if w.to.is_terminal else None,
        items_text(w.items),
        [s.value for s in w.proposal_from],
        w.proposal_to.value,
        *event_params(w.event),
    )

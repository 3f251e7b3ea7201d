"""One migration source for every backend: portable DDL, applied in order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from signoff.exceptions import SchemaTooNew
from signoff.store._mandate_schema import MIGRATION as MANDATES_MIGRATION
from signoff.store._pg_functions import DROP_FUNCTIONS, FUNCTIONS

if TYPE_CHECKING:
    from signoff.store._sql import SqlTransaction

SCHEMA_VERSION = 15

Statement = str | Mapping[str, str]
"""Portable DDL, or one statement per dialect name where SQL differs (JSON access); a
dialect the mapping does not name has nothing to run."""

_REMAKE_FUNCTIONS: tuple[Statement, ...] = (
    {"postgresql": DROP_FUNCTIONS},
    *({"postgresql": function} for function in FUNCTIONS),
)
"""A migration that changes a step function's parameters or the columns it writes drops every
``signoff_*`` function and creates today's (a changed parameter list would add an overload)."""

MIGRATIONS: dict[int, tuple[Statement, ...]] = {
    1: (
        """CREATE TABLE proposals (
            proposal_id TEXT PRIMARY KEY,
            action_id TEXT NOT NULL UNIQUE,
            tenant TEXT NOT NULL,
            requester_subject TEXT NOT NULL,
            requester_actor TEXT,
            tool TEXT NOT NULL,
            tool_version TEXT NOT NULL,
            arguments TEXT NOT NULL,
            args_digest TEXT NOT NULL,
            resource_id TEXT NOT NULL,
            state_version TEXT NOT NULL,
            state TEXT NOT NULL,
            risk TEXT NOT NULL,
            policy TEXT NOT NULL,
            preview TEXT NOT NULL,
            rationale TEXT,
            request_key TEXT NOT NULL UNIQUE,
            status TEXT NOT NULL,
            version BIGINT NOT NULL,
            created_at BIGINT NOT NULL,
            expires_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL
        )""",
        "CREATE INDEX proposals_by_tenant ON proposals (tenant, status, created_at)",
        "CREATE INDEX proposals_by_expiry ON proposals (status, expires_at)",
        """CREATE TABLE decisions (
            proposal_id TEXT NOT NULL REFERENCES proposals (proposal_id),
            approver TEXT NOT NULL,
            kind TEXT NOT NULL,
            step TEXT NOT NULL,
            reason_code TEXT,
            reason TEXT,
            decided_at BIGINT NOT NULL,
            PRIMARY KEY (proposal_id, approver)
        )""",
        """CREATE TABLE tokens (
            token_id TEXT PRIMARY KEY,
            token_hash TEXT NOT NULL UNIQUE,
            proposal_id TEXT NOT NULL UNIQUE REFERENCES proposals (proposal_id),
            tenant TEXT NOT NULL,
            subject TEXT NOT NULL,
            actor TEXT,
            audience TEXT NOT NULL,
            operation TEXT NOT NULL,
            resource_id TEXT NOT NULL,
            args_digest TEXT NOT NULL,
            policy_version TEXT NOT NULL,
            request_key TEXT NOT NULL,
            issued_at BIGINT NOT NULL,
            expires_at BIGINT NOT NULL,
            status TEXT NOT NULL,
            consumed_at BIGINT
        )""",
        """CREATE TABLE executions (
            execution_id TEXT PRIMARY KEY,
            proposal_id TEXT NOT NULL UNIQUE REFERENCES proposals (proposal_id),
            tenant TEXT NOT NULL,
            token_id TEXT NOT NULL UNIQUE REFERENCES tokens (token_id),
            request_key TEXT NOT NULL UNIQUE,
            status TEXT NOT NULL,
            attempts BIGINT NOT NULL,
            provider_reference TEXT,
            error_code TEXT,
            error_message TEXT,
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            lease_until BIGINT,
            completed_at BIGINT
        )""",
        "CREATE INDEX executions_by_status ON executions (status, lease_until)",
        """CREATE TABLE idempotency_keys (
            tenant TEXT NOT NULL,
            actor TEXT NOT NULL,
            idem_key TEXT NOT NULL,
            operation TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            state TEXT NOT NULL,
            proposal_id TEXT,
            execution_id TEXT,
            token_id TEXT,
            created_at BIGINT NOT NULL,
            PRIMARY KEY (tenant, actor, idem_key)
        )""",
        """CREATE TABLE audit_events (
            tenant TEXT NOT NULL,
            seq BIGINT NOT NULL,
            at BIGINT NOT NULL,
            kind TEXT NOT NULL,
            proposal_id TEXT,
            execution_id TEXT,
            actor TEXT,
            data TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL,
            PRIMARY KEY (tenant, seq)
        )""",
        "CREATE INDEX audit_by_proposal ON audit_events (proposal_id)",
        """CREATE TABLE audit_heads (
            tenant TEXT PRIMARY KEY,
            seq BIGINT NOT NULL,
            hash TEXT NOT NULL
        )""",
    ),
    # Notifications (signoff.notify): the audit chain is the outbox; these hold only
    # how far each destination has read it and the state of each delivery.
    2: (
        """CREATE TABLE notify_cursors (
            destination TEXT NOT NULL,
            tenant TEXT NOT NULL,
            seq BIGINT NOT NULL,
            PRIMARY KEY (destination, tenant)
        )""",
        """CREATE TABLE deliveries (
            destination TEXT NOT NULL,
            tenant TEXT NOT NULL,
            seq BIGINT NOT NULL,
            event_type TEXT NOT NULL,
            status TEXT NOT NULL,
            attempts BIGINT NOT NULL,
            next_attempt_at BIGINT NOT NULL,
            last_error TEXT,
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            delivered_at BIGINT,
            PRIMARY KEY (destination, tenant, seq)
        )""",
        "CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at)",
    ),
    # Signed checkpoints (C2SP tlog-checkpoint notes) of each tenant's audit tree,
    # with the tree's frontier so the next one folds in only the newer events.
    3: (
        """CREATE TABLE checkpoints (
            tenant TEXT NOT NULL,
            size BIGINT NOT NULL,
            root TEXT NOT NULL,
            frontier TEXT NOT NULL,
            note TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            PRIMARY KEY (tenant, size)
        )""",
    ),
    # Consent that holds only while it holds (PROTOCOL rules 11, 12 and 15): the role
    # directory, refusal counters, and the columns that let "who may see / decide this"
    # be a WHERE clause instead of a filter after LIMIT.
    4: (
        """CREATE TABLE role_grants (
            tenant TEXT NOT NULL,
            subject TEXT NOT NULL,
            role TEXT NOT NULL,
            changed_by TEXT NOT NULL,
            changed_at BIGINT NOT NULL,
            revoked BIGINT NOT NULL,
            PRIMARY KEY (tenant, subject, role)
        )""",
        """CREATE TABLE refusal_counts (
            proposal_id TEXT NOT NULL,
            code TEXT NOT NULL,
            refusals BIGINT NOT NULL,
            first_at BIGINT NOT NULL,
            last_at BIGINT NOT NULL,
            PRIMARY KEY (proposal_id, code)
        )""",
        "ALTER TABLE proposals ADD COLUMN required_role TEXT",
        "ALTER TABLE proposals ADD COLUMN requester_confirms INTEGER NOT NULL DEFAULT 0",
        {
            "sqlite": "UPDATE proposals SET required_role = json_extract(policy, '$.role'), "
            "requester_confirms = CASE WHEN json_extract(policy, '$.requester_confirms') "
            "THEN 1 ELSE 0 END",
            "postgresql": "UPDATE proposals SET required_role = policy::jsonb ->> 'role', "
            "requester_confirms = CASE WHEN (policy::jsonb ->> 'requester_confirms')::boolean "
            "THEN 1 ELSE 0 END",
        },
        "CREATE INDEX proposals_inbox ON proposals (tenant, status, required_role, expires_at)",
        "CREATE INDEX proposals_by_requester ON proposals (tenant, requester_subject, created_at)",
    ),
    # Passkeys people enrolled on the confirmation page (device-signed approvals):
    # the COSE key py_webauthn checks, the JWK offline verifiers read, the sign counter.
    5: (
        """CREATE TABLE passkeys (
            credential_id TEXT PRIMARY KEY,
            tenant TEXT NOT NULL,
            subject TEXT NOT NULL,
            public_key TEXT NOT NULL,
            public_jwk TEXT NOT NULL,
            sign_count BIGINT NOT NULL,
            created_at BIGINT NOT NULL
        )""",
        "CREATE INDEX passkeys_by_person ON passkeys (tenant, subject)",
    ),
    # PostgreSQL: each write step (propose; decide and issue; consume and start; record the
    # outcome) as one server-side function, the audit append and its hash with it, so a
    # step is one round trip (store/_pg_functions.py). SQLite runs the same steps in-process.
    6: tuple({"postgresql": function} for function in FUNCTIONS),
    # Proof that fails closed (PROTOCOL rule 16): each audit event's authenticator (a MAC
    # with a key the database does not hold, part of the event hash when present) and the
    # witnesses' cosignature lines kept with each checkpoint. The step functions take the
    # MAC as one more parameter of every event, so they are dropped and made again.
    7: (
        "ALTER TABLE audit_events ADD COLUMN mac TEXT",
        # The signer looks each new MAC up among the older events (a replay): by index.
        "CREATE INDEX audit_events_by_mac ON audit_events (tenant, mac)",
        "ALTER TABLE checkpoints ADD COLUMN cosignatures TEXT NOT NULL DEFAULT ''",
        *_REMAKE_FUNCTIONS,
    ),
    # A batch's per-item outcomes (seed 000: each failed item reported on its own): the
    # execution row keeps them, written by the outcome step with the rest of the outcome.
    8: (
        "ALTER TABLE executions ADD COLUMN items TEXT",
        *_REMAKE_FUNCTIONS,
    ),
    # Page sessions ended by signing out: a copied cookie is dead afterwards (issue 23).
    # Keyed by a hash of the session id, kept until the cookie would have expired.
    9: (
        """CREATE TABLE ended_sessions (
            sid_hash TEXT PRIMARY KEY,
            expires_at BIGINT NOT NULL
        )""",
        "CREATE INDEX ended_sessions_expiry ON ended_sessions (expires_at)",
    ),
    # Policies as data and standing approvals (docs/POLICIES.md): applied policy versions,
    # mandates with their budget and count, their decisions, each write under one, and the
    # trigger that gives a write's amount back when it is known not to have happened.
    10: MANDATES_MIGRATION,
    # Chat channels (Slack, Teams): which chat user is which signoff person (an explicit
    # link: a one-time code completed on the page, or an admin's entry), the one-time codes
    # (only their hash), every copy of a proposal's message, so a decision updates all, and
    # where a bot may reach a person (a Teams conversation reference, kept when they wrote).
    11: (
        """CREATE TABLE channel_links (
            channel TEXT NOT NULL,
            workspace TEXT NOT NULL,
            user_id TEXT NOT NULL,
            tenant TEXT NOT NULL,
            subject TEXT NOT NULL,
            roles TEXT NOT NULL,
            linked_by TEXT NOT NULL,
            linked_at BIGINT NOT NULL,
            expires_at BIGINT,
            PRIMARY KEY (channel, workspace, user_id)
        )""",
        "CREATE INDEX channel_links_by_person ON channel_links (tenant, subject)",
        """CREATE TABLE channel_link_codes (
            code_hash TEXT PRIMARY KEY,
            channel TEXT NOT NULL,
            workspace TEXT NOT NULL,
            user_id TEXT NOT NULL,
            tenant TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            expires_at BIGINT NOT NULL,
            used_at BIGINT
        )""",
        """CREATE TABLE channel_messages (
            channel TEXT NOT NULL,
            tenant TEXT NOT NULL,
            proposal_id TEXT NOT NULL,
            workspace TEXT NOT NULL,
            conversation TEXT NOT NULL,
            message_ref TEXT NOT NULL,
            recipient TEXT,
            posted_at BIGINT NOT NULL,
            PRIMARY KEY (channel, proposal_id, workspace, conversation)
        )""",
        """CREATE TABLE channel_conversations (
            channel TEXT NOT NULL,
            workspace TEXT NOT NULL,
            user_id TEXT NOT NULL,
            reference TEXT NOT NULL,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (channel, workspace, user_id)
        )""",
    ),
    # Web Push subscriptions of the page installed as an app (PWA): per person, with the
    # roles their sign-in carried when they subscribed; the endpoint is the push service's.
    12: (
        """CREATE TABLE push_subscriptions (
            endpoint TEXT PRIMARY KEY,
            tenant TEXT NOT NULL,
            subject TEXT NOT NULL,
            roles TEXT NOT NULL,
            p256dh TEXT NOT NULL,
            auth TEXT NOT NULL,
            created_at BIGINT NOT NULL
        )""",
        "CREATE INDEX push_subscriptions_by_person ON push_subscriptions (tenant, subject)",
    ),
    # Delegations (out of office): a person's role held by another of the tenant for a window,
    # honoured by the role directory at every step; ended early by setting ended_at.
    13: (
        """CREATE TABLE delegations (
            delegation_id TEXT PRIMARY KEY,
            tenant TEXT NOT NULL,
            delegator TEXT NOT NULL,
            delegate TEXT NOT NULL,
            role TEXT NOT NULL,
            starts_at BIGINT NOT NULL,
            ends_at BIGINT NOT NULL,
            created_by TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            ended_at BIGINT
        )""",
        "CREATE INDEX delegations_by_delegate ON delegations (tenant, delegate, role)",
    ),
    # Follow-ups of a pending proposal (reminders, escalation, reassignment): each step is a
    # row whose insert only one worker wins; assignees are the people an escalation or an
    # admin's reassignment made eligible to decide that one proposal.
    14: (
        """CREATE TABLE proposal_followups (
            proposal_id TEXT NOT NULL,
            step TEXT NOT NULL,
            tenant TEXT NOT NULL,
            at BIGINT NOT NULL,
            PRIMARY KEY (proposal_id, step)
        )""",
        """CREATE TABLE proposal_assignees (
            proposal_id TEXT NOT NULL,
            target TEXT NOT NULL,
            tenant TEXT NOT NULL,
            via TEXT NOT NULL,
            added_at BIGINT NOT NULL,
            PRIMARY KEY (proposal_id, target)
        )""",
        # The inbox reads a person's assignments from this side (store/_q_proposals.py).
        "CREATE INDEX proposal_assignees_by_target ON proposal_assignees (tenant, target)",
    ),
    # Reads that stay flat as a tenant's log grows (benchmarks/bench_scale.py): a proposal's
    # events by (proposal, tenant, seq), so `tenant = ? AND proposal_id = ? ORDER BY seq` no
    # longer walks the tenant's whole key range; and the passkey enrolments a device-approved
    # receipt cites, in a partial index no other event's insert touches.
    15: (
        "DROP INDEX audit_by_proposal",
        "CREATE INDEX audit_by_proposal ON audit_events (proposal_id, tenant, seq)",
        "CREATE INDEX audit_enrolments ON audit_events (tenant, actor, seq) "
        "WHERE kind = 'passkey.registered'",
    ),
}


def apply_migrations(tx: SqlTransaction, current: int) -> int:
    """Run every migration after ``current`` inside ``tx``; refuse a newer schema."""
    if current > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"database schema {current} is newer than this signoff ({SCHEMA_VERSION})",
            schema=current,
        )
    for version in range(current + 1, SCHEMA_VERSION + 1):
        for statement in MIGRATIONS[version]:
            text = statement if isinstance(statement, str) else statement.get(tx.dialect)
            if text is not None:
                tx.run(text)
        tx.run(
            "INSERT INTO signoff_meta (key, value) VALUES ('schema_version', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(version),),
        )
    return SCHEMA_VERSION


def schema_version_in(tx: SqlTransaction, meta_exists_sql: str) -> int:
    """The recorded schema version, 0 when ``meta_exists_sql`` finds no meta table."""
    exists = tx.run(meta_exists_sql).fetchone()
    if exists is None or exists[0] is None:
        return 0
    row = tx.run("SELECT value FROM signoff_meta WHERE key = 'schema_version'").fetchone()
    return 0 if row is None else int(row[0])

"""Migration 7's DDL: policy versions, mandates, their decisions and writes, and the
trigger that gives a write's amount back when its outcome is known not to have happened.

The give-back is a trigger on ``proposals.status`` so that every path that ends a write
without it happening — a provider refusal or consent ending before the call
(``failed_terminal``), a revoked or expired confirmation, a person's resolution —
returns the amount and the count in the same transaction as that status change, on
both stores, with no step able to forget it. ``unknown`` and ``needs_attention`` hold
it: the write may have happened. A write row gives back at most once (``held`` →
``returned`` is itself conditional).
"""

from __future__ import annotations

GIVE_BACK_STATUSES = ("failed_terminal", "revoked", "expired", "cancelled", "declined")
_IN = ", ".join(f"'{s}'" for s in GIVE_BACK_STATUSES)

POLICY_VERSIONS = """CREATE TABLE policy_versions (
    digest TEXT NOT NULL,
    applied_at BIGINT NOT NULL,
    applied_by TEXT NOT NULL,
    source TEXT NOT NULL,
    document TEXT NOT NULL,
    PRIMARY KEY (applied_at, digest)
)"""

MANDATES = """CREATE TABLE mandates (
    mandate_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    requester_subject TEXT NOT NULL,
    requester_actor TEXT,
    tool TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    constraints TEXT NOT NULL,
    digest TEXT NOT NULL,
    policy TEXT NOT NULL,
    required_role TEXT,
    requester_confirms INTEGER NOT NULL,
    total_minor BIGINT,
    max_count BIGINT,
    spent_minor BIGINT NOT NULL,
    used BIGINT NOT NULL,
    status TEXT NOT NULL,
    version BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    ended_reason TEXT,
    CHECK (spent_minor >= 0 AND used >= 0),
    CHECK (total_minor IS NULL OR spent_minor <= total_minor),
    CHECK (max_count IS NULL OR used <= max_count)
)"""

MANDATE_DECISIONS = """CREATE TABLE mandate_decisions (
    mandate_id TEXT NOT NULL REFERENCES mandates (mandate_id),
    approver TEXT NOT NULL,
    kind TEXT NOT NULL,
    step TEXT NOT NULL,
    reason_code TEXT,
    reason TEXT,
    decided_at BIGINT NOT NULL,
    PRIMARY KEY (mandate_id, approver)
)"""

MANDATE_WRITES = """CREATE TABLE mandate_writes (
    proposal_id TEXT PRIMARY KEY REFERENCES proposals (proposal_id),
    mandate_id TEXT NOT NULL REFERENCES mandates (mandate_id),
    tenant TEXT NOT NULL,
    amount_minor BIGINT,
    currency TEXT,
    status TEXT NOT NULL,
    debited_at BIGINT NOT NULL,
    returned_at BIGINT
)"""

SQLITE_GIVE_BACK = f"""CREATE TRIGGER mandate_give_back AFTER UPDATE OF status ON proposals
FOR EACH ROW WHEN NEW.status IN ({_IN}) AND OLD.status <> NEW.status
BEGIN
    UPDATE mandates SET
        spent_minor = spent_minor - COALESCE((SELECT w.amount_minor FROM mandate_writes w
            WHERE w.proposal_id = NEW.proposal_id AND w.status = 'held'), 0),
        used = used - 1, version = version + 1, updated_at = NEW.updated_at
    WHERE mandate_id = (SELECT w.mandate_id FROM mandate_writes w
        WHERE w.proposal_id = NEW.proposal_id AND w.status = 'held');
    UPDATE mandate_writes SET status = 'returned', returned_at = NEW.updated_at
    WHERE proposal_id = NEW.proposal_id AND status = 'held';
END"""

PG_GIVE_BACK_FUNCTION = """CREATE OR REPLACE FUNCTION signoff_mandate_give_back()
RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    w_mandate text;
    w_amount bigint;
BEGIN
    UPDATE mandate_writes SET status = 'returned', returned_at = NEW.updated_at
        WHERE proposal_id = NEW.proposal_id AND status = 'held'
        RETURNING mandate_id, amount_minor INTO w_mandate, w_amount;
    IF FOUND THEN
        UPDATE mandates SET spent_minor = spent_minor - COALESCE(w_amount, 0),
                used = used - 1, version = version + 1, updated_at = NEW.updated_at
            WHERE mandate_id = w_mandate;
    END IF;
    RETURN NULL;
END
$$"""

PG_GIVE_BACK_TRIGGER = f"""CREATE TRIGGER mandate_give_back AFTER UPDATE OF status ON proposals
FOR EACH ROW WHEN (NEW.status IN ({_IN}) AND OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION signoff_mandate_give_back()"""

MIGRATION = (
    POLICY_VERSIONS,
    MANDATES,
    "CREATE INDEX mandates_by_tenant ON mandates (tenant, status, created_at)",
    MANDATE_DECISIONS,
    MANDATE_WRITES,
    "CREATE INDEX mandate_writes_by_mandate ON mandate_writes (mandate_id, debited_at)",
    {"sqlite": SQLITE_GIVE_BACK},
    {"postgresql": PG_GIVE_BACK_FUNCTION},
    {"postgresql": PG_GIVE_BACK_TRIGGER},
)

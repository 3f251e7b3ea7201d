"""PostgreSQL's write steps as server-side functions (migration 6): one round trip each.

Each function is one protocol step — propose; decide and issue; consume and
start; record the outcome — with its audit appends, called as one statement
in autocommit, so the step is atomic and costs one round trip. A premise that
no longer holds (a version, a token still ``issued``, an idempotency key still
free, a role entry as it was read) raises SQLSTATE ``SO001`` before anything
is kept; the gate then reads again.

The audit hash is computed here, from the head row locked here:
``signoff_event_hash`` writes the event's RFC 8785 (JCS) form — keys in code
point order, strings through ``to_json`` (the escapes JCS and Python's json
module write: ``\\" \\\\ \\b \\f \\n \\r \\t`` and ``\\u00xx`` for other control
characters), integers in decimal — and hashes its UTF-8 bytes, byte for byte
``audit._chain.event_hash`` (tests/test_pg_event_hash.py). No ``%`` and no ``?``
appear below: psycopg would read them as placeholders.
"""

from __future__ import annotations

PREMISE_FAILED = "SO001"
"""The SQLSTATE a step raises when one of its premises no longer holds."""

_EVENT = "{p}tenant text, {p}at bigint, {p}kind text, {p}proposal_id text, {p}execution_id text, "
_EVENT += "{p}actor text, {p}data text, {p}mac text"


def _event(prefix: str) -> str:
    return _EVENT.format(p=prefix)


def _append(prefix: str) -> str:
    names = ("tenant", "at", "kind", "proposal_id", "execution_id", "actor", "data", "mac")
    return f"signoff_append_audit({', '.join(prefix + n for n in names)})"


def _raise(premise: str) -> str:
    return f"RAISE EXCEPTION USING ERRCODE = '{PREMISE_FAILED}', MESSAGE = '{premise}';"


_ROLES = "p_role_tenants text[], p_role_subjects text[], p_role_names text[], p_role_entries text[]"
_CHECK_ROLES = f"""
    IF cardinality(p_role_subjects) > 0 AND EXISTS (
        SELECT 1 FROM unnest(p_role_tenants, p_role_subjects, p_role_names, p_role_entries)
            AS r(tenant, subject, role, entry)
        WHERE COALESCE((SELECT CASE WHEN g.revoked = 0 THEN 'granted' ELSE 'revoked' END
                        FROM role_grants g
                        WHERE g.tenant = r.tenant AND g.subject = r.subject AND g.role = r.role),
                       'none') <> r.entry
    ) THEN
        {_raise("role_entries")}
    END IF;"""

EVENT_HASH = """
CREATE OR REPLACE FUNCTION signoff_event_hash(
    p_tenant text, p_seq bigint, p_at bigint, p_kind text, p_proposal_id text,
    p_execution_id text, p_actor text, p_data text, p_prev_hash text, p_mac text
) RETURNS text LANGUAGE sql STABLE AS $$
SELECT encode(sha256(convert_to(
    '{"actor":' || COALESCE(to_json(p_actor)::text, 'null')
    || ',"at":' || p_at::text
    || ',"data":' || to_json(p_data)::text
    || ',"execution_id":' || COALESCE(to_json(p_execution_id)::text, 'null')
    || ',"kind":' || to_json(p_kind)::text
    || CASE WHEN p_mac IS NULL THEN '' ELSE ',"mac":' || to_json(p_mac)::text END
    || ',"prev_hash":' || to_json(p_prev_hash)::text
    || ',"proposal_id":' || COALESCE(to_json(p_proposal_id)::text, 'null')
    || ',"seq":' || p_seq::text
    || ',"tenant":' || to_json(p_tenant)::text
    || '}', 'UTF8')), 'hex')
$$"""

APPEND_AUDIT = f"""
CREATE OR REPLACE FUNCTION signoff_append_audit(
    {_event("p_")}, OUT new_seq bigint, OUT new_hash text
) LANGUAGE plpgsql AS $$
DECLARE
    prev text;
BEGIN
    SELECT h.seq, h.hash INTO new_seq, prev FROM audit_heads h
        WHERE h.tenant = p_tenant FOR UPDATE;
    IF NOT FOUND THEN
        -- The tenant's first event: a concurrent first append waits on this insert,
        -- then does nothing and locks the row the winner created.
        INSERT INTO audit_heads (tenant, seq, hash) VALUES (p_tenant, 0, repeat('0', 64))
            ON CONFLICT (tenant) DO NOTHING;
        SELECT h.seq, h.hash INTO new_seq, prev FROM audit_heads h
            WHERE h.tenant = p_tenant FOR UPDATE;
    END IF;
    new_seq := new_seq + 1;
    new_hash := signoff_event_hash(p_tenant, new_seq, p_at, p_kind, p_proposal_id,
                                   p_execution_id, p_actor, p_data, prev, p_mac);
    INSERT INTO audit_events (tenant, seq, at, kind, proposal_id, execution_id, actor, data,
                              prev_hash, hash, mac)
        VALUES (p_tenant, new_seq, p_at, p_kind, p_proposal_id, p_execution_id, p_actor, p_data,
                prev, new_hash, p_mac);
    UPDATE audit_heads SET seq = new_seq, hash = new_hash WHERE tenant = p_tenant;
END
$$"""

RECORD_PROPOSAL = f"""
CREATE OR REPLACE FUNCTION signoff_record_proposal(
    p_proposal_id text, p_action_id text, p_tenant text, p_requester_subject text,
    p_requester_actor text, p_tool text, p_tool_version text, p_arguments text,
    p_args_digest text, p_resource_id text, p_state_version text, p_state text, p_risk text,
    p_policy text, p_preview text, p_rationale text, p_request_key text, p_status text,
    p_version bigint, p_created_at bigint, p_expires_at bigint, p_updated_at bigint,
    p_required_role text, p_requester_confirms integer,
    {_event("e_")}, OUT new_seq bigint, OUT new_hash text
) LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO proposals (proposal_id, action_id, tenant, requester_subject, requester_actor,
        tool, tool_version, arguments, args_digest, resource_id, state_version, state, risk,
        policy, preview, rationale, request_key, status, version, created_at, expires_at,
        updated_at, required_role, requester_confirms)
    VALUES (p_proposal_id, p_action_id, p_tenant, p_requester_subject, p_requester_actor,
        p_tool, p_tool_version, p_arguments, p_args_digest, p_resource_id, p_state_version,
        p_state, p_risk, p_policy, p_preview, p_rationale, p_request_key, p_status, p_version,
        p_created_at, p_expires_at, p_updated_at, p_required_role, p_requester_confirms);
    SELECT a.new_seq, a.new_hash INTO new_seq, new_hash FROM {_append("e_")} a;
END
$$"""

RECORD_DECISION = f"""
CREATE OR REPLACE FUNCTION signoff_record_decision(
    p_proposal_id text, p_expected_version bigint, p_to_status text, p_now bigint,
    {_ROLES},
    p_idem_tenant text, p_idem_actor text, p_idem_key text, p_idem_fingerprint text,
    p_approver text, p_kind text, p_step text, p_reason_code text, p_reason text,
    {_event("d_")},
    p_token_id text, p_token_hash text, p_token_tenant text, p_token_subject text,
    p_token_actor text, p_token_audience text, p_token_operation text,
    p_token_resource_id text, p_token_args_digest text, p_token_policy_version text,
    p_token_request_key text, p_token_expires_at bigint,
    {_event("t_")},
    p_passkey_id text, p_passkey_seen bigint, p_passkey_new bigint,
    OUT new_seq bigint, OUT new_hash text
) LANGUAGE plpgsql AS $$
BEGIN
    {_CHECK_ROLES}
    INSERT INTO idempotency_keys (tenant, actor, idem_key, operation, fingerprint, state,
                                  proposal_id, execution_id, token_id, created_at)
        VALUES (p_idem_tenant, p_idem_actor, p_idem_key, 'decide', p_idem_fingerprint, 'done',
                p_proposal_id, NULL, p_token_id, p_now)
        ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        {_raise("idempotency_key")}
    END IF;
    UPDATE proposals SET status = p_to_status, version = version + 1, updated_at = p_now
        WHERE proposal_id = p_proposal_id AND status = 'awaiting_confirmation'
          AND version = p_expected_version AND expires_at > p_now;
    IF NOT FOUND THEN
        {_raise("proposal")}
    END IF;
    IF p_passkey_id IS NOT NULL THEN
        -- A device-signed approval: its sign counter moves once (a replayed assertion loses).
        UPDATE passkeys SET sign_count = p_passkey_new
            WHERE credential_id = p_passkey_id AND sign_count = p_passkey_seen;
        IF NOT FOUND THEN
            {_raise("passkey")}
        END IF;
    END IF;
    INSERT INTO decisions (proposal_id, approver, kind, step, reason_code, reason, decided_at)
        VALUES (p_proposal_id, p_approver, p_kind, p_step, p_reason_code, p_reason, p_now);
    SELECT a.new_seq, a.new_hash INTO new_seq, new_hash FROM {_append("d_")} a;
    IF p_token_id IS NOT NULL THEN
        INSERT INTO tokens (token_id, token_hash, proposal_id, tenant, subject, actor, audience,
                            operation, resource_id, args_digest, policy_version, request_key,
                            issued_at, expires_at, status)
            VALUES (p_token_id, p_token_hash, p_proposal_id, p_token_tenant, p_token_subject,
                    p_token_actor, p_token_audience, p_token_operation, p_token_resource_id,
                    p_token_args_digest, p_token_policy_version, p_token_request_key, p_now,
                    p_token_expires_at, 'issued');
        SELECT a.new_seq, a.new_hash INTO new_seq, new_hash FROM {_append("t_")} a;
    END IF;
END
$$"""

CONSUME_AND_START = f"""
CREATE OR REPLACE FUNCTION signoff_consume_and_start(
    p_token_id text, p_proposal_id text, p_now bigint,
    {_ROLES},
    p_idem_tenant text, p_idem_actor text, p_idem_key text, p_idem_fingerprint text,
    p_execution_id text, p_tenant text, p_request_key text, p_lease_until bigint,
    {_event("c_")}, {_event("s_")}, OUT new_seq bigint, OUT new_hash text
) LANGUAGE plpgsql AS $$
BEGIN
    {_CHECK_ROLES}
    IF p_idem_key IS NOT NULL THEN
        INSERT INTO idempotency_keys (tenant, actor, idem_key, operation, fingerprint, state,
                                      proposal_id, execution_id, token_id, created_at)
            VALUES (p_idem_tenant, p_idem_actor, p_idem_key, 'execute', p_idem_fingerprint,
                    'done', p_proposal_id, p_execution_id, NULL, p_now)
            ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            {_raise("idempotency_key")}
        END IF;
    END IF;
    -- The single winner of issued -> consumed, while the confirmation is unexpired.
    UPDATE tokens SET status = 'consumed', consumed_at = p_now
        WHERE token_id = p_token_id AND status = 'issued' AND expires_at > p_now;
    IF NOT FOUND THEN
        {_raise("token")}
    END IF;
    UPDATE proposals SET status = 'executing', version = version + 1, updated_at = p_now
        WHERE proposal_id = p_proposal_id AND status = 'confirmed';
    IF NOT FOUND THEN
        {_raise("proposal")}
    END IF;
    INSERT INTO executions (execution_id, proposal_id, tenant, token_id, request_key, status,
                            attempts, created_at, updated_at, lease_until)
        VALUES (p_execution_id, p_proposal_id, p_tenant, p_token_id, p_request_key, 'running', 1,
                p_now, p_now, p_lease_until);
    PERFORM {_append("c_")};
    SELECT a.new_seq, a.new_hash INTO new_seq, new_hash FROM {_append("s_")} a;
END
$$"""

RECORD_OUTCOME = f"""
CREATE OR REPLACE FUNCTION signoff_record_outcome(
    p_execution_id text, p_from text[], p_to text, p_now bigint, p_reference text,
    p_code text, p_message text, p_completed_at bigint, p_items text,
    p_proposal_from text[], p_proposal_to text,
    {_event("e_")}, OUT o executions, OUT new_seq bigint, OUT new_hash text
) LANGUAGE plpgsql AS $$
BEGIN
    UPDATE executions x SET status = p_to, updated_at = p_now, lease_until = NULL,
            provider_reference = COALESCE(p_reference, x.provider_reference),
            error_code = p_code, error_message = p_message, completed_at = p_completed_at,
            items = COALESCE(p_items, x.items)
        WHERE x.execution_id = p_execution_id AND x.status = ANY (p_from)
        RETURNING x.* INTO o;
    IF NOT FOUND THEN
        RETURN;  -- another worker recorded first: o stays NULL
    END IF;
    UPDATE proposals SET status = p_proposal_to, version = version + 1, updated_at = p_now
        WHERE proposal_id = o.proposal_id AND status = ANY (p_proposal_from);
    SELECT a.new_seq, a.new_hash INTO new_seq, new_hash FROM {_append("e_")} a;
END
$$"""
"""The outcome step also keeps a batch's item outcomes (``executions.items``, migration 8)."""

DROP_FUNCTIONS = """
DO $$
DECLARE
    f record;
BEGIN
    -- Every signoff_* function of this schema, whatever its parameter list: the next
    -- statements create them again with today's (a changed list would add an overload).
    FOR f IN SELECT p.oid::regprocedure AS signature FROM pg_proc p
             JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = current_schema() AND left(p.proname, 8) = 'signoff_'
    LOOP
        EXECUTE 'DROP FUNCTION ' || f.signature;
    END LOOP;
END
$$"""

FUNCTIONS = (
    EVENT_HASH,
    APPEND_AUDIT,
    RECORD_PROPOSAL,
    RECORD_DECISION,
    CONSUME_AND_START,
    RECORD_OUTCOME,
)

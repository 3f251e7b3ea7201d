package com.signoff.client;

/**
 * The server's decision receipt (seed 003): what this decision did, so the CRM shows a
 * definite result rather than reading HTTP 200 as "refunded".
 *
 * <p>{@link #getAuditId()} names the decision's audit event ({@code <tenant>:<seq>});
 * {@link #getStatus()} and {@link #getVersion()} are the proposal's as this decision left
 * them ({@code confirmed}, {@code awaiting_confirmation} or {@code declined});
 * {@link #getToolStatus()} is where the write is now: {@code not_started} until the
 * requesting agent executes, then the execution's status. {@link #isDuplicate()} is true when
 * this decision's Idempotency-Key was answered before (a retry after a timeout): the same
 * audit id, action, status and version, and nothing was decided twice. Approving means the
 * write may be attempted, not that it succeeded. It never carries the confirmation token
 * (PROTOCOL rule 12): the requesting agent picks that up itself.
 */
public final class DecisionResult {
    /** {@link #getToolStatus()} before the requesting agent executed the write. */
    public static final String NOT_STARTED = "not_started";

    private final String auditId;
    private final String actionId;
    private final String status;
    private final long version;
    private final String toolStatus;
    private final boolean duplicate;
    private final ProposalView proposal;
    private final String idempotencyKey;

    DecisionResult(Fields json, String idempotencyKey) {
        this.auditId = json.string("audit_id");
        this.actionId = json.string("action_id");
        this.status = json.string("status");
        this.version = json.integer("version");
        this.toolStatus = json.string("tool_status");
        this.duplicate = json.bool("duplicate");
        this.proposal = new ProposalView(json.object("proposal"));
        this.idempotencyKey = idempotencyKey;
    }

    /** The decision's audit event, {@code <tenant>:<seq>}; the same on every replay. */
    public String getAuditId() {
        return auditId;
    }

    /** The business action decided on; the same on every replay. */
    public String getActionId() {
        return actionId;
    }

    /** The proposal's status as this decision left it. */
    public String getStatus() {
        return status;
    }

    /** The proposal's version as this decision left it. */
    public long getVersion() {
        return version;
    }

    /** {@value #NOT_STARTED}, or the execution's status (e.g. {@code succeeded}) now. */
    public String getToolStatus() {
        return toolStatus;
    }

    public boolean isDuplicate() {
        return duplicate;
    }

    /** The proposal as it is now. */
    public ProposalView getProposal() {
        return proposal;
    }

    /** The {@code confirm:v1:...} key this decision was sent with. */
    public String getIdempotencyKey() {
        return idempotencyKey;
    }
}

package com.signoff.client;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * A frozen proposal as the server shows it: what the seed's CRM calls the {@code AgentTaskView}
 * and its {@code ConfirmationView} in one. Decide on exactly this version: {@link #getVersion()}
 * is sent back as {@code expected_version}, and the server refuses a decision on any other.
 */
public final class ProposalView {
    /** The status of a proposal waiting for a person's decision. */
    public static final String AWAITING_CONFIRMATION = "awaiting_confirmation";

    private final String proposalId;
    private final String actionId;
    private final String status;
    private final long version;
    private final String tool;
    private final String toolVersion;
    private final Map<String, Object> arguments;
    private final String argsDigest;
    private final String resource;
    private final PreviewView preview;
    private final RiskView risk;
    private final String requiredRole;
    private final List<String> retype;
    private final String requesterSubject;
    private final String requesterActor;
    private final List<ApprovalView> approvals;
    private final String untrustedRationale;
    private final Instant createdAt;
    private final Instant expiresAt;

    ProposalView(Fields json) {
        this.proposalId = json.string("proposal_id");
        this.actionId = json.string("action_id");
        this.status = json.string("status");
        this.version = json.integer("version");
        this.tool = json.string("tool");
        this.toolVersion = json.string("tool_version");
        this.arguments = json.map("arguments");
        this.argsDigest = json.string("args_digest");
        this.resource = json.string("resource");
        this.preview = new PreviewView(json.object("preview"));
        this.risk = new RiskView(json.object("risk"));
        this.requiredRole = json.optionalString("required_role");
        this.retype = json.strings("retype");
        Fields requester = json.object("requester");
        this.requesterSubject = requester.string("subject");
        this.requesterActor = requester.optionalString("actor");
        List<ApprovalView> read = new ArrayList<ApprovalView>();
        for (Fields approval : json.objects("approvals")) {
            read.add(new ApprovalView(approval));
        }
        this.approvals = Collections.unmodifiableList(read);
        this.untrustedRationale = json.optionalString("untrusted_rationale");
        this.createdAt = json.instant("created_at");
        this.expiresAt = json.instant("expires_at");
    }

    public String getProposalId() {
        return proposalId;
    }

    /** The business action; stays the same for every retry of the same decision. */
    public String getActionId() {
        return actionId;
    }

    /** {@code awaiting_confirmation}, {@code confirmed}, {@code declined}, {@code expired}, ... */
    public String getStatus() {
        return status;
    }

    public boolean isAwaitingConfirmation() {
        return AWAITING_CONFIRMATION.equals(status);
    }

    /** The version to decide on (sent as {@code expected_version}). */
    public long getVersion() {
        return version;
    }

    public String getTool() {
        return tool;
    }

    public String getToolVersion() {
        return toolVersion;
    }

    /** The canonical arguments the executor will use (the digest covers them). */
    public Map<String, Object> getArguments() {
        return arguments;
    }

    /** {@code sha256(JCS({tool, tool_version, args}))}, lowercase hex. */
    public String getArgsDigest() {
        return argsDigest;
    }

    public String getResource() {
        return resource;
    }

    public PreviewView getPreview() {
        return preview;
    }

    public RiskView getRisk() {
        return risk;
    }

    /** The role a person needs to decide, or null when the requester confirms. */
    public String getRequiredRole() {
        return requiredRole;
    }

    /** Fields the person must type again to approve (their values go in {@code retyped}). */
    public List<String> getRetype() {
        return retype;
    }

    /** The person the request is for. */
    public String getRequesterSubject() {
        return requesterSubject;
    }

    /** The agent acting for them, or null. */
    public String getRequesterActor() {
        return requesterActor;
    }

    public List<ApprovalView> getApprovals() {
        return approvals;
    }

    /** The model's own explanation: untrusted text, never a fact and never a parameter. */
    public String getUntrustedRationale() {
        return untrustedRationale;
    }

    public Instant getCreatedAt() {
        return createdAt;
    }

    /** The deadline for a decision (server clock); at or after it the proposal is expired. */
    public Instant getExpiresAt() {
        return expiresAt;
    }

    @Override
    public String toString() {
        return proposalId + " v" + version + " " + status + ": " + preview.getTitle();
    }
}

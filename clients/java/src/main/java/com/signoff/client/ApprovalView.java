package com.signoff.client;

import java.time.Instant;

/** One decision already recorded on a proposal. */
public final class ApprovalView {
    private final String approver;
    private final String decision;
    private final String step;
    private final String reasonCode;
    private final String reason;
    private final Instant decidedAt;

    ApprovalView(Fields json) {
        this.approver = json.string("approver");
        this.decision = json.string("decision");
        this.step = json.string("step");
        this.reasonCode = json.optionalString("reason_code");
        this.reason = json.optionalString("reason");
        this.decidedAt = json.instant("decided_at");
    }

    public String getApprover() {
        return approver;
    }

    /** {@code approve} or {@code reject}. */
    public String getDecision() {
        return decision;
    }

    public String getStep() {
        return step;
    }

    public String getReasonCode() {
        return reasonCode;
    }

    public String getReason() {
        return reason;
    }

    public Instant getDecidedAt() {
        return decidedAt;
    }
}

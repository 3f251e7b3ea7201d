package com.signoff.client;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One person's decision on one version of one proposal. Build it with {@link #approve} or
 * {@link #reject}; it carries no tool, amount or target: the server reads those from the
 * proposal it froze.
 */
public final class DecisionRequest {
    private final String proposalId;
    private final long expectedVersion;
    private final boolean approve;
    private final ReasonCode reasonCode;
    private final String reason;
    private final Map<String, String> retyped;

    private DecisionRequest(String proposalId, long expectedVersion, boolean approve,
            ReasonCode reasonCode, String reason, Map<String, String> retyped) {
        if (proposalId == null || proposalId.isEmpty() || expectedVersion < 1) {
            throw new IllegalArgumentException("a proposal id and a version >= 1 are required");
        }
        this.proposalId = proposalId;
        this.expectedVersion = expectedVersion;
        this.approve = approve;
        this.reasonCode = reasonCode;
        this.reason = reason;
        this.retyped = retyped;
    }

    public static DecisionRequest approve(String proposalId, long expectedVersion) {
        return new DecisionRequest(proposalId, expectedVersion, true, null, null, null);
    }

    public static DecisionRequest reject(String proposalId, long expectedVersion,
            ReasonCode reasonCode, String reason) {
        if (reasonCode == null) {
            throw new IllegalArgumentException("a reason code is required to reject");
        }
        return new DecisionRequest(proposalId, expectedVersion, false, reasonCode, reason, null);
    }

    /** The same decision with a free-text reason (e.g. what the person checked). */
    public DecisionRequest withReason(String text) {
        return new DecisionRequest(proposalId, expectedVersion, approve, reasonCode, text, retyped);
    }

    /** The values the person typed again for the proposal's {@code retype} fields. */
    public DecisionRequest withRetyped(Map<String, String> values) {
        Map<String, String> copy = Collections.unmodifiableMap(
                new LinkedHashMap<String, String>(values));
        return new DecisionRequest(proposalId, expectedVersion, approve, reasonCode, reason, copy);
    }

    public String getProposalId() {
        return proposalId;
    }

    public long getExpectedVersion() {
        return expectedVersion;
    }

    public boolean isApprove() {
        return approve;
    }

    /** The Idempotency-Key this decision is sent with; see {@link IdempotencyKeys}. */
    public String idempotencyKey() {
        return IdempotencyKeys.confirmation(proposalId, expectedVersion);
    }

    /** The JSON body of {@code POST /v1/proposals/{id}/decision}. */
    String toJson() {
        Map<String, Object> body = new LinkedHashMap<String, Object>();
        body.put("decision", approve ? "approve" : "reject");
        body.put("expected_version", expectedVersion);
        body.put("reason_code", reasonCode == null ? null : reasonCode.wireName());
        body.put("reason", reason);
        body.put("retyped", retyped);
        return Json.write(body);
    }
}

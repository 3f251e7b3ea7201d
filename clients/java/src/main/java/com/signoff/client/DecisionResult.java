package com.signoff.client;

/**
 * The server's answer to a decision. {@link #isDuplicate()} is true when this decision's
 * Idempotency-Key was answered before (a retry after a timeout): the proposal is the one the
 * first answer showed, and nothing was decided twice. Approving means the write may be
 * attempted, not that it succeeded. It never carries the confirmation token (PROTOCOL rule
 * 12): the requesting agent picks that up itself.
 */
public final class DecisionResult {
    private final ProposalView proposal;
    private final boolean duplicate;
    private final String idempotencyKey;

    DecisionResult(Fields json, String idempotencyKey) {
        this.proposal = new ProposalView(json.object("proposal"));
        this.duplicate = json.bool("duplicate");
        this.idempotencyKey = idempotencyKey;
    }

    public ProposalView getProposal() {
        return proposal;
    }

    public boolean isDuplicate() {
        return duplicate;
    }

    /** The {@code confirm:v1:...} key this decision was sent with. */
    public String getIdempotencyKey() {
        return idempotencyKey;
    }
}

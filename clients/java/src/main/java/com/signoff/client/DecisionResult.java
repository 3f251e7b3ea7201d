package com.signoff.client;

/**
 * The server's answer to a decision. {@link #isDuplicate()} is true when this decision's
 * Idempotency-Key was answered before (a retry after a timeout): the proposal is the one the
 * first answer showed, and nothing was decided twice. Approving means the write may be
 * attempted, not that it succeeded.
 */
public final class DecisionResult {
    private final ProposalView proposal;
    private final boolean duplicate;
    private final String confirmationToken;
    private final String idempotencyKey;

    DecisionResult(Fields json, String idempotencyKey) {
        this.proposal = new ProposalView(json.object("proposal"));
        this.duplicate = json.bool("duplicate");
        this.confirmationToken = json.optionalString("confirmation_token");
        this.idempotencyKey = idempotencyKey;
    }

    public ProposalView getProposal() {
        return proposal;
    }

    public boolean isDuplicate() {
        return duplicate;
    }

    /**
     * The confirmation token when the server hands it to this caller, else null. An approver
     * client has no use for it: the requesting agent picks it up and executes.
     */
    public String getConfirmationToken() {
        return confirmationToken;
    }

    /** The {@code confirm:v1:...} key this decision was sent with. */
    public String getIdempotencyKey() {
        return idempotencyKey;
    }
}

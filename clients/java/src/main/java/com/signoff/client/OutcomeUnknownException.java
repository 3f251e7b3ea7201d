package com.signoff.client;

import java.util.Map;

/** No answer after every retry (timeouts, refused or reset connections): the decision may or may not have landed. Read the proposal, or decide again later: the same key answers the first decision. */
public class OutcomeUnknownException extends SignoffException {
    private static final long serialVersionUID = 1L;

    OutcomeUnknownException(int status, String code, String detail, Map<String, Object> problem,
            String idempotencyKey, Throwable cause) {
        super(status, code, detail, problem, idempotencyKey, cause);
    }
}

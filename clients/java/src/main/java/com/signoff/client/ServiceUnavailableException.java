package com.signoff.client;

import java.util.Map;

/** HTTP 503 after every retry: the outcome is not known. Read the proposal, or decide again later: the same key answers the first decision. */
public class ServiceUnavailableException extends SignoffException {
    private static final long serialVersionUID = 1L;

    ServiceUnavailableException(int status, String code, String detail, Map<String, Object> problem,
            String idempotencyKey, Throwable cause) {
        super(status, code, detail, problem, idempotencyKey, cause);
    }
}

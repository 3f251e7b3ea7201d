package com.signoff.client;

import java.util.Map;

/** HTTP 422: clarification needed, a re-typed value differs, or the Idempotency-Key was used for another decision. */
public class UnprocessableException extends SignoffException {
    private static final long serialVersionUID = 1L;

    UnprocessableException(int status, String code, String detail, Map<String, Object> problem,
            String idempotencyKey, Throwable cause) {
        super(status, code, detail, problem, idempotencyKey, cause);
    }
}

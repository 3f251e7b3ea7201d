package com.signoff.client;

import java.util.Map;

/** HTTP 401: the bearer token is missing, invalid or expired (code {@code not_authenticated}). */
public class NotAuthenticatedException extends SignoffException {
    private static final long serialVersionUID = 1L;

    NotAuthenticatedException(int status, String code, String detail, Map<String, Object> problem,
            String idempotencyKey, Throwable cause) {
        super(status, code, detail, problem, idempotencyKey, cause);
    }
}

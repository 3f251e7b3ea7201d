package com.signoff.client;

import java.util.Map;

/** HTTP 409: the proposal is not in a state that allows this (decided, expired, revoked, key in flight). */
public class ConflictException extends SignoffException {
    private static final long serialVersionUID = 1L;

    ConflictException(int status, String code, String detail, Map<String, Object> problem,
            String idempotencyKey, Throwable cause) {
        super(status, code, detail, problem, idempotencyKey, cause);
    }
}

package com.signoff.client;

import java.util.Map;

/** HTTP 409 {@code version_conflict}: the proposal changed since it was read; read it again and show it again. */
public class VersionConflictException extends ConflictException {
    private static final long serialVersionUID = 1L;

    VersionConflictException(int status, String code, String detail, Map<String, Object> problem,
            String idempotencyKey, Throwable cause) {
        super(status, code, detail, problem, idempotencyKey, cause);
    }
}

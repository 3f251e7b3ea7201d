package com.signoff.client;

import java.util.Map;

/** HTTP 403: the caller may not do this: role, separation of duties, subject, audience or surface. */
public class ForbiddenException extends SignoffException {
    private static final long serialVersionUID = 1L;

    ForbiddenException(int status, String code, String detail, Map<String, Object> problem,
            String idempotencyKey, Throwable cause) {
        super(status, code, detail, problem, idempotencyKey, cause);
    }
}

package com.signoff.client;

import java.util.Map;

/** HTTP 400: a malformed request, a schema violation or an unknown field (code {@code invalid_request}, ...). */
public class BadRequestException extends SignoffException {
    private static final long serialVersionUID = 1L;

    BadRequestException(int status, String code, String detail, Map<String, Object> problem,
            String idempotencyKey, Throwable cause) {
        super(status, code, detail, problem, idempotencyKey, cause);
    }
}

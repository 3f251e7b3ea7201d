package com.signoff.client;

import java.util.Map;

/** HTTP 404: no such proposal in the caller's tenant; another tenant's ids are answered the same way. */
public class NotFoundException extends SignoffException {
    private static final long serialVersionUID = 1L;

    NotFoundException(int status, String code, String detail, Map<String, Object> problem,
            String idempotencyKey, Throwable cause) {
        super(status, code, detail, problem, idempotencyKey, cause);
    }
}

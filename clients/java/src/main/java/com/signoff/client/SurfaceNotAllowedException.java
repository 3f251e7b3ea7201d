package com.signoff.client;

import java.util.Map;

/** HTTP 403 {@code surface_not_allowed}: decisions may not arrive through this client system (the token's {@code azp}). */
public class SurfaceNotAllowedException extends ForbiddenException {
    private static final long serialVersionUID = 1L;

    SurfaceNotAllowedException(int status, String code, String detail, Map<String, Object> problem,
            String idempotencyKey, Throwable cause) {
        super(status, code, detail, problem, idempotencyKey, cause);
    }
}

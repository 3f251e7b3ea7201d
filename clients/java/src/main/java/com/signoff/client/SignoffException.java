package com.signoff.client;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Root of every error this client raises: a problem+json answer of the server, or no answer.
 *
 * <p>{@link #getCode()} is the server's stable machine code ({@code version_conflict},
 * {@code not_found}, {@code surface_not_allowed}, ...); branch on it or on the subclass,
 * never on the message. One subclass per HTTP status family:
 *
 * <pre>
 * SignoffException
 * ├── BadRequestException          400  malformed request, schema violation
 * ├── NotAuthenticatedException    401  bearer token missing, invalid or expired
 * ├── ForbiddenException           403  role, separation of duties, audience
 * │   └── SurfaceNotAllowedException    code surface_not_allowed: not an allowed client
 * ├── NotFoundException            404  no such proposal in the caller's tenant
 * ├── ConflictException            409  state, expiry, key in flight
 * │   └── VersionConflictException      code version_conflict: expected_version is stale
 * ├── UnprocessableException       422  clarification, re-typed value, key reused
 * ├── ServiceUnavailableException  503  no outcome known; ask again with the same key
 * └── OutcomeUnknownException      no answer at all (timeouts); ask again with the same key
 * </pre>
 */
public class SignoffException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String code;
    private final Map<String, Object> problem;
    private final String idempotencyKey;

    SignoffException(int status, String code, String detail, Map<String, Object> problem,
            String idempotencyKey, Throwable cause) {
        super(code + ": " + detail, cause);
        this.status = status;
        this.code = code;
        this.problem = problem == null
                ? Collections.<String, Object>emptyMap()
                : Collections.unmodifiableMap(new LinkedHashMap<String, Object>(problem));
        this.idempotencyKey = idempotencyKey;
    }

    /** The HTTP status, or 0 when no answer came. */
    public int getStatus() {
        return status;
    }

    /** The stable machine code of the problem, e.g. {@code version_conflict}. */
    public String getCode() {
        return code;
    }

    /** The problem's human-readable {@code detail}. */
    public String getDetail() {
        Object detail = problem.get("detail");
        return detail instanceof String ? (String) detail : getMessage();
    }

    /** Every member of the problem document, e.g. {@code proposal_id}, {@code current_version}. */
    public Map<String, Object> getProblem() {
        return problem;
    }

    /** One member of the problem document, or null. */
    public Object getMember(String name) {
        return problem.get(name);
    }

    /**
     * The Idempotency-Key the failed request carried, or null for a read. Sending the same
     * decision again later reuses it (the client derives it from proposal id and version).
     */
    public String getIdempotencyKey() {
        return idempotencyKey;
    }
}

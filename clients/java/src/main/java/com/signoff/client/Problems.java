package com.signoff.client;

import java.util.LinkedHashMap;
import java.util.Map;

/** Turns an error answer into its typed exception, by code first, then by HTTP status. */
final class Problems {
    static final String SURFACE_NOT_ALLOWED = "surface_not_allowed";
    static final String VERSION_CONFLICT = "version_conflict";
    static final String KEY_IN_FLIGHT = "idempotency_key_in_flight";
    static final String NO_ANSWER = "no_answer";
    static final String UNEXPECTED_ANSWER = "unexpected_answer";

    private Problems() {
    }

    /** The exception for an HTTP error answer; a body that is not a problem keeps its status. */
    static SignoffException fromAnswer(HttpAnswer answer, String idempotencyKey) {
        Map<String, Object> problem = problemOf(answer);
        Object code = problem.get("code");
        String name = code instanceof String ? (String) code : "http_" + answer.status;
        Object detail = problem.get("detail");
        String text = detail instanceof String ? (String) detail : "HTTP " + answer.status;
        return of(answer.status, name, text, problem, idempotencyKey, null);
    }

    static SignoffException of(int status, String code, String detail,
            Map<String, Object> problem, String key, Throwable cause) {
        if (status == 403 && SURFACE_NOT_ALLOWED.equals(code)) {
            return new SurfaceNotAllowedException(status, code, detail, problem, key, cause);
        }
        if (status == 409 && VERSION_CONFLICT.equals(code)) {
            return new VersionConflictException(status, code, detail, problem, key, cause);
        }
        switch (status) {
            case 0:
                return new OutcomeUnknownException(status, code, detail, problem, key, cause);
            case 400:
                return new BadRequestException(status, code, detail, problem, key, cause);
            case 401:
                return new NotAuthenticatedException(status, code, detail, problem, key, cause);
            case 403:
                return new ForbiddenException(status, code, detail, problem, key, cause);
            case 404:
                return new NotFoundException(status, code, detail, problem, key, cause);
            case 409:
                return new ConflictException(status, code, detail, problem, key, cause);
            case 422:
                return new UnprocessableException(status, code, detail, problem, key, cause);
            case 502:
            case 503:
            case 504:
                return new ServiceUnavailableException(status, code, detail, problem, key, cause);
            default:
                return new SignoffException(status, code, detail, problem, key, cause);
        }
    }

    /** A success answer the client cannot read: the server and this client disagree. */
    static SignoffException unexpected(HttpAnswer answer, RuntimeException cause) {
        return new SignoffException(answer.status, UNEXPECTED_ANSWER,
                "the answer is not the documented JSON: " + cause.getMessage(),
                null, null, cause);
    }

    private static Map<String, Object> problemOf(HttpAnswer answer) {
        if (answer.isJson()) {
            try {
                return Json.parseObject(answer.body);
            } catch (Json.MalformedJsonException notJson) {
                // fall through: keep the start of the body as the detail
            }
        }
        Map<String, Object> problem = new LinkedHashMap<String, Object>();
        String body = answer.body == null ? "" : answer.body;
        problem.put("detail", body.length() > 200 ? body.substring(0, 200) : body);
        return problem;
    }
}

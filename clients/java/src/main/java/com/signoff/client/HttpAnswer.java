package com.signoff.client;

import java.util.Locale;

/** One HTTP answer: status, the two headers the client reads, and the body text. */
final class HttpAnswer {
    final int status;
    final String contentType;
    final String retryAfter;
    final String body;

    HttpAnswer(int status, String contentType, String retryAfter, String body) {
        this.status = status;
        this.contentType = contentType;
        this.retryAfter = retryAfter;
        this.body = body;
    }

    boolean isSuccess() {
        return status >= 200 && status < 300;
    }

    /** application/json or any +json type such as application/problem+json. */
    boolean isJson() {
        if (contentType == null) {
            return false;
        }
        String type = contentType.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
        return type.equals("application/json") || type.endsWith("+json");
    }
}

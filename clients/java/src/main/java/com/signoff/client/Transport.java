package com.signoff.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;

/**
 * HTTP over {@link HttpURLConnection} with the retry rules of {@link RetryPolicy}.
 *
 * <p>A request that got no answer may still have been processed, so only reads and requests
 * with an Idempotency-Key are sent again, with the very same key and body; the server answers
 * a repeated key with the first decision ({@code duplicate: true}).
 */
final class Transport {
    static final int MAX_BODY_BYTES = 8 * 1024 * 1024;
    private static final String USER_AGENT = "signoff-java-client/0.1";

    private final String baseUrl;
    private final TokenSource tokens;
    private final int connectTimeoutMillis;
    private final int readTimeoutMillis;
    private final RetryPolicy policy;
    private final Sleeper sleeper;
    private final Clock clock;

    Transport(String baseUrl, TokenSource tokens, int connectTimeoutMillis, int readTimeoutMillis,
            RetryPolicy policy, Sleeper sleeper, Clock clock) {
        this.baseUrl = baseUrl.endsWith("/") ? baseUrl.substring(0, baseUrl.length() - 1) : baseUrl;
        this.tokens = tokens;
        this.connectTimeoutMillis = connectTimeoutMillis;
        this.readTimeoutMillis = readTimeoutMillis;
        this.policy = policy;
        this.sleeper = sleeper;
        this.clock = clock;
    }

    /** A successful answer, or the typed exception of the last failure once retries are spent. */
    HttpAnswer exchange(String method, String path, String jsonBody, String idempotencyKey) {
        boolean retryable = "GET".equals(method) || idempotencyKey != null;
        for (int failed = 1; ; failed++) {
            HttpAnswer answer;
            try {
                answer = once(method, path, jsonBody, idempotencyKey);
            } catch (IOException noAnswer) {
                long delay = retryable ? policy.delayMillis(failed, 0) : -1;
                if (delay < 0) {
                    throw Problems.of(0, Problems.NO_ANSWER, "no answer to " + method + " "
                            + path + " after " + failed + " attempt(s): " + noAnswer,
                            null, idempotencyKey, noAnswer);
                }
                pause(delay, idempotencyKey);
                continue;
            }
            if (answer.isSuccess()) {
                return answer;
            }
            SignoffException refusal = Problems.fromAnswer(answer, idempotencyKey);
            long delay = retryable && isTransient(answer, refusal)
                    ? policy.delayMillis(failed, retryAfterMillis(answer.retryAfter))
                    : -1;
            if (delay < 0) {
                throw refusal;
            }
            pause(delay, idempotencyKey);
        }
    }

    /** One request and its whole answer; IOException means no (complete) answer came. */
    HttpAnswer once(String method, String path, String jsonBody, String idempotencyKey)
            throws IOException {
        HttpURLConnection http = (HttpURLConnection) new URL(baseUrl + path).openConnection();
        try {
            http.setRequestMethod(method);
            http.setConnectTimeout(connectTimeoutMillis);
            http.setReadTimeout(readTimeoutMillis);
            http.setUseCaches(false);
            http.setInstanceFollowRedirects(false);
            http.setRequestProperty("Accept", "application/json, application/problem+json");
            http.setRequestProperty("User-Agent", USER_AGENT);
            http.setRequestProperty("Authorization", "Bearer " + bearerToken());
            if (idempotencyKey != null) {
                http.setRequestProperty("Idempotency-Key", idempotencyKey);
            }
            if (jsonBody != null) {
                byte[] bytes = jsonBody.getBytes(StandardCharsets.UTF_8);
                http.setDoOutput(true);
                // Streaming mode also stops HttpURLConnection from silently re-sending a POST
                // whose answer timed out: every retry is this class's, counted and backed off.
                http.setFixedLengthStreamingMode(bytes.length);
                http.setRequestProperty("Content-Type", "application/json");
                OutputStream out = http.getOutputStream();
                try {
                    out.write(bytes);
                } finally {
                    out.close();
                }
            }
            int status = http.getResponseCode();
            InputStream in = status >= 400 ? http.getErrorStream() : http.getInputStream();
            String body = in == null ? "" : readAll(in);
            return new HttpAnswer(status, http.getContentType(),
                    http.getHeaderField("Retry-After"), body);
        } finally {
            http.disconnect();
        }
    }

    private String bearerToken() {
        String token = tokens.bearerToken();
        if (token == null || token.isEmpty() || token.indexOf('\r') >= 0
                || token.indexOf('\n') >= 0) {
            throw new IllegalStateException("the TokenSource gave no usable bearer token");
        }
        return token;
    }

    private static boolean isTransient(HttpAnswer answer, SignoffException refusal) {
        if (answer.status == 502 || answer.status == 503 || answer.status == 504) {
            return true;
        }
        return answer.status == 409 && Problems.KEY_IN_FLIGHT.equals(refusal.getCode());
    }

    /** Retry-After as delta-seconds or an HTTP-date; 0 when absent or unreadable. */
    long retryAfterMillis(String retryAfter) {
        if (retryAfter == null || retryAfter.trim().isEmpty()) {
            return 0;
        }
        String value = retryAfter.trim();
        try {
            return Math.max(0, Long.parseLong(value)) * 1000L;
        } catch (NumberFormatException notSeconds) {
            try {
                ZonedDateTime at = ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME);
                return Math.max(0, at.toInstant().toEpochMilli() - clock.millis());
            } catch (DateTimeParseException notDate) {
                return 0;
            }
        }
    }

    private void pause(long millis, String idempotencyKey) {
        try {
            sleeper.sleep(millis);
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            throw Problems.of(0, Problems.NO_ANSWER, "interrupted while waiting to retry",
                    null, idempotencyKey, interrupted);
        }
    }

    private static String readAll(InputStream in) throws IOException {
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buffer = new byte[8192];
            int n;
            while ((n = in.read(buffer)) != -1) {
                if (out.size() + n > MAX_BODY_BYTES) {
                    throw new IOException("answer larger than " + MAX_BODY_BYTES + " bytes");
                }
                out.write(buffer, 0, n);
            }
            return new String(out.toByteArray(), StandardCharsets.UTF_8);
        } finally {
            in.close();
        }
    }
}

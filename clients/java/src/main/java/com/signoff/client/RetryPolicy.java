package com.signoff.client;

/**
 * How often and how long the client asks again after a timeout, a lost connection, a 502/503/504
 * or a 409 {@code idempotency_key_in_flight}. Only reads and requests that carry an
 * Idempotency-Key are retried, always with the same key.
 *
 * <p>The wait before attempt {@code n + 1} is {@code initialBackoff * 2^(n - 1)}, capped at
 * {@code maxBackoff}, and never shorter than the server's {@code Retry-After}. When the server
 * asks for a longer wait than {@code maxBackoff}, the client stops and throws instead of
 * asking early.
 */
public final class RetryPolicy {
    private final int maxAttempts;
    private final long initialBackoffMillis;
    private final long maxBackoffMillis;

    private RetryPolicy(int maxAttempts, long initialBackoffMillis, long maxBackoffMillis) {
        if (maxAttempts < 1 || initialBackoffMillis < 0 || maxBackoffMillis < initialBackoffMillis) {
            throw new IllegalArgumentException(
                    "need maxAttempts >= 1 and 0 <= initialBackoff <= maxBackoff");
        }
        this.maxAttempts = maxAttempts;
        this.initialBackoffMillis = initialBackoffMillis;
        this.maxBackoffMillis = maxBackoffMillis;
    }

    /** Four attempts, waiting 250 ms, 500 ms, 1 s (or what Retry-After asks, up to 8 s). */
    public static RetryPolicy defaults() {
        return new RetryPolicy(4, 250, 8000);
    }

    /** One attempt: every failure is thrown at once. */
    public static RetryPolicy none() {
        return new RetryPolicy(1, 0, 0);
    }

    public static RetryPolicy of(int maxAttempts, long initialBackoffMillis, long maxBackoffMillis) {
        return new RetryPolicy(maxAttempts, initialBackoffMillis, maxBackoffMillis);
    }

    public int getMaxAttempts() {
        return maxAttempts;
    }

    /**
     * Milliseconds to wait after {@code failedAttempts} failed attempts, or -1 to stop.
     *
     * @param retryAfterMillis what the server's Retry-After asked for (0 when absent)
     */
    public long delayMillis(int failedAttempts, long retryAfterMillis) {
        if (failedAttempts >= maxAttempts) {
            return -1;
        }
        long backoff = initialBackoffMillis;
        for (int i = 1; i < failedAttempts && backoff < maxBackoffMillis; i++) {
            backoff *= 2;
        }
        long delay = Math.max(Math.min(backoff, maxBackoffMillis), retryAfterMillis);
        return delay > maxBackoffMillis ? -1 : delay;
    }
}

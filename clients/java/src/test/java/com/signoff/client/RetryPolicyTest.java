package com.signoff.client;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;

/** Exponential backoff, Retry-After honoured, and where the client gives up. */
public final class RetryPolicyTest {
    public void testBackoffDoublesUntilTheAttemptsAreSpent() {
        RetryPolicy policy = RetryPolicy.defaults();
        Check.equal(250L, policy.delayMillis(1, 0));
        Check.equal(500L, policy.delayMillis(2, 0));
        Check.equal(1000L, policy.delayMillis(3, 0));
        Check.equal(-1L, policy.delayMillis(4, 0));
        Check.equal(-1L, RetryPolicy.none().delayMillis(1, 0));
    }

    public void testRetryAfterIsAFloorAndTooLongAWaitStops() {
        RetryPolicy policy = RetryPolicy.of(5, 100, 8000);
        Check.equal(2000L, policy.delayMillis(1, 2000));
        Check.equal(800L, policy.delayMillis(4, 0));
        Check.equal(-1L, policy.delayMillis(1, 9000));
        Check.equal(8000L, RetryPolicy.of(10, 1000, 8000).delayMillis(9, 0));
    }

    public void testRetryAfterIsReadAsSecondsOrAnHttpDate() {
        Clock clock = Clock.fixed(Instant.parse("2026-11-01T10:00:00Z"), ZoneOffset.UTC);
        Transport transport = new Transport("http://127.0.0.1:1", new TokenSource() {
            @Override
            public String bearerToken() {
                return "t";
            }
        }, 1000, 1000, RetryPolicy.defaults(), Sleeper.SYSTEM, clock);
        Check.equal(2000L, transport.retryAfterMillis("2"));
        Check.equal(3000L, transport.retryAfterMillis("Sun, 01 Nov 2026 10:00:03 GMT"));
        Check.equal(0L, transport.retryAfterMillis("Sun, 01 Nov 2026 09:00:00 GMT"));
        Check.equal(0L, transport.retryAfterMillis("soon"));
        Check.equal(0L, transport.retryAfterMillis(null));
    }
}

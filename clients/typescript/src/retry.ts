/**
 * When the client asks again, the same rules as the Java client's `RetryPolicy`: only reads and
 * requests that carry an Idempotency-Key are sent again, always with the same key and body,
 * after no answer (a timeout, a refused or reset connection), 502/503/504, or 409
 * `idempotency_key_in_flight`. The wait before attempt n+1 is `initialBackoffMs * 2^(n-1)`,
 * capped at `maxBackoffMs`, and never shorter than the server's `Retry-After`; a `Retry-After`
 * longer than `maxBackoffMs` is thrown rather than asked early.
 */
export interface RetryPolicyOptions {
  /** Attempts in all, the first included (>= 1). Default 4. */
  maxAttempts?: number;
  /** The first wait. Default 250 ms. */
  initialBackoffMs?: number;
  /** The longest wait, and the longest Retry-After honoured. Default 8000 ms. */
  maxBackoffMs?: number;
}

export class RetryPolicy {
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;

  constructor(options: RetryPolicyOptions = {}) {
    const { maxAttempts = 4, initialBackoffMs = 250, maxBackoffMs = 8000 } = options;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || !(initialBackoffMs >= 0) || !(maxBackoffMs >= initialBackoffMs)) {
      throw new RangeError("need maxAttempts >= 1 and 0 <= initialBackoffMs <= maxBackoffMs");
    }
    this.maxAttempts = maxAttempts;
    this.initialBackoffMs = initialBackoffMs;
    this.maxBackoffMs = maxBackoffMs;
  }

  /** Four attempts, waiting 250 ms, 500 ms, 1 s (or what Retry-After asks, up to 8 s). */
  static defaults(): RetryPolicy {
    return new RetryPolicy();
  }

  /** One attempt: every failure is thrown at once. */
  static none(): RetryPolicy {
    return new RetryPolicy({ maxAttempts: 1, initialBackoffMs: 0, maxBackoffMs: 0 });
  }

  /**
   * Milliseconds to wait after `failedAttempts` failed attempts, or `undefined` to stop.
   * `retryAfterMs` is what the server's Retry-After asked for (0 when absent).
   */
  delayMs(failedAttempts: number, retryAfterMs = 0): number | undefined {
    if (failedAttempts >= this.maxAttempts) return undefined;
    const backoff = Math.min(this.initialBackoffMs * 2 ** Math.max(0, failedAttempts - 1), this.maxBackoffMs);
    const delay = Math.max(backoff, retryAfterMs);
    return delay > this.maxBackoffMs ? undefined : delay;
  }
}

/** Retry-After as delta-seconds or an HTTP-date, in ms from `nowMs`; 0 when absent or unreadable. */
export function retryAfterMs(header: string | null | undefined, nowMs: number): number {
  const value = header?.trim();
  if (!value) return 0;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // An IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"); Date.parse reads it.
  if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(value)) return 0;
  const at = Date.parse(value);
  return Number.isNaN(at) ? 0 : Math.max(0, at - nowMs);
}

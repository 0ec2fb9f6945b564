import type { Clock } from '../src/core/shared/clock';

export interface RateLimitConfig {
  requestsPerSecond: number;
  /** Bucket size: how many requests may arrive at once. Defaults to one second's worth. */
  burst?: number | undefined;
}

/**
 * A token bucket per credential, on the sandbox clock: a test with a manual clock sees 429 until
 * it advances time, and a benchmark on the system clock sees a steady rate.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; updated: number }>();

  constructor(private readonly clock: Clock) {}

  /** Takes one token, or says how many whole seconds (at least 1) to wait for the next. */
  take(credential: string, config: RateLimitConfig): { ok: true } | { ok: false; retryAfterSeconds: number } {
    const now = this.clock.now();
    const capacity = config.burst ?? config.requestsPerSecond;
    const bucket = this.buckets.get(credential) ?? { tokens: capacity, updated: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.updated) / 1000) * config.requestsPerSecond);
    bucket.updated = now;
    this.buckets.set(credential, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / config.requestsPerSecond)) };
  }

  reset(): void {
    this.buckets.clear();
  }
}

import { type AccountingApiError, ConnectionError, RateLimitError, ServerError, TimeoutError } from './errors';

/**
 * The one retry policy of the client: jittered exponential backoff that honours `Retry-After`,
 * bounded both in attempts and in total time (a Lambda has a deadline; a retry that cannot finish
 * inside the budget is not started).
 */
export interface RetryPolicy {
  /** Attempts in all, the first one included. 1 disables retries. */
  maxAttempts: number;
  /** No retry starts (no sleep begins) that would end later than this after the first attempt. */
  maxElapsedMs: number;
  /** Backoff before the first retry, doubled for each further one, capped at `maxDelayMs`. */
  initialDelayMs: number;
  maxDelayMs: number;
}

export const defaultRetryPolicy: RetryPolicy = {
  maxAttempts: 4,
  maxElapsedMs: 60_000,
  initialDelayMs: 500,
  maxDelayMs: 8_000,
};

/**
 * How safe it is to send an operation again when we do not know whether it was processed.
 * - `idempotent`: repeating has the same effect (GET; token verify, expire and retrieve; key
 *   revoke): retried on 429, 5xx, connection failures and timeouts;
 * - `unsafe`: a repeat could act twice (user create, token refresh, key create): retried only on
 *   429 and on a connection that was never made. Never after an ambiguous failure: the error is
 *   raised with `ambiguous: true` and the caller reconciles.
 */
export type RetrySafety = 'idempotent' | 'unsafe';

export function isRetryable(error: AccountingApiError, safety: RetrySafety): boolean {
  if (error instanceof RateLimitError) return true;
  if (error instanceof ConnectionError && !error.ambiguous) return true;
  if (safety === 'unsafe') return false;
  return error instanceof ServerError || error instanceof ConnectionError || error instanceof TimeoutError;
}

/** Exponential backoff with "equal jitter": half fixed, half random, so retries spread out. */
export function backoffMs(retry: number, policy: RetryPolicy, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (retry - 1));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

/**
 * How long to wait before attempt `attempt + 1`, or undefined to give up and raise `error`.
 * `Retry-After` is honoured as sent (not capped): when it does not fit in the time budget the
 * client gives up at once instead of sleeping past its deadline.
 */
export function retryDelayMs(
  error: AccountingApiError,
  context: { safety: RetrySafety; attempt: number; elapsedMs: number; policy: RetryPolicy; random: () => number },
): number | undefined {
  const { safety, attempt, elapsedMs, policy, random } = context;
  if (attempt >= policy.maxAttempts || !isRetryable(error, safety)) return undefined;
  const delay = error.retryAfterMs ?? backoffMs(attempt, policy, random);
  return elapsedMs + delay > policy.maxElapsedMs ? undefined : delay;
}

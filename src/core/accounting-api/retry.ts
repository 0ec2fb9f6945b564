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
  /**
   * The longest single wait a service's `Retry-After` may ask for; a longer one is not waited for
   * (the request fails at once, `retry_after_cap`). Unset: no cap of its own, `maxElapsedMs` decides.
   * The CLI sets it (`--max-retry-wait`) with an unbounded `maxElapsedMs`: a person can wait for a
   * per-minute rate limit, and Ctrl-C stops the wait.
   */
  maxRetryAfterMs?: number;
  /**
   * A point in time (the client's clock) that no wait may end after: a Lambda's end of invocation,
   * less what it needs to report. Unset: none.
   */
  deadlineAt?: number;
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
 * Neither is retried after a `final` ConnectionError (a TLS handshake refused, a URL refused
 * before connecting): the same certificate, listener or URL answers the same way, and the backoff only delays the error.
 */
export type RetrySafety = 'idempotent' | 'unsafe';

export function isRetryable(error: AccountingApiError, safety: RetrySafety): boolean {
  if (error instanceof ConnectionError && error.final) return false;
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

/** Why no further attempt was made. */
export type GiveUpReason = 'not_retryable' | 'attempts' | 'budget' | 'retry_after_cap' | 'deadline';

export type RetryDecision = { delayMs: number } | { giveUp: GiveUpReason };

export interface RetryContext {
  safety: RetrySafety;
  attempt: number;
  elapsedMs: number;
  policy: RetryPolicy;
  random: () => number;
  /** The clock's now; needed only with `policy.deadlineAt`. */
  now?: number;
}

/**
 * Whether to wait and send attempt `attempt + 1`, and for how long. `Retry-After` is honoured as
 * sent, never shortened (an earlier repeat would only be refused again): when it exceeds
 * `maxRetryAfterMs`, or does not fit in the time budget or before the deadline, the client gives
 * up at once instead of sleeping past them.
 */
export function retryDecision(error: AccountingApiError, context: RetryContext): RetryDecision {
  const { safety, attempt, elapsedMs, policy, random } = context;
  if (!isRetryable(error, safety)) return { giveUp: 'not_retryable' };
  if (attempt >= policy.maxAttempts) return { giveUp: 'attempts' };
  const asked = error.retryAfterMs;
  if (asked !== undefined && policy.maxRetryAfterMs !== undefined && asked > policy.maxRetryAfterMs) return { giveUp: 'retry_after_cap' };
  const delay = asked ?? backoffMs(attempt, policy, random);
  if (policy.deadlineAt !== undefined && (context.now ?? 0) + delay > policy.deadlineAt) return { giveUp: 'deadline' };
  if (elapsedMs + delay > policy.maxElapsedMs) return { giveUp: 'budget' };
  return { delayMs: delay };
}

/** How long to wait before attempt `attempt + 1`, or undefined to give up and raise `error` (retryDecision). */
export function retryDelayMs(error: AccountingApiError, context: RetryContext): number | undefined {
  const decision = retryDecision(error, context);
  return 'delayMs' in decision ? decision.delayMs : undefined;
}

/** What the client did about a failed request before raising its error. */
export interface RetryRecord {
  /** Attempts after the first (a re-read credential is not one). */
  retries: number;
  /** Why it stopped. */
  gaveUp: GiveUpReason;
  /** The last `Retry-After` the service sent, if any. */
  retryAfterMs: number | undefined;
  /** The policy's `maxRetryAfterMs` (what `retry_after_cap` exceeded). */
  maxRetryAfterMs: number | undefined;
}

// Beside the error, not on it: errors.ts is the error classes' module; this is the retry loop's fact.
const records = new WeakMap<object, RetryRecord>();

/** Called by the request engine as it raises an error it may have retried. */
export function recordRetries(error: AccountingApiError, record: RetryRecord): void {
  records.set(error, record);
}

/** What the client did before raising `error`: undefined for an error that did not come out of its retry loop. */
export function retryRecordOf(error: unknown): RetryRecord | undefined {
  return typeof error === 'object' && error !== null ? records.get(error) : undefined;
}

import { jwtExpiry, timestampMillis } from '../accounting-api';

export { jwtExpiry };

/**
 * When a newly issued access token expires, in this order of preference (docs/tokens.md,
 * "Access-token expiry"):
 * 1. the JWT's `exp` claim: the very value the service checks, read without verifying the
 *    signature (we only schedule by it; the service decides validity);
 * 2. what the reply states, the earliest of all it states (a reply that says two things is read
 *    conservatively): an absolute time (`accessTokenExpiresAt`, `expiresAt`, `expires_at`,
 *    `accessExpires`; ISO 8601 with an offset, or epoch seconds or milliseconds) or a lifetime in
 *    seconds (`expiresIn`, `expires_in`, `accessTokenExpiresIn`), counted from `issuedAt`;
 * 3. `issuedAt` plus the configured lifetime (the spec's "usually 30 minutes"; a stage setting).
 *
 * `issuedAt` is the moment the request was sent, not when the answer came: counting from the
 * earlier time errs towards refreshing too early, never too late.
 */

export type ExpirySource = 'jwt' | 'expires_at' | 'expires_in' | 'lifetime';

export interface ExpiryInput {
  accessToken: string;
  /** Seconds, as the service's response gives it; null or absent when it gives none (an opaque token). */
  expiresIn?: number | null | undefined;
  /** The reply's other fields, as the client keeps them (tolerant reader). */
  [field: string]: unknown;
}

/** Reply fields that state when the access token dies. */
export const ABSOLUTE_EXPIRY_FIELDS = ['accessTokenExpiresAt', 'expiresAt', 'expires_at', 'accessExpires'] as const;
/** Reply fields that state how long the access token lives, in seconds. */
export const RELATIVE_EXPIRY_FIELDS = ['expiresIn', 'expires_in', 'accessTokenExpiresIn'] as const;

export function accessTokenExpiry(pair: ExpiryInput, issuedAt: number, lifetimeMs: number): { expiresAt: number; source: ExpirySource } {
  const exp = jwtExpiry(pair.accessToken);
  if (exp !== undefined) return { expiresAt: exp, source: 'jwt' };
  let best: { expiresAt: number; source: ExpirySource } | undefined;
  const consider = (expiresAt: number | undefined, source: ExpirySource) => {
    // A stated time at or before the request is unreadable (or another clock), not "dead already".
    if (expiresAt !== undefined && expiresAt > issuedAt && (best === undefined || expiresAt < best.expiresAt)) best = { expiresAt, source };
  };
  for (const field of ABSOLUTE_EXPIRY_FIELDS) consider(absoluteMillis(pair[field]), 'expires_at');
  for (const field of RELATIVE_EXPIRY_FIELDS) {
    const seconds = secondsOf(pair[field]);
    consider(seconds === undefined ? undefined : issuedAt + Math.round(seconds * 1000), 'expires_in');
  }
  return best ?? { expiresAt: issuedAt + lifetimeMs, source: 'lifetime' };
}

/** An ISO 8601 timestamp with an offset, or epoch seconds (below 1e11) or milliseconds. */
function absoluteMillis(value: unknown): number | undefined {
  if (typeof value === 'string') return timestampMillis(value.trim());
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return undefined;
  const ms = Math.floor(value < 1e11 ? value * 1000 : value);
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** Positive seconds, as a number or a numeric string. */
function secondsOf(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) && n > 0 && n < 1e9 ? n : undefined;
}

/**
 * When a newly issued access token expires, in this order of preference (docs/assumptions.md,
 * "Institution operations"):
 * 1. the JWT's `exp` claim: the service's own statement, read without verifying the signature
 *    (we only schedule by it; the service decides validity);
 * 2. `expiresIn` of the response, counted from `issuedAt`;
 * 3. `issuedAt` plus the configured lifetime (the spec's "usually 30 minutes").
 *
 * `issuedAt` is the moment the request was sent, not when the answer came: counting from the
 * earlier time errs towards refreshing too early, never too late.
 */

export type ExpirySource = 'jwt' | 'expires_in' | 'lifetime';

export interface ExpiryInput {
  accessToken: string;
  /** Seconds, as the service's response gives it; null or absent when it gives none (an opaque token). */
  expiresIn?: number | null | undefined;
}

export function accessTokenExpiry(pair: ExpiryInput, issuedAt: number, lifetimeMs: number): { expiresAt: number; source: ExpirySource } {
  const exp = jwtExpiry(pair.accessToken);
  if (exp !== undefined) return { expiresAt: exp, source: 'jwt' };
  if (typeof pair.expiresIn === 'number' && Number.isFinite(pair.expiresIn) && pair.expiresIn > 0) {
    return { expiresAt: issuedAt + Math.round(pair.expiresIn * 1000), source: 'expires_in' };
  }
  return { expiresAt: issuedAt + lifetimeMs, source: 'lifetime' };
}

/** The `exp` claim in epoch ms, or undefined when the token is not a JWT carrying a usable one. */
export function jwtExpiry(token: string): number | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[1]) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  const exp = (claims as { exp?: unknown } | null)?.exp;
  if (typeof exp !== 'number' || !Number.isFinite(exp) || exp <= 0) return undefined;
  const ms = Math.floor(exp * 1000);
  return Number.isSafeInteger(ms) ? ms : undefined;
}

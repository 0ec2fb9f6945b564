/**
 * The `exp` claim of a JWT in epoch ms, or undefined when the token is not a JWT carrying a usable
 * one. Read without verifying the signature: it only tells when the service will refuse the
 * token, never whether it accepts it.
 */
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

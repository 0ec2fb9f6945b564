import { jwtExpiry } from './jwt';
import { type TokenExpiry, type TokenVerification, timestampSchema, verificationReasonSchema } from './schemas';

/**
 * How the 2xx bodies of verify and expire are read. Spec §4.1 shows neither, so a 2xx means
 * "valid" (verify) or "done" (expire) unless the body carries one of the negative markers below
 * (docs/assumptions.md, "Verify and expire bodies"). The set is closed and small on purpose: a
 * word outside it is not a "no" (`"status": "OK"`, `"ACTIVE"`, `"valid"` stay valid), since
 * guessing at unknown words would make every service's own vocabulary a possible "no".
 *
 * Two kinds of marker:
 * - token state (verify only): a validity flag that is false, a flag named for a dead token that
 *   is true, or a status field naming a dead token's state;
 * - the operation's outcome (both): `success: false`, or a status field saying it failed. On
 *   expire, `expired: false` too.
 *
 * Any marker wins over a positive one in the same body (`valid: true, status: "INVALID"` is
 * invalid): a service that spelled out a "no" meant it, while a "yes" is often a default field,
 * and the cost is lopsided (a valid token read as invalid costs an operator a look or a harmless
 * recover; an invalid one read as valid hides a dead user, an expire read as done leaves a
 * revoked user's tokens working).
 */

/** Validity flags whose `false` (or the string "false") is a "no": ours, RFC 7662's, and the two spellings of "is valid". */
const VALIDITY_FLAGS = ['valid', 'active', 'isValid', 'is_valid'] as const;
/** Flags named for a dead token whose `true` is a "no", and the reason each gives. */
const DEAD_FLAGS = { expired: 'expired', revoked: 'revoked' } as const;
/** The fields that may carry a status word. */
const STATUS_FIELDS = ['status', 'state', 'result', 'token_status', 'tokenStatus'] as const;
/** Status words of a token that does not work, and the reason each gives (verify only). */
const DEAD_STATES: Readonly<Record<string, VerificationReason>> = {
  invalid: 'invalid',
  inactive: 'invalid',
  expired: 'expired',
  revoked: 'revoked',
};
/** Status words of an operation that did not happen (verify and expire). */
const FAILED_OUTCOMES: ReadonlySet<string> = new Set(['failed', 'error']);

const REASONS: readonly string[] = ['expired', 'revoked', 'invalid'];
type VerificationReason = 'expired' | 'revoked' | 'invalid';

/**
 * A verify 2xx. An invalid verdict's reason: the body's `reason` when it is one of ours, else the
 * markers' (`expired`, `revoked`), else the body's `reason` as sent, else `invalid`.
 */
export function verdictOf(body: unknown, token: string): TokenVerification {
  const exp = jwtExpiry(token);
  const fromToken = exp === undefined ? null : new Date(exp).toISOString();
  if (!isObject(body)) return { valid: true, expiresAt: fromToken };
  const markers = verifyMarkers(body);
  if (markers.length > 0) {
    const stated = typeof body.reason === 'string' ? verificationReasonSchema.parse(body.reason) : undefined;
    const known = (r: string | undefined): r is VerificationReason => r !== undefined && REASONS.includes(r);
    const reason = known(stated) ? stated : (markers.find((m) => m !== 'invalid') ?? stated ?? 'invalid');
    return { ...body, valid: false, reason };
  }
  const expiresAt = timestampSchema.safeParse(body.expiresAt);
  return { ...body, valid: true, expiresAt: expiresAt.success ? expiresAt.data : fromToken };
}

/** An expire 2xx: done unless `expired: false`, `success: false` or a failed status says otherwise. */
export function expiryOf(body: unknown): TokenExpiry {
  if (!isObject(body)) return { expired: true };
  const declined = saysFalse(body.expired) || saysFalse(body.success) || statusWords(body).some((w) => FAILED_OUTCOMES.has(w));
  return { ...body, expired: !declined };
}

/** The reason of each negative marker of a verify body, in a fixed order; none means valid. */
function verifyMarkers(body: Record<string, unknown>): VerificationReason[] {
  const reasons: VerificationReason[] = [];
  for (const field of VALIDITY_FLAGS) if (saysFalse(body[field])) reasons.push('invalid');
  for (const [field, reason] of Object.entries(DEAD_FLAGS)) if (saysTrue(body[field])) reasons.push(reason);
  if (saysFalse(body.success)) reasons.push('invalid');
  for (const word of statusWords(body)) {
    const reason = DEAD_STATES[word] ?? (FAILED_OUTCOMES.has(word) ? 'invalid' : undefined);
    if (reason !== undefined) reasons.push(reason);
  }
  return reasons;
}

/** The status fields' words, compared without case. */
function statusWords(body: Record<string, unknown>): string[] {
  return STATUS_FIELDS.map((field) => body[field])
    .filter((value): value is string => typeof value === 'string')
    .map((value) => value.trim().toLowerCase());
}

// A flag sent as the string "false" is the same "no" (form-encoded or stringly typed services).
function saysFalse(value: unknown): boolean {
  return value === false || (typeof value === 'string' && value.trim().toLowerCase() === 'false');
}

function saysTrue(value: unknown): boolean {
  return value === true || (typeof value === 'string' && value.trim().toLowerCase() === 'true');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

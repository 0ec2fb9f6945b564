/**
 * Keeps secrets out of logs, errors, events and CLI output.
 *
 * Two layers: values under secret-looking keys are replaced wholesale, and any string that looks
 * like a credential (a JWT, an `Institution` header value, an API key) is cut down to a prefix.
 * Known secret values can also be registered at run time, so that even an unexpected place
 * (an upstream message that echoes a token) is scrubbed.
 */

const SECRET_KEY =
  /(secret|password|passwd|token|apikey|api_key|authorization|institution|credential|refresh|access_?token|signature|^key$)/i;
/**
 * Names the pattern above matches that never hold a secret: ids and names of secrets (an ARN or a
 * name, never a value), counts and class names. Exact names only, and their values still pass
 * through the value layer below (registered secrets, JWTs, keys), so a secret put under one of
 * them by mistake is still cut. A field whose name misleads is renamed rather than added here (the
 * rotation's ClientRequestToken is logged as `versionId`, a finding's `secret` as `secretName`).
 */
const SAFE_KEYS = new Set([
  'keyPrefix',
  'prefix',
  'apiKeyId',
  'tokenExpiresAt',
  'accessTokenExpiresAt',
  'tokenType',
  'refreshedAt',
  // The refresh worker's count of users refreshed, and the refresh's error class on a needs_attention line.
  'refreshed',
  'refreshErrorClass',
  'secretId',
  'secretArn',
  'secretName',
]);

const JWT = /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g;
const BEARER = /(Bearer\s+)([^\s"',]+)/gi;

/**
 * Whether the word after "Bearer" can be a credential. A plain lowercase word of prose ("the bearer
 * token expired") is left alone; anything with a digit, an underscore, a capital or punctuation,
 * or 16 characters or more, is cut. The spec's keys carry an underscore after their prefix.
 */
function bearerValue(_match: string, head: string, value: string): string {
  if (value.length < 16 && /^[a-z]+[.;:!?)]?$/.test(value)) return head + value;
  return `${head}[REDACTED]`;
}

/**
 * The registered secrets, least recently registered first. Bounded: a warm refresh worker registers
 * two new tokens per refresh, and an unbounded set grew its memory and the cost of every log line
 * without end. Every credential is registered again each time a request uses it (authHeader), so
 * the ones in use stay; a token evicted here was last used hundreds of registrations ago, and the
 * JWT and key patterns below still cut it down to a prefix.
 */
const registered = new Map<string, true>();
export const MAX_REGISTERED_SECRETS = 512;

/**
 * Shapes a value the service returns must not have to be registered: blanking them would hide
 * ordinary text (ids, dates, numbers, addresses) from every log line, and a hostile or broken
 * service could use that to blank what it likes.
 */
const COMMON_SHAPES = [
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/,
  /^[+-]?[\d.,_]+$/,
  /^[a-z][a-z0-9+.-]*:\/\//i,
  /^[^@\s]+@[^@\s]+$/,
];

/**
 * Whether a value the service returned is credential-like enough to register: at least 16
 * characters, no whitespace, at least 8 distinct characters, digits or mixed case (a plain word or
 * phrase is not a token), and none of the common shapes above.
 */
export function isRegistrableServiceSecret(value: string): boolean {
  if (value.length < 16 || /\s/.test(value)) return false;
  if (new Set(value).size < 8) return false;
  if (!/\d/.test(value) && !(/[a-z]/.test(value) && /[A-Z]/.test(value))) return false;
  return !COMMON_SHAPES.some((shape) => shape.test(value));
}

/**
 * Registers a secret value so that every later `redactString` removes it. `from: 'service'` marks a
 * value the service returned (a token pair, a new key): it must also pass isRegistrableServiceSecret.
 * Values we hold ourselves (the institution secret, a configured key) need only 8 characters.
 */
export function registerSecret(value: string | undefined | null, options: { from?: 'service' } = {}): void {
  if (!value || value.length < 8) return;
  if (options.from === 'service' && !isRegistrableServiceSecret(value)) return;
  registered.delete(value);
  registered.set(value, true);
  if (registered.size > MAX_REGISTERED_SECRETS) registered.delete(registered.keys().next().value!);
}

/** How many secrets are registered now (bounded by MAX_REGISTERED_SECRETS). */
export function registeredSecretCount(): number {
  return registered.size;
}

export function forgetRegisteredSecrets(): void {
  registered.clear();
}

/** The loggable part of an API key: its service prefix and the first 8 characters after it. */
export function keyPrefix(apiKey: string): string {
  const underscore = apiKey.indexOf('_');
  if (underscore <= 0) return '[REDACTED]';
  return apiKey.slice(0, Math.min(apiKey.length, underscore + 1 + 8));
}

export function redactString(input: string): string {
  let out = input;
  for (const secret of registered.keys()) {
    if (out.includes(secret)) out = out.split(secret).join('[REDACTED]');
  }
  return out.replace(JWT, '[REDACTED_JWT]').replace(BEARER, bearerValue);
}

/** Deep copy with secrets removed. Safe on cycles, Errors, Maps and bigints. */
export function redact(value: unknown, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return redactString(value);
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[Circular]';
  seen.add(value);
  if (value instanceof Error) {
    const out: Record<string, unknown> = { name: value.name, message: redactString(value.message) };
    for (const [k, v] of Object.entries(value)) out[k] = redactEntry(k, v, seen);
    if (value.cause !== undefined) out.cause = redact(value.cause, seen);
    return out;
  }
  if (Array.isArray(value)) return value.map((v) => redact(v, seen));
  if (value instanceof Map) return redact(Object.fromEntries(value), seen);
  if (value instanceof Date) return value.toISOString();
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = redactEntry(k, v, seen);
  return out;
}

function redactEntry(key: string, value: unknown, seen: WeakSet<object>): unknown {
  if (!SAFE_KEYS.has(key) && SECRET_KEY.test(key) && (typeof value === 'string' || typeof value === 'number')) {
    return '[REDACTED]';
  }
  return redact(value, seen);
}

/**
 * Keeps secrets out of logs, errors, events and CLI output.
 *
 * Two layers: values under secret-looking keys are replaced wholesale, and any string that looks
 * like a credential is cut: a JWT and the word after `Bearer` are replaced, an API key (`hasKeyShape`)
 * is cut down to its prefix. Known secret values (the institution secret, every key and token in
 * use) are registered at run time, so that even an unexpected place (an upstream message that
 * echoes a token) is scrubbed of them whatever their shape.
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

/**
 * A run that could be an API key: letters and digits, an underscore, then letters, digits, `_` and
 * `-` (spec §5.1.1 fixes only "a fixed service prefix followed by an underscore"; the sandbox's
 * `sbx_<32 base62>` and `sk_live_<…>` are two of the shapes it allows). It starts after anything
 * but a letter, digit or underscore, so a key glued to a dash (`x-sbx_…`) is found, and a word's
 * middle is not a start. One underscore at most is required and every quantifier is followed by a
 * character it cannot take, so the scan is linear in the text.
 */
const KEY_CANDIDATE = /(?<![A-Za-z0-9_])[A-Za-z0-9]+_[A-Za-z0-9_-]+/g;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * Whether the part after a candidate's first underscore is random enough to be a key's rest rather
 * than an identifier: 20 letters and digits or more, with one run of them (between `_` and `-`)
 * that looks drawn at random: 8 or more that mix digits with at least 4 letters, or 16 or more
 * letters a third or more of each case (base62, base64url, hex and base32 keys are one or the
 * other but for about one draw in 5,000). What stays readable: words in any case
 * (`company_access_removed`, `secrets_manager_AccessDeniedException`), codes of words and short
 * parts (`ERR_SSL_TLSV1_ALERT_UNKNOWN_CA`), stamps (`ACCTOPS_GIVEN_UP_20261102T090000Z`), and ids made
 * of a prefix and a UUID (`req_<uuid>`). A key of another shape is still cut when it is registered,
 * which every key acctops holds is, at each use.
 */
function isKeyRest(rest: string): boolean {
  if (rest.replace(/[^A-Za-z0-9]/g, '').length < 20) return false;
  return rest
    .replace(UUID, '')
    .split(/[_-]/)
    .some((run) => {
      const letters = run.replace(/[^A-Za-z]/g, '').length;
      if (run.length >= 8 && letters >= 4 && /\d/.test(run)) return true;
      const upper = run.replace(/[^A-Z]/g, '').length;
      return run.length >= 16 && upper * 3 >= run.length && (letters - upper) * 3 >= run.length;
    });
}

function cutKey(candidate: string): string {
  const rest = candidate.slice(candidate.indexOf('_') + 1);
  return isKeyRest(rest) ? `${keyPrefix(candidate)}…[REDACTED]` : candidate;
}

/** Whether `text` holds a run shaped like an API key (the rule redactString cuts by). */
export function hasKeyShape(text: string): boolean {
  return cutKeys(text) !== text;
}

function cutKeys(text: string): string {
  return text.includes('_') ? text.replace(KEY_CANDIDATE, cutKey) : text;
}

export function redactString(input: string): string {
  let out = input;
  for (const secret of registered.keys()) {
    if (out.includes(secret)) out = out.split(secret).join('[REDACTED]');
  }
  return cutKeys(out.replace(JWT, '[REDACTED_JWT]').replace(BEARER, bearerValue));
}

/** Whether redactString would change `text`: it holds a registered secret, a JWT, a bearer value or a key. */
export function hasSecretShape(text: string): boolean {
  return redactString(text) !== text;
}

/**
 * A value from outside (the service's error code, an event's field name) shown or stored as it is
 * only when it is a short identifier: a letter, then letters, digits and `_ . : -`, at most 64 in
 * all, no run of 20 letters and digits (a key's rest without its prefix, a JWT's part) and no key's
 * shape. It does not depend on what is registered, so a stored record's code reads the same in
 * every process. Anything else is replaced or left out by the caller.
 */
export function isShortIdentifier(value: string): boolean {
  return /^[A-Za-z][A-Za-z0-9_.:-]{0,63}$/.test(value) && !/[A-Za-z0-9]{20}/.test(value) && !hasKeyShape(value);
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
  // A name is cut only by the key rule: names come from code but for a raw input logged whole.
  for (const [k, v] of Object.entries(value)) out[cutKeys(k)] = redactEntry(k, v, seen);
  return out;
}

/**
 * Deep copy with every string value, and every field name shaped like a secret, passed through
 * redactString: the value layer of `redact` without its field-name layer. For an event's detail,
 * whose field names are a contract with its consumers (a rotation finding's `secret` is a secret's
 * name, never a value) and hold no secret by construction, while its values may come from outside
 * (the service's error code and request id).
 */
export function redactValues(value: unknown, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return redactString(value);
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Date) return value;
  if (seen.has(value)) return '[Circular]';
  seen.add(value);
  if (Array.isArray(value)) return value.map((v) => redactValues(v, seen));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[redactString(k)] = redactValues(v, seen);
  return out;
}

function redactEntry(key: string, value: unknown, seen: WeakSet<object>): unknown {
  if (!SAFE_KEYS.has(key) && SECRET_KEY.test(key) && (typeof value === 'string' || typeof value === 'number')) {
    return '[REDACTED]';
  }
  return redact(value, seen);
}

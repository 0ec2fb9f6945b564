/**
 * Keeps secrets out of logs, errors, events and CLI output.
 *
 * Two layers: values under secret-looking keys are replaced wholesale, and any string that looks
 * like a credential (a JWT, an `Institution` header value, an API key) is cut down to a prefix.
 * Known secret values can also be registered at run time, so that even an unexpected place
 * (an upstream message that echoes a token) is scrubbed.
 */

const SECRET_KEY = /(secret|password|passwd|token|apikey|api_key|authorization|institution|credential|refresh|access_?token|signature|^key$)/i;
const SAFE_KEYS = new Set(['keyPrefix', 'prefix', 'apiKeyId', 'tokenExpiresAt', 'accessTokenExpiresAt', 'tokenType', 'refreshedAt']);

const JWT = /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g;
const BEARER = /(Bearer\s+)[^\s"',]+/gi;

const registered = new Set<string>();

/** Registers a secret value so that every later `redactString` removes it. */
export function registerSecret(value: string | undefined | null): void {
  if (value && value.length >= 8) registered.add(value);
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
  for (const secret of registered) {
    if (out.includes(secret)) out = out.split(secret).join('[REDACTED]');
  }
  return out.replace(JWT, '[REDACTED_JWT]').replace(BEARER, '$1[REDACTED]');
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

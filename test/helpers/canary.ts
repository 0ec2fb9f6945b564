import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';

/**
 * The suite's canary credentials and the scanner that proves none of them, and no other credential,
 * ever leaves acctops in a log line, an error, an event, an exported object, CLI output or a
 * snapshot (docs/security.md, "Canary scan").
 *
 * Three kinds of evidence count as a leak:
 * - the canary marker `c4n4ry`, which every canary value carries after the part acctops may log
 *   (a key's prefix is `sbx_` plus 8 characters; the marker comes later, so a logged prefix is fine);
 * - anything shaped like a whole credential the sandbox issues: a JWT (access and refresh tokens)
 *   or a full API key (`sbx_` plus 32 characters);
 * - any exact value a test registered with `trackSecret` (a key the sandbox minted at run time).
 *
 * `test/helpers/canary-setup.ts` (jest `setupFilesAfterEnv`) applies the scanner to every write on
 * stdout and stderr, every console call, every JsonLogger/MemoryLogger line and every event a
 * MemoryEventPublisher receives, in every test file; a hit fails the test that made it. Tests call
 * `expectNoCanaries` on what the global hook cannot see: errors, events of other publishers,
 * exported objects, CLI output captured in memory.
 */

export const CANARY_MARKER = 'c4n4ry';

function digest(label: string): string {
  return createHash('sha256').update(`acctops-canary:${label}`).digest('hex');
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(label: string, length: number): string {
  const bytes = createHash('sha256').update(`acctops-canary-b62:${label}`).digest();
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[bytes[i % bytes.length]! % 62];
  return out;
}

/** A secret value (institution secret, webhook secret, token) carrying the marker. Deterministic per label. */
export function canarySecret(label: string): string {
  return `sk_${CANARY_MARKER}_${label.replace(/[^A-Za-z0-9]/g, '')}_${digest(label).slice(0, 16)}`;
}

/**
 * An API key shaped like the sandbox's (`sbx_` + 32 base62 characters) whose loggable prefix
 * (`sbx_` + 8) holds no marker and whose remainder does.
 */
export function canaryApiKey(label: string): string {
  const body = `${base62(label, 8)}${CANARY_MARKER}${base62(`${label}:tail`, 32)}`.slice(0, 32);
  return `sbx_${body}`;
}

/** An opaque access or refresh token for fake transports (the sandbox's own tokens are JWTs). */
export function canaryToken(label: string): string {
  return `tok_${CANARY_MARKER}_${label.replace(/[^A-Za-z0-9]/g, '')}_${digest(label).slice(0, 24)}`;
}

/** The suite's standard canaries. Any test that needs a credential it may pick should use these. */
export const CANARY = {
  institutionId: 'inst-canary',
  institutionSecret: canarySecret('institution'),
  /** A second institution secret, for "the secret changed mid-run" tests. */
  institutionSecretNext: canarySecret('institution-next'),
  webhookSecret: canarySecret('webhook'),
  webhookSecretPrevious: canarySecret('webhook-previous'),
  apiKey: canaryApiKey('company-a'),
  otherApiKey: canaryApiKey('company-b'),
  accessToken: canaryToken('access'),
  refreshToken: canaryToken('refresh'),
} as const;

export interface CanaryHit {
  kind: 'canary' | 'jwt' | 'api-key' | 'tracked';
  /** Where the text came from (stdout, a log line, an event, an object key). */
  where: string;
  /** The match cut to 6 characters: enough to find it, too little to be the secret. */
  excerpt: string;
}

const PATTERNS: { kind: CanaryHit['kind']; pattern: RegExp }[] = [
  { kind: 'canary', pattern: new RegExp(CANARY_MARKER, 'gi') },
  // Header and payload both start with `{"` in base64url: a real JWT, not the word "eyJ" in prose.
  { kind: 'jwt', pattern: /eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+/g },
  { kind: 'api-key', pattern: /(?<![A-Za-z0-9])sbx_[A-Za-z0-9]{32}(?![A-Za-z0-9])/g },
];

const tracked = new Set<string>();

/** Adds a secret minted at run time (a new API key, a token) to what the scans look for. */
export function trackSecret(value: string | undefined | null): void {
  if (value && value.length >= 8) tracked.add(value);
}

export function trackedSecrets(): ReadonlySet<string> {
  return tracked;
}

function mask(match: string): string {
  return `${match.slice(0, 6)}…(${match.length} chars)`;
}

/** Every canary or credential-shaped string in `text`. */
export function findCanaries(text: string, where = 'text'): CanaryHit[] {
  const hits: CanaryHit[] = [];
  for (const { kind, pattern } of PATTERNS) {
    pattern.lastIndex = 0;
    for (const match of text.matchAll(pattern))
      hits.push({ kind, where, excerpt: kind === 'canary' ? '(the canary marker)' : mask(match[0]) });
  }
  for (const secret of tracked) {
    if (text.includes(secret)) hits.push({ kind: 'tracked', where, excerpt: mask(secret) });
  }
  return hits;
}

/**
 * Text of anything a test can hold: strings, Buffers (gzip is inflated: a JSONL.gz export hides
 * nothing), errors with their cause chain and own properties, arrays, plain objects, bigints.
 */
export function textOf(value: unknown, seen = new WeakSet<object>()): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value !== 'object') return String(value);
  if (seen.has(value)) return '';
  seen.add(value);
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) {
    const buffer = Buffer.from(value);
    if (buffer[0] === 0x1f && buffer[1] === 0x8b) {
      try {
        return gunzipSync(buffer).toString('utf8');
      } catch {
        // A truncated gzip stream: scan what the bytes say as they are.
      }
    }
    return buffer.toString('utf8');
  }
  if (value instanceof Error) {
    const parts = [value.name, value.message, value.stack ?? ''];
    for (const [k, v] of Object.entries(value)) parts.push(k, textOf(v, seen));
    if (value.cause !== undefined) parts.push(textOf(value.cause, seen));
    return parts.join('\n');
  }
  if (value instanceof Map) return textOf([...value.entries()], seen);
  if (value instanceof Set) return textOf([...value], seen);
  if (Array.isArray(value)) return value.map((v) => textOf(v, seen)).join('\n');
  return Object.entries(value)
    .map(([k, v]) => `${k}: ${textOf(v, seen)}`)
    .join('\n');
}

/** A leak: the message names the kind and place of each hit, never the value. */
export class CanaryLeakError extends Error {
  readonly hits: CanaryHit[];

  constructor(hits: CanaryHit[]) {
    const lines = hits.slice(0, 20).map((h) => `  ${h.kind} in ${h.where}: ${h.excerpt}`);
    super(`secret leak: ${hits.length} credential(s) found\n${lines.join('\n')}${hits.length > 20 ? '\n  …' : ''}`);
    this.name = 'CanaryLeakError';
    this.hits = hits;
  }
}

/** Throws CanaryLeakError when `value` (any shape, see textOf) holds a canary or a credential. */
export function expectNoCanaries(value: unknown, where = 'value'): void {
  const hits = findCanaries(textOf(value), where);
  if (hits.length > 0) throw new CanaryLeakError(hits);
}

// ------------------------------------------------------------------ the global hook's record

const recorded: CanaryHit[] = [];

/** Called by the global hook for every captured write, line and event. */
export function recordScan(text: string, where: string): void {
  const hits = findCanaries(text, where);
  if (hits.length > 0) recorded.push(...hits);
}

/** Hits the global hook recorded since the last call, removed from its record. */
export function takeRecordedHits(): CanaryHit[] {
  return recorded.splice(0, recorded.length);
}

import { randomBytes, randomUUID } from 'node:crypto';
import { issuesFromZod } from '../../../src/core/shared/errors';
import {
  forgetRegisteredSecrets,
  hasKeyShape,
  isShortIdentifier,
  redact,
  redactString,
  redactValues,
} from '../../../src/core/shared/redact';
import { isStorableErrorCode } from '../../../src/core/tokens/token-store';
import { z } from 'zod';

/**
 * The one rule for an API key nobody registered (a key the service echoes, one pasted into an
 * event): spec §5.1.1 says only "a fixed service prefix followed by an underscore", so the rule is
 * not the sandbox's `sbx_` but the shape, and it must leave the identifiers our lines are made of
 * readable. Keys here are made at random, never registered.
 */
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
function base62(length: number): string {
  // A digit and both cases guaranteed, so that the draw is never the rare one the rule lets pass.
  const bytes = randomBytes(length);
  return `aZ7${Array.from(bytes.subarray(3), (b) => BASE62[b % 62]).join('')}`;
}

const KEYS: [string, string][] = [
  ['the sandbox shape', `sbx_${base62(32)}`],
  ['a service prefix holding an underscore', `sk_live_${base62(24)}`],
  ['a base64url rest with dashes and underscores', `ak_${base62(10)}-${base62(9)}_${base62(12)}`],
  ['lower-case hex', `key_${randomBytes(16).toString('hex').replace(/^./, 'a').replace(/.$/, '1')}`],
  ['upper-case base32', 'AK_ABCDEFGH23456JKLMNPQRSTUVWXYZ7'],
];

describe('redactor: the API key shape', () => {
  beforeEach(() => forgetRegisteredSecrets());

  it.each(KEYS)('cuts %s to its prefix, wherever it stands', (_label, key) => {
    const rest = key.slice(key.indexOf('_') + 1 + 8);
    for (const text of [key, `code ${key}.`, `"${key}"`, `x-${key}`, `a=${key}&b=1`, `(${key}, on GET /x)`]) {
      const out = redactString(text);
      expect(out).not.toContain(rest);
      expect(out).toContain(`${key.slice(0, key.indexOf('_') + 1 + 8)}…[REDACTED]`);
      expect(hasKeyShape(text)).toBe(true);
    }
  });

  it.each([
    'company_access_removed',
    'token_not_valid write_transactions full_access',
    'secrets_manager_AccessDeniedException',
    'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
    'ACCTOPS_GIVEN_UP_20261102T090000Z',
    `req_${randomUUID()}`,
    `req_${randomBytes(8).toString('hex')}`,
    'sbx_AbCdEfGh…',
    'exports/company=6f1c2a3b-0000-4000-8000-000000000000/period=2026-10/tax_report/run=20261101T090000Z-1a2b3c4d/part-00000.csv',
    'POWERTOOLS_LOGGER_SAMPLE_RATE INSTITUTION_SECRET_ARN',
    'accessTokenExpiresAt transactionsOutsidePeriod',
  ])('leaves %j as it is', (text) => {
    expect(redactString(text)).toBe(text);
    expect(hasKeyShape(text)).toBe(false);
  });

  it('reaches every string of a log entry through redact, and values and key-shaped names through redactValues', () => {
    const key = `sbx_${base62(32)}`;
    const entry = { message: `echoed ${key}`, apiCode: key, nested: [{ requestId: key }], [key]: 1, secret: 'acctops/test/company/x' };
    const logged = JSON.stringify(redact(entry));
    const published = redactValues(entry) as Record<string, unknown>;
    expect(logged).not.toContain(key.slice(12));
    expect(JSON.stringify(published)).not.toContain(key.slice(12));
    // An event's field names are its contract: a finding's `secret` names a secret, and stays.
    expect(published.secret).toBe('acctops/test/company/x');
  });
});

describe('short identifiers (the service error codes we show, the codes a token record keeps)', () => {
  it.each(['user_disabled', 'token_not_valid', 'invalid_grant', 'company_access_removed', 'read_invoices', 'a.b:c-d'])(
    'keeps %j',
    (code) => {
      expect(isShortIdentifier(code)).toBe(true);
      expect(isStorableErrorCode(code)).toBe(true);
    },
  );

  it.each([
    ['a key', `sbx_${base62(32)}`],
    ['a key whose rest is broken by dashes (no run of 20)', `sk_live_${base62(10)}-${base62(10)}`],
    ['a run of 20 letters and digits', base62(20)],
    ['text', 'Bad Request'],
    ['too long', `a${'_b'.repeat(40)}`],
  ])('refuses %s', (_label, code) => {
    expect(isShortIdentifier(code)).toBe(false);
    expect(isStorableErrorCode(code)).toBe(false);
  });
});

describe('validation issues name unknown fields without a key', () => {
  it('cuts a key-shaped unknown field and record key, and hides a name no schema would have', () => {
    const key = `sbx_${base62(32)}`;
    const strict = z.strictObject({ id: z.string(), rates: z.record(z.string(), z.number()) });
    const result = strict.safeParse({ id: 'x', rates: { [key]: 'one' }, [key]: 1, 'a name\nwith a line break': 2, extra_field: 3 });
    const issues = issuesFromZod(result.error!);
    const text = JSON.stringify(issues);
    expect(text).not.toContain(key.slice(12));
    expect(text).toContain(`${key.slice(0, 12)}…[REDACTED]`);
    expect(text).toContain('extra_field');
    expect(text).toContain('[REDACTED]');
    expect(text).not.toContain('line break');
  });
});

import {
  type CompanyKeySecret,
  parseCompanyKeySecret,
  rotationEventSchema,
  rotationKeyName,
  rotationSettings,
  rotationTokenOf,
  samePermissions,
  serializeCompanyKeySecret,
} from '../../../src/core/api-keys';
import { ConfigError, parseWith, ValidationError } from '../../../src/core/shared/errors';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';

const KEY = 'sbx_CanaryKey0123456789abcdefghijklmn';
const SECRET: CompanyKeySecret = {
  apiKey: KEY,
  apiKeyId: '1b4e28ba-2fa1-41d2-883f-0016d3cca427',
  keyPrefix: 'sbx_CanaryKe',
  companyId: '0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d',
  permissions: ['read_transactions', 'manage_api_keys'],
  createdAt: '2026-11-02T09:00:00.000Z',
};

afterEach(() => forgetRegisteredSecrets());

describe('company key secret', () => {
  it('round-trips through its JSON, byte for byte on a repeat (a retried put is the same value)', () => {
    const text = serializeCompanyKeySecret(SECRET);
    expect(parseCompanyKeySecret(text)).toEqual(SECRET);
    expect(serializeCompanyKeySecret(parseCompanyKeySecret(text))).toBe(text);
    expect(Object.keys(JSON.parse(text) as object)).toEqual(['apiKey', 'apiKeyId', 'keyPrefix', 'companyId', 'permissions', 'createdAt']);
  });

  it.each([
    ['apiKey', { apiKey: 'no-underscore-here' }],
    ['apiKeyId', { apiKeyId: 'key-1' }],
    ['keyPrefix', { keyPrefix: 'sbx_Somethin' }],
    ['companyId', { companyId: undefined }],
    ['permissions', { permissions: [] }],
    ['createdAt', { createdAt: '2026-11-02' }],
  ])('names the bad field %s, never the key', (field, change) => {
    const raw = JSON.stringify({ ...SECRET, ...change });
    let error: unknown;
    try {
      parseCompanyKeySecret(raw);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe(field);
    expect((error as Error).message).not.toContain(KEY);
  });

  it('does not quote a broken JSON text', () => {
    const raw = `{"apiKey": "${KEY}", `;
    expect(() => parseCompanyKeySecret(raw)).toThrow(/is not valid JSON/);
    try {
      parseCompanyKeySecret(raw);
    } catch (error) {
      expect(JSON.stringify(error)).not.toContain(KEY);
      expect((error as Error).cause).toBeUndefined();
    }
  });

  it("calls a value that is not JSON at all (the stack's placeholder) a secret with no key yet, naming the install runbook", () => {
    const placeholder = 'Zx9!placeholderRandom#Value$0123';
    let error: unknown;
    try {
      parseCompanyKeySecret(placeholder);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    const message = (error as Error).message;
    expect(message).toMatch(/holds no key yet/);
    expect(message).toContain('`acctops keys install --company <id>`');
    expect(message).toContain('"Install a company API key"');
    expect(message).not.toMatch(/not valid JSON/);
    expect(JSON.stringify(error)).not.toContain('placeholderRandom');
  });

  it('registers the key, even from a secret it refuses, so no later log line can carry it', () => {
    expect(() => parseCompanyKeySecret(JSON.stringify({ ...SECRET, companyId: 'nope' }))).toThrow(ValidationError);
    const logger = new MemoryLogger();
    logger.info(`upstream said: bad key ${KEY}`, { note: `x${KEY}x` });
    expect(logger.lines.join('\n')).not.toContain(KEY);
  });

  it('compares permissions as sets', () => {
    expect(samePermissions(['a', 'b'], ['b', 'a'])).toBe(true);
    expect(samePermissions(['a', 'b'], ['a'])).toBe(false);
    expect(samePermissions(['a'], ['a', 'c'])).toBe(false);
  });
});

describe('rotation settings and names', () => {
  it("defaults the grace period to 30 minutes and refuses one that does not outlast the consumers' cache", () => {
    expect(rotationSettings({ consumerCacheTtlMs: 300_000 }).graceMs).toBe(30 * 60_000);
    expect(() => rotationSettings({ graceMs: 300_000, consumerCacheTtlMs: 300_000 })).toThrow(ConfigError);
    expect(() => rotationSettings({ graceMs: 0, consumerCacheTtlMs: 0 })).toThrow(ConfigError);
    expect(rotationSettings({ graceMs: 300_001, consumerCacheTtlMs: 300_000 }).graceMs).toBe(300_001);
  });

  it('names replacement keys after their rotation token, and reads the token back', () => {
    const token = '00000000-0000-4000-8000-000000000001';
    expect(rotationTokenOf({ name: rotationKeyName(token) })).toBe(token);
    expect(rotationTokenOf({ name: 'bookkeeper' })).toBeUndefined();
  });

  it('parses the Secrets Manager rotation event, naming a bad field', () => {
    const event = {
      SecretId: 'arn:aws:secretsmanager:eu-central-1:000000000000:secret:x',
      ClientRequestToken: '00000000-0000-4000-8000-000000000001',
      Step: 'testSecret',
    };
    expect(parseWith(rotationEventSchema, event, 'event')).toEqual(event);
    expect(() => parseWith(rotationEventSchema, { ...event, Step: 'dropSecret' }, 'event')).toThrow(/Step/);
    expect(() => parseWith(rotationEventSchema, { ...event, ClientRequestToken: 'short' }, 'event')).toThrow(/ClientRequestToken/);
  });
});

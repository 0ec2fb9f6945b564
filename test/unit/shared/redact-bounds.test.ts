import { randomBytes } from 'node:crypto';
import { createAccountingClient, institutionAuth } from '../../../src/core/accounting-api';
import {
  MAX_REGISTERED_SECRETS,
  forgetRegisteredSecrets,
  isRegistrableServiceSecret,
  redactString,
  registerSecret,
  registeredSecretCount,
} from '../../../src/core/shared/redact';
import { BASE_URL, fakeTransport, json } from '../accounting-api/fake-transport';

/** A token shaped like the service's: base64url, like the sandbox's JWT parts. */
const token = () => randomBytes(24).toString('base64url');
const INSTITUTION_SECRET = 'institution-secret-value-7f3a';

/**
 * The redactor's registered secrets stay bounded in a long-lived process, and values the service
 * returns are registered only when they look like credentials (issue 16, item 9).
 */
describe('redactor: bounded, and picky about what the service registers', () => {
  beforeEach(() => forgetRegisteredSecrets());
  afterAll(() => forgetRegisteredSecrets());

  it('100,000 refreshes in one process: the set stays bounded, the credential in use stays registered', async () => {
    // The real client: every refresh registers the new pair (institution.ts) and sends the
    // institution credential (authHeader registers it again on each use).
    const fake = fakeTransport(() => json(200, { accessToken: token(), refreshToken: token(), expiresIn: 3600 }));
    const client = createAccountingClient({
      baseUrl: BASE_URL,
      credentials: institutionAuth({ institutionId: 'inst_42', secretKey: INSTITUTION_SECRET }),
      transport: fake.transport,
    });
    let pair = { refreshToken: token(), accessToken: token() };
    let maxSeen = 0;
    for (let i = 0; i < 100_000; i++) {
      pair = await client.institution.refreshToken(pair.refreshToken);
      if (i % 1000 === 0) maxSeen = Math.max(maxSeen, registeredSecretCount());
    }
    expect(fake.requests).toHaveLength(100_000);
    expect(maxSeen).toBeLessThanOrEqual(MAX_REGISTERED_SECRETS);
    expect(registeredSecretCount()).toBeLessThanOrEqual(MAX_REGISTERED_SECRETS);
    // Still redacted: the latest tokens and the institution secret, used on every request.
    expect(redactString(`a ${pair.accessToken} b ${pair.refreshToken} c ${INSTITUTION_SECRET}`)).toBe(
      'a [REDACTED] b [REDACTED] c [REDACTED]',
    );
  }, 180_000);

  it('evicts the least recently registered first; registering again keeps a secret', () => {
    const kept = 'kept-credential-0123456789';
    const dropped = 'dropped-credential-0123456789';
    registerSecret(dropped);
    registerSecret(kept);
    for (let i = 0; i < MAX_REGISTERED_SECRETS * 2; i++) {
      registerSecret(token(), { from: 'service' });
      if (i % 100 === 0) registerSecret(kept);
    }
    expect(registeredSecretCount()).toBe(MAX_REGISTERED_SECRETS);
    expect(redactString(kept)).toBe('[REDACTED]');
    expect(redactString(dropped)).toBe(dropped);
  });

  it.each([
    ['a word', 'completed_successfully'],
    ['a phrase', 'Internal Server Error'],
    ['too short', 'Ab3dEf9h'],
    ['a UUID', '6f1c2a3b-0000-4000-8000-000000000000'],
    ['a timestamp', '2026-11-25T01:00:00.000Z'],
    ['a number', '1234567890123456'],
    ['a URL', 'https://accounting.example.com/api/v1'],
    ['an email', 'operator1@example.com'],
    ['few distinct characters', 'aaaaaaaaaaaaaaaaaaaa1'],
  ])('a value the service returns is not registered when it is %s', (_what, value) => {
    expect(isRegistrableServiceSecret(value)).toBe(false);
    registerSecret(value, { from: 'service' });
    expect(registeredSecretCount()).toBe(0);
    expect(redactString(`x ${value} y`)).toBe(`x ${value} y`);
  });

  it('a hostile token pair of common strings leaves log lines intact; real tokens are registered', async () => {
    const fake = fakeTransport(() => json(200, { accessToken: 'acctops-production', refreshToken: 'refresh_token_rotated' }));
    const client = createAccountingClient({
      baseUrl: BASE_URL,
      credentials: institutionAuth({ institutionId: 'inst_42', secretKey: INSTITUTION_SECRET }),
      transport: fake.transport,
    });
    await client.institution.refreshToken(token());
    expect(redactString('deployed acctops-production; refresh_token_rotated')).toBe('deployed acctops-production; refresh_token_rotated');
    const real = token();
    expect(isRegistrableServiceSecret(real)).toBe(true);
    expect(isRegistrableServiceSecret('sbx_AbCdEf12GhIjKl34MnOpQr56StUvWx78')).toBe(true);
    // Our own credentials need only 8 characters, whatever their shape.
    registerSecret('lowercasesecret');
    expect(redactString('lowercasesecret')).toBe('[REDACTED]');
  });
});

import { forgetRegisteredSecrets, redact, redactString, registerSecret } from '../../../src/core/shared/redact';

/**
 * The value layer reaches every string of a token, whatever base64url characters it holds, and
 * every string an error carries, its causes' included: a cause is often the transport's error,
 * which can quote the request that failed.
 */
describe('redactor: JWTs and error causes', () => {
  afterEach(() => forgetRegisteredSecrets());

  // base64url uses '-' and '_'; each of the three parts carries both.
  const JWT = 'eyJhbGc-OiJI_zI1NiJ9.eyJzdWIi-OiJ1c2_VyIn0.c2ln-bmF0_dXJl';

  it.each([
    [`token ${JWT} end`, 'token [REDACTED_JWT] end'],
    [`"${JWT}"`, '"[REDACTED_JWT]"'],
  ])('cuts a JWT whose parts hold - and _ in %j', (input, expected) => {
    expect(redactString(input)).toBe(expected);
  });

  it("cuts a registered secret in an error's cause, and in the cause's cause", () => {
    const secret = 'held-institution-secret-9d2e';
    registerSecret(secret);
    const error = new Error('request failed', { cause: new Error(`sent ${secret}`, { cause: new Error(secret) }) });
    const out = JSON.stringify(redact(error));
    expect(out).not.toContain(secret);
    expect(out).toContain('sent [REDACTED]');
  });
});

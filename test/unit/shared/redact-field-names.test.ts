import { MemoryLogger } from '../../../src/core/shared/logger';
import { forgetRegisteredSecrets, redact, registerSecret } from '../../../src/core/shared/redact';
import { refreshQueuedBatch } from '../../../src/core/tokens/refresh-worker';
import type { RefreshOutcome } from '../../../src/core/tokens/token-lifecycle';
import { CANARY, expectNoCanaries } from '../../helpers/canary';

/**
 * Redaction by field name hides what a secret is kept under, and nothing an operator needs to read
 * a line: counts, class names, the names and ARNs of secrets, a rotation's version id (decision 77).
 */
describe('redaction by field name', () => {
  afterEach(() => forgetRegisteredSecrets());

  const ARN = 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:acctops/prod/company/x/api-key-AbCdEf';

  it('lets the operational fields through as they are', () => {
    const fields = {
      refreshed: 12,
      refreshErrorClass: 'InvalidGrantError',
      secretId: ARN,
      secretArn: ARN,
      secretName: 'acctops/prod/company/x/api-key',
      versionId: '74b14700-d01f-45bf-aa66-f9a6addd95cd',
      refreshedAt: 1_795_751_032_164,
    };
    expect(redact(fields)).toEqual(fields);
  });

  it('still blanks every field named like a secret, whatever its value', () => {
    const named = {
      token: 'plain',
      accessToken: 'plain',
      refreshToken: 'plain',
      secret: 'plain',
      secretKey: 'plain',
      clientSecret: 'plain',
      apiKey: 'plain',
      password: 'plain',
      authorization: 'plain',
      institution: 'plain',
      signature: 'plain',
      key: 'plain',
      refresh: 'plain',
      webhookSecret: 'plain',
      // Near misses of the allow-list are not on it.
      secretValue: 'plain',
      refreshedToken: 'plain',
      secretIds: 'plain',
    };
    const out = redact(named) as Record<string, unknown>;
    for (const name of Object.keys(named)) expect([name, out[name]]).toEqual([name, '[REDACTED]']);
  });

  it('blanks a number under a secret name as well as a string', () => {
    // A PIN or a numeric password is still a secret; a count has a name on the allow-list instead.
    expect(redact({ password: 73914628, token: 4711, refreshed: 3 })).toEqual({
      password: '[REDACTED]',
      token: '[REDACTED]',
      refreshed: 3,
    });
  });

  it('cuts a secret value put under an allowed name by mistake', () => {
    // As the client registers every credential it holds or receives.
    for (const value of [CANARY.institutionSecret, CANARY.accessToken, CANARY.refreshToken]) registerSecret(value);
    const out = redact({
      secretId: CANARY.institutionSecret,
      secretName: `name ${CANARY.institutionSecret}`,
      refreshErrorClass: CANARY.accessToken,
      versionId: CANARY.refreshToken,
      secretArn: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJl',
    });
    expectNoCanaries(JSON.stringify(out), 'redacted fields');
    expect(out).toEqual({
      secretId: '[REDACTED]',
      secretName: 'name [REDACTED]',
      refreshErrorClass: '[REDACTED]',
      versionId: '[REDACTED]',
      secretArn: '[REDACTED_JWT]',
    });
  });

  it("the refresh worker's batch line shows how many users were refreshed", async () => {
    const logger = new MemoryLogger();
    const ids = ['6a1f0c2e-8b3d-4e5f-9a7b-1c2d3e4f5a6b', '0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d', '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f'];
    const lifecycle = {
      refreshBatch: (externalIds: readonly string[]): Promise<RefreshOutcome[]> =>
        Promise.resolve(externalIds.map((externalId, i) => ({ externalId, result: i < 2 ? 'refreshed' : 'recovered' }))),
    };
    const messages = ids.map((externalId, i) => ({ messageId: `m${i}`, body: JSON.stringify({ externalId, dueAt: 0 }) }));
    await refreshQueuedBatch(lifecycle, messages, { logger });
    expect(logger.entries().find((e) => e.message === 'refresh batch done')).toMatchObject({
      messages: 3,
      malformed: 0,
      refreshed: 2,
      recovered: 1,
    });
  });
});

import { findingsOf, revokedKeys } from '../../../cli/operations/shared';
import type { DoctorReport } from '../../../cli/operations/operations';
import { ServerError } from '../../../src/core/accounting-api';
import { RevocationBlockedError } from '../../../src/core/api-keys';
import { SecretScheduledForDeletionError } from '../../../src/core/ports/secrets';
import { canarySecret } from '../../helpers/canary';
import { registerSecret } from '../../../src/core/shared/redact';

describe('a queued revocation that keeps failing says why, in the report and as a doctor finding', () => {
  const leaked = canarySecret('echoed-by-service');
  registerSecret(leaked);
  const failure = new ServerError(undefined, {
    status: 503,
    request: 'DELETE /api/v1/api-keys/0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d/',
    serverMessage: `maintenance (${leaked})`,
  });
  const rows = revokedKeys({
    outcomes: [{ apiKeyId: 'a', keyPrefix: 'sbx_Done1234', outcome: 'revoked' }],
    failed: [{ apiKeyId: 'b', keyPrefix: 'sbx_Fail1234', error: failure }],
  });

  it('carries the status and the service’s words for a failure, never a secret, and null otherwise', () => {
    expect(rows[0]).toEqual({ keyPrefix: 'sbx_Done1234', outcome: 'revoked', error: null, code: null });
    expect(rows[1]).toMatchObject({ keyPrefix: 'sbx_Fail1234', outcome: 'failed (stays queued)' });
    expect(rows[1]!.error).toMatch(/503/);
    expect(rows[1]!.error).toContain('maintenance');
    expect(rows[1]!.error).not.toContain(leaked);
  });

  it('is a doctor finding naming the key and the reason', () => {
    const report = reportWith(rows);
    const findings = findingsOf(report).filter((f) => f.includes('sbx_Fail1234'));
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatch(/could not be revoked \(.*503.*\); it stays queued/);
    expect(findingsOf(report).some((f) => f.includes('sbx_Done1234'))).toBe(false);
  });
});

describe("a removed company's revocation, blocked by its secret's deletion (decision 105)", () => {
  const company = '5f14a10b-f72e-4a52-83f8-cb5b4704a96d';
  const cause = new SecretScheduledForDeletionError(
    "Secrets Manager GetSecretValue failed for arn:x: InvalidRequestException: You can't perform this operation on the secret because it was marked for deletion",
    { secretId: 'arn:x' },
  );
  const rows = revokedKeys({
    outcomes: [],
    failed: [
      {
        apiKeyId: 'b',
        keyPrefix: 'sbx_Gone1234',
        error: new RevocationBlockedError({ companyId: company, keyPrefix: 'sbx_Gone1234' }, cause),
      },
    ],
  });

  it('names the company, the key and the restore, typed, without the service text', () => {
    expect(rows[0]).toMatchObject({ keyPrefix: 'sbx_Gone1234', outcome: 'failed (stays queued)', code: 'revocation_secret_deleted' });
    expect(rows[0]!.error).toContain(`old key sbx_Gone1234… of company ${company} cannot be revoked`);
    expect(rows[0]!.error).toContain(`\`acctops companies restore --company ${company}\``);
    expect(rows[0]!.error).toContain(`\`acctops companies remove --company ${company} --revoke-keys\``);
    expect(rows[0]!.error).not.toMatch(/InvalidRequestException|\.\./);
  });

  it('is a doctor finding of its own, the line itself', () => {
    const report = reportWith(rows);
    expect(findingsOf(report).filter((f) => f.includes('sbx_Gone1234'))).toEqual([rows[0]!.error]);
  });
});

/** A local doctor report whose only checked part is the revoked keys: what findingsOf reads here. */
function reportWith(rows: ReturnType<typeof revokedKeys>): Omit<DoctorReport, 'findings'> {
  const skipped = { skipped: 'not checked here' };
  return {
    mode: 'local',
    checkedAt: '2026-11-01T09:00:00.000Z',
    health: skipped,
    companySecrets: [],
    tokens: skipped,
    rotations: skipped,
    exports: skipped,
    registry: skipped,
    revokedKeys: rows,
    damagedStateFiles: [],
  } as unknown as Omit<DoctorReport, 'findings'>;
}

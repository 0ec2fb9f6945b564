import { renderRotate, renderStatus } from '../../../cli/commands/keys';
import type { KeyStatusReport, RotateReport } from '../../../cli/operations/operations';
import { Output } from '../../../cli/output';

function capture() {
  const stdout: string[] = [];
  const out = new Output(
    { stdout: { write: (t: string) => stdout.push(t) }, stderr: { write: () => undefined, isTTY: false, columns: 200 } },
    { json: false, verbose: false },
  );
  return { out, text: () => stdout.join('') };
}

const NOW = Date.parse('2026-11-27T12:00:00Z');
const COMPANY = 'd4eb6bf3-1f7d-42d2-b8c7-bffc93087c1a';

type Pending = KeyStatusReport['companies'][number]['pendingRevocations'][number];
const pending = (keyPrefix: string, fields: Partial<Pending>): Pending => ({
  apiKeyId: '0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d',
  keyPrefix,
  revokeAt: NOW + 20 * 60_000,
  lastUsedAt: null,
  usedSinceRotation: null,
  revokedAt: null,
  ...fields,
});

describe('keys status: what an old key pending revocation says of its use', () => {
  it('tells a consumer from the rotation, says when it cannot tell, and names a key revoked already', () => {
    const fiveMinutesAgo = new Date(NOW - 5 * 60_000).toISOString();
    const report: KeyStatusReport = {
      now: new Date(NOW).toISOString(),
      revokedBefore: null,
      companies: [
        {
          companyId: COMPANY,
          secret: `acctops/local/company/${COMPANY}/api-key`,
          keyPrefix: 'sbx_Current1',
          apiKeyId: null,
          permissions: ['full_access'],
          lastUsedAt: null,
          lastUsedByThisCheck: true,
          expiresAt: null,
          rotationEnabled: true,
          rotationDays: 30,
          lastRotatedAt: NOW - 60_000,
          nextRotationAt: NOW + 30 * 86_400_000,
          rotationInProgress: false,
          error: null,
          currentKeyRevocations: [],
          replacedKey: { apiKeyId: 'a'.repeat(8), keyPrefix: 'sbx_Replace1', lastUsedAt: fiveMinutesAgo },
          earlierKeys: [{ apiKeyId: 'b'.repeat(8), keyPrefix: 'sbx_Earlier9', lastUsedAt: null }],
          pendingRevocations: [
            pending('sbx_Never001', {}),
            pending('sbx_NotUsed1', { lastUsedAt: fiveMinutesAgo, usedSinceRotation: false }),
            pending('sbx_InUse001', { lastUsedAt: fiveMinutesAgo, usedSinceRotation: true }),
            pending('sbx_Earlier1', { lastUsedAt: fiveMinutesAgo, usedSinceRotation: null }),
            pending('sbx_Revoked1', {
              lastUsedAt: fiveMinutesAgo,
              usedSinceRotation: true,
              revokedAt: new Date(NOW - 60_000).toISOString(),
            }),
          ],
        },
      ],
    };
    const { out, text } = capture();
    renderStatus(out, report);
    const column = text().split('\n')[2]!;
    expect(column).toContain('sbx_Never001… in 20m (never used)');
    expect(column).toContain('sbx_NotUsed1… in 20m (not used since the rotation)');
    expect(column).toContain('sbx_InUse001… in 20m (used since the rotation, last 5m ago)');
    // Not dated: the time may be the rotation's own use, never read as a consumer's.
    expect(column).toContain('sbx_Earlier1… in 20m (last used 5m ago, maybe by the rotation that replaced it)');
    expect(column).toContain('sbx_Revoked1… in 20m (already revoked 1m ago: the schedule then changes nothing)');

    // The key an install replaced is valid with nothing pending: a line of its own, never a pending revocation (decision 107).
    expect(column).not.toContain('sbx_Replace1');
    expect(text()).toContain(
      `${COMPANY}: the previous key sbx_Replace1… (the key an install replaced, or one whose revocation was lost) stays valid at the service, last used 5m ago, and no revocation of it is pending: \`acctops keys revoke-pending --company ${COMPANY} --prefix sbx_Replace1\` revokes it now.`,
    );
    // Older still, after a later rotation took its label (decision 113): named, with who revokes it, never under pending.
    expect(column).not.toContain('sbx_Earlier9');
    expect(text()).toContain(
      `${COMPANY}: the earlier key sbx_Earlier9… (held by an earlier version of its key secret: the key an install replaced, or one whose revocation was lost) stays valid at the service, never used, and no revocation of it is pending: the rotation doctor revokes it as revocation_overdue once the grace period after the last rotation is over (\`acctops doctor --repair\`).`,
    );
  });
});

describe('keys rotate --revoke-previous-now: each old key named with its outcome', () => {
  const report = (older: RotateReport['olderKeysRevoked']): RotateReport => ({
    companyId: COMPANY,
    secret: `acctops/local/company/${COMPANY}/api-key`,
    versionId: 'v2',
    state: 'completed',
    rolledBack: null,
    previousKeyPrefix: 'sbx_Innocent',
    keyPrefix: 'sbx_NewKey01',
    previousKeyRevokeAt: null,
    revokedBefore: null,
    previousKeyRevoked: 'revoked',
    previousKeyRevokeError: null,
    previousKeyScheduleError: null,
    olderKeysRevoked: older,
    olderKeysRevokeError: null,
  });

  it('one line per older key (revoked, already revoked, failed), or one saying there was none; nothing without the option', () => {
    const error = { code: 'server_error', message: 'm', exitCode: 5, hint: 'h' };
    const some = capture();
    renderRotate(
      some.out,
      report([
        { keyPrefix: 'sbx_Leaked01', apiKeyId: 'a', outcome: 'revoked', error: null, scheduleError: null },
        { keyPrefix: 'sbx_Leaked02', apiKeyId: 'b', outcome: 'already_revoked', error: null, scheduleError: null },
        { keyPrefix: 'sbx_Leaked03', apiKeyId: 'c', outcome: 'failed', error, scheduleError: null },
      ]),
    );
    expect(some.text().split('\n').slice(1, -1)).toEqual([
      '  key sbx_Innocent… -> sbx_NewKey01…',
      '  the previous key sbx_Innocent… was revoked now: revoked',
      '  the older key sbx_Leaked01…, still pending revocation, was revoked now: revoked',
      '  the older key sbx_Leaked02…, still pending revocation, was revoked now: already_revoked',
      '  the older key sbx_Leaked03…, still pending revocation, could NOT be revoked now and is still valid (the error below says how to revoke it)',
    ]);
    const none = capture();
    renderRotate(none.out, report([]));
    expect(none.text()).toContain('  no other old key of the company was pending revocation\n');
    const plain = capture();
    renderRotate(plain.out, { ...report(null), previousKeyRevoked: null });
    expect(plain.text()).not.toMatch(/older key|no other old key/);
  });

  it('a key revoked whose schedule was left (AWS mode, decision 107) still reads as revoked, with a pointer to the error line', () => {
    const left = { code: 'schedule_delete_failed', message: 'm', exitCode: 5, hint: 'h' };
    const some = capture();
    renderRotate(some.out, {
      ...report([{ keyPrefix: 'sbx_Leaked01', apiKeyId: 'a', outcome: 'revoked', error: null, scheduleError: left }]),
      previousKeyScheduleError: left,
    });
    expect(some.text().split('\n').slice(2, -1)).toEqual([
      '  the previous key sbx_Innocent… was revoked now: revoked (its revocation schedule could NOT be deleted: the error below says how)',
      '  the older key sbx_Leaked01…, still pending revocation, was revoked now: revoked (its revocation schedule could NOT be deleted: the error below says how)',
    ]);
  });
});

import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DOCTOR_REPORT_FIELDS, KEY_STATUS_ROW_FIELDS, parseJson, runAcctops, useCliState } from '../helpers/cli';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

/** Every point in time (`…At`, `now`) anywhere in a document, with its path. */
function timeFields(value: unknown, path = '$'): [string, unknown][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => timeFields(v, `${path}[${i}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => [
    ...(/At$|^now$/.test(k) ? [[`${path}.${k}`, v] as [string, unknown]] : []),
    ...timeFields(v, `${path}.${k}`),
  ]);
}

interface KeyRow {
  keyPrefix: string;
  lastUsedAt: string | null;
  lastUsedByThisCheck: boolean;
  lastRotatedAt: string | null;
  nextRotationAt: string | null;
  pendingRevocations: { keyPrefix: string; revokeAt: string; lastUsedAt: string | null; usedSinceRotation: boolean | null }[];
}

/**
 * --json output: one time format (ISO 8601) for every point in time, absent values as null
 * (issue 16, item 4), and `keys status` telling the key's real use from its own request (item 3).
 */
describe('acctops --json: ISO 8601 times, null for absent values, real key usage', () => {
  const state = useCliState();
  const json = async <T>(...args: string[]) => {
    const result = await state.acctops('--json', ...args);
    return { result, body: parseJson<T>(result) };
  };

  it('keys status: every field present, times in ISO 8601, the current key’s use marked as this check', async () => {
    const { body } = await json<{ companies: KeyRow[] }>('keys', 'status');
    expect(body.companies).toHaveLength(3);
    for (const row of body.companies) {
      expect(Object.keys(row).sort()).toEqual(KEY_STATUS_ROW_FIELDS);
      expect(row.lastUsedByThisCheck).toBe(true);
      expect(row.nextRotationAt).toMatch(ISO);
    }
  });

  it('after a rotation, the old key’s last use is reported untouched by the check', async () => {
    const { body: before } = await json<{ companies: (KeyRow & { companyId: string })[] }>('keys', 'status');
    const company = before.companies[0]!;
    const rotated = await json<{ keyPrefix: string }>('keys', 'rotate', '--company', company.companyId);
    expect(rotated.result.code).toBe(0);
    await json('local', 'advance-clock', '--by', '10m');
    const { body } = await json<{ companies: (KeyRow & { companyId: string })[] }>('keys', 'status', '--company', company.companyId);
    const row = body.companies[0]!;
    expect(row.keyPrefix).toBe(rotated.body.keyPrefix);
    expect(row.lastUsedByThisCheck).toBe(true);
    expect(row.pendingRevocations).toHaveLength(1);
    const old = row.pendingRevocations[0]!;
    expect(old.keyPrefix).toBe(company.keyPrefix);
    expect(old.revokeAt).toMatch(ISO);
    // The old key was last used by the rotation (creating its successor), ten minutes before this check:
    // the raw time is kept, and it is no consumer's use.
    expect(old.lastUsedAt).toMatch(ISO);
    expect(Date.parse(row.lastUsedAt!) - Date.parse(old.lastUsedAt!)).toBeGreaterThanOrEqual(10 * 60_000);
    expect(old.usedSinceRotation).toBe(false);
    const human = await state.acctops('keys', 'status', '--company', company.companyId);
    expect(human.stdout).toContain(`${company.keyPrefix}… in 20m (not used since the rotation)`);
  });

  it.each([[['users', 'list']], [['keys', 'status']], [['doctor']], [['local', 'status']], [['local', 'advance-clock', '--by', '1m']]])(
    '%j: every point in time is ISO 8601 or null',
    async (args) => {
      if (args[0] === 'users') {
        const onboard = await json(
          'users',
          'onboard',
          '--external-id',
          '3b0f4c1e-8d2a-4e6b-9f10-2a3b4c5d6e7f',
          '--username',
          'erin',
          '--email',
          'erin@example.test',
        );
        expect(onboard.result.code).toBe(0);
      }
      const { body } = await json<unknown>(...args);
      const fields = timeFields(body);
      expect(fields.length).toBeGreaterThan(0);
      for (const [path, value] of fields)
        expect({ path, ok: value === null || (typeof value === 'string' && ISO.test(value)) }).toEqual({ path, ok: true });
    },
  );

  it('keys rotate: previousKeyRevokeAt and previousKeyRevoked are both always there, null where they do not apply', async () => {
    const { body: status } = await json<{ companies: { companyId: string }[] }>('keys', 'status');
    const companyId = status.companies[1]!.companyId;
    const keys = [
      'companyId',
      'keyPrefix',
      'olderKeysRevokeError',
      'olderKeysRevoked',
      'previousKeyPrefix',
      'previousKeyRevokeAt',
      'previousKeyRevokeError',
      'previousKeyRevoked',
      'previousKeyScheduleError',
      'revokedBefore',
      'rolledBack',
      'secret',
      'state',
      'versionId',
    ];
    const graceful = await json<Record<string, unknown>>('keys', 'rotate', '--company', companyId);
    expect(Object.keys(graceful.body).sort()).toEqual(keys);
    expect(graceful.body).toMatchObject({
      previousKeyRevokeAt: expect.stringMatching(ISO),
      previousKeyRevoked: null,
      olderKeysRevoked: null,
      olderKeysRevokeError: null,
    });
    const urgent = await json<Record<string, unknown>>('keys', 'rotate', '--company', companyId, '--revoke-previous-now');
    expect(Object.keys(urgent.body).sort()).toEqual(keys);
    expect(urgent.body).toMatchObject({
      previousKeyRevokeAt: null,
      previousKeyRevoked: 'revoked',
      previousKeyRevokeError: null,
      rolledBack: null,
      // The key the graceful rotation replaced, still pending: revoked too, with its fixed key set.
      olderKeysRevoked: [{ keyPrefix: graceful.body.previousKeyPrefix, apiKeyId: expect.any(String), outcome: 'revoked', error: null }],
      olderKeysRevokeError: null,
    });
  });

  it('tokens refresh: every outcome has its errorClass and errorCode (the ERROR column) and leaseUntil (busy only), null when none', async () => {
    const { body: users } = await json<{ users: { externalId: string }[] }>('users', 'list');
    expect(users.users.length).toBeGreaterThan(0);
    const { body } = await json<{ outcomes: Record<string, unknown>[] }>('tokens', 'refresh', '--user', users.users[0]!.externalId);
    expect(body.outcomes).toHaveLength(1);
    expect(Object.keys(body.outcomes[0]!).sort()).toEqual([
      'credentialRefused',
      'errorClass',
      'errorCode',
      'externalId',
      'leaseUntil',
      'result',
    ]);
    expect(body.outcomes[0]!.errorClass).toBeNull();
    expect(body.outcomes[0]!.errorCode).toBeNull();
    expect(body.outcomes[0]!.leaseUntil).toBeNull();
  });

  it('keys status, institution set-secret (and --rollback), doctor and companies remove: every key there, null where it does not apply', async () => {
    const keysOf = (value: unknown) => Object.keys(value as object).sort();
    const PROBE = ['detail', 'durationMs', 'error', 'name', 'ok'];

    // A rotation leaves the old key pending its revocation.
    const { body: before } = await json<{ companies: { companyId: string }[] }>('keys', 'status');
    expect((await json('keys', 'rotate', '--company', before.companies[0]!.companyId)).result.code).toBe(0);
    const status = await json<{ revokedBefore: unknown; companies: { companyId: string; pendingRevocations: object[] }[] }>(
      'keys',
      'status',
    );
    expect(keysOf(status.body)).toEqual(['companies', 'now', 'revokedBefore']);
    expect(status.body.revokedBefore).toEqual([]);
    const pending = status.body.companies.flatMap((c) => c.pendingRevocations);
    expect(pending.length).toBeGreaterThan(0);
    for (const r of pending)
      expect(keysOf(r)).toEqual(['apiKeyId', 'keyPrefix', 'lastUsedAt', 'revokeAt', 'revokedAt', 'usedSinceRotation']);

    // The stored institution credential stored again (a new version), then rolled back.
    const { demo } = JSON.parse(await readFile(join(state.dir, 'sandbox.json'), 'utf8')) as {
      demo: { institution: { id: string; secret: string } };
    };
    const secretChange = async (args: string[], env: Record<string, string> = {}) => {
      const result = await state.run(['--json', 'institution', 'set-secret', ...args], { env });
      expect(result.code).toBe(0);
      const body = parseJson<{ probes: object[] } & Record<string, unknown>>(result);
      expect(keysOf(body)).toEqual([
        'alreadyRolledBack',
        'institutionId',
        'previousVersionId',
        'probes',
        'rolledBack',
        'secret',
        'verified',
        'versionId',
      ]);
      for (const probe of body.probes) expect(keysOf(probe)).toEqual(PROBE);
      return body;
    };
    const stored = await secretChange([], { ACCTOPS_INSTITUTION: `${demo.institution.id}:${demo.institution.secret}` });
    expect(stored).toMatchObject({
      institutionId: demo.institution.id,
      rolledBack: false,
      verified: true,
      previousVersionId: expect.any(String),
    });
    // Passing probes: error null (and detail null where a probe has none).
    expect(stored.probes).toEqual(expect.arrayContaining([expect.objectContaining({ ok: true, error: null })]));
    const back = await secretChange(['--rollback']);
    expect(back).toMatchObject({ institutionId: null, rolledBack: true, alreadyRolledBack: false, versionId: stored.previousVersionId });
    const again = await secretChange(['--rollback']);
    expect(again).toMatchObject({
      rolledBack: true,
      alreadyRolledBack: true,
      versionId: back.versionId,
      previousVersionId: stored.versionId,
    });

    // A registered company without a key secret: a rotation finding that names no key.
    const keyless = randomUUID();
    expect((await json('companies', 'add', '--company', keyless)).result.code).toBe(0);
    const doctor = await json<{
      health: { probes: object[] };
      companySecrets: object[];
      rotations: { findings: { type: string }[] };
      exports: { companies: object[] };
      revokedKeys: unknown;
      damagedStateFiles: unknown;
      registry: object;
    }>('doctor');
    expect(keysOf(doctor.body)).toEqual(DOCTOR_REPORT_FIELDS);
    expect(doctor.body).toMatchObject({ revokedKeys: [], damagedStateFiles: [] });
    for (const probe of doctor.body.health.probes) expect(keysOf(probe)).toEqual(PROBE);
    for (const secret of doctor.body.companySecrets) expect(keysOf(secret)).toEqual(['companyId', 'error', 'ok', 'secret']);
    for (const row of doctor.body.exports.companies)
      expect(keysOf(row)).toEqual([
        'athenaEmpty',
        'companyId',
        'generatedAt',
        'keyMissing',
        'lastPeriod',
        'manifestError',
        'manifestUrl',
        'overdue',
        'publishing',
        'staleSymlinks',
      ]);
    const missing = doctor.body.rotations.findings.find((f) => f.type === 'key_missing');
    // It has no secret to name: null, as every absent value, not a placeholder string.
    expect(missing).toMatchObject({ secret: null, apiKeyId: null, keyPrefix: null, versionId: null });
    expect(keysOf(missing)).toEqual(['apiKeyId', 'companyId', 'detail', 'keyPrefix', 'repaired', 'secret', 'type', 'versionId']);

    // companies remove: a company without a key secret, and one whose secret is now scheduled for deletion.
    const RETIRE = ['companyId', 'deletionDate', 'recoveryWindowDays', 'result', 'rotationStopped', 'scheduledAt', 'secret'];
    const noSecret = await json<{ key: object }>('companies', 'remove', '--company', keyless);
    expect(keysOf(noSecret.body.key)).toEqual(RETIRE);
    expect(noSecret.body.key).toMatchObject({ result: 'no_secret', secret: null, deletionDate: null, scheduledAt: null });
    const company = status.body.companies[2]!;
    const scheduled = await json<{ key: object }>('companies', 'remove', '--company', company.companyId);
    expect(keysOf(scheduled.body.key)).toEqual(RETIRE);
    expect(scheduled.body.key).toMatchObject({ result: 'scheduled', deletionDate: expect.stringMatching(ISO), scheduledAt: null });
    expect((await json('companies', 'restore', '--company', company.companyId)).result.code).toBe(0);
  });

  it('an error document always has its hint key', async () => {
    const result = await runAcctops([
      '--state-dir',
      state.dir,
      '--json',
      'users',
      'revoke',
      '--user',
      '00000000-0000-4000-8000-000000000000',
    ]);
    const error = (JSON.parse(result.stderr) as { error: Record<string, unknown> }).error;
    expect(Object.keys(error).sort()).toEqual(['code', 'exitCode', 'hint', 'message']);
  });
});

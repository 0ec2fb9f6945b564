import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { canarySecret } from '../helpers/canary';
import { parseJson, useCliState } from '../helpers/cli';

interface Demo {
  institution: { id: string; secret: string };
  companies: { publicId: string; apiKeys: { name: string; key: string; permissions: string[] }[] }[];
}

/** The runbooks' credential commands in the local mode, through the real binary: values only from the environment. */
describe('acctops institution set-secret and keys install', () => {
  const state = useCliState();
  const acctops = (args: string[], env: Record<string, string> = {}) => state.run(args, { env });
  let demo: Demo;

  beforeAll(async () => {
    await acctops(['local', 'status']);
    demo = (JSON.parse(await readFile(join(state.dir, 'sandbox.json'), 'utf8')) as { demo: Demo }).demo;
  });

  // First in the suite: the state's institution secret has its one version only.
  it('set-secret --rollback with no AWSPREVIOUS version is configuration (exit 3) with what to do, and changes nothing', async () => {
    const before = await readFile(join(state.dir, 'secrets.json'), 'utf8');
    const none = await acctops(['institution', 'set-secret', '--rollback']);
    expect(none.code).toBe(3);
    expect(none.stdout).toBe('');
    expect(none.stderr).toBe(
      'acctops: error: secret acctops/local/institution has no AWSPREVIOUS version to go back to ' +
        '(nothing earlier is kept to go back to: put the right value in ACCTOPS_INSTITUTION and store it with `acctops institution set-secret`; ' +
        'see docs/runbooks.md, "Change the institution secret")\n',
    );
    const json = await acctops(['--json', 'institution', 'set-secret', '--rollback']);
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: 'no_previous_version', hint: expect.stringContaining('set-secret') } });
    expect(await readFile(join(state.dir, 'secrets.json'), 'utf8')).toBe(before);
  });

  it('set-secret reads ACCTOPS_INSTITUTION only; a value the service refuses is stored, reported (exit 4) and rolled back', async () => {
    const missing = await acctops(['institution', 'set-secret']);
    expect(missing.code).toBe(3);
    // One pair of parentheses, the hint's: the line reads as every other error does.
    const notSet =
      'acctops: error: the institution credential is read from ACCTOPS_INSTITUTION, which is not set or empty ' +
      '(put it there without echo or shell history: read -rs ACCTOPS_INSTITUTION && export ACCTOPS_INSTITUTION; never as a flag, which the history keeps)\n';
    expect(missing.stderr).toBe(notSet);
    expect((await acctops(['institution', 'set-secret'], { ACCTOPS_INSTITUTION: ' ' })).stderr).toBe(notSet);
    const malformed = await acctops(['institution', 'set-secret'], { ACCTOPS_INSTITUTION: 'no-colon-here' });
    expect(malformed.code).toBe(3);
    expect(malformed.stderr).toMatch(/not an institution credential/);
    expect(malformed.stderr).not.toContain('no-colon-here');

    const wrong = await acctops(['--json', 'institution', 'set-secret'], {
      ACCTOPS_INSTITUTION: `${demo.institution.id}:${canarySecret('wrong-institution')}`,
    });
    expect(wrong.code).toBe(4);
    const report = parseJson<{ verified: boolean; versionId: string; previousVersionId: string; probes: { name: string; ok: boolean }[] }>(
      wrong,
    );
    expect(report.verified).toBe(false);
    expect(report.probes.map((p) => [p.name, p.ok])).toEqual([
      ['institution-credential-readable', true],
      ['service-reachable', false],
    ]);
    expect(JSON.parse(wrong.stderr)).toMatchObject({
      error: { code: 'institution_check_failed', hint: expect.stringMatching(/--rollback/) },
    });
    expect((await acctops(['doctor'])).code).toBe(5);

    const back = await acctops(['--json', 'institution', 'set-secret', '--rollback']);
    expect(back.code).toBe(0);
    expect(parseJson(back)).toMatchObject({
      rolledBack: true,
      alreadyRolledBack: false,
      verified: true,
      versionId: report.previousVersionId,
      previousVersionId: report.versionId,
    });

    // On-call unsure whether the rollback ran runs it again: the refused value stays out.
    const again = await acctops(['institution', 'set-secret', '--rollback']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(
      `Already rolled back acctops/local/institution: version ${report.previousVersionId} is current, restored by a rollback from version ${report.versionId}; nothing changed`,
    );
    expect(again.stdout).toMatch(/ok {3}service-reachable/);
  });

  it('set-secret --rollback after a later change rolls that change back, once', async () => {
    const good = `${demo.institution.id}:${demo.institution.secret}`;
    const stored = parseJson<{ versionId: string; previousVersionId: string }>(
      await acctops(['--json', 'institution', 'set-secret'], { ACCTOPS_INSTITUTION: good }),
    );
    const rollBack = async () => {
      const result = await acctops(['--json', 'institution', 'set-secret', '--rollback']);
      expect(result.code).toBe(0);
      return parseJson<{ versionId: string; previousVersionId: string; alreadyRolledBack: boolean }>(result);
    };
    expect(await rollBack()).toMatchObject({
      alreadyRolledBack: false,
      versionId: stored.previousVersionId,
      previousVersionId: stored.versionId,
    });
    expect(await rollBack()).toMatchObject({
      alreadyRolledBack: true,
      versionId: stored.previousVersionId,
      previousVersionId: stored.versionId,
    });
  });

  it('keys install checks the key at the service (company, manage_api_keys) before storing it as the current key', async () => {
    const [first, second] = demo.companies;
    const readOnly = first!.apiKeys.find((k) => !k.permissions.includes('full_access'))!.key;
    const fullKey = first!.apiKeys.find((k) => k.permissions.includes('full_access'))!.key;

    const noKey = await acctops(['keys', 'install', '--company', first!.publicId]);
    expect(noKey.code).toBe(3);
    const cannotRotate = await acctops(['keys', 'install', '--company', first!.publicId], { ACCTOPS_API_KEY: readOnly });
    expect(cannotRotate.code).toBe(3);
    expect(cannotRotate.stderr).toMatch(/lacks manage_api_keys/);
    const otherCompany = await acctops(['keys', 'install', '--company', second!.publicId], { ACCTOPS_API_KEY: fullKey });
    expect(otherCompany.code).toBe(3);
    expect(otherCompany.stderr).toMatch(/does not act for company/);

    // After a rotation, put the original key back as the current one.
    const rotated = parseJson<{ keyPrefix: string }>(await acctops(['--json', 'keys', 'rotate', '--company', first!.publicId]));
    const installed = await acctops(['--json', 'keys', 'install', '--company', first!.publicId], { ACCTOPS_API_KEY: fullKey });
    expect(installed.code).toBe(0);
    expect(parseJson(installed)).toMatchObject({
      companyId: first!.publicId,
      keyPrefix: fullKey.slice(0, 12),
      permissions: ['full_access'],
    });
    const status = parseJson<{ companies: { keyPrefix: string }[] }>(
      await acctops(['--json', 'keys', 'status', '--company', first!.publicId]),
    );
    expect(status.companies[0]!.keyPrefix).toBe(fullKey.slice(0, 12));
    expect(status.companies[0]!.keyPrefix).not.toBe(rotated.keyPrefix);
  });
});

import { randomUUID } from 'node:crypto';
import { parseJson, runAcctops, useCliState } from '../helpers/cli';

interface ErrorJson {
  error: { exitCode: number; code: string; message: string; hint: string | null };
}

/**
 * One rule for every command that names a user or company (`--user`, `--company`): one the
 * deployment does not know is exit 3, one line naming the option and the id, with how to list the
 * known ones (README, "Exit codes"). Through the real binary in the local mode; the AWS mode's paths
 * are in aws-mode.test.ts.
 */
describe('acctops: a user or company the command names and the deployment does not know', () => {
  const state = useCliState();
  const acctops = (args: string[], env: Record<string, string> = {}) => state.run(args, { env });
  /** Never registered, never onboarded. */
  const GHOST = randomUUID();
  /** Well-formed, so that `keys install` gets as far as looking the company up. */
  const SOME_KEY = { ACCTOPS_API_KEY: `sbx_${'a'.repeat(8)}_${'b'.repeat(24)}` };

  beforeAll(async () => {
    expect((await runAcctops(['--state-dir', state.dir, 'users', 'list'])).code).toBe(0);
  });

  // Four values in every row: jest takes a test function with more parameters than its row for a done-callback one.
  const CASES: [string, string[], '--user' | '--company', Record<string, string>][] = [
    ['users revoke', ['users', 'revoke', '--user', GHOST], '--user', {}],
    ['users recover', ['users', 'recover', '--user', GHOST], '--user', {}],
    ['tokens refresh --user', ['tokens', 'refresh', '--user', GHOST], '--user', {}],
    ['keys rotate', ['keys', 'rotate', '--company', GHOST], '--company', {}],
    ['keys status --company', ['keys', 'status', '--company', GHOST], '--company', {}],
    ['keys revoke-pending', ['keys', 'revoke-pending', '--company', GHOST], '--company', {}],
    ['keys install', ['keys', 'install', '--company', GHOST], '--company', SOME_KEY],
    ['companies remove', ['companies', 'remove', '--company', GHOST], '--company', {}],
    ['companies restore', ['companies', 'restore', '--company', GHOST], '--company', {}],
    ['export --company', ['export', '--month', '2026-01', '--company', GHOST], '--company', {}],
  ];

  it.each(CASES)('%s: exit 3, one line naming the option and the id, and how to list the known ones', async (_name, args, option, env) => {
    const result = await acctops(args, env);
    const kind = option === '--user' ? 'user' : 'company';
    const list = option === '--user' ? 'acctops users list' : 'acctops companies list';
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 3, stdout: '' });
    expect(result.stderr).toMatch(/^acctops: error: [^\n]+\n$/);
    expect(result.stderr.startsWith(`acctops: error: ${option} ${GHOST}: no such ${kind} in this deployment (`)).toBe(true);
    expect(result.stderr).toContain(`\`${list}\` lists the known ${kind === 'user' ? 'users' : 'companies'}`);
  });

  it('with --json the error is one JSON object on stderr, with a stable code per kind', async () => {
    const user = await acctops(['--json', 'tokens', 'refresh', '--user', GHOST]);
    expect({ code: user.code, stdout: user.stdout }).toEqual({ code: 3, stdout: '' });
    expect(JSON.parse(user.stderr) as ErrorJson).toEqual({
      error: {
        exitCode: 3,
        code: 'unknown_user',
        message: `--user ${GHOST}: no such user in this deployment (acctops holds no token record for it)`,
        hint: '`acctops users list` lists the known users; `acctops users onboard` adds one',
      },
    });
    const company = await acctops(['--json', 'keys', 'status', '--company', GHOST]);
    expect(company.code).toBe(3);
    expect(JSON.parse(company.stderr) as ErrorJson).toEqual({
      error: {
        exitCode: 3,
        code: 'unknown_company',
        message: `--company ${GHOST}: no such company in this deployment (not in the company registry, and no key secret holds its key)`,
        hint: '`acctops companies list` lists the known companies',
      },
    });
  });

  it('a known user already revoked stays an idempotent success: revoking it again is exit 0, already revoked', async () => {
    const user = randomUUID();
    const onboard = ['users', 'onboard', '--external-id', user, '--username', `u-${user.slice(0, 8)}`, '--email', 'u@example.test'];
    expect((await acctops(onboard)).code).toBe(0);
    expect((await acctops(['users', 'revoke', '--user', user])).code).toBe(0);
    const again = await acctops(['--json', 'users', 'revoke', '--user', user]);
    expect(again.code).toBe(0);
    expect(parseJson(again)).toEqual({ externalId: user, result: 'already_revoked' });
  });

  it('a registered company without a key secret is known: keys rotate and keys status --company name the missing key and keys install (exit 3)', async () => {
    const company = randomUUID();
    expect((await acctops(['companies', 'add', '--company', company])).code).toBe(0);
    for (const args of [
      ['keys', 'rotate', '--company', company],
      ['keys', 'status', '--company', company],
    ]) {
      const result = await acctops(args);
      expect(result.code).toBe(3);
      expect(result.stderr).toMatch(/^acctops: error: no secret tagged acctops:company=[^\n]+\n$/);
      expect(result.stderr).toContain(`\`acctops keys install --company ${company}\` stores its key`);
    }
  });

  it('after companies remove, keys rotate, keys status --company and export --company say it was removed and how to restore it (exit 3)', async () => {
    // A demo company, with its key secret.
    const withKey = parseJson<{ companies: { companyId: string }[] }>(await acctops(['--json', 'keys', 'status']));
    const company = withKey.companies[0]!.companyId;
    const removal = parseJson<{ company: { removedAt: string }; key: { deletionDate: string } }>(
      await acctops(['--json', 'companies', 'remove', '--company', company]),
    );
    const restore = `\`acctops companies restore --company ${company}\``;
    const expected = {
      error: {
        exitCode: 3,
        code: 'company_removed',
        message: `--company ${company}: the company was removed on ${removal.company.removedAt}; its key secret is deleted for good on ${removal.key.deletionDate} unless the company is restored`,
        hint: `${restore} brings it back with its key secret and rotation, within the recovery window`,
      },
    };
    for (const args of [
      ['keys', 'rotate', '--company', company],
      ['keys', 'status', '--company', company],
      ['export', '--month', '2026-01', '--company', company],
    ]) {
      const json = await acctops(['--json', ...args]);
      expect({ args, code: json.code, stdout: json.stdout }).toEqual({ args, code: 3, stdout: '' });
      expect(JSON.parse(json.stderr) as ErrorJson).toEqual(expected);
      const text = await acctops(args);
      expect(text.code).toBe(3);
      expect(text.stderr).toBe(`acctops: error: ${expected.error.message} (${expected.error.hint})\n`);
      expect(text.stderr).not.toMatch(/no secret tagged/);
    }

    // The way back works: restored, its key is there again and keys status --company shows only it.
    expect((await acctops(['companies', 'restore', '--company', company])).code).toBe(0);
    const status = await acctops(['--json', 'keys', 'status', '--company', company]);
    expect(status.code).toBe(0);
    expect(parseJson<{ companies: { companyId: string }[] }>(status).companies.map((c) => c.companyId)).toEqual([company]);
    expect((await acctops(['keys', 'rotate', '--company', company])).code).toBe(0);
  });
});

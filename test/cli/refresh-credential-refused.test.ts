import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli } from '../../cli/program';
import { canarySecret, expectNoCanaries } from '../helpers/canary';
import { cliEnv, onboardArgs, tempStateDir, type CliResult } from '../helpers/cli';
import { TEST_DIALECTS } from '../helpers/dialects';

/**
 * README, "Exit codes": 4 is "a credential was refused". `tokens refresh --all` defers every due
 * user when the service refuses the institution credential (none changed, all retried later);
 * that is the credential's fault, not the users', so the command exits 4 as a single refresh would.
 */
describe.each(TEST_DIALECTS)('tokens refresh --all with a refused institution credential (%s dialect)', (dialect) => {
  let state: { dir: string; remove(): Promise<void> };
  const outputs: CliResult[] = [];

  beforeAll(async () => {
    state = await tempStateDir();
  });
  afterAll(async () => {
    expectNoCanaries(
      outputs.map((o) => `${o.stdout}\n${o.stderr}`),
      'acctops output',
    );
    await state.remove();
  });

  async function acctops(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
    let stdout = '';
    let stderr = '';
    const code = await runCli(['--state-dir', state.dir, ...args], {
      io: { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } },
      env: cliEnv({ ACCTOPS_DIALECT: dialect, ...env }),
      cwd: state.dir,
    });
    const result = { code, stdout, stderr };
    outputs.push(result);
    return result;
  }

  it('exits 4 naming the credential, defers the users and changes none', async () => {
    const id = randomUUID();
    expect(
      (await acctops(onboardArgs({ externalId: id, username: `cred-${id.slice(0, 8)}`, email: `cred-${id.slice(0, 8)}@example.test` })))
        .code,
    ).toBe(0);
    expect((await acctops(['local', 'advance-clock', '--by', '20m'])).code).toBe(0);
    const tokensFile = async () => JSON.parse(await readFile(join(state.dir, 'tokens.json'), 'utf8')) as unknown;
    const before = await tokensFile();
    const institutionId = (JSON.parse(await readFile(join(state.dir, 'sandbox.json'), 'utf8')) as { demo: { institution: { id: string } } })
      .demo.institution.id;

    const refused = await acctops(['--json', 'tokens', 'refresh', '--all'], {
      ACCTOPS_INSTITUTION: `${institutionId}:${canarySecret('refused-institution')}`,
    });
    expect(refused.code).toBe(4);
    const report = JSON.parse(refused.stdout) as { outcomes: { externalId: string; result: string; credentialRefused: boolean }[] };
    expect(report.outcomes).toEqual([expect.objectContaining({ externalId: id, result: 'failed', credentialRefused: true })]);
    expect(refused.stderr).toContain('institution_refused');
    // The lease was taken and released: the record's fields are as they were (their order aside).
    expect(await tokensFile()).toEqual(before);

    // With the stored credential the same user is refreshed: the deferral cost it nothing.
    const again = await acctops(['--json', 'tokens', 'refresh', '--all']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ outcomes: [{ externalId: id, result: 'refreshed', credentialRefused: false }] });
  });
});
